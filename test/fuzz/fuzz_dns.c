/* SPDX-License-Identifier: MIT */
/* Fuzz target: the mapped resolver's message handling (core/dns/dns_msg.c) and
 * the name table behind it (core/dns/dns_table.c). The input is one UDP
 * payload sent to the resolver address, i.e. exactly what a client on the
 * TUN controls.
 *
 * It follows core/dns/dns.c's s5_dns_answer(): parse (at most the 1024 bytes
 * dns.c copies out of the pbuf), choose the rcode and the record with the
 * same function (s5_dns_answer_plan), with an IPv6 pool or without one
 * (the input's first byte decides), build the response into a buffer of
 * exactly S5_DNS_ANSWER_MAX bytes, as dns.c does. Then it checks the promises dns.c relies on:
 *   - a parsed name is lowercase text of name_len <= 253 bytes, NUL at
 *     name_len, name_ok exactly when every label is [a-z0-9_-];
 *   - question_len lies inside the message;
 *   - the response fits (build never fails for a parsed query: the bound
 *     S5_DNS_ANSWER_MAX is meant to hold the largest one), echoes the ID
 *     and the question byte for byte, and is a response (parsing it again
 *     says MALFORMED, so two resolvers can never ping-pong);
 *   - the table maps a usable name to an address that maps back to it.
 * The table is small (8 names over a /28), so recycling is exercised too.
 * The input is also read as a TCP stream of length-prefixed messages
 * (s5_dns_frame_feed, RFC 7766), in pieces it chooses (check_frames). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns_msg.h"
#include "dns/dns_table.h"
#include "fuzz_check.h"
#include "socks5/dial.h"

#define QUERY_READ 1024 /* dns.c: S5_DNS_QUERY_READ */

static struct s5_dns_table *table;

static int label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static void check_query(const uint8_t *msg, size_t len, const struct s5_dns_query *q) {
  FUZZ_CHECK(q->name_len <= S5_DNS_NAME_MAX, "name of %zu bytes", q->name_len);
  FUZZ_CHECK(q->name[q->name_len] == '\0', "name not terminated at name_len");
  FUZZ_CHECK(12 + q->question_len <= len, "question of %zu bytes in %zu", q->question_len, len);
  FUZZ_CHECK(q->question_len >= 5, "question of %zu bytes", q->question_len);
  int ok = 1;
  for (size_t i = 0; i < q->name_len; i++) {
    char c = q->name[i];
    FUZZ_CHECK(!(c >= 'A' && c <= 'Z'), "uppercase in name");
    if (c != '.' && !label_char(c)) ok = 0;
  }
  /* A '.' inside a label (not a separator) also makes the name unusable:
   * compare with the wire form. */
  size_t off = 12, text = 0;
  while (msg[off] != 0) {
    size_t l = msg[off];
    for (size_t i = 0; i < l; i++)
      if (!label_char(
            (char)(msg[off + 1 + i] | (msg[off + 1 + i] >= 'A' && msg[off + 1 + i] <= 'Z' ? 0x20 : 0))))
        ok = 0;
    text += l + (text > 0 ? 1 : 0);
    off += 1 + l;
  }
  FUZZ_CHECK(text == q->name_len, "wire name gives %zu text bytes, parser %zu", text, q->name_len);
  FUZZ_CHECK(q->name_ok == ok, "name_ok %d, expected %d", q->name_ok, ok);
}

static void check_response(const uint8_t *out, int n, const uint8_t *msg, const struct s5_dns_query *q,
                           const uint8_t *answer, size_t alen) {
  FUZZ_CHECK(n >= 12 && n <= S5_DNS_ANSWER_MAX, "response of %d bytes", n);
  FUZZ_CHECK(out[0] == msg[0] && out[1] == msg[1], "ID not echoed");
  FUZZ_CHECK(out[2] & 0x80, "QR not set");
  FUZZ_CHECK(memcmp(out + 12, msg + 12, q->question_len) == 0, "question not echoed");
  int badvers = q->has_opt && q->edns_version != 0;
  size_t expect = 12 + q->question_len + (answer != NULL && !badvers ? 12 + alen : 0) + (q->has_opt ? 11 : 0);
  FUZZ_CHECK((size_t)n == expect, "response of %d bytes, expected %zu", n, expect);
  struct s5_dns_query again;
  FUZZ_CHECK(s5_dns_parse_query(out, (size_t)n, &again) == S5_DNS_MALFORMED, "response parses as a query");
}

/* The same bytes as a TCP stream (dns_tcp.c), cut into pieces of 1..64
 * bytes that the input itself chooses: every message the reader completes
 * is the next one of the stream (its first S5_DNS_QUERY_READ bytes), and
 * the reader takes every byte, always moving on. */
static void check_frames(const uint8_t *data, size_t size) {
  struct s5_dns_frame *f = calloc(1, sizeof *f);
  if (f == NULL) abort();
  size_t off = 0, next = 0; /* next: where the stream's next message's length is */
  while (off < size) {
    size_t piece = 1 + data[off] % 64;
    if (piece > size - off) piece = size - off;
    size_t used = s5_dns_frame_feed(f, data + off, piece);
    FUZZ_CHECK(used > 0 && used <= piece, "%zu of %zu bytes used", used, piece);
    off += used;
    if (!f->done) continue;
    size_t len = (size_t)data[next] << 8 | data[next + 1];
    size_t kept = len < S5_DNS_QUERY_READ ? len : S5_DNS_QUERY_READ;
    FUZZ_CHECK(f->len == len && s5_dns_frame_kept(f) == kept && memcmp(f->msg, data + next + 2, kept) == 0,
               "message at %zu: %u bytes, %zu kept, expected %zu", next, (unsigned)f->len,
               s5_dns_frame_kept(f), len);
    next += 2 + len;
    FUZZ_CHECK(off == next, "message ends at %zu, the reader is at %zu", next, off);
  }
  free(f);
}

/* The input as a reply to [rules] resolver's query (core/socks5/resolve.c):
 * its own id, an A then an AAAA question; an address found is of that family. */
static void check_reply(const uint8_t *data, size_t size) {
  uint8_t *m = fuzz_dup(data, size);
  uint16_t id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
  for (int i = 0; i < 2; i++) {
    struct sockaddr_storage to;
    int rcode = -1;
    memset(&to, 0, sizeof to);
    int r = s5_dial_dns_answer(m, size, id, i == 0 ? 1 : 28, 7000, &to, &rcode);
    FUZZ_CHECK(r >= -1 && r <= 1, "answer %d", r);
    FUZZ_CHECK(r != 1 || to.ss_family == (i == 0 ? AF_INET : AF_INET6), "family %d", to.ss_family);
    FUZZ_CHECK(r == -1 || (rcode >= 0 && rcode <= 15), "rcode %d", rcode);
  }
  free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_frames(data, size);
  check_reply(data, size);
  if (table == NULL) {
    static const uint8_t net[4] = {100, 64, 0, 0};
    static const uint8_t net6[16] = {0xfd, 0xff, 0x53, 0x35};
    table = s5_dns_table_create(net, 28, 8);
    if (table == NULL || s5_dns_table_pool6(table, net6, 96) != 0) abort();
    /* Names recycle at once: the map and map-back checks below run on every
     * input (the reuse age's refusal is unit.dns's to test). */
    s5_dns_table_reuse_ms(table, 0);
  }
  int aaaa = size > 0 && (data[0] & 1); /* [dns] network6 set or not */
  size_t len = size < QUERY_READ ? size : QUERY_READ;
  uint8_t *msg = fuzz_dup(data, len);
  struct s5_dns_query q;
  enum s5_dns_parse r = s5_dns_parse_query(msg, len, &q);
  FUZZ_CHECK(r == S5_DNS_QUERY || r == S5_DNS_NOT_QUERY || r == S5_DNS_MALFORMED, "result %d", (int)r);
  if (r == S5_DNS_MALFORMED) {
    free(msg);
    return 0;
  }

  /* dns.c's choice of rcode and record, then its lookup */
  if (r == S5_DNS_QUERY) check_query(msg, len, &q);
  unsigned rtype;
  unsigned rcode = s5_dns_answer_plan(r, &q, aaaa, &rtype);
  FUZZ_CHECK(rtype == 0 || (r == S5_DNS_QUERY && q.name_ok && q.name_len > 0 && rtype == q.qtype),
             "record type %u for a query of type %u", rtype, q.qtype);
  FUZZ_CHECK(rtype != S5_DNS_TYPE_AAAA || aaaa, "AAAA answered without an IPv6 pool");
  uint8_t addr[16];
  const uint8_t *answer = NULL;
  size_t alen = 0;
  char back[256];
  if (rtype == S5_DNS_TYPE_A) {
    FUZZ_CHECK(s5_dns_table_map(table, q.name, q.name_len, addr) == 0, "map refused %s", q.name);
    int n = s5_dns_table_name(table, addr, back, sizeof back);
    FUZZ_CHECK(n == (int)q.name_len && strcmp(back, q.name) == 0, "%s maps back to %s", q.name, back);
    FUZZ_CHECK(s5_dns_table_in_pool(table, addr), "address outside the pool");
    answer = addr;
    alen = 4;
  } else if (rtype == S5_DNS_TYPE_AAAA) {
    FUZZ_CHECK(s5_dns_table_map6(table, q.name, q.name_len, addr) == 0, "map6 refused %s", q.name);
    int n = s5_dns_table_name6(table, addr, back, sizeof back);
    FUZZ_CHECK(n == (int)q.name_len && strcmp(back, q.name) == 0, "%s maps back to %s (IPv6)", q.name, back);
    FUZZ_CHECK(s5_dns_table_in_pool6(table, addr), "address outside the IPv6 pool");
    uint8_t a4[4]; /* one entry per name: its A address is the same entry */
    FUZZ_CHECK(s5_dns_table_map(table, q.name, q.name_len, a4) == 0 && a4[3] - 1 == addr[15] - 1,
               "A and AAAA of %s are different entries", q.name);
    answer = addr;
    alen = 16;
  }
  uint8_t *out = malloc(S5_DNS_ANSWER_MAX);
  if (out == NULL) abort();
  uint32_t ttl = size >= 4 ? (uint32_t)data[size - 4] << 24 | (uint32_t)data[size - 3] << 16 |
                               (uint32_t)data[size - 2] << 8 | data[size - 1]
                           : 1;
  int n = s5_dns_build_response(out, S5_DNS_ANSWER_MAX, msg, &q, rcode, answer, alen, ttl);
  FUZZ_CHECK(n > 0, "no room for the response to a parsed query (%d)", n);
  check_response(out, n, msg, &q, answer, alen);
  /* One byte short must be refused, never overflow. */
  n = s5_dns_build_response(out, (size_t)n - 1, msg, &q, rcode, answer, alen, ttl);
  FUZZ_CHECK(n == -1, "short buffer: %d", n);
  free(out);
  free(msg);
  return 0;
}
