/* SPDX-License-Identifier: MIT */
/* [rules] direct's names (see dial.h): asked of [rules] resolver, a DNS
 * server reached with direct's mark (so around the tunnel, never of
 * s5tund's own mapped resolver), over UDP: an A query (a datagram's family
 * for UDP), then AAAA when a stream's name has no A; 2 tries of 2 s each.
 * Without it, the system resolver (getaddrinfo on libuv's thread pool).
 * Addresses written as such are never sent to a server. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ini/config.h"
#include "ini/sockaddr.h"
#include "socks5/dial.h"

#define ASK_TRIES 2     /* the failure text says so */
#define ASK_TRY_MS 2000 /* per try */
#define ASK_REPLY_MAX 1232

struct s5_dial_lookup {
  uv_getaddrinfo_t req; /* the system resolver's */
  uv_udp_t udp;         /* [rules] resolver's: the socket, a try's timer */
  uv_timer_t timer;
  unsigned handles; /* of those open; freed when the last is closed */
  unsigned tries;
  uint16_t id, qtype;
  s5_dial_resolved *cb; /* NULL once cancelled or answered */
  void *arg;
  struct sockaddr_storage want; /* the port to connect to, and a datagram's family */
  int datagram;                 /* else a stream's name takes AAAA when it has no A */
  const struct sockaddr_storage *server;
  char name[256];
  uint8_t buf[ASK_REPLY_MAX];
};

/* The answer, once: then the lookup ends (its handles close). */
static void lookup_end(struct s5_dial_lookup *l, const struct sockaddr_storage *to, const char *why);

/* ---------------------------------------------------------------- the system resolver */

static void sys_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  struct s5_dial_lookup *l = req->data;
  struct sockaddr_storage to;
  memset(&to, 0, sizeof to);
  if (status == 0 && res != NULL && res->ai_addrlen <= sizeof to) memcpy(&to, res->ai_addr, res->ai_addrlen);
  uv_freeaddrinfo(res);
  char why[320];
  if (to.ss_family == 0)
    snprintf(why, sizeof why, "direct: resolving %s failed: %s", l->name,
             status < 0 ? uv_strerror(status) : "no address");
  if (l->cb != NULL) l->cb(l->arg, to.ss_family != 0 ? &to : NULL, to.ss_family != 0 ? l->name : why);
  free(l);
}

static int sys_resolve(uv_loop_t *loop, struct s5_dial_lookup *l, int numeric, int datagram) {
  char port[8];
  snprintf(port, sizeof port, "%u", s5_sockaddr_port(&l->want));
  struct addrinfo hints = {.ai_family = datagram ? l->want.ss_family : AF_UNSPEC,
                           .ai_socktype = datagram ? SOCK_DGRAM : SOCK_STREAM,
                           .ai_flags = numeric ? AI_NUMERICHOST : AI_ADDRCONFIG};
  l->req.data = l;
  return uv_getaddrinfo(loop, &l->req, sys_resolved, l->name, port, &hints);
}

/* ---------------------------------------------------------------- [rules] resolver */

/* A query for l->name, type l->qtype, with recursion desired. Returns its length, or 0. */
static size_t ask_query(const struct s5_dial_lookup *l, uint8_t *q, size_t cap) {
  size_t n = 12, len = strlen(l->name);
  if (len + 18 > cap) return 0;
  memset(q, 0, 12);
  q[0] = (uint8_t)(l->id >> 8), q[1] = (uint8_t)l->id, q[2] = 0x01, q[5] = 1;
  for (const char *label = l->name; *label != '\0';) {
    size_t k = strcspn(label, ".");
    if (k == 0 || k > 63) return 0;
    q[n++] = (uint8_t)k;
    memcpy(q + n, label, k), n += k;
    label += k + (label[k] == '.');
  }
  q[n++] = 0;
  q[n++] = (uint8_t)(l->qtype >> 8), q[n++] = (uint8_t)l->qtype, q[n++] = 0, q[n++] = 1;
  return n;
}

/* Past a name at *at (labels, or a pointer ending it). -1 when it runs out. */
static int skip_name(const uint8_t *m, size_t len, size_t *at) {
  while (*at < len) {
    uint8_t c = m[*at];
    if ((c & 0xc0) == 0xc0) return *at + 2 <= len ? (*at += 2, 0) : -1;
    if (c & 0xc0) return -1;
    *at += 1 + (size_t)c;
    if (c == 0) return 0;
  }
  return -1;
}

int s5_dial_dns_answer(const uint8_t *m, size_t len, uint16_t id, uint16_t qtype, uint16_t port,
                       struct sockaddr_storage *to, int *rcode) {
  if (len < 12 || (m[0] << 8 | m[1]) != id || !(m[2] & 0x80)) return -1;
  *rcode = m[3] & 0x0f;
  unsigned qd = (unsigned)(m[4] << 8 | m[5]), an = (unsigned)(m[6] << 8 | m[7]);
  size_t at = 12;
  for (unsigned i = 0; i < qd; i++)
    if (skip_name(m, len, &at) < 0 || (at += 4) > len) return -1;
  for (unsigned i = 0; i < an; i++) {
    if (skip_name(m, len, &at) < 0 || at + 10 > len) return -1;
    unsigned type = (unsigned)(m[at] << 8 | m[at + 1]), class = (unsigned)(m[at + 2] << 8 | m[at + 3]);
    size_t rdlen = (size_t)(m[at + 8] << 8 | m[at + 9]);
    at += 10;
    if (at + rdlen > len) return -1;
    if (type == qtype && class == 1 && rdlen == (type == 1 ? 4u : 16u)) {
      s5_sockaddr_from_raw(m + at, rdlen, port, to);
      return 1;
    }
    at += rdlen;
  }
  return 0;
}

static void ask_fail(struct s5_dial_lookup *l, const char *failed) {
  char why[400], server[S5_SOCKADDR_STRLEN];
  snprintf(why, sizeof why, "direct: resolving %s at [rules] resolver %s failed: %s", l->name,
           s5_sockaddr_str(l->server, server, sizeof server), failed);
  lookup_end(l, NULL, why);
}

static void ask_timed_out(uv_timer_t *t);

/* A try: a new id, the query, its timer; after the last, the end. */
static void ask_try(struct s5_dial_lookup *l) {
  uint8_t q[300];
  if (l->tries++ == ASK_TRIES) {
    ask_fail(l, "no answer (2 tries of 2 s)");
    return;
  }
  if (getrandom(&l->id, sizeof l->id, 0) != sizeof l->id) l->id = (uint16_t)(l->id * 40503u + 1);
  size_t n = ask_query(l, q, sizeof q);
  if (n == 0) {
    ask_fail(l, "not a name a DNS query can carry");
    return;
  }
  uv_buf_t b = uv_buf_init((char *)q, (unsigned)n);
  int r = uv_udp_try_send(&l->udp, &b, 1, NULL);
  if (r < 0 && r != UV_EAGAIN) { /* EAGAIN: as a datagram lost, the timer tries again */
    ask_fail(l, uv_strerror(r));
    return;
  }
  uv_timer_start(&l->timer, ask_timed_out, ASK_TRY_MS, 0);
}

static void ask_timed_out(uv_timer_t *t) { ask_try(t->data); }

static void ask_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf) {
  struct s5_dial_lookup *l = h->data;
  (void)want;
  *buf = uv_buf_init((char *)l->buf, sizeof l->buf);
}

static void ask_recv(uv_udp_t *u, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
                     unsigned flags) {
  struct s5_dial_lookup *l = u->data;
  struct sockaddr_storage to;
  int rcode = 0, found;
  (void)buf, (void)from, (void)flags;
  if (l->cb == NULL || n == 0) return;
  if (n < 0) { /* ICMP: nothing listens there */
    ask_fail(l, uv_strerror((int)n));
    return;
  }
  found = s5_dial_dns_answer(l->buf, (size_t)n, l->id, l->qtype, s5_sockaddr_port(&l->want), &to, &rcode);
  if (found < 0) return; /* not our answer */
  if (found == 1) lookup_end(l, &to, NULL);
  else if (rcode == 3) ask_fail(l, "no such name (NXDOMAIN)");
  else if (rcode != 0) ask_fail(l, "the server failed (its rcode is not 0)");
  else if (l->qtype == 1 && !l->datagram) { /* a stream's name without A: AAAA */ l->qtype = 28, l->tries = 0;
    ask_try(l);
  } else ask_fail(l, "no address");
}

static void ask_closed(uv_handle_t *h) {
  struct s5_dial_lookup *l = h->data;
  if (--l->handles == 0) free(l);
}

static void lookup_end(struct s5_dial_lookup *l, const struct sockaddr_storage *to, const char *why) {
  s5_dial_resolved *cb = l->cb;
  l->cb = NULL;
  if (!uv_is_closing((uv_handle_t *)&l->udp)) {
    uv_close((uv_handle_t *)&l->udp, ask_closed);
    uv_close((uv_handle_t *)&l->timer, ask_closed);
  }
  if (cb != NULL) cb(l->arg, to, to != NULL ? l->name : why);
}

static int ask_start(uv_loop_t *loop, struct s5_dial_lookup *l, uint32_t mark, int datagram) {
  uv_os_fd_t fd;
  l->udp.data = l->timer.data = l;
  int r = uv_udp_init_ex(loop, &l->udp, (unsigned)l->server->ss_family);
  if (r < 0) return r;
  l->handles = 2;
  uv_timer_init(loop, &l->timer);
  if ((r = uv_fileno((uv_handle_t *)&l->udp, &fd)) == 0 && mark != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) < 0)
    r = -errno;
  if (r == 0) r = uv_udp_connect(&l->udp, (const struct sockaddr *)l->server);
  if (r == 0) r = uv_udp_recv_start(&l->udp, ask_alloc, ask_recv);
  if (r < 0) {
    l->cb = NULL;
    uv_close((uv_handle_t *)&l->udp, ask_closed);
    uv_close((uv_handle_t *)&l->timer, ask_closed);
    return r;
  }
  l->qtype = datagram && l->want.ss_family == AF_INET6 ? 28 : 1;
  l->datagram = datagram;
  uv_timer_start(&l->timer, ask_timed_out, 0, 0); /* the first try from the loop: no callback in here */
  return 0;
}

/* ---------------------------------------------------------------- either */

int s5_dial_resolve(uv_loop_t *loop, const struct s5_config *cfg, const struct sockaddr_storage *addr,
                    const char *name, int datagram, s5_dial_resolved *cb, void *arg,
                    struct s5_dial_lookup **out, char *why, size_t cap) {
  struct s5_dial_lookup *l = calloc(1, sizeof *l);
  if (l == NULL) {
    snprintf(why, cap, "direct: no memory to resolve %s", name);
    return UV_ENOMEM;
  }
  if (name[0] != '\0') snprintf(l->name, sizeof l->name, "%s", name);
  else s5_sockaddr_host(addr, l->name, sizeof l->name);
  l->cb = cb;
  l->arg = arg;
  l->want = *addr;
  l->server = &cfg->rules.resolver;
  int own = name[0] != '\0' && l->server->ss_family != 0;
  int r =
    own ? ask_start(loop, l, cfg->direct.mark, datagram) : sys_resolve(loop, l, name[0] == '\0', datagram);
  if (r < 0) {
    snprintf(why, cap, "direct: resolving %s: %s", l->name, uv_strerror(r));
    if (l->handles == 0) free(l); /* else as its handles close */
    return r;
  }
  *out = l;
  return 0;
}

void s5_dial_cancel(struct s5_dial_lookup *l) {
  l->cb = NULL; /* the system resolver's callback frees it; [rules] resolver's handles as they close */
  if (l->handles == 0) uv_cancel((uv_req_t *)&l->req);
  else if (!uv_is_closing((uv_handle_t *)&l->udp)) {
    uv_close((uv_handle_t *)&l->udp, ask_closed);
    uv_close((uv_handle_t *)&l->timer, ask_closed);
  }
}
