/* SPDX-License-Identifier: MIT */
/* [tun] icmp = off: echo requests from the TUN are dropped before lwIP sees
 * them (lwIP, whose netif takes every destination, would otherwise answer a
 * ping to any address). Done on the raw packet rather than inside lwIP so
 * that ICMP errors keep working (port unreachable for UDP with udp = off)
 * and lwIP needs no further patch. A pure function, unit-tested. */
#ifndef S5_CORE_ICMP_H
#define S5_CORE_ICMP_H

#include <stddef.h>
#include <stdint.h>

/* 1 if the IP packet pkt (len bytes as read from the TUN) is an ICMP echo
 * request (IPv4 type 8, ICMPv6 type 128, after any IPv6 extension headers)
 * or a fragment of an ICMP/ICMPv6 packet (errors are never fragmented by
 * their senders, so such fragments are pings), 0 otherwise. */
int s5_icmp_is_echo_request(const uint8_t *pkt, size_t len);

#endif
