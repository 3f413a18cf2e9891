/* SPDX-License-Identifier: MIT */
/* Unit test for the mapped resolver's pure parts: core/dns/dns_msg.c (query
 * parsing, answers, TCP framing), core/dns/dns_table.c (mapping, LRU recycling, sharing
 * across fork) and core/netif/icmp.c (echo request filter). Prints one line per
 * failed check and "N passed, M failed"; exits 1 on failure. */
#include "dns/dns_msg.h"
#include "dns/dns_table.h"
#include "netif/icmp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* A query as a stub sends it: id 0x1234, RD, one question, optional OPT. */
static size_t make_query(uint8_t *buf, const char *name, unsigned qtype, int opt) {
  size_t n = 0;
  static const uint8_t hdr[] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  memcpy(buf, hdr, 12);
  buf[11] = opt ? 1 : 0;
  n = 12;
  const char *p = name;
  while (*p) {
    const char *dot = strchr(p, '.');
    size_t l = dot ? (size_t)(dot - p) : strlen(p);
    buf[n++] = (uint8_t)l;
    memcpy(buf + n, p, l);
    n += l;
    p += l;
    if (*p == '.') p++;
  }
  buf[n++] = 0;
  buf[n++] = (uint8_t)(qtype >> 8);
  buf[n++] = (uint8_t)qtype;
  buf[n++] = 0;
  buf[n++] = 1; /* IN */
  if (opt) {
    static const uint8_t o[] = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
    memcpy(buf + n, o, sizeof o);
    n += sizeof o;
  }
  return n;
}

static void test_parse(void) {
  uint8_t m[600];
  struct s5_dns_query q;
  size_t n = make_query(m, "Target.TEST", 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_QUERY, "plain A query");
  CHECK(q.id == 0x1234 && q.qtype == 1 && q.qclass == 1 && strcmp(q.name, "target.test") == 0 &&
          q.name_len == 11 && q.name_ok && !q.has_opt && q.question_len == n - 12,
        "fields: name [%s]", q.name);
  /* Every truncation of it is malformed. */
  for (size_t len = 0; len < n; len++)
    if (s5_dns_parse_query(m, len, &q) != S5_DNS_MALFORMED) {
      CHECK(0, "truncated at %zu not malformed", len);
      break;
    }
  n = make_query(m, "example.test", 28, 1);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_QUERY && q.qtype == 28 && q.has_opt && q.edns_version == 0,
        "AAAA with OPT");
  CHECK(s5_dns_parse_query(m, n - 1, &q) == S5_DNS_QUERY && !q.has_opt, "OPT cut short: ignored");
  m[n - 2] = 0, m[n - 1] = 5; /* OPT RDLEN beyond the end */
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "OPT RDLEN overflow");

  n = make_query(m, "", 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_QUERY && q.name_len == 0 && q.name[0] == '\0', "root");
  n = make_query(m, "we!rd.test", 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_QUERY && !q.name_ok, "odd byte -> not name_ok");

  /* Header problems. */
  n = make_query(m, "a.test", 1, 0);
  m[2] |= 0x80;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "QR = 1 (a response)");
  m[2] = 0x01 | (2 << 3);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_NOT_QUERY, "OPCODE 2 -> not query");
  m[2] = 0x01;
  m[5] = 2;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "QDCOUNT 2");
  m[5] = 0;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "QDCOUNT 0");
  m[5] = 1;
  m[7] = 1;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "ANCOUNT 1");
  m[7] = 0;

  /* Names: pointer, reserved label type, 64-byte label, > 255 bytes. */
  n = make_query(m, "a.test", 1, 0);
  m[12] = 0xc0;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "compression pointer in question");
  m[12] = 0x41;
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "label type 01");
  char big[300];
  memset(big, 'a', 64);
  big[64] = '\0';
  n = make_query(m, big, 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "64-byte label");
  /* 4 labels of 63 = 4*64 + 1 = 257 wire bytes: too long; 3*64+61+1 = 254 fine. */
  for (int i = 0; i < 4; i++) {
    memset(big + i * 64, 'b', 63);
    big[i * 64 + 63] = '.';
  }
  big[4 * 64 - 1] = '\0';
  n = make_query(m, big, 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_MALFORMED, "name of 257 wire bytes");
  big[3 * 64 + 61] = '\0';
  n = make_query(m, big, 1, 0);
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_QUERY && q.name_len == 253, "name of 253 characters: %zu",
        q.name_len);
}

static void test_build(void) {
  uint8_t m[600], out[S5_DNS_ANSWER_MAX];
  struct s5_dns_query q;
  size_t n = make_query(m, "Target.test", 1, 0);
  s5_dns_parse_query(m, n, &q);
  static const uint8_t addr[4] = {100, 64, 0, 1};
  int r = s5_dns_build_response(out, sizeof out, m, &q, 0, addr, 4, 1);
  CHECK(r == (int)n + 16, "A answer length %d", r);
  CHECK(out[0] == 0x12 && out[1] == 0x34, "id copied");
  CHECK(out[2] == (0x80 | 0x04 | 0x01) && out[3] == 0x80, "flags QR AA RD RA, NOERROR: %02x %02x", out[2],
        out[3]);
  CHECK(out[5] == 1 && out[7] == 1 && out[9] == 0 && out[11] == 0, "counts 1/1/0/0");
  CHECK(memcmp(out + 12, m + 12, n - 12) == 0, "question copied as sent (letter case too)");
  static const uint8_t rr[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 100, 64, 0, 1};
  CHECK(memcmp(out + n, rr, sizeof rr) == 0, "answer record");
  CHECK(s5_dns_build_response(out, (size_t)r - 1, m, &q, 0, addr, 4, 1) == -1, "no room");

  n = make_query(m, "x.test", 28, 1);
  s5_dns_parse_query(m, n, &q);
  r = s5_dns_build_response(out, sizeof out, m, &q, 0, NULL, 0, 1);
  CHECK(r == (int)n, "AAAA no data + OPT: %d (query %zu)", r, n);
  CHECK(out[7] == 0 && out[11] == 1 && out[r - 11] == 0 && out[r - 9] == 41, "no answer, OPT back");

  m[n - 5] = 1; /* EDNS version 1 */
  s5_dns_parse_query(m, n, &q);
  r = s5_dns_build_response(out, sizeof out, m, &q, 0, addr, 4, 1);
  CHECK(r == (int)n && (out[3] & 0x0f) == 0 && out[r - 6] == 1 && out[7] == 0,
        "BADVERS: ext rcode 1, no answer");

  n = make_query(m, "a.test", 1, 0);
  m[2] = 0x01 | (4 << 3); /* NOTIFY */
  CHECK(s5_dns_parse_query(m, n, &q) == S5_DNS_NOT_QUERY, "notify");
  q.question_len = 0;
  r = s5_dns_build_response(out, sizeof out, m, &q, S5_DNS_RCODE_NOTIMP, NULL, 0, 1);
  CHECK(r == 12 && (out[3] & 0x0f) == 4 && ((out[2] >> 3) & 0x0f) == 4 && out[5] == 0, "NOTIMP header only");

  /* AAAA with an IPv6 pool: a 28-byte record. */
  n = make_query(m, "v6.test", 28, 1);
  s5_dns_parse_query(m, n, &q);
  static const uint8_t addr6[16] = {0xfd, 0xff, 0x53, 0x35, [15] = 1};
  r = s5_dns_build_response(out, sizeof out, m, &q, 0, addr6, 16, 1);
  CHECK(r == (int)n + 28, "AAAA answer length %d (query %zu)", r, n);
  size_t at = 12 + q.question_len;
  static const uint8_t rr6[] = {0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 1, 0, 16};
  CHECK(out[7] == 1 && memcmp(out + at, rr6, sizeof rr6) == 0 && memcmp(out + at + 12, addr6, 16) == 0,
        "AAAA record");
  CHECK(s5_dns_build_response(out, sizeof out, m, &q, 0, addr6, 5, 1) == -1, "odd address length refused");
}

/* The resolver's choice (shared with dns.c): which record a query gets. */
static void test_plan(void) {
  uint8_t m[600];
  struct s5_dns_query q;
  unsigned rtype;
  size_t n = make_query(m, "x.test", 28, 0);
  enum s5_dns_parse r = s5_dns_parse_query(m, n, &q);
  CHECK(s5_dns_answer_plan(r, &q, 0, &rtype) == 0 && rtype == 0, "AAAA without a pool: no data");
  CHECK(s5_dns_answer_plan(r, &q, 1, &rtype) == 0 && rtype == 28, "AAAA with a pool: answered");
  n = make_query(m, "x.test", 1, 0);
  r = s5_dns_parse_query(m, n, &q);
  CHECK(s5_dns_answer_plan(r, &q, 0, &rtype) == 0 && rtype == 1, "A answered");
  n = make_query(m, "x.test", 16, 0);
  r = s5_dns_parse_query(m, n, &q);
  CHECK(s5_dns_answer_plan(r, &q, 1, &rtype) == 0 && rtype == 0, "TXT: no data");
}

/* Feeds n bytes in pieces of `step`; returns the messages completed, the
 * last one's kept bytes in *last. */
static int feed_all(struct s5_dns_frame *f, const uint8_t *s, size_t n, size_t step, uint8_t *last,
                    size_t *last_len) {
  int msgs = 0;
  for (size_t off = 0; off < n;) {
    size_t piece = n - off < step ? n - off : step;
    size_t used = s5_dns_frame_feed(f, s + off, piece);
    if (used == 0 && !f->done) return -1; /* it must always make progress */
    off += used;
    if (f->done) {
      msgs++;
      *last_len = s5_dns_frame_kept(f);
      memcpy(last, f->msg, *last_len);
    }
  }
  return msgs;
}

/* TCP framing (RFC 7766): messages after a 2-byte length, in any pieces. */
static void test_frame(void) {
  uint8_t q[600], s[4000], last[S5_DNS_QUERY_READ];
  size_t qn = make_query(q, "target.test", 1, 1), n = 0, last_len = 0;
  for (int i = 0; i < 3; i++) { /* three queries back to back (pipelined) */
    s[n++] = (uint8_t)(qn >> 8);
    s[n++] = (uint8_t)qn;
    memcpy(s + n, q, qn);
    n += qn;
  }
  size_t steps[] = {1, 2, 3, qn + 1, qn + 2, sizeof s};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    struct s5_dns_frame f = {0};
    int msgs = feed_all(&f, s, n, steps[i], last, &last_len);
    CHECK(msgs == 3 && last_len == qn && memcmp(last, q, qn) == 0, "pieces of %zu: %d messages", steps[i],
          msgs);
  }
  /* 2000 bytes: the first S5_DNS_QUERY_READ kept, the rest skipped; the
   * message after it is read whole. An empty message is a message. */
  struct s5_dns_frame f = {0};
  uint8_t big[2 + 2000 + 2 + 2];
  memset(big, 0x5a, sizeof big);
  big[0] = 2000 >> 8;
  big[1] = 2000 & 0xff;
  big[2002] = 0;
  big[2003] = 0;
  big[2004] = 0;
  big[2005] = 0;
  size_t used = s5_dns_frame_feed(&f, big, sizeof big);
  CHECK(used == 2002 && f.done && f.len == 2000 && s5_dns_frame_kept(&f) == S5_DNS_QUERY_READ,
        "long message: %zu used, %zu kept", used, s5_dns_frame_kept(&f));
  used = s5_dns_frame_feed(&f, big + 2002, 4);
  CHECK(used == 2 && f.done && f.len == 0 && s5_dns_frame_kept(&f) == 0, "empty message");
  used = s5_dns_frame_feed(&f, big + 2004, 2);
  CHECK(used == 2 && f.done && f.len == 0, "another empty message");
  used = s5_dns_frame_feed(&f, big, 1);
  CHECK(used == 1 && !f.done && f.prefix_have == 1, "half a length: waits");
}

static void test_table(void) {
  static const uint8_t net[4] = {100, 64, 0, 0};
  CHECK(s5_dns_pool_size(10) == 4194302 && s5_dns_pool_size(30) == 2 && s5_dns_pool_size(31) == 0,
        "pool sizes");
  CHECK(s5_dns_table_create(net, 30, 3) == NULL, "more entries than the pool");
  struct s5_dns_table *t = s5_dns_table_create(net, 24, 3);
  CHECK(t != NULL, "create");
  if (t == NULL) return;
  uint8_t a[4], b[4], c[4], d[4], e[4];
  char name[256];
  CHECK(s5_dns_table_map(t, "one.test", 8, a) == 0 && a[0] == 100 && a[1] == 64 && a[2] == 0 && a[3] == 1,
        "first name -> first pool address");
  CHECK(s5_dns_table_map(t, "two.test", 8, b) == 0 && b[3] == 2, "second name");
  CHECK(s5_dns_table_map(t, "one.test", 8, e) == 0 && memcmp(a, e, 4) == 0, "same name, same address");
  CHECK(s5_dns_table_map(t, "three.test", 10, c) == 0 && c[3] == 3, "third name");
  CHECK(s5_dns_table_name(t, b, name, sizeof name) == 8 && strcmp(name, "two.test") == 0, "address -> name");
  /* LRU is now one.test (touched by the map before three), then ... the
   * order of use: one(map), two(map), one(map), three(map), two(name):
   * least recently used is one.test. */
  /* Every entry answered just now: none may go to another name (a client
   * may still hold its address), so four.test gets none, and one.test's
   * address is still one.test's. */
  CHECK(s5_dns_table_map(t, "four.test", 9, d) == S5_DNS_TABLE_FULL, "a young full table refuses a new name");
  CHECK(s5_dns_table_name(t, a, name, sizeof name) == 8 && strcmp(name, "one.test") == 0,
        "one.test keeps its address while young");
  CHECK(s5_dns_table_map(t, "one.test", 8, e) == 0 && memcmp(a, e, 4) == 0, "a known name still answered");
  s5_dns_table_reuse_ms(t, 0); /* as if a minute had passed */
  CHECK(s5_dns_table_map(t, "four.test", 9, d) == 0 && memcmp(d, c, 4) == 0,
        "four.test recycles the least recently used address (three.test's)");
  CHECK(s5_dns_table_name(t, c, name, sizeof name) == 9 && strcmp(name, "four.test") == 0,
        "recycled address");
  CHECK(s5_dns_table_map(t, "three.test", 10, e) == 0 && memcmp(e, b, 4) == 0,
        "three.test again takes two's (LRU)");
  static const uint8_t out_of_pool[4] = {100, 64, 0, 9};
  static const uint8_t outside[4] = {10, 0, 0, 1};
  CHECK(s5_dns_table_name(t, out_of_pool, name, sizeof name) == -1, "beyond the entries: not in pool");
  CHECK(s5_dns_table_name(t, outside, name, sizeof name) == -1, "outside the network");
  CHECK(s5_dns_table_in_pool(t, a) && !s5_dns_table_in_pool(t, outside), "in_pool");
  CHECK(s5_dns_table_map(t, "", 0, e) == -1, "empty name refused");

  /* Shared across fork: a child maps a name, the parent sees it. */
  pid_t pid = fork();
  if (pid == 0) {
    uint8_t x[4];
    _exit(s5_dns_table_map(t, "child.test", 10, x) == 0 ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child mapped a name");
  int found = 0;
  for (int i = 1; i <= 3; i++) {
    uint8_t x[4] = {100, 64, 0, (uint8_t)i};
    if (s5_dns_table_name(t, x, name, sizeof name) > 0 && strcmp(name, "child.test") == 0) found = 1;
  }
  CHECK(found, "the child's name is visible in the parent");
  s5_dns_table_destroy(t);

  /* Many names through a small table: every lookup consistent. */
  t = s5_dns_table_create(net, 16, 100);
  if (t != NULL) s5_dns_table_reuse_ms(t, 0);
  int bad = 0;
  for (int i = 0; i < 5000 && t != NULL; i++) {
    char nm[32];
    int len = snprintf(nm, sizeof nm, "n%d.test", i % 250);
    uint8_t x[4];
    s5_dns_table_map(t, nm, (size_t)len, x);
    if (s5_dns_table_name(t, x, name, sizeof name) != len || strcmp(name, nm) != 0) bad++;
  }
  CHECK(t != NULL && bad == 0, "5000 lookups through 100 entries: %d inconsistent", bad);
  s5_dns_table_destroy(t);
}

/* The IPv6 pool: entry i stands for first6 + i, the same entry as the
 * name's IPv4 address, recycled with it. */
static void test_table6(void) {
  static const uint8_t net[4] = {100, 64, 0, 0};
  static const uint8_t net6[16] = {0xfd, 0xff, 0x53, 0x35};
  CHECK(s5_dns_pool6_size(96) == 4294967294u && s5_dns_pool6_size(64) == UINT32_MAX &&
          s5_dns_pool6_size(120) == 254 && s5_dns_pool6_size(121) == 0 && s5_dns_pool6_size(7) == 0,
        "pool6 sizes");
  struct s5_dns_table *t = s5_dns_table_create(net, 24, 3);
  if (t == NULL) return;
  uint8_t a6[16], b6[16], a[4];
  char name[256];
  CHECK(s5_dns_table_map6(t, "one.test", 8, a6) == -1, "no IPv6 pool yet");
  CHECK(s5_dns_table_pool6(t, net6, 96) == 0, "pool6 /96");
  CHECK(s5_dns_table_map6(t, "one.test", 8, a6) == 0, "AAAA mapping");
  static const uint8_t first6[16] = {0xfd, 0xff, 0x53, 0x35, [15] = 1};
  CHECK(memcmp(a6, first6, 16) == 0, "first name -> fdff:5335::1");
  CHECK(s5_dns_table_map(t, "one.test", 8, a) == 0 && a[3] == 1, "A of the same name: the same entry");
  CHECK(s5_dns_table_map(t, "two.test", 8, a) == 0 && a[3] == 2, "second name, A first");
  CHECK(s5_dns_table_map6(t, "two.test", 8, b6) == 0 && b6[15] == 2, "its AAAA: entry 2");
  CHECK(s5_dns_table_name6(t, b6, name, sizeof name) == 8 && strcmp(name, "two.test") == 0, "IPv6 -> name");
  uint8_t beyond[16];
  memcpy(beyond, first6, 16);
  beyond[15] = 4; /* entry 3: the table has 3 (0..2) */
  CHECK(s5_dns_table_name6(t, beyond, name, sizeof name) == -1 && !s5_dns_table_in_pool6(t, beyond),
        "beyond the entries: not in pool");
  uint8_t other[16];
  memcpy(other, first6, 16);
  other[3] = 0x36;
  CHECK(s5_dns_table_name6(t, other, name, sizeof name) == -1, "outside the prefix");
  CHECK(s5_dns_table_in_pool6(t, a6), "in_pool6");
  /* Recycling: a third and a fourth name take the LRU entry (one.test's,
   * touched first), and its IPv6 address with it. */
  s5_dns_table_map(t, "three.test", 10, a);
  s5_dns_table_name6(t, b6, name, sizeof name); /* two.test used again */
  uint8_t d6[16];
  CHECK(s5_dns_table_map6(t, "four.test", 9, d6) == S5_DNS_TABLE_FULL, "young entries: AAAA refused too");
  s5_dns_table_reuse_ms(t, 0); /* as if a minute had passed */
  CHECK(s5_dns_table_map6(t, "four.test", 9, d6) == 0 && memcmp(d6, a6, 16) == 0, "four.test recycles one's");
  CHECK(s5_dns_table_name6(t, a6, name, sizeof name) == 9 && strcmp(name, "four.test") == 0,
        "one.test's IPv6 address now stands for four.test");
  s5_dns_table_destroy(t);
  t = s5_dns_table_create(net, 16, 300);
  CHECK(t != NULL && s5_dns_table_pool6(t, net6, 120) == -1, "a /120 holds 254 names, not 300");
  s5_dns_table_destroy(t);
}

static void test_icmp(void) {
  uint8_t p4[28] = {0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1};
  p4[20] = 8;
  CHECK(s5_icmp_is_echo_request(p4, sizeof p4), "IPv4 echo request");
  p4[20] = 0;
  CHECK(!s5_icmp_is_echo_request(p4, sizeof p4), "IPv4 echo reply");
  p4[20] = 3;
  CHECK(!s5_icmp_is_echo_request(p4, sizeof p4), "IPv4 unreachable");
  p4[6] = 0x20; /* MF */
  CHECK(s5_icmp_is_echo_request(p4, sizeof p4), "IPv4 ICMP fragment");
  p4[6] = 0;
  p4[9] = 17;
  p4[20] = 8;
  CHECK(!s5_icmp_is_echo_request(p4, sizeof p4), "IPv4 UDP");
  p4[9] = 1;
  CHECK(!s5_icmp_is_echo_request(p4, 20), "IPv4 ICMP without its type byte");
  uint8_t p6[64] = {0x60};
  p6[6] = 58;
  p6[40] = 128;
  CHECK(s5_icmp_is_echo_request(p6, 48), "IPv6 echo request");
  p6[40] = 129;
  CHECK(!s5_icmp_is_echo_request(p6, 48), "IPv6 echo reply");
  p6[6] = 0; /* hop-by-hop, 8 bytes, then ICMPv6 */
  p6[40] = 58;
  p6[41] = 0;
  p6[48] = 128;
  CHECK(s5_icmp_is_echo_request(p6, 56), "IPv6 echo after hop-by-hop");
  CHECK(!s5_icmp_is_echo_request(p6, 44), "IPv6 truncated extension chain");
  p6[6] = 44; /* fragment header carrying ICMPv6 */
  p6[40] = 58;
  CHECK(s5_icmp_is_echo_request(p6, 48), "IPv6 ICMPv6 fragment");
  CHECK(!s5_icmp_is_echo_request(p6, 0) && !s5_icmp_is_echo_request((const uint8_t *)"\x50", 1),
        "empty and unknown version");
}

int main(void) {
  test_parse();
  test_build();
  test_plan();
  test_frame();
  test_table();
  test_table6();
  test_icmp();
  return check_done();
}
