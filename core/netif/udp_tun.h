/* SPDX-License-Identifier: MIT */
/* UDP datagrams between the TUN queue and the associations, with UDP
 * segmentation offload (USO) on the TUN device.
 *
 * Why: without it, every 1400-byte datagram from the relay costs a pbuf,
 * a copy, lwIP's output path and a writev() of its own. Kernels from 6.2
 * take TUN_F_USO4/TUN_F_USO6 in TUNSETOFFLOAD: one write with a
 * virtio_net_hdr of gso_type VIRTIO_NET_HDR_GSO_UDP_L4 stands for many
 * equal-size datagrams of one flow, cut by the kernel (checksums too). So
 * a relay read batch's datagrams of one flow are written as one GSO packet
 * whose IP and UDP headers we build ourselves, the payloads pointing into
 * the relay's read buffers (no copy). Datagrams above the MTU (lwIP
 * fragments them) and every datagram where the kernel refuses USO, or
 * S5TUND_NO_UDP_OFFLOAD is set, go through lwIP as before (the caller, udp.c).
 *
 * The other way, with USO on the device the kernel may hand over one GSO
 * packet for many datagrams of a client that sends with UDP_SEGMENT:
 * s5_udp_tun_split() cuts it back into the datagrams, each its own packet
 * into lwIP. One instance per worker thread. */
#ifndef S5_CORE_UDP_TUN_H
#define S5_CORE_UDP_TUN_H

#include <stddef.h>
#include <stdint.h>

#include "lwip/ip_addr.h"

struct s5_wctx;
struct s5_udp_tun;
struct pbuf;

/* The writer of worker w's TUN queue fd (not owned): probes USO on it
 * (before privileges are dropped); batch = 0 turns it off (and off on the
 * device). Returns it, or NULL (logged). stop frees it (NULL: none). */
struct s5_udp_tun *s5_udp_tun_start(struct s5_wctx *w, int fd, int batch);
void s5_udp_tun_stop(struct s5_udp_tun *t);

/* A datagram from src:sport to the client dst:dport (one family). data
 * must stay valid until s5_udp_tun_flush(). Returns 0, or -1 when it is
 * not for this path (no USO, above the MTU): the caller sends it through
 * lwIP (s5_udp_output), after what was collected before it is written. */
int s5_udp_tun_put(struct s5_udp_tun *t, const ip_addr_t *src, uint16_t sport, const ip_addr_t *dst,
                   uint16_t dport, const uint8_t *data, size_t len);

/* Writes what s5_udp_tun_put() collected. */
void s5_udp_tun_flush(struct s5_udp_tun *t);

/* A packet read with gso_type VIRTIO_NET_HDR_GSO_UDP_L4 and gso_size:
 * each datagram goes into w's lwIP netif as its own packet; p is consumed.
 * t (NULL while UDP is not running) only notes the first split for the
 * log. Returns 0, or -1 when p is no UDP packet it can split (p then
 * untouched). */
int s5_udp_tun_split(struct s5_wctx *w, struct s5_udp_tun *t, struct pbuf *p, unsigned gso_size);

#endif
