/* SPDX-License-Identifier: MIT */
/* lwIP's addresses, the one place they are converted: as text for logs
 * (RFC 5952 for IPv6: lower case, the longest run of zero groups
 * shortened, as every other tool prints them; lwIP's own ipaddr_ntoa()
 * writes upper-case hex), and to and from socket addresses (whose parts
 * and text are ini/sockaddr.h's, on the floor below, which parses them). */
#ifndef S5_CORE_ADDR_H
#define S5_CORE_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ini/sockaddr.h"
#include "lwip/ip_addr.h"

/* Room for any address with brackets and a port: "[v6]:65535". */
#define S5_ADDR_STRLEN 56

/* Where a new flow goes: the client's destination address and port, or
 * (name not empty) a mapped DNS name with that port, which the proxy
 * resolves. A flow's route (core/outbound/) makes it once. */
struct s5_target {
  struct sockaddr_storage addr;
  char name[256];
};

/* The address alone. Returns buf. */
const char *s5_addr_str(const ip_addr_t *ip, char *buf, size_t len);

/* "a.b.c.d:port" or "[v6]:port". Returns buf. */
const char *s5_addr_port_str(const ip_addr_t *ip, uint16_t port, char *buf, size_t len);

/* ip and port (host order) as a sockaddr_in or sockaddr_in6 in ss. */
void s5_addr_to_sockaddr(const ip_addr_t *ip, uint16_t port, struct sockaddr_storage *ss);

/* ip's bytes (network order) into out: returns 4 or 16, their count. */
size_t s5_addr_bytes(const ip_addr_t *ip, uint8_t out[16]);

/* An address from len (4 or 16) bytes in network order. */
void s5_addr_from_bytes(ip_addr_t *ip, const uint8_t *bytes, size_t len);

/* The other way: ss's address into ip, its port (host order) into *port
 * when port is not NULL. Returns 0, or -1 when ss is neither family. */
int s5_addr_from_sockaddr(const struct sockaddr_storage *ss, ip_addr_t *ip, uint16_t *port);

#endif
