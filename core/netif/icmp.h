/* SPDX-License-Identifier: MIT */
/* ICMP where s5tund takes part in it.
 *
 * [tun] icmp = off: echo requests from the TUN are dropped before lwIP sees
 * them (lwIP, whose netif takes every destination, would otherwise answer a
 * ping to any address). Done on the raw packet rather than inside lwIP so
 * that ICMP errors keep working (port unreachable for UDP with udp = off)
 * and lwIP needs no further patch. A pure function, unit-tested.
 *
 * Port unreachable for a UDP datagram that goes nowhere (udp = off, a
 * proxy that just failed, a mapped address without a name), as a host
 * without the port would answer. */
#ifndef S5_CORE_ICMP_H
#define S5_CORE_ICMP_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the IP packet pkt (len bytes as read from the TUN) is an ICMP echo
 * request (IPv4 type 8, ICMPv6 type 128, after any IPv6 extension headers)
 * or a fragment of an ICMP/ICMPv6 packet (errors are never fragmented by
 * their senders, so such fragments are pings), 0 otherwise. */
int s5_icmp_is_echo_request(const uint8_t *pkt, size_t len);

/* ICMP (ICMPv6) port unreachable quoting the UDP datagram p (its payload,
 * as lwIP's UDP input hands it; freed here), sent from the address the
 * datagram was for. lwIP's own icmp_port_unreach() would take the source
 * from the netif, which has no address (it takes every destination). Only
 * valid inside lwIP's input processing (ip_current_*). Counted as drop_udp. */
struct pbuf;
struct s5_wctx;
void s5_icmp_port_unreachable(struct s5_wctx *w, struct pbuf *p);

#endif
