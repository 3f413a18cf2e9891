/* SPDX-License-Identifier: MIT */
#include "base/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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
  if (IP_IS_V6(ip)) s5_sockaddr_from_raw(ip_2_ip6(ip)->addr, 16, port, ss);
  else s5_sockaddr_from_raw(&ip_2_ip4(ip)->addr, 4, port, ss);
}

size_t s5_addr_bytes(const ip_addr_t *ip, uint8_t out[16]) {
  if (IP_IS_V6(ip)) {
    memcpy(out, ip_2_ip6(ip)->addr, 16);
    return 16;
  }
  memcpy(out, &ip_2_ip4(ip)->addr, 4);
  return 4;
}

void s5_addr_from_bytes(ip_addr_t *ip, const uint8_t *bytes, size_t len) {
  if (len == 16) {
    ip_addr_set_zero_ip6(ip);
    memcpy(ip_2_ip6(ip)->addr, bytes, 16);
  } else {
    ip_addr_set_zero_ip4(ip);
    memcpy(&ip_2_ip4(ip)->addr, bytes, 4);
  }
}

int s5_addr_from_sockaddr(const struct sockaddr_storage *ss, ip_addr_t *ip, uint16_t *port) {
  size_t len;
  const void *raw = s5_sockaddr_raw(ss, &len);
  if (raw == NULL) return -1;
  s5_addr_from_bytes(ip, raw, len);
  if (port != NULL) *port = s5_sockaddr_port(ss);
  return 0;
}
