/* SPDX-License-Identifier: MIT */
/* Unit test for core/socks5/socks5_udp.c: UDP ASSOCIATE request bytes, replies
 * with their bound address, and the datagram header both ways, including
 * truncated, fragmented and malformed headers at every length. Prints one
 * line per failed check and "N passed, M failed"; exits 1 on failure. */
#include "socks5/socks5_udp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static void test_associate(void) {
  uint8_t buf[64];
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(0x1234);
  inet_pton(AF_INET, "10.200.0.1", &sin.sin_addr);
  static const uint8_t want4[] = {5, 3, 0, 1, 10, 200, 0, 1, 0x12, 0x34};
  int n = s5_socks5_write_udp_associate(buf, sizeof buf, (struct sockaddr *)&sin);
  CHECK(n == (int)sizeof want4 && memcmp(buf, want4, sizeof want4) == 0, "ASSOCIATE IPv4: %d", n);
  CHECK(s5_socks5_write_udp_associate(buf, 9, (struct sockaddr *)&sin) < 0, "ASSOCIATE no room");

  struct sockaddr_in6 sin6 = {0};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(53);
  inet_pton(AF_INET6, "fd00:200::1", &sin6.sin6_addr);
  n = s5_socks5_write_udp_associate(buf, sizeof buf, (struct sockaddr *)&sin6);
  CHECK(n == 22 && buf[1] == 3 && buf[3] == 4 && buf[4] == 0xfd && buf[20] == 0 && buf[21] == 53,
        "ASSOCIATE IPv6: %d", n);
  struct sockaddr bad = {0};
  bad.sa_family = AF_UNIX;
  CHECK(s5_socks5_write_udp_associate(buf, sizeof buf, &bad) < 0, "ASSOCIATE AF_UNIX refused");
}

static void test_reply(void) {
  static const uint8_t ok4[] = {5, 0, 0, 1, 10, 200, 0, 2, 0x9c, 0x40};
  struct s5_socks5_addr a;
  uint8_t rep = 0xee;
  int n = s5_socks5_parse_reply_addr(ok4, sizeof ok4, &rep, &a);
  CHECK(n == 10 && rep == 0 && a.family == AF_INET && a.port == 40000 && a.ip[0] == 10 && a.ip[3] == 2,
        "reply IPv4: %d", n);
  for (size_t len = 0; len < sizeof ok4; len++)
    CHECK(s5_socks5_parse_reply_addr(ok4, len, &rep, &a) == S5_SOCKS5_NEED_MORE,
          "reply prefix %zu: need more", len);

  static const uint8_t any4[] = {5, 0, 0, 1, 0, 0, 0, 0, 0x04, 0x01};
  n = s5_socks5_parse_reply_addr(any4, sizeof any4, &rep, &a);
  CHECK(n == 10 && a.port == 1025 && a.ip[0] == 0, "reply 0.0.0.0");

  uint8_t ok6[22] = {5, 0, 0, 4, 0xfd};
  ok6[20] = 0x01;
  ok6[21] = 0x02;
  n = s5_socks5_parse_reply_addr(ok6, sizeof ok6, &rep, &a);
  CHECK(n == 22 && a.family == AF_INET6 && a.ip[0] == 0xfd && a.port == 0x0102, "reply IPv6");

  static const uint8_t name[] = {5, 0, 0, 3, 4, 'r', 'e', 'l', 'y', 0, 80, 0xaa};
  n = s5_socks5_parse_reply_addr(name, sizeof name, &rep, &a);
  CHECK(n == 11 && a.family == AF_UNSPEC && a.name_len == 4 && strcmp(a.name, "rely") == 0 && a.port == 80,
        "reply name, trailing byte left: %d", n);

  static const uint8_t refused[] = {5, 7, 0, 1, 0, 0, 0, 0, 0, 0};
  CHECK(s5_socks5_parse_reply_addr(refused, sizeof refused, &rep, &a) == S5_SOCKS5_REFUSED && rep == 7,
        "reply refused, REP 7");
  static const uint8_t v4[] = {4, 0, 0, 1};
  CHECK(s5_socks5_parse_reply_addr(v4, sizeof v4, &rep, &a) == S5_SOCKS5_BAD_VERSION, "reply VER 4");
  static const uint8_t atyp[] = {5, 0, 0, 9, 1, 2, 3, 4, 5, 6};
  CHECK(s5_socks5_parse_reply_addr(atyp, sizeof atyp, &rep, &a) == S5_SOCKS5_BAD_MESSAGE, "reply ATYP 9");
  static const uint8_t empty_name[] = {5, 0, 0, 3, 0, 0, 80};
  CHECK(s5_socks5_parse_reply_addr(empty_name, sizeof empty_name, &rep, &a) == S5_SOCKS5_BAD_MESSAGE,
        "reply empty name");
}

static void test_header_write(void) {
  uint8_t buf[S5_SOCKS5_UDP_HDR_MAX];
  struct s5_socks5_addr a = {0};
  a.family = AF_INET;
  a.ip[0] = 10, a.ip[1] = 201, a.ip[2] = 0, a.ip[3] = 1;
  a.port = 7001;
  static const uint8_t want4[] = {0, 0, 0, 1, 10, 201, 0, 1, 0x1b, 0x59};
  int n = s5_socks5_udp_header_write(buf, sizeof buf, &a);
  CHECK(n == 10 && memcmp(buf, want4, 10) == 0, "header IPv4: %d", n);
  CHECK(s5_socks5_udp_header_write(buf, 9, &a) < 0, "header IPv4, no room");

  a.family = AF_INET6;
  n = s5_socks5_udp_header_write(buf, sizeof buf, &a);
  CHECK(n == 22 && buf[3] == 4, "header IPv6: %d", n);

  memset(&a, 0, sizeof a);
  a.family = AF_UNSPEC;
  memset(a.name, 'x', 255);
  a.name_len = 255;
  a.port = 53;
  n = s5_socks5_udp_header_write(buf, sizeof buf, &a);
  CHECK(n == S5_SOCKS5_UDP_HDR_MAX && buf[3] == 3 && buf[4] == 255 && buf[261] == 53,
        "header 255-byte name fills S5_SOCKS5_UDP_HDR_MAX: %d", n);
  a.name_len = 0;
  CHECK(s5_socks5_udp_header_write(buf, sizeof buf, &a) < 0, "header empty name refused");
}

static void test_header_parse(void) {
  struct s5_socks5_addr a;
  uint8_t dg[64] = {0, 0, 0, 1, 10, 201, 0, 1, 0x1b, 0x59, 'h', 'i'};
  int n = s5_socks5_udp_header_parse(dg, 12, &a);
  CHECK(n == 10 && a.family == AF_INET && a.port == 7001 && a.ip[1] == 201, "parse IPv4: %d", n);
  n = s5_socks5_udp_header_parse(dg, 10, &a);
  CHECK(n == 10, "parse IPv4, empty payload: %d", n);
  /* Truncated at every length: malformed, never "need more". */
  for (size_t len = 0; len < 10; len++)
    CHECK(s5_socks5_udp_header_parse(dg, len, &a) == S5_SOCKS5_BAD_MESSAGE, "truncated at %zu", len);
  /* Non-zero RSV is tolerated. */
  dg[0] = 0xff;
  CHECK(s5_socks5_udp_header_parse(dg, 12, &a) == 10, "RSV != 0 tolerated");
  dg[0] = 0;
  /* FRAG != 0: dropped. */
  for (int frag = 1; frag < 256; frag++) {
    dg[2] = (uint8_t)frag;
    if (s5_socks5_udp_header_parse(dg, 12, &a) != S5_SOCKS5_FRAGMENTED) {
      CHECK(0, "FRAG %d not reported", frag);
      break;
    }
  }
  dg[2] = 0;
  dg[3] = 2;
  CHECK(s5_socks5_udp_header_parse(dg, 12, &a) == S5_SOCKS5_BAD_MESSAGE, "ATYP 2");
  /* IPv6 truncated and whole. */
  uint8_t d6[24] = {0, 0, 0, 4};
  d6[20] = 0, d6[21] = 53;
  CHECK(s5_socks5_udp_header_parse(d6, 22, &a) == 22 && a.family == AF_INET6 && a.port == 53, "IPv6");
  CHECK(s5_socks5_udp_header_parse(d6, 21, &a) == S5_SOCKS5_BAD_MESSAGE, "IPv6 truncated");
  /* Names: oversized length byte beyond the datagram, zero length. */
  uint8_t dn[16] = {0, 0, 0, 3, 200, 'a', 'b'};
  CHECK(s5_socks5_udp_header_parse(dn, sizeof dn, &a) == S5_SOCKS5_BAD_MESSAGE,
        "name longer than the datagram");
  dn[4] = 0;
  CHECK(s5_socks5_udp_header_parse(dn, sizeof dn, &a) == S5_SOCKS5_BAD_MESSAGE, "empty name");
  dn[4] = 2;
  dn[7] = 0, dn[8] = 80;
  CHECK(s5_socks5_udp_header_parse(dn, 9, &a) == 9 && strcmp(a.name, "ab") == 0 && a.port == 80, "name");

  /* Round trip of what the writer produces. */
  struct s5_socks5_addr w = {0}, r;
  uint8_t buf[S5_SOCKS5_UDP_HDR_MAX];
  w.family = AF_UNSPEC;
  strcpy(w.name, "target.test");
  w.name_len = 11;
  w.port = 65535;
  n = s5_socks5_udp_header_write(buf, sizeof buf, &w);
  CHECK(n > 0 && s5_socks5_udp_header_parse(buf, (size_t)n, &r) == n && strcmp(r.name, "target.test") == 0 &&
          r.port == 65535,
        "round trip by name");
}

int main(void) {
  test_associate();
  test_reply();
  test_header_write();
  test_header_parse();
  return check_done();
}
