/* SPDX-License-Identifier: MIT */
/* Text forms of lwIP addresses for logs: RFC 5952 for IPv6 (lower case,
 * the longest run of zero groups shortened), as every other tool prints
 * them; lwIP's own ipaddr_ntoa() writes upper-case hex. */
#ifndef S5_CORE_ADDR_H
#define S5_CORE_ADDR_H

#include <stddef.h>
#include <stdint.h>

#include "lwip/ip_addr.h"

/* Room for any address with brackets and a port: "[v6]:65535". */
#define S5_ADDR_STRLEN 56

/* The address alone. Returns buf. */
const char *s5_addr_str(const ip_addr_t *ip, char *buf, size_t len);

/* "a.b.c.d:port" or "[v6]:port". Returns buf. */
const char *s5_addr_port_str(const ip_addr_t *ip, uint16_t port, char *buf, size_t len);

#endif
