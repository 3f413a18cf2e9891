/* SPDX-License-Identifier: MIT */
/* ICMP in both directions (see icmp.h): echo requests recognised on raw
 * IPv4 and IPv6 packets from the TUN, and port unreachable sent back for a
 * UDP datagram nobody takes. The recogniser reads nothing beyond len; a
 * packet too short to tell is left to lwIP, which drops malformed packets
 * anyway. */
#include "netif/icmp.h"

#include <string.h>

#include "base/assert.h"
#include "ctx/wctx.h"

#include "lwip/icmp.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"
#include "lwip/prot/icmp.h"
#include "lwip/prot/icmp6.h"
#include "lwip/prot/ip4.h"
#include "lwip/prot/ip6.h"
#include "lwip/prot/udp.h"

#define PROTO_ICMP 1
#define PROTO_ICMPV6 58
#define ICMP_ECHO 8
#define ICMPV6_ECHO_REQUEST 128

/* IPv6 extension headers that may precede the upper layer (RFC 8200). */
#define EXT_HOP 0
#define EXT_ROUTING 43
#define EXT_FRAGMENT 44
#define EXT_DSTOPTS 60

static int ipv4_echo(const uint8_t *p, size_t len) {
  if (len < 20) return 0;
  size_t ihl = (size_t)(p[0] & 0x0f) * 4;
  if (ihl < 20 || p[9] != PROTO_ICMP) return 0;
  unsigned frag = ((unsigned)(p[6] & 0x3f) << 8) | p[7]; /* MF flag and offset */
  if (frag != 0) return 1;
  return len > ihl && p[ihl] == ICMP_ECHO;
}

static int ipv6_echo(const uint8_t *p, size_t len) {
  if (len < 40) return 0;
  uint8_t next = p[6];
  size_t off = 40;
  for (int hops = 0; hops < 8; hops++) {
    if (next == PROTO_ICMPV6) return len > off && p[off] == ICMPV6_ECHO_REQUEST;
    if (next == EXT_FRAGMENT) {
      if (len < off + 8) return 0;
      return p[off] == PROTO_ICMPV6;
    }
    if (next != EXT_HOP && next != EXT_ROUTING && next != EXT_DSTOPTS) return 0;
    if (len < off + 2) return 0;
    next = p[off];
    off += ((size_t)p[off + 1] + 1) * 8;
  }
  return 0;
}

int s5_icmp_is_echo_request(const uint8_t *pkt, size_t len) {
  if (len < 1) return 0;
  switch (pkt[0] >> 4) {
    case 4: return ipv4_echo(pkt, len);
    case 6: return ipv6_echo(pkt, len);
    default: return 0;
  }
}

/* ---------------------------------------------------------------- port unreachable */

#define S5_ICMP_HLEN 8         /* type, code, checksum, unused: both versions */
#define S5_ICMP4_ERROR_MAX 576 /* RFC 1812: an IPv4 error message at most this long */
#define S5_ICMP_TTL 64         /* what the hosts behind the TUN would send with */

void s5_icmp_port_unreachable(struct s5_wctx *w, struct pbuf *p) {
  S5_STAT_ADD(w->stats, drop_udp, 1);
  int v6 = ip_current_is_v6();
  /* Quote as much as RFC 1812 (IPv4: 576-byte message) and RFC 4443
   * (IPv6: within the minimum MTU) allow. */
  u16_t room =
    v6 ? IP6_MIN_MTU_LENGTH - IP6_HLEN - S5_ICMP_HLEN : S5_ICMP4_ERROR_MAX - IP_HLEN - S5_ICMP_HLEN;
  if (pbuf_header_force(p, (s16_t)(ip_current_header_tot_len() + UDP_HLEN)) != 0) {
    pbuf_free(p);
    return;
  }
  u16_t quote = p->tot_len < room ? p->tot_len : room;
  struct pbuf *q = pbuf_alloc(PBUF_IP, (u16_t)(S5_ICMP_HLEN + quote), PBUF_RAM);
  if (q == NULL) {
    pbuf_free(p);
    return;
  }
  uint8_t *m = q->payload;
  memset(m, 0, S5_ICMP_HLEN);
  m[0] = v6 ? ICMP6_TYPE_DUR : ICMP_DUR;
  m[1] = v6 ? ICMP6_DUR_PORT : ICMP_DUR_PORT;
  /* One piece (PBUF_RAM): the IPv4 sum over m covers the whole message. */
  S5_ASSERT(q->len == q->tot_len && quote <= p->tot_len);
  u16_t copied = pbuf_copy_partial(p, m + S5_ICMP_HLEN, quote, 0);
  S5_ASSERT(copied == quote);
  ip_addr_t src, dst;
  ip_addr_copy(src, *ip_current_dest_addr());
  ip_addr_copy(dst, *ip_current_src_addr());
  pbuf_free(p);
  u16_t sum = v6 ? ip6_chksum_pseudo(q, IP6_NEXTH_ICMP6, q->tot_len, ip_2_ip6(&src), ip_2_ip6(&dst))
                 : inet_chksum(m, q->len);
  memcpy(m + 2, &sum, 2); /* both sums come in network order */
  ip_output_if_src(q, &src, &dst, S5_ICMP_TTL, 0, v6 ? IP6_NEXTH_ICMP6 : IP_PROTO_ICMP, &w->netif);
  pbuf_free(q);
}
