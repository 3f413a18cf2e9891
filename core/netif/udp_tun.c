/* SPDX-License-Identifier: MIT */
/* UDP with segmentation offload on the TUN queue (see udp_tun.h for why).
 *
 * Download: s5_udp_tun_put() collects consecutive datagrams of one flow
 * (same addresses and ports) of one size, the last of a run may be
 * shorter, up to 64 of them and 64 KiB; s5_udp_tun_flush() writes them as
 * one packet: virtio_net_hdr (GSO_UDP_L4, gso_size = the datagram size,
 * checksum partial from the UDP header on), one IP header, one UDP header
 * whose length and checksum cover the whole; the kernel cuts it into the
 * datagrams, adjusting lengths, IPv4 ids and checksums per segment. A run
 * of one is written the same way without GSO. The relay reader flushes
 * after each read batch, while the payloads it points to are still there.
 *
 * Upload: a GSO UDP packet from the kernel is cut here into one packet per
 * gso_size bytes of payload, each with its own IP and UDP header, and each
 * goes into lwIP, which sees what the client's datagrams were. */
#include "netif/udp_tun.h"

#include <errno.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include "base/assert.h"
#include "base/chksum.h"
#include "base/log.h"
#include "ctx/wctx.h"

#include "lwip/inet_chksum.h"
#include "lwip/opt.h"
#include "lwip/pbuf.h"
#include "lwip/prot/ip.h"
#include "lwip/prot/ip4.h"
#include "lwip/prot/ip6.h"
#include "lwip/prot/udp.h"

/* Debian 12's kernel headers predate USO (Linux 6.2); the values are the
 * kernel's (include/uapi/linux/if_tun.h, virtio_net.h). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define S5_UDPTUN_SEGS 64 /* the kernel's UDP_MAX_SEGMENTS before 6.9 */
#define S5_UDPTUN_BASE_OFFLOADS (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) /* tun/queue.c's */

struct s5_udp_tun {
  struct s5_wctx *w;
  int fd;  /* the worker's TUN queue (the netif reads it; this writes to it too) */
  int uso; /* GSO UDP writes to the TUN */
  unsigned said_write : 1, said_split : 1; /* the first of each, at debug (tests look) */
  uint16_t ip_id;
  /* the run being collected */
  unsigned n;
  int closed; /* a shorter datagram ended it */
  ip_addr_t src, dst;
  uint16_t sport, dport;
  size_t seg, total;
  struct virtio_net_hdr vh;
  uint8_t hdr[IP6_HLEN + UDP_HLEN];
  struct iovec iov[2 + S5_UDPTUN_SEGS];
};

struct s5_udp_tun *s5_udp_tun_start(struct s5_wctx *w, int fd, int batch) {
  struct s5_udp_tun *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL; /* the UDP table, its owner, says so */
  t->w = w;
  t->fd = fd;
  if (!w->cfg->tun.offload) return t; /* no virtio header, no offloads */
  /* The offloads are the device's, set through any of its queues: every
   * worker asks the same. A kernel without USO refuses the whole request
   * (EINVAL) and keeps what tun/queue.c set. */
  unsigned long want = S5_UDPTUN_BASE_OFFLOADS | (batch ? TUN_F_USO4 | TUN_F_USO6 : 0);
  if (ioctl(fd, TUNSETOFFLOAD, want) < 0) {
    s5_debug("TUN queue (fd %d): %s: %s; UDP datagrams written one by one", fd,
             batch ? "the kernel refuses UDP segmentation offload (USO)" : "setting offloads",
             strerror(errno));
    return t;
  }
  t->uso = batch;
  s5_debug("TUN queue (fd %d): UDP segmentation offload %s", fd,
           batch ? "on" : "off (S5TUND_NO_UDP_OFFLOAD)");
  return t;
}

void s5_udp_tun_stop(struct s5_udp_tun *t) { free(t); }

/* ---------------------------------------------------------------- download */

static int same_flow(const struct s5_udp_tun *t, const ip_addr_t *src, uint16_t sport, const ip_addr_t *dst,
                     uint16_t dport) {
  return t->sport == sport && t->dport == dport && ip_addr_cmp(&t->src, src) && ip_addr_cmp(&t->dst, dst);
}

/* IP and UDP header of the run into t->hdr; returns their length. */
static size_t build_headers(struct s5_udp_tun *t) {
  uint8_t *h = t->hdr;
  size_t udplen = UDP_HLEN + t->total, iphl;
  uint16_t partial;
  if (IP_IS_V6(&t->dst)) {
    iphl = IP6_HLEN;
    memset(h, 0, IP6_HLEN);
    h[0] = 0x60;
    h[4] = (uint8_t)(udplen >> 8);
    h[5] = (uint8_t)udplen;
    h[6] = IP_PROTO_UDP;
    h[7] = UDP_TTL;
    memcpy(h + 8, ip_2_ip6(&t->src)->addr, 16);
    memcpy(h + 24, ip_2_ip6(&t->dst)->addr, 16);
    partial = s5_chksum_pseudo_partial(h + 8, 32, IP_PROTO_UDP, udplen);
  } else {
    iphl = IP_HLEN;
    size_t tot = IP_HLEN + udplen;
    uint16_t id = t->ip_id;
    t->ip_id = (uint16_t)(t->ip_id + t->n); /* the kernel numbers the segments on from id */
    memset(h, 0, IP_HLEN);
    h[0] = 0x45;
    h[2] = (uint8_t)(tot >> 8);
    h[3] = (uint8_t)tot;
    h[4] = (uint8_t)(id >> 8);
    h[5] = (uint8_t)id;
    h[8] = UDP_TTL;
    h[9] = IP_PROTO_UDP;
    memcpy(h + 12, &ip_2_ip4(&t->src)->addr, 4);
    memcpy(h + 16, &ip_2_ip4(&t->dst)->addr, 4);
    uint16_t sum = inet_chksum(h, IP_HLEN);
    memcpy(h + 10, &sum, 2);
    partial = s5_chksum_pseudo_partial(h + 12, 8, IP_PROTO_UDP, udplen);
  }
  uint8_t *u = h + iphl;
  u[0] = (uint8_t)(t->sport >> 8);
  u[1] = (uint8_t)t->sport;
  u[2] = (uint8_t)(t->dport >> 8);
  u[3] = (uint8_t)t->dport;
  u[4] = (uint8_t)(udplen >> 8);
  u[5] = (uint8_t)udplen;
  memcpy(u + 6, &partial, 2);
  return iphl + UDP_HLEN;
}

void s5_udp_tun_flush(struct s5_udp_tun *t) {
  if (t == NULL || t->n == 0) return;
  struct s5_wctx *w = t->w;
  S5_ASSERT(t->n <= S5_UDPTUN_SEGS);
  size_t hl = build_headers(t);
  memset(&t->vh, 0, sizeof t->vh);
  t->vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  t->vh.csum_start = (uint16_t)(hl - UDP_HLEN);
  t->vh.csum_offset = 6;
  if (t->n > 1) {
    t->vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
    t->vh.gso_size = (uint16_t)t->seg;
    t->vh.hdr_len = (uint16_t)hl;
  }
  t->iov[0] = (struct iovec){&t->vh, sizeof t->vh};
  t->iov[1] = (struct iovec){t->hdr, hl};
  unsigned n = t->n;
  t->n = 0;
  t->closed = 0;
  ssize_t r = writev(t->fd, t->iov, (int)(2 + n));
  if (r < 0) {
    if (w->stats->drop_tun_write == 0)
      s5_warn("write of %u UDP datagram(s) to the TUN queue failed: %s (further drops counted only)", n,
              strerror(errno));
    S5_STAT_ADD(w->stats, drop_tun_write, n);
    return;
  }
  if (n > 1 && !t->said_write) {
    t->said_write = 1;
    s5_debug("UDP: %u datagrams of %zu bytes written to the TUN as one GSO packet (first of its kind)", n,
             t->seg);
  }
  S5_STAT_ADD(w->stats, tun_tx_packets, n);
  S5_STAT_ADD(w->stats, tun_tx_bytes, (size_t)r - sizeof t->vh + (n - 1) * hl);
}

int s5_udp_tun_put(struct s5_udp_tun *t, const ip_addr_t *src, uint16_t sport, const ip_addr_t *dst,
                   uint16_t dport, const uint8_t *data, size_t len) {
  const struct s5_wctx *w = t->w;
  size_t iphl = IP_IS_V6(dst) ? IP6_HLEN : IP_HLEN;
  if (!t->uso || len == 0 || iphl + UDP_HLEN + len > w->cfg->tun.mtu ||
      IP_GET_TYPE(src) != IP_GET_TYPE(dst)) {
    s5_udp_tun_flush(t); /* what came before goes first */
    return -1;
  }
  if (t->n > 0 && (t->closed || len > t->seg || t->n == S5_UDPTUN_SEGS ||
                   iphl + UDP_HLEN + t->total + len > 0xffff || !same_flow(t, src, sport, dst, dport)))
    s5_udp_tun_flush(t);
  if (t->n == 0) {
    ip_addr_copy(t->src, *src);
    ip_addr_copy(t->dst, *dst);
    t->sport = sport;
    t->dport = dport;
    t->seg = len;
    t->total = 0;
  }
  t->iov[2 + t->n++] = (struct iovec){(void *)data, len};
  t->total += len;
  if (len < t->seg) t->closed = 1;
  return 0;
}

/* ---------------------------------------------------------------- upload */

/* One segment of the GSO packet: the headers of pkt with lengths for
 * plen bytes of payload at off, IPv4 id + k. NULL when out of memory. */
static struct pbuf *segment(const uint8_t *pkt, size_t iphl, int v6, size_t off, size_t plen, unsigned k) {
  size_t hl = iphl + UDP_HLEN;
  struct pbuf *q = pbuf_alloc(PBUF_RAW, (u16_t)(hl + plen), PBUF_RAM);
  if (q == NULL) return NULL;
  uint8_t *h = q->payload;
  memcpy(h, pkt, hl);
  memcpy(h + hl, pkt + hl + off, plen);
  size_t udplen = UDP_HLEN + plen;
  if (v6) {
    h[4] = (uint8_t)(udplen >> 8);
    h[5] = (uint8_t)udplen;
  } else {
    size_t tot = iphl + udplen;
    uint16_t id = (uint16_t)(((unsigned)h[4] << 8 | h[5]) + k);
    h[2] = (uint8_t)(tot >> 8);
    h[3] = (uint8_t)tot;
    h[4] = (uint8_t)(id >> 8);
    h[5] = (uint8_t)id;
    h[10] = h[11] = 0;
    uint16_t sum = inet_chksum(h, (u16_t)iphl);
    memcpy(h + 10, &sum, 2);
  }
  h[iphl + 4] = (uint8_t)(udplen >> 8);
  h[iphl + 5] = (uint8_t)udplen;
  /* The checksum stays partial: lwIP does not verify it (lwipopts.h). */
  return q;
}

int s5_udp_tun_split(struct s5_wctx *w, struct s5_udp_tun *t, struct pbuf *p, unsigned gso_size) {
  const uint8_t *pkt = p->payload;
  if (p->len != p->tot_len || p->len < IP_HLEN + UDP_HLEN || gso_size == 0) return -1;
  int v6 = pkt[0] >> 4 == 6;
  size_t iphl, total;
  if (v6) {
    iphl = IP6_HLEN; /* the kernel's UDP GSO packets carry no extension headers */
    if (p->len < IP6_HLEN + UDP_HLEN || pkt[6] != IP_PROTO_UDP) return -1;
    total = IP6_HLEN + ((size_t)pkt[4] << 8 | pkt[5]);
  } else {
    iphl = (pkt[0] & 0x0f) * 4u;
    if (pkt[0] >> 4 != 4 || iphl < IP_HLEN || pkt[9] != IP_PROTO_UDP) return -1;
    total = (size_t)pkt[2] << 8 | pkt[3];
  }
  if (total > p->len || total < iphl + UDP_HLEN) return -1;
  size_t payload = total - iphl - UDP_HLEN;
  if (t != NULL && !t->said_split) {
    t->said_split = 1;
    s5_debug("UDP: a GSO packet from the TUN split into datagrams of %u bytes (first of its kind)", gso_size);
  }
  unsigned k = 0;
  for (size_t off = 0; off < payload; off += gso_size, k++) {
    size_t plen = payload - off < gso_size ? payload - off : gso_size;
    struct pbuf *q = segment(pkt, iphl, v6, off, plen, k);
    if (q == NULL) {
      S5_STAT_ADD(w->stats, drop_no_memory, 1);
      continue;
    }
    w->netif.input(q, &w->netif); /* ip_input() owns q from here */
  }
  pbuf_free(p);
  return 0;
}
