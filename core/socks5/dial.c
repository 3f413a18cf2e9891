/* SPDX-License-Identifier: MIT */
/* See dial.h. */
#include "socks5/dial.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
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

int s5_dial_loops(const struct s5_config *cfg, const struct sockaddr_storage *to, const char *name, char *why,
                  size_t cap) {
  static const char *const what[] = {"'s prefix", "'s prefix", " network", " network6"};
  const struct s5_prefix *in[] = {&cfg->tun.ipv4, &cfg->tun.ipv6, &cfg->dns.network, &cfg->dns.network6};
  if (cfg->tun.netns[0] != '\0') return 0; /* our sockets do not route into it */
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    if (!s5_prefix_covers(in[i], to)) continue;
    char addr[S5_SOCKADDR_STRLEN], pfx[64], from[300] = "";
    int named = name != NULL && name[0] != '\0';
    if (named) snprintf(from, sizeof from, "%s resolved to ", name);
    snprintf(
      why, cap, "direct: %s%s is inside %s%s %s, so it would come back into the device (a loop)%s", from,
      s5_sockaddr_host(to, addr, sizeof addr), i < 2 ? cfg->tun.name : "[dns]", what[i],
      s5_prefix_text(in[i], pfx, sizeof pfx),
      named && i >= 2 ? "; the system resolver asked s5tund's own mapped DNS: set [rules] resolver" : "");
    return 1;
  }
  return 0;
}
