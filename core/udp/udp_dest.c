/* SPDX-License-Identifier: MIT */
/* Where a client's datagram goes (see udp_dest.h): its SOCKS5 header (by
 * name for a mapped address), cached per association for a plain one, and
 * a new association's route (core/outbound/route.h). */
#include "udp/udp_dest.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "dns/dnsmap.h"
#include "socks5/socks5_udp.h"

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

/* The new association's route: its first destination decides for all it
 * will carry. */
const struct s5_upstream_cfg *s5__udp_route(struct s5_wctx *w, const ip_addr_t *src, const ip_addr_t *dst,
                                            uint16_t dport, struct s5_route *r, char *why, size_t len) {
  struct sockaddr_storage to, from;
  s5_addr_to_sockaddr(dst, dport, &to);
  s5_addr_to_sockaddr(src, 0, &from);
  switch (s5_route_init(r, w->cfg, IPPROTO_UDP, &to, &from)) {
    case S5_ROUTE_PROXY: return s5_route_first(r, why, len);
    case S5_ROUTE_DIRECT: return &w->cfg->direct;
    case S5_ROUTE_BLOCK: snprintf(why, len, "blocked by [rules]"); break;
    case S5_ROUTE_GONE: snprintf(why, len, "its mapped address stands for no name any more"); break;
  }
  return NULL;
}
