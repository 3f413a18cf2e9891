/* SPDX-License-Identifier: MIT */
#include "base/addr.h"

#include <arpa/inet.h>
#include <stdio.h>
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
