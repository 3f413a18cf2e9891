/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP ASSOCIATE (RFC 1928 sections 4, 6 and 7): the request, the
 * reply with its bound address, and the header in front of every relayed
 * datagram. Pure encoding and parsing, no I/O, like socks5.h, so that the
 * UDP relay and the fuzzers share one implementation. The status codes are
 * those of socks5.h plus S5_SOCKS5_FRAGMENTED. */
#ifndef S5_CORE_SOCKS5_UDP_H
#define S5_CORE_SOCKS5_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "socks5/socks5.h"

/* A datagram header with FRAG != 0: RFC 1928 lets an implementation that
 * does not reassemble drop it, which is what s5tund does. */
#define S5_SOCKS5_FRAGMENTED (-20)

/* RSV(2) FRAG(1) ATYP(1) + the longest address (a 255-byte name with its
 * length byte) + PORT(2). */
#define S5_SOCKS5_UDP_HDR_MAX (4 + 1 + 255 + 2)

/* An address as SOCKS5 carries it: IPv4, IPv6 or a domain name. */
struct s5_socks5_addr {
  int family;       /* AF_INET, AF_INET6, or AF_UNSPEC for a name */
  uint8_t ip[16];   /* network order; 4 bytes used for AF_INET */
  uint8_t name_len; /* 1..255 when family == AF_UNSPEC */
  char name[256];   /* NUL-terminated when family == AF_UNSPEC */
  uint16_t port;    /* host order */
};
/* A name's length is a byte on the wire and name[] holds it with its NUL. */
_Static_assert(sizeof(((struct s5_socks5_addr *)0)->name) == 255 + 1,
               "struct s5_socks5_addr: a 255-byte name");

/* An IPv4 or IPv6 socket address as a SOCKS5 address (port in host
 * order): 0, or -1 for another family. */
int s5_socks5_addr_of(const struct sockaddr *sa, struct s5_socks5_addr *a);

/* UDP ASSOCIATE request: DST is the address and port the client will send
 * its datagrams from (sockaddr_in / sockaddr_in6; zeros if unknown).
 * Returns the length, or a negative status. */
int s5_socks5_write_udp_associate(uint8_t *buf, size_t cap, const struct sockaddr *from);

/* A reply to CONNECT or UDP ASSOCIATE with its bound address (BND.ADDR,
 * BND.PORT) in *bnd. Returns the reply length (> 0), S5_SOCKS5_NEED_MORE,
 * S5_SOCKS5_REFUSED (*rep set), or another negative status. */
int s5_socks5_parse_reply_addr(const uint8_t *buf, size_t len, uint8_t *rep, struct s5_socks5_addr *bnd);

/* The header in front of a relayed datagram (FRAG = 0). Returns its length,
 * or a negative status (bad family, name of 0 or > 255 bytes, no room). */
int s5_socks5_udp_header_write(uint8_t *buf, size_t cap, const struct s5_socks5_addr *dst);

/* Parses the header of a datagram of len bytes from the relay. Returns the
 * header length (the payload follows it; it may be empty), or
 * S5_SOCKS5_BAD_MESSAGE (truncated, bad ATYP, empty name),
 * S5_SOCKS5_FRAGMENTED (FRAG != 0). Never reads past len. */
int s5_socks5_udp_header_parse(const uint8_t *buf, size_t len, struct s5_socks5_addr *src);

#endif
