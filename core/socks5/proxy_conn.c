/* SPDX-License-Identifier: MIT */
/* The proxy client's socket (see proxy_internal.h): opened with the
 * upstream's SO_MARK, adopted by libuv, connected. For [rules]' direct
 * outbound the address is the destination's: the client's own, or for a
 * mapped DNS address the name s5tund holds, resolved by the system
 * resolver on libuv's thread pool (uv_getaddrinfo), never on the loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/assert.h"
#include "ini/config.h"
#include "ctx/wctx.h"
#include "socks5/proxy_internal.h"

/* A socket for addr's family, SO_MARK set, adopted by p->sock. */
static int conn_open_socket(struct s5_proxy *p, const struct sockaddr_storage *addr, char *why, size_t cap) {
  const struct s5_upstream_cfg *up = p->up;
  int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int r = -errno;
    snprintf(why, cap, "socket to %s: %s", up->name, strerror(errno));
    return r;
  }
  if (up->mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &up->mark, sizeof up->mark) < 0) {
    int r = -errno;
    snprintf(why, cap, "SO_MARK %u on the socket to %s: %s", up->mark, up->name, strerror(errno));
    close(fd);
    return r;
  }
  int r = uv_tcp_open(&p->sock, fd);
  if (r < 0) {
    snprintf(why, cap, "adopting the socket to %s: %s", up->name, uv_strerror(r));
    close(fd);
  }
  return r;
}

int s5__proxy_sock_init(struct s5_proxy *p, char *why, size_t cap) {
  int r = uv_tcp_init(&p->w->loop, &p->sock);
  if (r < 0) {
    snprintf(why, cap, "proxy socket: %s", uv_strerror(r));
    return r;
  }
  p->sock.data = p->owner;
  S5_ASSERT(!p->sock_open && p->handles_open == 1); /* started once, after init: the timer only */
  p->sock_open = 1;
  p->handles_open++;
  return 0;
}

int s5__proxy_connect(struct s5_proxy *p, const struct sockaddr_storage *addr, char *why, size_t cap) {
  p->step = S5_PROXY_CONNECTING;
  int r = s5__proxy_sock_init(p, why, cap);
  if (r == 0) r = conn_open_socket(p, addr, why, cap);
  if (r < 0) return r;
  uv_tcp_nodelay(&p->sock, 1);
  r = uv_tcp_connect(&p->connect_req, &p->sock, (const struct sockaddr *)addr, s5__proxy_connected);
  if (r < 0) snprintf(why, cap, "connecting to %s: %s", p->up->name, uv_strerror(r));
  return r;
}

/* ---------------------------------------------------------------- direct */

static uint16_t target_port(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* A mapped name being resolved: allocated for the lookup alone, freed by
 * its callback (which libuv always calls, cancelled or not). */
struct s5_proxy_lookup {
  uv_getaddrinfo_t req;
  struct s5_proxy *p; /* NULL once the client let go of it */
  char name[256];
};

static void direct_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  struct s5_proxy_lookup *l = req->data;
  struct s5_proxy *p = l->p;
  struct sockaddr_storage to;
  memset(&to, 0, sizeof to);
  if (status == 0 && res != NULL && res->ai_addrlen <= sizeof to) memcpy(&to, res->ai_addr, res->ai_addrlen);
  uv_freeaddrinfo(res);
  if (p == NULL) { /* the owner went meanwhile */
    free(l);
    return;
  }
  p->lookup = NULL;
  char why[320];
  if (to.ss_family == 0)
    snprintf(why, sizeof why, "direct: resolving %s failed: %s", l->name,
             status < 0 ? uv_strerror(status) : "no address");
  free(l);
  if (to.ss_family == 0) s5__proxy_connect_failed(p, why);
  else if (p->ops->cmd == S5_PROXY_ASSOCIATE) s5__proxy_direct_datagrams(p, &to);
  else if (s5__proxy_connect(p, &to, why, sizeof why) < 0) s5__proxy_connect_failed(p, why);
}

int s5__proxy_direct(struct s5_proxy *p, char *why, size_t cap) {
  struct s5_proxy_target t;
  memset(&t, 0, sizeof t);
  if (p->ops->target == NULL || p->ops->target(p->owner, &t) < 0) {
    snprintf(why, cap, "direct: the destination's mapped name is gone");
    return UV_EINVAL;
  }
  /* TCP to an address: connect now. UDP has no connection to make: its
   * grant comes from the resolver's callback, an address too (numeric,
   * no lookup), so that it never comes inside s5_proxy_start. */
  int udp = p->ops->cmd == S5_PROXY_ASSOCIATE;
  if (t.name[0] == '\0' && !udp) return s5__proxy_connect(p, &t.addr, why, cap);
  char host[INET6_ADDRSTRLEN];
  if (t.name[0] == '\0') {
    const void *raw = t.addr.ss_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)&t.addr)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)&t.addr)->sin_addr;
    inet_ntop(t.addr.ss_family, raw, host, sizeof host);
  }
  /* A mapped name: the destination is what the system resolver says. */
  struct s5_proxy_lookup *l = calloc(1, sizeof *l);
  if (l == NULL) {
    snprintf(why, cap, "direct: no memory to resolve %s", t.name);
    return UV_ENOMEM;
  }
  char port[8];
  snprintf(port, sizeof port, "%u", target_port(&t.addr));
  snprintf(l->name, sizeof l->name, "%s", t.name[0] != '\0' ? t.name : host);
  l->p = p;
  l->req.data = l;
  /* UDP keeps the family the client sent in (its replies come from there). */
  struct addrinfo hints = {.ai_family = udp ? t.addr.ss_family : AF_UNSPEC,
                           .ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM,
                           .ai_flags = t.name[0] != '\0' ? AI_ADDRCONFIG : AI_NUMERICHOST};
  int r = uv_getaddrinfo(&p->w->loop, &l->req, direct_resolved, l->name, port, &hints);
  if (r < 0) {
    snprintf(why, cap, "direct: resolving %s: %s", t.name, uv_strerror(r));
    free(l);
    return r;
  }
  p->lookup = l;
  return 0;
}

void s5__proxy_direct_cancel(struct s5_proxy *p) {
  if (p->lookup == NULL) return;
  p->lookup->p = NULL; /* its callback frees it */
  uv_cancel((uv_req_t *)&p->lookup->req);
  p->lookup = NULL;
}
