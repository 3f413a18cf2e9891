/* SPDX-License-Identifier: MIT */
/* The start of a partial checksum, shared by the offload paths: TCP
 * segments (core/netif/netif.c) and UDP runs (core/netif/udp_tun.c) written to the TUN
 * with VIRTIO_NET_HDR_F_NEEDS_CSUM carry in their checksum field the folded
 * pseudo-header sum, which the kernel completes over the payload. */
#ifndef S5_CORE_CHKSUM_H
#define S5_CORE_CHKSUM_H

#include <stddef.h>
#include <stdint.h>

/* The folded, not complemented sum of the addresses (alen bytes: 8 for
 * IPv4, 32 for IPv6, as they stand in the IP header), the protocol and the
 * transport length, in network order as it goes into the header. */
uint16_t s5_chksum_pseudo_partial(const uint8_t *addrs, int alen, uint8_t proto, size_t len);

#endif
