/* SPDX-License-Identifier: MIT */
/* The sniff parsers (core/sniff/): TLS ClientHellos built here and
 * captured from openssl s_client and curl (sniff/capture.py), whole, in
 * records of every size and fed a byte at a time; ClientHellos over 2 KB
 * and over the holder's limit, without a server_name, malformed; HTTP
 * requests and their Hosts; QUIC: RFC 9001 A.2's client Initial, and
 * Initials built by sniff/quic_initials.py (sniff.quic_split).
 *
 *   test_sniff DIR                        the cases, fixtures from DIR
 *   test_sniff --quic NAME|- FILE...      feeds the datagrams in FILEs to one
 *                                         QUIC sniffer: the last answer must
 *                                         be NAME (- for NONE), every other MORE */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sniff/sniff.h"

static const char *fixtures = ".";

/* ---- TLS ClientHellos, built ---------------------------------------- */

static size_t put16(uint8_t *p, size_t v) {
  p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
  return 2;
}

/* A ClientHello handshake message (header included) with server_name sni
 * (NULL: none) and a key_share of keyshare bytes (a post-quantum one is
 * 1,216 + 32). Returns its length. */
static size_t hello(uint8_t *out, const char *sni, size_t keyshare) {
  size_t n = 4;
  out[n++] = 3, out[n++] = 3;
  for (int i = 0; i < 32; i++) out[n++] = (uint8_t)(i * 7);
  out[n++] = 32;
  for (int i = 0; i < 32; i++) out[n++] = (uint8_t)(0xa0 + i);
  n += put16(out + n, 6);
  static const uint8_t suites[] = {0x13, 0x01, 0x13, 0x02, 0x13, 0x03};
  memcpy(out + n, suites, 6), n += 6;
  out[n++] = 1, out[n++] = 0;
  size_t ext_len_at = n;
  n += 2;
  /* supported_versions, then server_name, then key_share */
  n += put16(out + n, 43), n += put16(out + n, 3), out[n++] = 2, out[n++] = 3, out[n++] = 4;
  if (sni != NULL) {
    size_t s = strlen(sni);
    n += put16(out + n, 0), n += put16(out + n, s + 5), n += put16(out + n, s + 3);
    out[n++] = 0, n += put16(out + n, s);
    memcpy(out + n, sni, s), n += s;
  }
  n += put16(out + n, 51), n += put16(out + n, keyshare + 6), n += put16(out + n, keyshare + 4);
  n += put16(out + n, 0x11ec), n += put16(out + n, keyshare);
  for (size_t i = 0; i < keyshare; i++) out[n++] = (uint8_t)(i * 13 + 1);
  put16(out + ext_len_at, n - ext_len_at - 2);
  out[0] = 1, out[1] = (uint8_t)((n - 4) >> 16), out[2] = (uint8_t)((n - 4) >> 8), out[3] = (uint8_t)(n - 4);
  return n;
}

/* msg cut into handshake records of at most frag bytes. */
static size_t records(uint8_t *out, const uint8_t *msg, size_t len, size_t frag) {
  size_t n = 0;
  for (size_t at = 0; at < len; at += frag) {
    size_t f = len - at < frag ? len - at : frag;
    out[n++] = 22, out[n++] = 3, out[n++] = at == 0 ? 1 : 3;
    n += put16(out + n, f);
    memcpy(out + n, msg + at, f), n += f;
  }
  return n;
}

typedef enum s5_sniff (*sniff_fn)(const uint8_t *, size_t, char *);

/* fn over an exactly sized heap copy of buf's first n bytes, so that a read
 * past them is caught under ASan. */
static enum s5_sniff sniff_copy(sniff_fn fn, const void *buf, size_t n, char *got) {
  uint8_t *p = malloc(n + 1);
  memcpy(p, buf, n);
  enum s5_sniff r = fn(p, n, got);
  free(p);
  return r;
}

/* Every prefix of buf shorter than upto gives MORE; checked, stopping at
 * the first that does not (what names it: "WHAT: N of LEN bytes"). */
static void sniff_more(sniff_fn fn, const char *what, const void *buf, size_t upto, size_t len, char *got) {
  for (size_t n = 0; n < upto; n++) {
    enum s5_sniff r = sniff_copy(fn, buf, n, got);
    if (r != S5_SNIFF_MORE) {
      CHECK(0, "%s: %zu of %zu bytes give %d, not MORE", what, n, len, (int)r);
      return;
    }
  }
}

/* Every prefix of buf MORE, the whole want (FOUND with name, or NONE). */
static void tls_stream(const char *what, const uint8_t *buf, size_t len, const char *name) {
  char got[S5_SNIFF_NAME_MAX + 1];
  sniff_more(s5_sniff_tls, what, buf, len, len, got);
  enum s5_sniff r = sniff_copy(s5_sniff_tls, buf, len, got);
  if (name != NULL)
    CHECK(r == S5_SNIFF_FOUND && strcmp(got, name) == 0, "%s: %d '%s', not %s", what, (int)r,
          r == S5_SNIFF_FOUND ? got : "", name);
  else CHECK(r == S5_SNIFF_NONE, "%s: %d, not NONE", what, (int)r);
}

static enum s5_sniff tls1(const uint8_t *buf, size_t len, char *got) { return s5_sniff_tls(buf, len, got); }

static void test_tls_built(void) {
  static uint8_t msg[12000], rec[14000];
  char got[S5_SNIFF_NAME_MAX + 1];
  size_t m = hello(msg, "www.Example.COM.", 32), r;

  r = records(rec, msg, m, 16384);
  tls_stream("one record", rec, r, "www.example.com");
  /* Trailing bytes after the ClientHello (0-RTT data) change nothing. */
  memcpy(rec + r, "\x17\x03\x03\x00\x05hello", 10);
  CHECK(tls1(rec, r + 10, got) == S5_SNIFF_FOUND, "trailing record");
  for (size_t f = 1; f <= 64; f = f * 2 + 1) {
    char what[64];
    snprintf(what, sizeof what, "records of %zu bytes", f);
    r = records(rec, msg, m, f);
    tls_stream(what, rec, r, "www.example.com");
  }

  /* Post-quantum sizes: 1.8 KB in one record (two TCP segments), 2.5 KB
   * in two records. */
  m = hello(msg, "pq.example.net", 1216 + 32 + 500);
  CHECK(m > 1800, "pq hello %zu bytes", m);
  r = records(rec, msg, m, 16384);
  tls_stream("1.8 KB ClientHello", rec, r, "pq.example.net");
  m = hello(msg, "big.example.net", 2400);
  CHECK(m > 2048, "big hello %zu bytes", m);
  r = records(rec, msg, m, 1400);
  tls_stream("2.5 KB ClientHello in two records", rec, r, "big.example.net");
  m = hello(msg, "bigger.example.net", 7000);
  r = records(rec, msg, m, 4000);
  tls_stream("7 KB ClientHello", rec, r, "bigger.example.net");

  /* Over the holder's limit: NONE as soon as the length says so. */
  m = hello(msg, "huge.example.net", 9000);
  r = records(rec, msg, m, 16384);
  CHECK(tls1(rec, 9, got) == S5_SNIFF_NONE, "9 KB ClientHello: NONE from its header");
  r = records(rec, msg, m, 1000);
  CHECK(tls1(rec, 9, got) == S5_SNIFF_NONE, "9 KB ClientHello in records: NONE from its header");
  CHECK(tls1(rec, 8, got) == S5_SNIFF_MORE, "8 bytes: MORE");

  /* No server_name. */
  m = hello(msg, NULL, 32);
  r = records(rec, msg, m, 16384);
  tls_stream("no SNI", rec, r, NULL);
  r = records(rec, msg, m, 10);
  tls_stream("no SNI, records of 10", rec, r, NULL);

  /* Names that are not host names. */
  static const char *const bad_names[] = {
    "10.0.0.1",        "10.1", "a..b",     ".a.b",  "a b.com",    "a/b.com", "[::1]",
    "exa\x80mple.com", "",     "1.2.3.4.", "x.123", "0x7f000001", "0x7f.1"};
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    m = hello(msg, bad_names[i], 32);
    r = records(rec, msg, m, 16384);
    CHECK(tls1(rec, r, got) == S5_SNIFF_NONE, "SNI '%s' taken", bad_names[i]);
  }
  char label[80], longname[400];
  memset(label, 'a', 64), label[64] = 0;
  snprintf(longname, sizeof longname, "%s.com", label);
  m = hello(msg, longname, 32);
  r = records(rec, msg, m, 16384);
  CHECK(tls1(rec, r, got) == S5_SNIFF_NONE, "64-byte label taken");
  label[63] = 0;
  snprintf(longname, sizeof longname, "%s.%s.%s.%s", label, label, label, label); /* 255 */
  longname[253] = 0, longname[252] = 'x';                                         /* 253 */
  m = hello(msg, longname, 32);
  r = records(rec, msg, m, 16384);
  CHECK(tls1(rec, r, got) == S5_SNIFF_FOUND && strlen(got) == 253, "253-byte name not found");
  longname[253] = 'y', longname[254] = 0;
  m = hello(msg, longname, 32);
  r = records(rec, msg, m, 16384);
  CHECK(tls1(rec, r, got) == S5_SNIFF_NONE, "254-byte name taken");
  m = hello(msg, "under_score-1.example.org", 32);
  r = records(rec, msg, m, 16384);
  CHECK(tls1(rec, r, got) == S5_SNIFF_FOUND && strcmp(got, "under_score-1.example.org") == 0, "_ and -");
}

/* One byte of a good ClientHello changed: the parser must say NONE (or,
 * for a byte it does not read, FOUND), never run off. */
static void test_tls_malformed(void) {
  static uint8_t msg[2000], rec[2200];
  char got[S5_SNIFF_NAME_MAX + 1];
  size_t m = hello(msg, "example.com", 32);
  size_t r = records(rec, msg, m, 16384);
  static const struct {
    size_t at;
    uint8_t v;
    const char *what;
  } cases[] = {
    {0, 23, "application data record"},
    {0, 21, "alert record"},
    {1, 2, "record version 2.x"},
    {3, 0x40, "record over 16 KB"},
    {5, 2, "ServerHello"},
    {7, 0x10, "handshake length too long"},
    {9, 2, "legacy_version 2.x"},
    {43, 33, "session id of 33"},
    {76, 0xff, "cipher suites too long"},
    {77, 7, "odd cipher suites"},
    {84, 0, "no compression"},
    {86, 0x7f, "extensions too long"},
    {87, 0, "extensions too short"},
    {97, 0x40, "server_name too long"},
    {99, 0x40, "name list too long"},
    {101, 1, "not a host_name"},
    {102, 0x40, "name too long"},
    {104, '.', "a name from a dot"},
  };
  /* Offsets (hello()): record header 0..4, handshake header 5..8, version
   * 9, random 11..42, session id 43..75, suites 76..83, compression 84..85,
   * extensions' length 86, supported_versions 88..94, server_name 95:
   * its length 97, the list's 99, the name's type 101, length 102, name 104. */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t save = rec[cases[i].at];
    rec[cases[i].at] = cases[i].v;
    enum s5_sniff res = tls1(rec, r, got);
    CHECK(res == S5_SNIFF_NONE || (res == S5_SNIFF_MORE && cases[i].at == 7), "%s (byte %zu = %u): %d",
          cases[i].what, cases[i].at, cases[i].v, (int)res);
    rec[cases[i].at] = save;
  }
  CHECK(tls1(rec, r, got) == S5_SNIFF_FOUND, "restored");
  /* A zero-length record, and a ChangeCipherSpec between two fragments. */
  CHECK(tls1((const uint8_t *)"\x16\x03\x01\x00\x00\x01", 6, got) == S5_SNIFF_NONE, "empty record");
  r = records(rec, msg, m, 50);
  rec[55] = 20;
  CHECK(tls1(rec, r, got) == S5_SNIFF_NONE, "ChangeCipherSpec inside the ClientHello");
  /* Not TLS at all. */
  CHECK(tls1((const uint8_t *)"GET / HTTP/1.1\r\n", 16, got) == S5_SNIFF_NONE, "HTTP");
  CHECK(tls1((const uint8_t *)"SSH-2.0-OpenSSH", 15, got) == S5_SNIFF_NONE, "SSH");
  CHECK(tls1((const uint8_t *)"\x16\x02", 2, got) == S5_SNIFF_NONE, "SSLv2-ish");
  CHECK(tls1((const uint8_t *)"\x16", 1, got) == S5_SNIFF_MORE, "one byte");
  CHECK(tls1((const uint8_t *)"", 0, got) == S5_SNIFF_MORE, "nothing");
  /* Random bytes after a good record header: never a crash. */
  srand(44);
  for (int round = 0; round < 2000; round++) {
    size_t len = 5 + (size_t)(rand() % 600);
    for (size_t i = 5; i < len; i++) rec[i] = (uint8_t)rand();
    rec[0] = 22, rec[1] = 3, rec[2] = 1, put16(rec + 3, len - 5);
    if (round % 2) rec[5] = 1;
    (void)tls1(rec, len, got);
  }
}

static size_t slurp(const char *file, uint8_t *buf, size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", fixtures, file);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    CHECK(0, "%s: cannot open", path);
    return 0;
  }
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void test_tls_captured(void) {
  static uint8_t buf[8192];
  size_t n = slurp("tls_openssl.bin", buf, sizeof buf);
  CHECK(n > 200, "openssl fixture: %zu bytes", n);
  if (n > 0) tls_stream("openssl s_client", buf, n, "openssl.sniff.example");
  n = slurp("tls_curl.bin", buf, sizeof buf);
  CHECK(n > 200, "curl fixture: %zu bytes", n);
  if (n > 0) tls_stream("curl", buf, n, "curl.sniff.example");
}

/* ---- HTTP ------------------------------------------------------------ */

static void http_stream(const char *req, const char *name, size_t decided_at) {
  char got[S5_SNIFF_NAME_MAX + 1];
  size_t len = strlen(req);
  if (decided_at == 0) {
    /* Decided at the end of Host's line, or of the header block. */
    const char *h = strcasestr(req, "\nhost");
    decided_at = h != NULL ? (size_t)(strchr(h + 1, '\n') - req) + 1 : len;
  }
  char what[160];
  snprintf(what, sizeof what, "'%.150s'", req);
  sniff_more(s5_sniff_http, what, req, decided_at, len, got);
  for (size_t n = decided_at; n <= len; n++) {
    enum s5_sniff r = sniff_copy(s5_sniff_http, req, n, got);
    if (name != NULL)
      CHECK(r == S5_SNIFF_FOUND && strcmp(got, name) == 0, "'%s' (%zu bytes): %d '%s', not %s", req, n,
            (int)r, r == S5_SNIFF_FOUND ? got : "", name);
    else CHECK(r == S5_SNIFF_NONE, "'%s' (%zu bytes): %d, not NONE", req, n, (int)r);
  }
}

static void test_http(void) {
  char got[S5_SNIFF_NAME_MAX + 1];
  const char *r1 = "GET / HTTP/1.1\r\nHost: Example.COM:8080\r\nAccept: */*\r\n\r\n";
  http_stream(r1, "example.com", (size_t)(strstr(r1, "\r\nAccept") - r1 + 2));
  http_stream("GET /x HTTP/1.1\r\nUser-Agent: t\r\nhost:a.b\r\n\r\n", "a.b", 0);
  http_stream("POST /form?q=1 HTTP/1.0\nX: y\nHOST: \t www.test.org. \t\n\n", "www.test.org", 0);
  http_stream("GET http://other.example/ HTTP/1.1\r\nHost: h.example\r\n\r\n", "h.example", 0);
  http_stream("CONNECT h.example:443 HTTP/1.1\r\nHost: h.example:443\r\n\r\n", "h.example", 0);
  http_stream("OPTIONS * HTTP/1.1\r\nHost: o.example\r\n\r\n", "o.example", 0);
  /* NONE: the headers end without Host; Host's value not a name. */
  http_stream("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.0\n\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: a.example:http\r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: a.example:\r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: \r\n\r\n", NULL, 0);
  http_stream("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", NULL, 0);
  /* Malformed: decided as soon as the bytes say so. */
  static const char *const bad[] = {
    "GETX / HTTP/1.1\r\n",
    "get / HTTP/1.1\r\n",
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "GET / HTTP/2.0\r\n",
    "GET / HTTP/1.1 \r\n",
    "GET /a b HTTP/1.1\r\n",
    "GET  HTTP/1.1\r\n",
    "GET / HTTP/1.1\rX",
    "GET / HTTP/1.1\r\nHost : a.b\r\n",
    "GET / HTTP/1.1\r\n Host: a\r\n",
    "GET / HTTP/1.1\r\nHost\r\n",
    "GET / HTTP/1.1\r\n: a\r\n",
    "GET / HTTP/1.1\r\nX: a\rb\r\nHost: a\r\n",
    "\x16\x03\x01\x02\x00\x01",
    "GET /\x01 HTTP/1.1",
    "SSH-2.0-x\r\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(s5_sniff_http((const uint8_t *)bad[i], strlen(bad[i]), got) == S5_SNIFF_NONE, "'%s' not NONE",
          bad[i]);
  CHECK(s5_sniff_http((const uint8_t *)"DEL", 3, got) == S5_SNIFF_MORE, "DEL");
  CHECK(s5_sniff_http((const uint8_t *)"GET / HTTP/1.1\r\nHost: a.b\r", 26, got) == S5_SNIFF_MORE,
        "Host's line without its LF: MORE");
  /* The holder full without Host: NONE. */
  static uint8_t big[S5_SNIFF_HOLD_MAX + 100];
  size_t n = (size_t)snprintf((char *)big, sizeof big, "GET / HTTP/1.1\r\n");
  while (n + 20 < sizeof big) n += (size_t)snprintf((char *)big + n, sizeof big - n, "X-Filler: 0123456\r\n");
  CHECK(s5_sniff_http(big, S5_SNIFF_HOLD_MAX - 200, got) == S5_SNIFF_MORE, "below the limit: MORE");
  CHECK(s5_sniff_http(big, S5_SNIFF_HOLD_MAX, got) == S5_SNIFF_NONE, "at the limit: NONE");
  CHECK(s5_sniff_http(big, n, got) == S5_SNIFF_NONE, "over the limit: NONE");
}

/* ---- QUIC -------------------------------------------------------------- */

/* A hex file (lines starting with '#' skipped) into buf. */
static size_t hexfile(const char *file, uint8_t *buf, size_t cap) {
  static char text[16384];
  size_t n = slurp(file, (uint8_t *)text, sizeof text - 1), out = 0;
  text[n] = 0;
  int hi = -1, comment = 0;
  for (size_t i = 0; i < n && out < cap; i++) {
    char c = text[i];
    if (c == '\n') comment = 0;
    if (c == '#') comment = 1;
    if (comment) continue;
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) continue;
    if (hi < 0) hi = v;
    else buf[out++] = (uint8_t)(hi << 4 | v), hi = -1;
  }
  return out;
}

static enum s5_sniff quic1(const uint8_t *pkt, size_t len, char *got) {
  struct s5_quic_sniff q;
  s5_quic_sniff_init(&q);
  uint8_t *p = malloc(len + 1);
  memcpy(p, pkt, len);
  enum s5_sniff r = s5_quic_sniff_feed(&q, p, len, got);
  free(p);
  s5_quic_sniff_free(&q);
  return r;
}

static void test_quic_rfc9001(void) {
  static uint8_t pkt[1500];
  char got[S5_SNIFF_NAME_MAX + 1];
  size_t n = hexfile("rfc9001_a2_client_initial.hex", pkt, sizeof pkt);
  CHECK(n == 1200, "RFC 9001 A.2 packet: %zu bytes", n);
  enum s5_sniff r = quic1(pkt, n, got);
  CHECK(r == S5_SNIFF_FOUND && strcmp(got, "example.com") == 0, "RFC 9001 A.2: %d '%s'", (int)r,
        r == S5_SNIFF_FOUND ? got : "");
  /* The same packet twice to one sniffer (a retransmission): still whole. */
  struct s5_quic_sniff q;
  s5_quic_sniff_init(&q);
  CHECK(s5_quic_sniff_feed(&q, pkt, n, got) == S5_SNIFF_FOUND, "first");
  CHECK(s5_quic_sniff_feed(&q, pkt, n, got) == S5_SNIFF_FOUND, "again");
  s5_quic_sniff_free(&q);
  s5_quic_sniff_free(&q); /* twice is harmless */
  /* Any byte changed: the header or the AEAD refuses it (or, for the
   * first byte's protected bits and the version, the parser). */
  for (size_t i = 0; i < n; i += (i < 64 ? 1 : 37)) {
    pkt[i] ^= 0x01;
    r = quic1(pkt, n, got);
    CHECK(r == S5_SNIFF_NONE, "byte %zu flipped: %d", i, (int)r);
    pkt[i] ^= 0x01;
  }
  /* Cut short anywhere: NONE. */
  for (size_t len = 0; len < n; len += (len < 64 ? 1 : 97))
    CHECK(quic1(pkt, len, got) == S5_SNIFF_NONE, "%zu of %zu bytes not NONE", len, n);
  /* Version 2, a short header, a Handshake packet type. */
  pkt[4] = 2;
  CHECK(quic1(pkt, n, got) == S5_SNIFF_NONE, "version 0x00000002");
  pkt[4] = 1;
  pkt[0] = 0x40;
  CHECK(quic1(pkt, n, got) == S5_SNIFF_NONE, "short header");
  pkt[0] = 0xe0;
  CHECK(quic1(pkt, n, got) == S5_SNIFF_NONE, "Handshake");
  pkt[0] = 0xc0;
  CHECK(quic1(pkt, n, got) == S5_SNIFF_FOUND, "restored");
  /* A datagram that is not QUIC. */
  CHECK(quic1((const uint8_t *)"\x12\x34\x01\x00\x00\x01", 6, got) == S5_SNIFF_NONE, "DNS");
}

/* test_sniff --quic NAME|- FILE...: one sniffer, the datagrams in order. */
static int quic_files(int argc, char **argv) {
  static uint8_t pkt[65536];
  char got[S5_SNIFF_NAME_MAX + 1];
  struct s5_quic_sniff q;
  s5_quic_sniff_init(&q);
  enum s5_sniff r = S5_SNIFF_MORE;
  for (int i = 3; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (f == NULL) {
      CHECK(0, "%s: cannot open", argv[i]);
      break;
    }
    size_t n = fread(pkt, 1, sizeof pkt, f);
    fclose(f);
    r = s5_quic_sniff_feed(&q, pkt, n, got);
    if (i < argc - 1) CHECK(r == S5_SNIFF_MORE, "%s: %d, not MORE", argv[i], (int)r);
  }
  s5_quic_sniff_free(&q);
  if (strcmp(argv[2], "-") == 0) CHECK(r == S5_SNIFF_NONE, "last: %d, not NONE", (int)r);
  else
    CHECK(r == S5_SNIFF_FOUND && strcmp(got, argv[2]) == 0, "last: %d '%s', not %s", (int)r,
          r == S5_SNIFF_FOUND ? got : "", argv[2]);
  return check_done();
}

int main(int argc, char **argv) {
  if (argc > 3 && strcmp(argv[1], "--quic") == 0) return quic_files(argc, argv);
  if (argc > 1) fixtures = argv[1];
  test_tls_built();
  test_tls_malformed();
  test_tls_captured();
  test_http();
  test_quic_rfc9001();
  CHECK(strcmp(s5_name_src_str(S5_NAME_TLS), "tls") == 0 && s5_name_src_str(S5_NAME_NONE)[0] == 0, "names");
  return check_done();
}
