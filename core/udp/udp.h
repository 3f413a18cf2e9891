/* SPDX-License-Identifier: MIT */
/* UDP through SOCKS5 UDP ASSOCIATE (RFC 1928 section 7), one set of
 * associations per worker.
 *
 * Datagrams reach us through lwIP (patch 0003's any-destination handler),
 * not before it: lwIP has already checked lengths and checksums and
 * reassembled fragments (a client may send datagrams larger than the TUN
 * MTU), and can send ICMP port unreachable with the offending packet quoted.
 * Replies go out through lwIP for the same reason: it fragments what is
 * larger than the MTU.
 *
 * An association (assoc.c) belongs to one client source address and port
 * and serves every destination of it (full cone): its own control
 * connection to the proxy (the SOCKS5 client, proxy.c: greeting,
 * authentication, UDP ASSOCIATE) and its own UDP socket to the relay
 * address the proxy returned (here). Replies from any remote come back
 * with that remote as their source. It ends when the proxy closes the
 * control connection, after [session] udp-idle-timeout without a datagram
 * either way, or when the worker stops. */
#ifndef S5_CORE_UDP_H
#define S5_CORE_UDP_H

#include <stddef.h>
#include <stdint.h>

#include "lwip/ip_addr.h"

struct s5_udp;
struct s5_wctx;
struct s5_netif;

/* Takes UDP datagrams from the worker's lwIP instance (call after
 * lwip_init() and the netif n, whose queue it writes replies to with USO:
 * core/netif/udp_tun.h). Returns the worker's association table, which the
 * worker keeps and lwIP hands back with every datagram, or NULL (logged). */
struct s5_udp *s5_udp_start(struct s5_wctx *w, struct s5_netif *n);

/* Ends every association, stops taking datagrams and frees u (NULL: no
 * table). Handles close with the worker's loop. */
void s5_udp_stop(struct s5_udp *u);

/* The worker's end-of-turn hook: sends the datagrams queued for the
 * relays this turn (core/udp/udp_io.c), then writes what the TUN writer
 * still holds (core/netif/udp_tun.c). */
void s5_udp_end_turn(struct s5_udp *u);

/* The worker's loop policy asks before it polls: how long (µs) UDP wishes
 * the loop waited first ([session] udp-coalesce while relays are busy; 0:
 * not at all). Ends the turn's count of datagrams read. */
uint64_t s5_udp_wait_wish(struct s5_udp *u);

/* --connections: puts every association of u into q (core/shared/conntab.h). */
struct s5_connq;
void s5_udp_list(const struct s5_udp *u, struct s5_connq *q);
/* The worker went idle: buffers' pages back to the kernel (udp_io.h). */
void s5_udp_release(struct s5_udp *u);

/* Sends len bytes to dst:dport as a UDP datagram from src:sport (both of
 * one family) into the TUN, fragmented by lwIP if above the MTU: relayed
 * datagrams and the mapped resolver's answers. Returns 0, or -1 when it
 * could not (counted as drop_udp). */
int s5_udp_output(struct s5_wctx *w, const ip_addr_t *src, uint16_t sport, const ip_addr_t *dst,
                  uint16_t dport, const uint8_t *data, size_t len);

#endif
