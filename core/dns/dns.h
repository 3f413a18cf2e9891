/* SPDX-License-Identifier: MIT */
/* Mapped DNS ([dns] section): a resolver address inside the TUN's network
 * answers A (and with network6, AAAA) queries with an address from a pool
 * that stands for the name;
 * a connection to such an address reaches the proxy as a CONNECT by name
 * (ATYP 3), so names are resolved by the proxy, never locally.
 *
 * This is the resolver: it makes answers and leaves sending them to its
 * callers (udp.c, which has the datagram path; dns_tcp.c, connections).
 * With [dns] hijack it also takes what is sent to port 53 of any other
 * address. The names and addresses live in dnsmap.c, which the resolver
 * and the proxy side share. */
#ifndef S5_CORE_DNS_H
#define S5_CORE_DNS_H

#include <stddef.h>
#include <stdint.h>

#include "ini/config.h"
#include "dns/dns_msg.h"
#include "lwip/ip_addr.h"

struct pbuf;
struct s5_wctx;

/* Creates the shared name table when [dns] address is set (dnsmap.c) and
 * says so. Call once, before the workers start. Returns 0, or -1 (logged). */
int s5_dns_setup(const struct s5_config *cfg);

/* Whom a datagram or connection to dst:port is for. */
enum s5_dns_dest {
  S5_DNS_PASS = 0,     /* not the resolver's: it goes to the proxy */
  S5_DNS_RESOLVER = 1, /* [dns] address, port 53 */
  S5_DNS_HIJACKED = 2, /* port 53 of another address, with [dns] hijack */
};
enum s5_dns_dest s5_dns_dest(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port);

/* The answer to the query msg (len bytes; only the first
 * S5_DNS_QUERY_READ are read) that src sent, into out (cap >=
 * S5_DNS_ANSWER_MAX): the one query-to-answer function of UDP and TCP.
 * dest says where it was sent (a hijacked one is counted as such).
 * Returns its length, or -1 when there is none to send (malformed:
 * counted as drop_dns). */
int s5_dns_answer(struct s5_wctx *w, const uint8_t *msg, size_t len, const ip_addr_t *src,
                  enum s5_dns_dest dest, uint8_t *out, size_t cap);

/* The same for a datagram p (UDP payload; freed here). */
int s5_dns_answer_pbuf(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, enum s5_dns_dest dest,
                       uint8_t *out, size_t cap);

#endif
