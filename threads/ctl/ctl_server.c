/* SPDX-License-Identifier: MIT */
/* A control-plane listener served without blocking: see ctl_server.h. */
#include "threads/ctl/ctl_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/clock.h"
#include "threads/ctl/fd_reserve.h"
#include "base/log.h"
#include "ini/sockaddr.h"

int s5_ctl_init(struct s5_ctl_server *s, int fd, const char *name, const struct s5_ctl_ops *ops,
                void *owner) {
  s->conns = calloc(S5_CTL_CONNS, sizeof *s->conns);
  if (s->conns == NULL) return -ENOMEM;
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) s->conns[i].fd = -1;
  s->fd = fd;
  s->name = name;
  s->ops = ops;
  s->owner = owner;
  s->deadline_ms = 5000; /* the owner sets its own after init */
  s->read_ms = 0;
  s->reserve_closes = false;
  s->pause_until_ms = s->warned_ms = 0;
  return 0;
}

static void conn_close(struct s5_ctl_server *s, struct s5_ctl_conn *c, const char *why) {
  S5_ASSERT(c->state != S5_CTL_FREE && c->fd >= 0);
  if (why != NULL) s5_debug("%s: %s: connection closed: %s", s->name, c->peer, why);
  close(c->fd);
  if (c->reserved) s5_fd_reserve_put();
  c->reserved = false;
  free(c->out);
  c->out = NULL;
  c->fd = -1;
  c->state = S5_CTL_FREE;
}

/* The owner's verdict carried out. */
static void conn_verdict(struct s5_ctl_server *s, struct s5_ctl_conn *c, enum s5_ctl_verdict v) {
  if (v == S5_CTL_LATER) {
    c->state = S5_CTL_WAIT;
    return;
  }
  if (v != S5_CTL_ANSWER) return;
  S5_ASSERT(c->state == S5_CTL_READ || c->state == S5_CTL_WAIT);
  if (c->out == NULL) {
    conn_close(s, c, "out of memory for the answer");
    return;
  }
  c->out_off = 0;
  c->state = S5_CTL_WRITE;
}

static void conn_read(struct s5_ctl_server *s, struct s5_ctl_conn *c) {
  while (c->state == S5_CTL_READ) {
    S5_ASSERT(c->got <= sizeof c->req);
    if (c->got == sizeof c->req) { /* full: the owner decides with what it has */
      conn_verdict(s, c, s->ops->request(s, c, true));
      if (c->state == S5_CTL_READ) conn_close(s, c, "request too long");
      return;
    }
    ssize_t n = recv(c->fd, c->req + c->got, sizeof c->req - c->got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {
      conn_close(s, c, strerror(errno));
      return;
    }
    S5_ASSERT((size_t)n <= sizeof c->req - c->got);
    c->got += (size_t)n;
    conn_verdict(s, c, s->ops->request(s, c, n == 0));
    if (n == 0 && c->state == S5_CTL_READ) conn_close(s, c, "end of stream before a complete request");
  }
}

static void conn_write(struct s5_ctl_server *s, struct s5_ctl_conn *c) {
  S5_ASSERT(c->state == S5_CTL_WRITE && c->out != NULL && c->out_off <= c->out_len);
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {
      conn_close(s, c, strerror(errno));
      return;
    }
    c->out_off += (size_t)n;
    S5_ASSERT(c->out_off <= c->out_len);
  }
  free(c->out);
  c->out = NULL;
  if (shutdown(c->fd, SHUT_WR) < 0) {
    conn_close(s, c, strerror(errno));
    return;
  }
  c->state = S5_CTL_DRAIN;
}

static void conn_drain(struct s5_ctl_server *s, struct s5_ctl_conn *c) {
  char sink[4096];
  for (;;) {
    ssize_t n = recv(c->fd, sink, sizeof sink, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    conn_close(s, c, NULL); /* the peer's EOF (or an error): done */
    return;
  }
}

/* A slot for a new connection: a free one, or else the oldest connection
 * not writing an answer, once it has had S5_CTL_PUSH_MS (a slow or idle
 * client gives way to a new one, but no faster than that: clients that
 * come back as soon as they are pushed out would otherwise keep the loop
 * busy accepting and closing). The time a slot is there, 0 for now,
 * UINT64_MAX while every slot writes (until one is done). */
static uint64_t slot_at(const struct s5_ctl_server *s, struct s5_ctl_conn **slot) {
  struct s5_ctl_conn *oldest = NULL;
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) {
    struct s5_ctl_conn *c = &s->conns[i];
    if (c->state == S5_CTL_FREE) {
      if (slot != NULL) *slot = c;
      return 0;
    }
    if (c->state != S5_CTL_WRITE && (oldest == NULL || c->opened_ms < oldest->opened_ms)) oldest = c;
  }
  if (slot != NULL) *slot = oldest;
  return oldest == NULL ? UINT64_MAX : oldest->opened_ms + S5_CTL_PUSH_MS;
}

/* The slot a new connection takes now (pushing out its holder), or NULL:
 * it waits in the listener's backlog. */
static struct s5_ctl_conn *conn_slot(struct s5_ctl_server *s, uint64_t now) {
  struct s5_ctl_conn *c = NULL;
  if (slot_at(s, &c) > now) return NULL;
  if (c->state != S5_CTL_FREE) conn_close(s, c, "pushed out by a new connection (all slots busy)");
  S5_ASSERT(c->state == S5_CTL_FREE && c->fd < 0 && c->out == NULL);
  return c;
}

/* Out of descriptors even with the reserve: what stays queued would wake
 * the loop at once, again and again; the listener rests a second. */
static void accept_pause(struct s5_ctl_server *s, uint64_t now, int err) {
  s->pause_until_ms = now + 1000;
  if (s->warned_ms != 0 && now < s->warned_ms + 60000) return;
  s->warned_ms = now;
  s5_warn("%s: accept: %s (listener paused for 1 s at a time)", s->name, strerror(err));
}

const char *s5_ctl_sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len) {
  if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) return s5_sockaddr_str(ss, buf, len);
  snprintf(buf, len, "local client");
  return buf;
}

static void accept_one(struct s5_ctl_server *s, struct s5_ctl_conn *c, int fd, bool reserved, uint64_t now) {
  c->fd = fd;
  c->state = S5_CTL_READ;
  c->reserved = reserved;
  c->opened_ms = now;
  c->deadline_ms = now + s->deadline_ms;
  c->wait_until_ms = c->token = 0;
  c->got = c->out_len = c->out_off = 0;
  struct sockaddr_storage peer;
  socklen_t plen = sizeof peer;
  if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0) peer.ss_family = AF_UNSPEC;
  s5_ctl_sockaddr_text(&peer, c->peer, sizeof c->peer);
}

/* Accepts while a slot is there; the rest waits in the backlog. */
static void accept_all(struct s5_ctl_server *s, uint64_t now) {
  for (;;) {
    if (slot_at(s, NULL) > now) return;
    bool reserved;
    int fd = s5_accept_reserved(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC, &reserved);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (s5_fd_exhausted(errno)) accept_pause(s, now, errno);
      else if (errno != EAGAIN && errno != EWOULDBLOCK) s5_warn("%s: accept: %s", s->name, strerror(errno));
      return;
    }
    if (reserved && s->reserve_closes) { /* not left to hang: closed at once */
      close(fd);
      s5_fd_reserve_put();
      accept_pause(s, now, EMFILE);
      return;
    }
    /* A connection the reserve took is served like any; the reserve comes
     * back when it closes (conn_close). */
    struct s5_ctl_conn *c = conn_slot(s, now);
    S5_ASSERT(c != NULL); /* slot_at said so, and nothing closed since */
    accept_one(s, c, fd, reserved, now);
  }
}

unsigned s5_ctl_pollfds(const struct s5_ctl_server *s, struct pollfd *pfd) {
  if (s->fd < 0) return 0;
  uint64_t now = s5_now_ms();
  bool listen = s->pause_until_ms <= now && slot_at(s, NULL) <= now;
  pfd[0] = (struct pollfd){.fd = listen ? s->fd : -1, .events = POLLIN};
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) {
    const struct s5_ctl_conn *c = &s->conns[i];
    bool polled = c->state == S5_CTL_READ || c->state == S5_CTL_WRITE || c->state == S5_CTL_DRAIN;
    pfd[1 + i] =
      (struct pollfd){.fd = polled ? c->fd : -1, .events = c->state == S5_CTL_WRITE ? POLLOUT : POLLIN};
  }
  return S5_CTL_POLLFDS;
}

int s5_ctl_wait_ms(const struct s5_ctl_server *s) {
  if (s->fd < 0) return -1;
  uint64_t now = s5_now_ms(), next = slot_at(s, NULL);
  if (next <= now) next = UINT64_MAX; /* the listener is polled: no clock for it */
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) {
    const struct s5_ctl_conn *c = &s->conns[i];
    if (c->state == S5_CTL_FREE) continue;
    if (c->state == S5_CTL_WAIT) return 2; /* the workers answer without waking us: look again soon */
    uint64_t t = c->deadline_ms;
    if (c->state == S5_CTL_READ && s->read_ms != 0 && c->opened_ms + s->read_ms < t)
      t = c->opened_ms + s->read_ms;
    if (t < next) next = t;
  }
  if (next == UINT64_MAX) return -1;
  return next <= now ? 0 : (int)(next - now);
}

/* The clocks: read time, waits, deadlines. */
static void serve_clocks(struct s5_ctl_server *s, uint64_t now) {
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) {
    struct s5_ctl_conn *c = &s->conns[i];
    if (c->state == S5_CTL_READ && s->read_ms != 0 && now >= c->opened_ms + s->read_ms)
      conn_verdict(s, c, s->ops->request(s, c, true));
    if (c->state == S5_CTL_READ && s->read_ms != 0 && now >= c->opened_ms + s->read_ms)
      conn_close(s, c, "no complete request in time");
    if (c->state == S5_CTL_WAIT) {
      bool late = now >= c->wait_until_ms;
      enum s5_ctl_verdict v = s->ops->pending(s, c, late);
      if (v == S5_CTL_ANSWER) conn_verdict(s, c, v);
      else if (late) conn_close(s, c, "no answer in time");
      if (c->state == S5_CTL_WRITE) conn_write(s, c);
    }
    if (c->state != S5_CTL_FREE && now >= c->deadline_ms)
      conn_close(s, c,
                 c->state == S5_CTL_READ ? "deadline reached before a complete request" : "deadline reached");
  }
}

void s5_ctl_serve(struct s5_ctl_server *s, const struct pollfd *pfd, unsigned n) {
  if (s->fd < 0) return;
  uint64_t now = s5_now_ms();
  bool events = n == S5_CTL_POLLFDS;
  for (unsigned i = 0; events && i < S5_CTL_CONNS; i++) {
    struct s5_ctl_conn *c = &s->conns[i];
    if (c->state == S5_CTL_FREE || pfd[1 + i].fd != c->fd || pfd[1 + i].revents == 0) continue;
    if (c->state == S5_CTL_READ) conn_read(s, c);
    /* An answer is written at once, without waiting for the next turn. */
    if (c->state == S5_CTL_WRITE) conn_write(s, c);
    else if (c->state == S5_CTL_DRAIN) conn_drain(s, c);
  }
  serve_clocks(s, now);
  if (events && pfd[0].revents != 0) accept_all(s, now);
}

void s5_ctl_close(struct s5_ctl_server *s) {
  if (s->conns != NULL)
    for (unsigned i = 0; i < S5_CTL_CONNS; i++)
      if (s->conns[i].state != S5_CTL_FREE) conn_close(s, &s->conns[i], NULL);
  free(s->conns);
  s->conns = NULL;
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
}
