/* SPDX-License-Identifier: MIT */
/* Where a client's datagram goes (see udp_dest.h): its SOCKS5 header (by
 * name for a mapped address), cached per association for a plain one, and
 * a new association's upstream by [rules]. */
#include "udp/udp_dest.h"

#include <netinet/in.h>
#include <string.h>

#include "base/addr.h"
#include "dns/dnsmap.h"
#include "shared/rules.h"
#include "socks5/socks5_udp.h"
#include "socks5/upstream.h"

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

/* [rules] for a new association, on its first datagram (its destination
 * decides for all it will carry): the upstream (direct's for direct), or
 * NULL when the rule blocks it or names an upstream that cannot carry UDP;
 * *why says which. */
const struct s5_upstream_cfg *s5__udp_outbound(struct s5_wctx *w, const ip_addr_t *src, const ip_addr_t *dst,
                                               uint16_t dport, const char **why, char *label, size_t len) {
  struct s5_rules *t = s5_rules_of(w->cfg);
  *why = "no upstream carries UDP";
  if (t == NULL) return s5_upstream_for_udp(w->cfg);
  char name[256];
  struct sockaddr_storage to, from;
  struct s5_flow f;
  s5_addr_to_sockaddr(dst, dport, &to);
  s5_addr_to_sockaddr(src, 0, &from);
  s5_flow_init(&f, IPPROTO_UDP, &to, &from, s5_dnsmap_name_of_ip(dst, name, sizeof name) > 0 ? name : NULL);
  uint32_t rule;
  int out = s5_rules_match(t, &f, &rule);
  if (s5_rules_configured(t)) s5_rules_label(t, rule, label, len);
  if (out == S5_OUTBOUND_BALANCE) return s5_upstream_for_udp(w->cfg);
  if (out == S5_OUTBOUND_BLOCK) *why = "blocked by [rules]";
  else if (out == S5_OUTBOUND_DIRECT) return &w->cfg->direct;
  else if (w->cfg->upstreams[out].type == S5_UPSTREAM_SOCKS5 && w->cfg->upstreams[out].udp)
    return &w->cfg->upstreams[out];
  else *why = "[rules] names an upstream that cannot carry UDP";
  return NULL;
}
