/* SPDX-License-Identifier: MIT */
/* Where a client's datagram goes (see udp_dest.h): its SOCKS5 header (by
 * name for a mapped address), cached per association for a plain one, and
 * a new association's route (core/outbound/route.h). */
#include "udp/udp_dest.h"
#include "udp/udp_ss.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "dns/dnsmap.h"
#include "netif/icmp.h"
#include "shared/stats.h"
#include "sniff/sniff.h"
#include "sniff/sniff_skip.h"
#include "socks5/socks5_udp.h"

#include "lwip/pbuf.h"

/* The SOCKS5 form of a destination: by name for a mapped DNS address. */
int s5__udp_dest_header(const ip_addr_t *dst, uint16_t port, uint8_t *hdr, size_t cap) {
  struct s5_socks5_addr a;
  memset(&a, 0, sizeof a);
  a.port = port;
  int mapped = s5_dnsmap_name_of_ip(dst, a.name, sizeof a.name);
  if (mapped < 0) return -1;
  if (mapped > 0) {
    a.family = AF_UNSPEC;
    a.name_len = (uint8_t)strlen(a.name);
  } else {
    a.family = s5_addr_bytes(dst, a.ip) == 16 ? AF_INET6 : AF_INET;
  }
  return s5_socks5_udp_header_write(hdr, cap, &a);
}

/* The SOCKS5 header of an association's last destination, built once and
 * reused while the client keeps sending there, which is the common case.
 * Only for plain addresses: a mapped one may stand for another name later,
 * so its header is built for each datagram. Returns its length (*hdr
 * pointed at it), or -1 to build it. */
int s5__udp_cached_header(const struct s5_assoc *a, const ip_addr_t *dst, uint16_t port,
                          const uint8_t **hdr) {
  char name[256]; /* as struct s5_socks5_addr holds one */
  if (a->hdr_len == 0 || a->hdr_port != port || !ip_addr_cmp(&a->hdr_dst, dst)) return -1;
  if (s5_dnsmap_name_of_ip(dst, name, sizeof name) != 0) return -1; /* a range check for a plain one */
  *hdr = a->hdr;
  return a->hdr_len;
}

void s5__udp_cache_header(struct s5_assoc *a, const ip_addr_t *dst, uint16_t port, const uint8_t *hdr,
                          int hlen) {
  if ((size_t)hlen > sizeof a->hdr || hdr[3] == 0x03) return; /* ATYP 3: by name, mapped */
  ip_addr_copy(a->hdr_dst, *dst);
  a->hdr_port = port;
  memcpy(a->hdr, hdr, (size_t)hlen);
  a->hdr_len = (uint8_t)hlen;
}

/* A route's first upstream by its kind (direct: cfg->direct), or NULL
 * with why. */
const struct s5_upstream_cfg *s5__udp_route_up(struct s5_route *r, enum s5_route_kind kind, char *why,
                                               size_t len) {
  switch (kind) {
    case S5_ROUTE_PROXY: return s5_route_first(r, why, len);
    case S5_ROUTE_DIRECT: return &r->cfg->direct;
    case S5_ROUTE_BLOCK: snprintf(why, len, "blocked by [rules]"); break;
    case S5_ROUTE_GONE: snprintf(why, len, "its mapped address stands for no name any more"); break;
  }
  return NULL;
}

/* The new association's route: its first destination decides for all it
 * will carry. [sniff] quic: unless the destination failed too often
 * (sniff_skipped), NULL with r->sniff set: its first datagrams first. */
const struct s5_upstream_cfg *s5__udp_route(struct s5_wctx *w, const ip_addr_t *src, const ip_addr_t *dst,
                                            uint16_t dport, struct s5_route *r, char *why, size_t len) {
  struct sockaddr_storage to, from;
  s5_addr_to_sockaddr(dst, dport, &to);
  s5_addr_to_sockaddr(src, 0, &from);
  enum s5_route_kind kind = s5_route_init(r, w->cfg, IPPROTO_UDP, &to, &from);
  if (r->sniff != 0) {
    if (w->sniff_skips == NULL ||
        !s5_sniff_skipped(w->sniff_skips, IPPROTO_UDP, dst, dport, uv_now(&w->loop)))
      return NULL;
    S5_STAT_ADD(w->stats, sniff_skipped, 1);
    kind = s5_route_named(r, NULL, S5_NAME_NONE, &from); /* by address: its rule counted */
  }
  return s5__udp_route_up(r, kind, why, len);
}

/* A datagram of the association's client to dst:dport: with its SOCKS5
 * header to the relay (direct: to its one destination, as it is), or
 * queued while the association starts. Takes p. */
void s5__udp_datagram(struct s5_assoc *a, struct pbuf *p, const ip_addr_t *dst, uint16_t dport) {
  struct s5_wctx *w = a->w;
  uint8_t hdr_buf[S5_SOCKS5_UDP_HDR_MAX];
  const uint8_t *hdr = hdr_buf;
  int hlen = 0;
  if (a->direct) { /* one destination, no header */
    if (dport != a->rec.dest_port || !ip_addr_cmp(dst, &a->rec.dest)) hlen = -1;
  } else if (a->named_hdr != NULL && dport == a->rec.dest_port && ip_addr_cmp(dst, &a->rec.dest)) {
    hdr = a->named_hdr; /* [sniff] override: by the name learnt */
    hlen = a->named_hdr_len;
  } else {
    hlen = s5__udp_cached_header(a, dst, dport, &hdr);
    if (hlen < 0) hlen = s5__udp_dest_header(dst, dport, hdr_buf, sizeof hdr_buf);
    if (hlen >= 0 && hdr == hdr_buf) s5__udp_cache_header(a, dst, dport, hdr_buf, hlen);
  }
  if (hlen < 0) { /* a mapped address whose name is gone; direct: another destination */
    s5_icmp_port_unreachable(w, p);
    return;
  }
  s5_assoc_touch(a);
  a->rec.bytes_up += p->tot_len;
  if (a->state == S5_ASSOC_READY) {
    s5__udp_relay_send(a, hdr, (size_t)hlen, p);
    pbuf_free(p);
    return;
  }
  struct pbuf *h = a->queued < S5_UDP_QUEUE_MAX ? pbuf_alloc(PBUF_RAW, (u16_t)hlen, PBUF_RAM) : NULL;
  if (h == NULL) {
    S5_STAT_ADD(w->stats, drop_udp, 1);
    pbuf_free(p);
    return;
  }
  pbuf_take(h, hdr, (u16_t)hlen);
  pbuf_cat(h, p); /* h takes over the reference to p */
  a->queue[a->queued++] = h;
}
