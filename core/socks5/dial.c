/* SPDX-License-Identifier: MIT */
/* See dial.h. */
#include "socks5/dial.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/addr.h"
#include "ini/config.h"

int s5_dial_prepare(uv_tcp_t *sock, uint32_t mark, const char *peer, char *why, size_t cap) {
  uv_os_fd_t fd;
  int r = uv_fileno((const uv_handle_t *)sock, &fd);
  if (r < 0) {
    snprintf(why, cap, "socket to %s: %s", peer, uv_strerror(r));
    return r;
  }
  if (mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) < 0) {
    r = -errno;
    snprintf(why, cap, "SO_MARK %u on the socket to %s: %s", mark, peer, strerror(errno));
    return r;
  }
  r = uv_tcp_nodelay(sock, 1);
  if (r < 0) snprintf(why, cap, "TCP_NODELAY on the socket to %s: %s", peer, uv_strerror(r));
  return r;
}

int s5_dial_adopt(uv_tcp_t *sock, const uv_tcp_t *warm, char *why, size_t cap) {
  uv_os_fd_t fd = -1;
  int r = uv_fileno((const uv_handle_t *)warm, &fd);
  int dup_fd = r < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) {
    snprintf(why, cap, "taking a pooled proxy connection: %s", r < 0 ? uv_strerror(r) : strerror(errno));
    return r < 0 ? r : -errno;
  }
  if ((r = uv_tcp_open(sock, dup_fd)) < 0) {
    snprintf(why, cap, "adopting a pooled proxy connection: %s", uv_strerror(r));
    close(dup_fd);
  }
  return r;
}

struct s5_dial_lookup {
  uv_getaddrinfo_t req;
  s5_dial_resolved *cb; /* NULL once cancelled */
  void *arg;
  char name[256];
};

static void dial_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
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

int s5_dial_resolve(uv_loop_t *loop, const struct sockaddr_storage *addr, const char *name, int datagram,
                    s5_dial_resolved *cb, void *arg, struct s5_dial_lookup **out, char *why, size_t cap) {
  struct s5_dial_lookup *l = calloc(1, sizeof *l);
  if (l == NULL) {
    snprintf(why, cap, "direct: no memory to resolve %s", name);
    return UV_ENOMEM;
  }
  char port[8];
  snprintf(port, sizeof port, "%u", s5_sockaddr_port(addr));
  if (name[0] != '\0') snprintf(l->name, sizeof l->name, "%s", name);
  else s5_sockaddr_host(addr, l->name, sizeof l->name);
  l->cb = cb;
  l->arg = arg;
  l->req.data = l;
  struct addrinfo hints = {.ai_family = datagram ? addr->ss_family : AF_UNSPEC,
                           .ai_socktype = datagram ? SOCK_DGRAM : SOCK_STREAM,
                           .ai_flags = name[0] != '\0' ? AI_ADDRCONFIG : AI_NUMERICHOST};
  int r = uv_getaddrinfo(loop, &l->req, dial_resolved, l->name, port, &hints);
  if (r < 0) {
    snprintf(why, cap, "direct: resolving %s: %s", l->name, uv_strerror(r));
    free(l);
    return r;
  }
  *out = l;
  return 0;
}

void s5_dial_cancel(struct s5_dial_lookup *l) {
  l->cb = NULL; /* its callback frees it */
  uv_cancel((uv_req_t *)&l->req);
}

int s5_dial_loops(const struct s5_config *cfg, const struct sockaddr_storage *to, const char *name, char *why,
                  size_t cap) {
  const struct s5_prefix *in[] = {&cfg->tun.ipv4, &cfg->tun.ipv6, &cfg->dns.network, &cfg->dns.network6};
  if (cfg->tun.netns[0] != '\0') return 0; /* our sockets do not route into it */
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    if (!s5_prefix_covers(in[i], to)) continue;
    char addr[S5_SOCKADDR_STRLEN], pfx[64], from[300] = "";
    if (name != NULL && name[0] != '\0') snprintf(from, sizeof from, "%s resolved to ", name);
    snprintf(why, cap, "direct: %s%s is inside %s%s %s, so it would come back into the device (a loop)", from,
             s5_sockaddr_host(to, addr, sizeof addr), i < 2 ? cfg->tun.name : "[dns] ",
             i < 2    ? "'s prefix"
             : i == 2 ? "network"
                      : "network6",
             s5_prefix_text(in[i], pfx, sizeof pfx));
    return 1;
  }
  return 0;
}
