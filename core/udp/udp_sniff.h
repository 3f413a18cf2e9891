/* SPDX-License-Identifier: MIT */
/* Private to udp/: [sniff] quic for a new association (udp_sniff.c).
 *
 * An association whose route could go elsewhere by name (outbound/route.h:
 * its port in [sniff] quic, its address not mapped, not skipped) starts
 * SNIFFING: no proxy connection yet. Its client's datagrams to its first
 * destination are held in its queue, as lwIP gave them (no copy, at most
 * S5_UDP_SNIFF_HOLD), each read by the QUIC sniffer (sniff/sniff.h), until
 * a ClientHello's server_name is found, none can be (a datagram that is
 * not a QUIC v1 Initial of the first one's DCID, the holder full, a
 * datagram to another destination), or [sniff] timeout passes. Then the
 * rules run with the name (s5_route_named), the association goes through
 * the upstream they give (with override, its datagrams to that destination
 * carry the name as their SOCKS5 address), and the held datagrams go in
 * the order they came, before any later one. Counted: sniff_quic,
 * sniff_none, sniff_timeout; a failure is told to the worker's table
 * (sniff/sniff_skip.h). */
#ifndef S5_CORE_UDP_SNIFF_H
#define S5_CORE_UDP_SNIFF_H

#include <stdint.h>

#include "udp/assoc.h"

#include "lwip/ip_addr.h"

struct pbuf;

/* The association (SNIFFING) was just made: its sniffer, its timer. */
void s5__udp_sniff_start(struct s5_assoc *a);
/* A datagram of its client while SNIFFING: held and read, or (another
 * destination) the route decided first. Takes p. */
void s5__udp_sniff_datagram(struct s5_assoc *a, struct pbuf *p, const ip_addr_t *dst, uint16_t dport);

#endif
