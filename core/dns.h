/* SPDX-License-Identifier: MIT */
/* Mapped DNS ([dns] section): a resolver address inside the TUN's network
 * answers A (and with network6, AAAA) queries with an address from a pool
 * that stands for the name;
 * a connection to such an address reaches the proxy as a CONNECT by name
 * (ATYP 3), so names are resolved by the proxy, never locally.
 *
 * The table (dns_table.c) is created by s5_dns_setup() in the main process
 * before any worker starts, in a shared mapping, so every worker thread or
 * worker process of one s5tund uses the same names and addresses. */
#ifndef S5_CORE_DNS_H
#define S5_CORE_DNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "lwip/ip_addr.h"

struct pbuf;
struct s5_wctx;

/* Creates the shared table when [dns] address is set. Call once, before
 * the workers start. Returns 0, or -1 (logged). */
int s5_dns_setup(const struct s5_config *cfg);

/* 1 if a UDP datagram to dst:port is a query for the mapped resolver. */
int s5_dns_is_resolver(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port);

/* Answers the query p (UDP payload; freed here) that src:sport sent to the
 * resolver at dst:dport. Malformed queries are dropped and counted. */
void s5_dns_query(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, uint16_t sport,
                  const ip_addr_t *dst, uint16_t dport);

/* The name a destination address stands for. Returns 1 with the name in
 * name (cap >= 256), 0 when dst is not a mapped address (or mapped DNS is
 * off), -1 when it is in the pool but stands for no name (any more). */
int s5_dns_name_of(const struct sockaddr *dst, char *name, size_t cap);
int s5_dns_name_of_ip(const ip_addr_t *dst, char *name, size_t cap);

/* The pool address standing for name (1..253 bytes, as the proxy gave it),
 * mapping it if needed, from the IPv6 pool when v6 is set: for datagrams a
 * proxy reports as coming from a name. Returns 0 with *out set, -1 when
 * mapped DNS (or that pool) is off or the name is unusable. */
int s5_dns_address_of(const char *name, size_t len, int v6, ip_addr_t *out);

#endif
