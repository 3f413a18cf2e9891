/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP ASSOCIATE messages and the per-datagram header (RFC 1928).
 *
 *   request  VER=5 CMD=3 RSV=0 ATYP DST.ADDR DST.PORT
 *   reply    VER=5 REP   RSV   ATYP BND.ADDR BND.PORT
 *   datagram RSV(2)=0 FRAG ATYP DST.ADDR DST.PORT DATA
 *
 * Parsers never read past len, whatever the bytes, so anything a proxy (or
 * a fuzzer) sends gets a defined answer. */
#include "socks5/socks5_udp.h"

#include "base/assert.h"
#include "ini/sockaddr.h"

#include <netinet/in.h>
#include <string.h>

#define VER 0x05
#define CMD_UDP_ASSOCIATE 0x03
#define ATYP_IPV4 0x01
#define ATYP_NAME 0x03
#define ATYP_IPV6 0x04

/* Writes ATYP ADDR PORT; returns the bytes written or a negative status. */
static int put_addr(uint8_t *p, size_t cap, const struct s5_socks5_addr *a) {
  size_t alen;
  size_t n = 0;

  if (a->family == AF_INET) alen = 4;
  else if (a->family == AF_INET6) alen = 16;
  else if (a->family == AF_UNSPEC && a->name_len > 0) alen = 1 + (size_t)a->name_len;
  else return S5_SOCKS5_BAD_MESSAGE;
  if (cap < 1 + alen + 2) return S5_SOCKS5_TOO_LONG;
  if (a->family == AF_INET) {
    p[n++] = ATYP_IPV4;
    memcpy(p + n, a->ip, 4);
  } else if (a->family == AF_INET6) {
    p[n++] = ATYP_IPV6;
    memcpy(p + n, a->ip, 16);
  } else {
    p[n++] = ATYP_NAME;
    p[n] = a->name_len;
    memcpy(p + n + 1, a->name, a->name_len);
  }
  n += alen;
  p[n++] = (uint8_t)(a->port >> 8);
  p[n++] = (uint8_t)(a->port & 0xff);
  S5_ASSERT(n <= cap && n <= 1 + 1 + 255 + 2);
  return (int)n;
}

/* Reads ATYP ADDR PORT from the len bytes at p. Returns the bytes used,
 * S5_SOCKS5_NEED_MORE when p is a prefix of a valid address, or
 * S5_SOCKS5_BAD_MESSAGE. */
static int get_addr(const uint8_t *p, size_t len, struct s5_socks5_addr *a) {
  size_t alen;
  size_t off = 1;

  if (len < 1) return S5_SOCKS5_NEED_MORE;
  memset(a, 0, sizeof *a);
  switch (p[0]) {
    case ATYP_IPV4:
      a->family = AF_INET;
      alen = 4;
      break;
    case ATYP_IPV6:
      a->family = AF_INET6;
      alen = 16;
      break;
    case ATYP_NAME:
      if (len < 2) return S5_SOCKS5_NEED_MORE;
      if (p[1] == 0) return S5_SOCKS5_BAD_MESSAGE;
      a->family = AF_UNSPEC;
      alen = p[1];
      off = 2;
      break;
    default: return S5_SOCKS5_BAD_MESSAGE;
  }
  if (len < off + alen + 2) return S5_SOCKS5_NEED_MORE;
  if (a->family == AF_UNSPEC) {
    a->name_len = (uint8_t)alen;
    memcpy(a->name, p + off, alen);
    a->name[alen] = '\0';
  } else {
    memcpy(a->ip, p + off, alen);
  }
  a->port = (uint16_t)((p[off + alen] << 8) | p[off + alen + 1]);
  S5_ASSERT(off + alen + 2 <= len);
  return (int)(off + alen + 2);
}

int s5_socks5_addr_of(const struct sockaddr *sa, struct s5_socks5_addr *a) {
  const struct sockaddr_storage *ss = (const struct sockaddr_storage *)sa;
  size_t len;
  const void *raw = s5_sockaddr_raw(ss, &len);
  memset(a, 0, sizeof *a);
  if (raw != NULL) {
    a->family = sa->sa_family;
    memcpy(a->ip, raw, len);
    a->port = s5_sockaddr_port(ss);
  } else {
    return -1;
  }
  return 0;
}

int s5_socks5_write_udp_associate(uint8_t *buf, size_t cap, const struct sockaddr *from) {
  struct s5_socks5_addr a;
  int n;

  if (from == NULL || cap < 3) return from == NULL ? S5_SOCKS5_BAD_MESSAGE : S5_SOCKS5_TOO_LONG;
  if (s5_socks5_addr_of(from, &a) < 0) return S5_SOCKS5_BAD_MESSAGE;
  buf[0] = VER;
  buf[1] = CMD_UDP_ASSOCIATE;
  buf[2] = 0x00;
  n = put_addr(buf + 3, cap - 3, &a);
  return n < 0 ? n : n + 3;
}

int s5_socks5_parse_reply_addr(const uint8_t *buf, size_t len, uint8_t *rep, struct s5_socks5_addr *bnd) {
  int n;

  n = s5_socks5_head(buf, len, VER, 3);
  if (n < 0) return n;
  n = get_addr(buf + 3, len - 3, bnd);
  if (n < 0) return n;
  *rep = buf[1];
  if (buf[1] != 0) return S5_SOCKS5_REFUSED;
  return n + 3;
}

int s5_socks5_udp_header_write(uint8_t *buf, size_t cap, const struct s5_socks5_addr *dst) {
  int n;

  if (cap < 3) return S5_SOCKS5_TOO_LONG;
  buf[0] = 0x00; /* RSV */
  buf[1] = 0x00;
  buf[2] = 0x00; /* FRAG: a standalone datagram */
  n = put_addr(buf + 3, cap - 3, dst);
  return n < 0 ? n : n + 3;
}

int s5_socks5_udp_header_parse(const uint8_t *buf, size_t len, struct s5_socks5_addr *src) {
  int n;

  /* A datagram is complete: a header cut short is malformed, never "more". */
  if (len < 4) return S5_SOCKS5_BAD_MESSAGE;
  /* RSV should be zero; like most implementations, do not insist. */
  if (buf[2] != 0x00) return S5_SOCKS5_FRAGMENTED;
  n = get_addr(buf + 3, len - 3, src);
  if (n < 0) return S5_SOCKS5_BAD_MESSAGE;
  return n + 3;
}
