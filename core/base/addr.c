/* SPDX-License-Identifier: MIT */
#include "base/addr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

const char *s5_addr_str(const ip_addr_t *ip, char *buf, size_t len) {
  const void *raw = IP_IS_V6(ip) ? (const void *)ip_2_ip6(ip)->addr : (const void *)&ip_2_ip4(ip)->addr;
  if (inet_ntop(IP_IS_V6(ip) ? AF_INET6 : AF_INET, raw, buf, (socklen_t)len) == NULL && len > 0)
    buf[0] = '\0';
  return buf;
}

const char *s5_addr_port_str(const ip_addr_t *ip, uint16_t port, char *buf, size_t len) {
  char a[INET6_ADDRSTRLEN];
  s5_addr_str(ip, a, sizeof a);
  snprintf(buf, len, IP_IS_V6(ip) ? "[%s]:%u" : "%s:%u", a, port);
  return buf;
}

void s5_addr_to_sockaddr(const ip_addr_t *ip, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (IP_IS_V6(ip)) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    memcpy(&sin6->sin6_addr, ip_2_ip6(ip)->addr, 16);
  } else {
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr.s_addr = ip_2_ip4(ip)->addr;
  }
}
