/* SPDX-License-Identifier: MIT */
/* Mapped DNS ([dns] section): a resolver address inside the TUN's network
 * answers A (and with network6, AAAA) queries with an address from a pool
 * that stands for the name;
 * a connection to such an address reaches the proxy as a CONNECT by name
 * (ATYP 3), so names are resolved by the proxy, never locally.
 *
 * This is the resolver: it makes answers and leaves sending them to its
 * caller (udp.c, which has the datagram path). The names and addresses
 * live in dnsmap.c, which the resolver and the proxy side share. */
#ifndef S5_CORE_DNS_H
#define S5_CORE_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dns_msg.h"
#include "lwip/ip_addr.h"

struct pbuf;
struct s5_wctx;

/* Creates the shared name table when [dns] address is set (dnsmap.c) and
 * says so. Call once, before the workers start. Returns 0, or -1 (logged). */
int s5_dns_setup(const struct s5_config *cfg);

/* 1 if a UDP datagram to dst:port is a query for the mapped resolver. */
int s5_dns_is_resolver(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port);

/* The answer to the query p (UDP payload; freed here) that src sent, into
 * out (cap >= S5_DNS_ANSWER_MAX). Returns its length, or -1 when there is
 * none to send (malformed: dropped and counted as drop_dns). */
int s5_dns_answer(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, uint8_t *out, size_t cap);

#endif
