/* SPDX-License-Identifier: MIT */
/* Private to udp/: where a client's datagram goes (udp_dest.c). */
#ifndef S5_CORE_UDP_DEST_H
#define S5_CORE_UDP_DEST_H

#include <stddef.h>
#include <stdint.h>

#include "ctx/wctx.h"
#include "udp/assoc.h"

#include "lwip/ip_addr.h"

/* The SOCKS5 UDP header for dst:port into hdr: its length, or -1 (a
 * mapped address whose name is gone). */
int s5__udp_dest_header(const ip_addr_t *dst, uint16_t port, uint8_t *hdr, size_t cap);
/* The association's cached header for dst:port (*hdr): its length, or -1
 * to build it; and the cache's refill. */
int s5__udp_cached_header(const struct s5_assoc *a, const ip_addr_t *dst, uint16_t port, const uint8_t **hdr);
void s5__udp_cache_header(struct s5_assoc *a, const ip_addr_t *dst, uint16_t port, const uint8_t *hdr,
                          int hlen);
/* A new association's route (made into r) and its first upstream, on its
 * first datagram (direct: cfg->direct), or NULL with why (blocked, a
 * mapped address without a name, no upstream up or able to carry UDP);
 * NULL with r->sniff set: [sniff] quic reads its first datagrams first
 * (core/udp/udp_sniff.h). */
const struct s5_upstream_cfg *s5__udp_route(struct s5_wctx *w, const ip_addr_t *src, const ip_addr_t *dst,
                                            uint16_t dport, struct s5_route *r, char *why, size_t len);
/* The first upstream of a route of kind, or NULL with why. */
const struct s5_upstream_cfg *s5__udp_route_up(struct s5_route *r, enum s5_route_kind kind, char *why,
                                               size_t len);
/* A client's datagram to dst:dport into its association (not SNIFFING):
 * to the relay with its SOCKS5 header, or queued while it starts; ICMP
 * port unreachable when it has no header. Takes p. */
struct pbuf;
void s5__udp_datagram(struct s5_assoc *a, struct pbuf *p, const ip_addr_t *dst, uint16_t dport);

#endif
