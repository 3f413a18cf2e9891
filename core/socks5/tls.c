/* SPDX-License-Identifier: MIT */
/* See tls.h: the TLS pump between a socket pair's end (plain) and the
 * marked TCP socket to the proxy (net), on the worker's loop. */
#include "socks5/tls.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "ini/config.h"
#include "ini/sockaddr.h"
#include "socks5/tls_ctx.h"
#include "socks5/tls_seen.h"

#define TLS_UP 16384   /* one TLS record's plaintext, from the pair */
#define TLS_DOWN 32768 /* two records' from the proxy: one write to the pair for both */

enum tls_state { TLS_CONNECTING, TLS_HANDSHAKE, TLS_OPEN, TLS_CLOSING };

struct s5_tls {
  uv_poll_t net_poll, pair_poll;
  struct s5_tls *prev, *next; /* this thread's, for s5_tls_end */
  int net, pair;              /* the TCP socket to the proxy; our end of the pair */
  SSL *ssl;
  enum tls_state state;
  s5_tls_done *done; /* until the handshake ends; NULL once detached */
  void *arg;
  char up_name[32];
  unsigned slot; /* the upstream's row in the shared table */
  int handles;   /* polls open */
  unsigned pair_eof : 1, net_eof : 1, want_write : 1, spoke : 1, heard : 1; /* data to, from the proxy */
  size_t up_len;             /* plaintext from the pair, not yet taken by SSL_write */
  size_t down_off, down_len; /* plaintext from the proxy, not yet written to the pair */
  uint8_t up[TLS_UP], down[TLS_DOWN];
};

static void tls_io(uv_poll_t *h, int status, int events);

static __thread struct s5_tls *live; /* this thread's pumps */

static void tls_free(struct s5_tls *t) {
  if (t->prev != NULL) t->prev->next = t->next;
  else live = t->next;
  if (t->next != NULL) t->next->prev = t->prev;
  close(t->net);
  close(t->pair);
  SSL_free(t->ssl);
  free(t);
}

static void tls_freed(uv_handle_t *h) {
  struct s5_tls *t = h->data;
  if (--t->handles == 0) tls_free(t);
}

/* s5_tls_start gave up after opening net_poll: the rest was freed there. */
static void tls_abandoned(uv_handle_t *h) { free(h->data); }

/* Everything closes; the pair's other end sees its EOF. */
static void tls_close(struct s5_tls *t) {
  if (t->state == TLS_CLOSING) return;
  t->state = TLS_CLOSING;
  t->done = NULL;
  uv_close((uv_handle_t *)&t->net_poll, tls_freed);
  uv_close((uv_handle_t *)&t->pair_poll, tls_freed);
}

static void tls_report(struct s5_tls *t, int status, const char *why) {
  s5_tls_done *done = t->done;
  t->done = NULL;
  if (status != 0) tls_close(t);
  if (done != NULL) done(t->arg, status, why);
}

/* The polls as the state asks: each direction reads only with room to put it. */
static void tls_poll(struct s5_tls *t) {
  int net = 0, pair = 0;
  if (t->state == TLS_CONNECTING) net = UV_WRITABLE;
  else if (t->state == TLS_HANDSHAKE) net = t->want_write ? UV_WRITABLE : UV_READABLE;
  else {
    if (t->want_write) net |= UV_WRITABLE;
    if (t->down_len == 0 && !t->net_eof) net |= UV_READABLE;
    if (t->up_len > 0 && !t->want_write)
      net |= UV_READABLE | UV_WRITABLE; /* its turn ended, or it wants to read */
    if (t->up_len == 0 && !t->pair_eof) pair |= UV_READABLE;
    if (t->down_len > 0) pair |= UV_WRITABLE;
  }
  if (net != 0) uv_poll_start(&t->net_poll, net, tls_io);
  else uv_poll_stop(&t->net_poll);
  if (pair != 0) uv_poll_start(&t->pair_poll, pair, tls_io);
  else uv_poll_stop(&t->pair_poll);
}

static void tls_handshake(struct s5_tls *t) {
  ERR_clear_error();
  int r = SSL_connect(t->ssl);
  if (r == 1) {
    struct s5_tls_ctx *c = SSL_CTX_get_app_data(SSL_get_SSL_CTX(t->ssl));
    s5_tls_seen_ok(c, t->ssl, t->slot);
    t->state = TLS_OPEN;
    t->want_write = 0;
    tls_poll(t);
    tls_report(t, 0, NULL);
    return;
  }
  int err = SSL_get_error(t->ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    t->want_write = err == SSL_ERROR_WANT_WRITE;
    tls_poll(t);
    return;
  }
  char why[400];
  s5_tls_seen_failed(t->ssl, t->slot, t->up_name, err, errno, why, sizeof why);
  tls_report(t, 1, why);
}

/* An SSL_read or SSL_write that did not go: 0 to wait (want_write set as
 * asked), 1 for the proxy's end (close_notify or FIN), -1 for an error. */
static int tls_wait(struct s5_tls *t, int r) {
  int err = SSL_get_error(t->ssl, r);
  if (err == SSL_ERROR_WANT_WRITE) t->want_write = 1;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return 0;
  if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && r == 0)) return 1;
  s5_tls_seen_ended(t->ssl, t->slot, t->up_name, err, errno, !t->heard ? 1 + t->spoke : 0);
  return -1;
}

/* One pass each way until nothing moves; 0, or -1 to close. */
static int tls_pump_once(struct s5_tls *t, int *moved) {
  if (t->up_len == 0 && !t->pair_eof) { /* the pair -> the proxy */
    ssize_t n = read(t->pair, t->up, sizeof t->up);
    if (n > 0) t->up_len = (size_t)n, *moved = 1;
    else if (n == 0) {
      t->pair_eof = 1, *moved = 1;
      ERR_clear_error();
      SSL_shutdown(t->ssl); /* close_notify, then our FIN */
      if (shutdown(t->net, SHUT_WR) < 0 && errno != ENOTCONN) return -1;
    } else if (errno != EAGAIN && errno != EINTR) return -1;
  }
  if (t->up_len > 0) {
    ERR_clear_error();
    int r = SSL_write(t->ssl, t->up, (int)t->up_len);
    if (r > 0) {
      memmove(t->up, t->up + r, t->up_len - (size_t)r); /* partial writes are on */
      t->up_len -= (size_t)r, *moved = t->spoke = 1;
    } else if (tls_wait(t, r) != 0) return -1;
  }
  if (t->down_len == 0 && !t->net_eof) { /* the proxy -> the pair */
    ERR_clear_error();
    int r = SSL_read(t->ssl, t->down, sizeof t->down);
    if (r > 0) {
      t->down_off = 0, t->down_len = (size_t)r, *moved = t->heard = 1;
      while (t->down_len + TLS_UP <= sizeof t->down) { /* room for another record */
        int r2 = SSL_read(t->ssl, t->down + t->down_len, (int)(sizeof t->down - t->down_len));
        if (r2 <= 0) {
          ERR_clear_error();
          break;
        }
        t->down_len += (size_t)r2;
      }
    } else {
      int w = tls_wait(t, r);
      if (w < 0) return -1;
      if (w > 0) {
        t->net_eof = 1, *moved = 1;
        if (shutdown(t->pair, SHUT_WR) < 0) return -1;
      }
    }
  }
  if (t->down_len > 0) {
    ssize_t n = write(t->pair, t->down + t->down_off, t->down_len);
    if (n > 0) t->down_off += (size_t)n, t->down_len -= (size_t)n, *moved = 1;
    else if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
  }
  return 0;
}

static void tls_pump(struct s5_tls *t) {
  t->want_write = 0;
  int moved, passes = 0;
  do { /* a few records each way, then the loop's other handles have their turn */
    moved = 0;
    if (tls_pump_once(t, &moved) < 0) {
      tls_close(t);
      return;
    }
  } while (moved && ++passes < 16);
  if (t->pair_eof && t->net_eof && t->up_len == 0 && t->down_len == 0) tls_close(t);
  else tls_poll(t);
}

/* The TCP connect's outcome, then the handshake. */
static void tls_connected(struct s5_tls *t) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(t->net, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == EINPROGRESS) return;
  if (err != 0) {
    char why[160];
    snprintf(why, sizeof why, "proxy connection failed: %s", strerror(err));
    tls_report(t, uv_translate_sys_error(err), why);
    return;
  }
  t->state = TLS_HANDSHAKE;
  tls_handshake(t);
}

static void tls_io(uv_poll_t *h, int status, int events) {
  struct s5_tls *t = h->data;
  (void)events;
  if (t->state == TLS_CLOSING) return;
  if (status < 0 && t->state != TLS_OPEN) {
    char why[160];
    snprintf(why, sizeof why, "proxy connection failed: %s", uv_strerror(status));
    tls_report(t, status, why);
  } else if (status < 0) tls_close(t);
  else if (t->state == TLS_CONNECTING) tls_connected(t);
  else if (t->state == TLS_HANDSHAKE) tls_handshake(t);
  else tls_pump(t);
}

/* The marked, non-blocking TCP socket to the proxy, its connect begun. */
static int tls_socket(const struct s5_upstream_cfg *up, char *why, size_t cap) {
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

struct s5_tls *s5_tls_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_tls_done *done, void *arg,
                            int *plain, char *why, size_t cap) {
  struct s5_tls_ctx *c = s5_tls_ctx_get(up, why, cap);
  if (c == NULL) return NULL;
  struct s5_tls *t = calloc(1, sizeof *t);
  int pair[2] = {-1, -1};
  if (t == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0) {
    snprintf(why, cap, "TLS to upstream %s: %s", up->name, t == NULL ? "out of memory" : strerror(errno));
    free(t);
    return NULL;
  }
  t->net = tls_socket(up, why, cap);
  if (t->net < 0 || s5_tls_ctx_ssl(c, up, &t->ssl, why, cap) != 0) {
    if (t->net >= 0) close(t->net);
    close(pair[0]);
    close(pair[1]);
    free(t);
    return NULL;
  }
  int r = SSL_set_fd(t->ssl, t->net) == 1 ? uv_poll_init(loop, &t->net_poll, t->net) : UV_ENOMEM;
  int net_open = r == 0;
  if (r == 0) r = uv_poll_init(loop, &t->pair_poll, pair[0]);
  if (r < 0) {
    snprintf(why, cap, "TLS to upstream %s: polling its sockets: %s", up->name, uv_strerror(r));
    t->net_poll.data = t;
    if (net_open) uv_close((uv_handle_t *)&t->net_poll, tls_abandoned); /* t goes with it */
    SSL_free(t->ssl);
    close(t->net);
    close(pair[0]);
    close(pair[1]);
    if (!net_open) free(t);
    return NULL;
  }
  t->pair = pair[0];
  t->done = done;
  t->arg = arg;
  snprintf(t->up_name, sizeof t->up_name, "%s", up->name);
  t->slot = up->slot;
  t->net_poll.data = t->pair_poll.data = t;
  t->handles = 2;
  t->next = live;
  if (live != NULL) live->prev = t;
  live = t;
  t->state = TLS_CONNECTING;
  tls_poll(t);
  *plain = pair[1];
  return t;
}

void s5_tls_detach(struct s5_tls *t) {
  t->done = NULL;
  tls_close(t);
}

void s5_tls_end(void) {
  while (live != NULL) tls_free(live); /* their polls were closed with the loop's other handles */
  s5_tls_release();
}
