/* SPDX-License-Identifier: MIT */
/* Recognises ICMP echo requests on raw IPv4 and IPv6 packets (see icmp.h).
 * Reads nothing beyond len; a packet too short to tell is left to lwIP,
 * which drops malformed packets anyway. */
#include "icmp.h"

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
  unsigned frag = ((unsigned)(p[6] & 0x3f) << 8) | p[7];   /* MF flag and offset */
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
