/* SPDX-License-Identifier: MIT */
/* See pump.h: the pump between a socket pair's end (plain) and the marked
 * TCP socket to the proxy (net), on the worker's loop; the codec (TLS,
 * Shadowsocks) says how bytes cross. */
#include "socks5/pump.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "ini/config.h"
#include "ini/sockaddr.h"

static void pump_io(uv_poll_t *h, int status, int events);

static __thread struct s5_pump *live; /* this thread's pumps */

static void pump_free(struct s5_pump *p) {
  if (p->prev != NULL) p->prev->next = p->next;
  else live = p->next;
  if (p->next != NULL) p->next->prev = p->prev;
  if (p->net >= 0) close(p->net);
  if (p->pair >= 0) close(p->pair);
  p->codec->free(p->cx);
  free(p);
}

static void pump_freed(uv_handle_t *h) {
  struct s5_pump *p = h->data;
  if (--p->handles == 0 && !p->owned) pump_free(p);
}

/* s5_pump_start gave up after opening net_poll: the rest was freed there. */
static void pump_abandoned(uv_handle_t *h) { free(h->data); }

/* Everything closes, the sockets at once: the pair's other end sees its
 * EOF, the proxy our FIN. */
static void pump_close(struct s5_pump *p) {
  if (p->state == S5_PUMP_CLOSING) return;
  p->state = S5_PUMP_CLOSING;
  p->done = NULL;
  uv_close((uv_handle_t *)&p->net_poll, pump_freed);
  if (!p->pair_gone) uv_close((uv_handle_t *)&p->pair_poll, pump_freed);
  close(p->net);
  if (p->pair >= 0) close(p->pair);
  p->net = p->pair = -1;
}

static void pump_report(struct s5_pump *p, int status, const char *why) {
  s5_pump_done *done = p->done;
  p->done = NULL;
  if (status != 0) pump_close(p);
  if (done != NULL) done(p->arg, status, why);
}

/* A poll's events, changed only when they change: libuv's uv_poll_start
 * takes the descriptor out of epoll and puts it back each time. */
static void pump_watch(uv_poll_t *h, int *cur, int events) {
  if (events == *cur) return;
  *cur = events;
  if (events != 0) uv_poll_start(h, events, pump_io);
  else uv_poll_stop(h);
}

/* The polls as the state asks: each direction reads only with room to put it. */
static void pump_poll(struct s5_pump *p) {
  int net = 0, pair = 0;
  if (p->state == S5_PUMP_CLOSING) return;
  if (p->state == S5_PUMP_CONNECTING) net = UV_WRITABLE;
  else if (p->state == S5_PUMP_HANDSHAKE) net = p->want_write ? UV_WRITABLE : UV_READABLE;
  else {
    if (p->want_write) net |= UV_WRITABLE;
    if (!p->direct ? p->down_len == 0 && !p->net_eof : p->want_read && p->down_handed && !p->net_eof)
      net |= UV_READABLE;
    if (p->up_len > 0 && !p->want_write)
      net |= UV_READABLE | UV_WRITABLE; /* its turn ended, or it wants to read */
    if (p->up_len == 0 && !p->pair_eof) pair |= UV_READABLE;
    if (p->down_len > 0 && !p->down_handed) pair |= UV_WRITABLE;
  }
  pump_watch(&p->net_poll, &p->net_ev, net);
  if (!p->pair_gone) pump_watch(&p->pair_poll, &p->pair_ev, pair);
}

static void pump_handshake(struct s5_pump *p) {
  char why[400];
  int r = p->codec->handshake(p, why, sizeof why);
  if (r == 0) {
    p->state = S5_PUMP_OPEN;
    p->want_write = 0;
    pump_poll(p);
    pump_report(p, 0, NULL);
  } else if (r > 0) pump_poll(p);
  else pump_report(p, 1, why);
}

/* The pair -> the proxy; 0, or -1 to close. */
static int pump_up(struct s5_pump *p, int *moved) {
  if (p->up_len == 0 && !p->pair_eof) {
    ssize_t n = read(p->pair, p->up, sizeof p->up);
    if (n > 0) p->up_len = (size_t)n, *moved = 1;
    else if (n == 0) {
      p->pair_eof = 1, *moved = 1;
      if (!p->direct) {        /* direct: the pair handed over, the caller's end comes by s5_pump_shut */
        p->codec->shutdown(p); /* e.g. close_notify, then our FIN */
        if (shutdown(p->net, SHUT_WR) < 0 && errno != ENOTCONN) return -1;
        p->net_shut = 1;
      }
    } else if (errno != EAGAIN && errno != EINTR) return -1;
  }
  if (p->up_len > 0) {
    int r = p->codec->write(p, p->up, p->up_len);
    if (r > 0) {
      memmove(p->up, p->up + r, p->up_len - (size_t)r); /* partial writes are on */
      p->up_len -= (size_t)r, *moved = 1;
    } else if (r < 0) return -1;
  }
  return 0;
}

/* The proxy -> the pair; 0, or -1 to close. */
static int pump_down(struct s5_pump *p, int *moved) {
  if (p->down_len == 0 && !p->net_eof && !p->direct) {
    int r = p->codec->read(p, p->down, sizeof p->down);
    if (r > 0) {
      p->down_off = 0, p->down_len = (size_t)r, *moved = 1;
      while (p->down_len + S5_PUMP_UP <= sizeof p->down) { /* room for another record */
        int r2 = p->codec->read(p, p->down + p->down_len, sizeof p->down - p->down_len);
        if (r2 <= 0) break; /* its end or error comes again at the next read */
        p->down_len += (size_t)r2;
      }
    } else if (r == -S5_PUMP_EOF) {
      p->net_eof = 1, p->down_handed = 1, *moved = 1;
      if (shutdown(p->pair, SHUT_WR) < 0) return -1;
    } else if (r < 0) return -1;
  }
  if (p->down_len == 0 && p->direct && !p->down_handed) { /* all it held went: the caller reads on */
    p->down_handed = 1, *moved = 1;
    if (shutdown(p->pair, SHUT_WR) < 0) return -1;
  }
  if (p->down_len > 0 && !p->down_handed) {
    ssize_t n = write(p->pair, p->down + p->down_off, p->down_len);
    if (n > 0) p->down_off += (size_t)n, p->down_len -= (size_t)n, *moved = 1;
    else if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
  }
  return 0;
}

static void pump_direct_step(struct s5_pump *p);

static void pump_run(struct s5_pump *p) {
  p->want_write = 0;
  int moved, passes = 0;
  do { /* a few records each way, then the loop's other handles have their turn */
    moved = 0;
    if (pump_up(p, &moved) < 0 || pump_down(p, &moved) < 0) {
      pump_close(p);
      return;
    }
  } while (moved && ++passes < 16);
  if (p->direct) pump_direct_step(p);
  else if (p->pair_eof && p->net_eof && p->up_len == 0 && p->down_len == 0) pump_close(p);
  else pump_poll(p);
}

/* The TCP connect's outcome (status: the poll's), then the handshake. */
static void pump_connected(struct s5_pump *p, int status) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(p->net, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == EINPROGRESS && status == 0) return;
  if (err != 0 || status < 0) { /* libuv says EBADF for any POLLERR: the socket's error says what */
    char why[160];
    snprintf(why, sizeof why, "proxy connection failed: %s", err != 0 ? strerror(err) : uv_strerror(status));
    pump_report(p, err != 0 ? uv_translate_sys_error(err) : status, why);
    return;
  }
  p->state = S5_PUMP_HANDSHAKE;
  pump_handshake(p);
}

static void pump_io(uv_poll_t *h, int status, int events) {
  struct s5_pump *p = h->data;
  int readable = status < 0 || (h == &p->net_poll && (events & UV_READABLE || p->read_wrote));
  if (p->state == S5_PUMP_CLOSING) return;
  if (h == &p->net_poll) p->read_wrote = 0;
  if (p->state == S5_PUMP_CONNECTING) pump_connected(p, status); /* a failure's cause: SO_ERROR */
  else if (status < 0 && p->state != S5_PUMP_OPEN) { /* a reset in the handshake: SO_ERROR, not EBADF */
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(p->net, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = 0;
    char why[160];
    snprintf(why, sizeof why, "proxy connection failed: %s", err != 0 ? strerror(err) : uv_strerror(status));
    pump_report(p, err != 0 ? uv_translate_sys_error(err) : status, why);
  } else if (status < 0) pump_close(p);
  else if (p->state == S5_PUMP_HANDSHAKE) pump_handshake(p);
  else pump_run(p);
  if (p->direct && p->ready != NULL) /* last: it may end the pump */
    p->ready(p->user, readable || p->state == S5_PUMP_CLOSING);
}

/* The marked, non-blocking TCP socket to the proxy, its connect begun. */
static int pump_socket(const struct s5_upstream_cfg *up, char *why, size_t cap) {
  int fd = socket(up->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), on = 1;
  const char *what = "socket";
  if (fd >= 0 && up->mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &up->mark, sizeof up->mark) < 0)
    what = "SO_MARK on the socket";
  else if (fd >= 0 && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) < 0) what = "TCP_NODELAY";
  else if (fd >= 0 && connect(fd, (const struct sockaddr *)&up->addr, s5_sockaddr_len(&up->addr)) < 0 &&
           errno != EINPROGRESS)
    what = "connecting";
  else if (fd >= 0) return fd;
  int e = errno;
  snprintf(why, cap, "%s to %s: %s", what, up->name, strerror(e));
  if (fd >= 0) close(fd);
  return -e;
}

struct s5_pump *s5_pump_start(uv_loop_t *loop, const struct s5_upstream_cfg *up,
                              const struct s5_pump_codec *codec, void *cx, s5_pump_done *done, void *arg,
                              int *plain, char *why, size_t cap) {
  struct s5_pump *p = calloc(1, sizeof *p);
  int pair[2] = {-1, -1};
  if (p == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0) {
    snprintf(why, cap, "connection to upstream %s: %s", up->name,
             p == NULL ? "out of memory" : strerror(errno));
    codec->free(cx);
    free(p);
    return NULL;
  }
  p->net = pump_socket(up, why, cap);
  int r = p->net < 0 ? 0 : uv_poll_init(loop, &p->net_poll, p->net);
  int net_open = p->net >= 0 && r == 0;
  if (net_open) r = uv_poll_init(loop, &p->pair_poll, pair[0]);
  if (p->net < 0 || r < 0) {
    if (r < 0)
      snprintf(why, cap, "connection to upstream %s: polling its sockets: %s", up->name, uv_strerror(r));
    p->net_poll.data = p;
    if (net_open) uv_close((uv_handle_t *)&p->net_poll, pump_abandoned); /* p goes with it */
    codec->free(cx);
    if (p->net >= 0) close(p->net);
    close(pair[0]);
    close(pair[1]);
    if (!net_open) free(p);
    return NULL;
  }
  p->pair = pair[0];
  p->codec = codec;
  p->cx = cx;
  p->done = done;
  p->arg = arg;
  snprintf(p->up_name, sizeof p->up_name, "%s", up->name);
  p->slot = up->slot;
  p->net_poll.data = p->pair_poll.data = p;
  p->handles = 2;
  p->owned = 1;
  p->next = live;
  if (live != NULL) live->prev = p;
  live = p;
  p->state = S5_PUMP_CONNECTING;
  pump_poll(p);
  *plain = pair[1];
  return p;
}

void s5_pump_detach(struct s5_pump *p, int reset) {
  p->owned = 0;
  p->done = NULL;
  p->ready = NULL;
  if (p->state == S5_PUMP_CLOSING) {
    if (p->handles == 0) pump_free(p);
    return;
  }
  struct linger lg = {1, 0}; /* a RST: the proxy drops the far end at once */
  if (reset && setsockopt(p->net, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) < 0)
    s5_debug("upstream %s: SO_LINGER for a reset: %s", p->up_name, strerror(errno));
  pump_close(p);
}

void s5_pump_end(void) {
  while (live != NULL) pump_free(live); /* their polls were closed with the loop's other handles */
}

/* ---------------------------------------------------------------- direct */

/* Direct: once the pair's rest went each way, our end closes; the
 * caller's end (s5_pump_shut) once what it wrote went. */
static void pump_direct_step(struct s5_pump *p) {
  if (p->state != S5_PUMP_OPEN) return;
  if (!p->pair_gone && p->pair_eof && p->down_handed && p->up_len == 0) {
    p->pair_gone = 1;
    uv_close((uv_handle_t *)&p->pair_poll, pump_freed);
    close(p->pair);
    p->pair = -1;
  }
  if (p->shut_wanted && s5_pump_shut(p) < 0) pump_close(p);
  else pump_poll(p);
}

int s5_pump_direct(struct s5_pump *p, s5_pump_ready *ready, void *arg) {
  if (p->state != S5_PUMP_OPEN || p->direct) return -1;
  p->direct = 1;
  p->ready = ready;
  p->user = arg;
  pump_run(p); /* what it holds for the pair, then the pair's half-close */
  return p->state == S5_PUMP_OPEN ? 0 : -1;
}

void s5_pump_want(struct s5_pump *p, int read) {
  p->want_read = read != 0;
  pump_poll(p);
}

int s5_pump_read(struct s5_pump *p, uint8_t *buf, size_t cap) {
  if (p->state != S5_PUMP_OPEN) return S5_PUMP_FAILED;
  if (p->net_eof) return -S5_PUMP_EOF;
  size_t got = 0;
  int r = 0;
  if (cap < S5_PUMP_UP || p->down_len > 0) { /* a codec reads S5_PUMP_UP at least: down[] first */
    if (p->down_len == 0 && (r = p->codec->read(p, p->down, sizeof p->down)) > 0)
      p->down_off = 0, p->down_len = (size_t)r;
    got = p->down_len < cap ? p->down_len : cap;
    memcpy(buf, p->down + p->down_off, got);
    p->down_off += got, p->down_len -= got;
  } else {
    while (cap - got >= S5_PUMP_UP && (r = p->codec->read(p, buf + got, cap - got)) > 0) got += (size_t)r;
  }
  if (got > 0) r = (int)got; /* its end or error comes again at the next read */
  else if (r == -S5_PUMP_EOF) p->net_eof = 1;
  else if (r < 0) pump_close(p);
  if (r == 0 && p->want_write) p->read_wrote = 1; /* TLS: a read that must write first */
  if (p->want_write || r == -S5_PUMP_EOF) pump_poll(p);
  return r;
}

long s5_pump_writev(struct s5_pump *p, const uv_buf_t *bufs, int n) {
  if (p->state != S5_PUMP_OPEN) return -1;
  if (!p->pair_eof) return 0; /* the pair's rest first: ready follows its EOF */
  long taken = 0;
  int i = 0, fill = p->up_len == 0; /* held bytes go to the codec again as they were, until it takes them */
  size_t off = 0;
  for (;;) { /* topped up after each take: a codec may leave a tail (ss.c: whole chunks) */
    for (; fill && i < n && p->up_len < sizeof p->up; off = 0, i++) {
      size_t k = bufs[i].len - off, room = sizeof p->up - p->up_len;
      if (k > room) k = room;
      memcpy(p->up + p->up_len, bufs[i].base + off, k);
      p->up_len += k, taken += (long)k;
      if ((off += k) < bufs[i].len) break;
    }
    if (p->up_len == 0) break;
    int r = p->codec->write(p, p->up, p->up_len);
    if (r < 0) {
      pump_close(p);
      return -1;
    }
    if (r == 0) break;
    memmove(p->up, p->up + r, p->up_len - (size_t)r);
    p->up_len -= (size_t)r, fill = 1;
  }
  pump_poll(p);
  return taken;
}

int s5_pump_shut(struct s5_pump *p) {
  if (p->state != S5_PUMP_OPEN) return -1;
  p->shut_wanted = 1;
  if (p->net_shut) return 0;
  if (!p->pair_eof || p->up_len > 0) return 1;
  p->codec->shutdown(p); /* e.g. close_notify, then our FIN */
  if (shutdown(p->net, SHUT_WR) < 0 && errno != ENOTCONN) return -1;
  p->net_shut = 1;
  return 0;
}
