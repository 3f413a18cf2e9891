/* SPDX-License-Identifier: MIT */
/* The sniff parsers' cost (core/sniff/): nanoseconds per parse of real
 * first bytes, over many iterations on one core. A figure to read, never
 * asserted (the aim: a ClientHello under 2 µs).
 *
 *   sniffbench [FIXTURE_DIR] [--markdown]
 *
 * FIXTURE_DIR holds test/unit/sniff/'s captures (default: the source
 * tree's, compiled in). Rows: curl's and openssl s_client's ClientHellos
 * (one record), a 1.8 KB post-quantum-sized ClientHello in two records
 * (the gathering copy), an HTTP request's Host, RFC 9001 A.2's client
 * Initial (a new sniffer each time: keys derived, header protection,
 * AES-128-GCM, the CRYPTO frame, the ClientHello). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sniff/sniff.h"

#ifndef S5_SNIFF_FIXTURES
#define S5_SNIFF_FIXTURES "."
#endif

static size_t slurp(const char *dir, const char *file, uint8_t *buf, size_t cap) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "sniffbench: %s: cannot open\n", path);
    exit(1);
  }
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static size_t unhex(const uint8_t *text, size_t n, uint8_t *out) {
  size_t o = 0;
  int hi = -1, comment = 0;
  for (size_t i = 0; i < n; i++) {
    int c = text[i];
    if (c == '\n') comment = 0;
    if (c == '#') comment = 1;
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (comment || v < 0) continue;
    if (hi < 0) hi = v;
    else out[o++] = (uint8_t)(hi << 4 | v), hi = -1;
  }
  return o;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int markdown;

static void row(const char *what, size_t bytes, double ns, const char *name) {
  if (markdown) printf("| %s | %zu | %.0f | %s |\n", what, bytes, ns, name);
  else printf("sniff: %-40s %5zu bytes %8.0f ns/parse  (%s)\n", what, bytes, ns, name);
}

static void bench_tcp(const char *what, enum s5_sniff (*fn)(const uint8_t *, size_t, char *),
                      const uint8_t *buf, size_t len, long iters) {
  char name[S5_SNIFF_NAME_MAX + 1] = "";
  volatile int sink = 0;
  if (fn(buf, len, name) != S5_SNIFF_FOUND) {
    fprintf(stderr, "sniffbench: %s: no name found\n", what);
    exit(1);
  }
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) sink += fn(buf, len, name);
    double ns = (now_ns() - t0) / (double)iters;
    if (ns < best) best = ns;
  }
  (void)sink;
  row(what, len, best, name);
}

static void bench_quic(const uint8_t *pkt, size_t len, long iters) {
  char name[S5_SNIFF_NAME_MAX + 1] = "";
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
      struct s5_quic_sniff q;
      s5_quic_sniff_init(&q);
      if (s5_quic_sniff_feed(&q, pkt, len, name) != S5_SNIFF_FOUND) {
        fprintf(stderr, "sniffbench: QUIC: no name found\n");
        exit(1);
      }
      s5_quic_sniff_free(&q);
    }
    double ns = (now_ns() - t0) / (double)iters;
    if (ns < best) best = ns;
  }
  row("QUIC Initial (RFC 9001 A.2), new sniffer", len, best, name);
}

/* A ClientHello of a post-quantum key share's size (1,216 + 32 bytes of
 * key share, as X25519Kyber768 sends), in two records. */
static size_t pq_hello(uint8_t *out) {
  uint8_t msg[2048];
  size_t n = 4;
  msg[n++] = 3, msg[n++] = 3;
  memset(msg + n, 7, 32), n += 32;
  msg[n++] = 32, memset(msg + n, 9, 32), n += 32;
  msg[n++] = 0, msg[n++] = 32;
  for (int i = 0; i < 16; i++) msg[n++] = 0x13, msg[n++] = (uint8_t)i;
  msg[n++] = 1, msg[n++] = 0;
  size_t ext_at = n;
  n += 2;
  static const char sni[] = "www.pq-example.com";
  size_t s = sizeof sni - 1;
  static const uint8_t grease[] = {0x0a, 0x0a, 0, 0, 0, 23, 0, 0, 0xff, 0x01, 0, 1, 0};
  memcpy(msg + n, grease, sizeof grease), n += sizeof grease;
  msg[n++] = 0, msg[n++] = 0, msg[n++] = 0, msg[n++] = (uint8_t)(s + 5), msg[n++] = 0,
  msg[n++] = (uint8_t)(s + 3);
  msg[n++] = 0, msg[n++] = 0, msg[n++] = (uint8_t)s;
  memcpy(msg + n, sni, s), n += s;
  size_t ks = 1216 + 32;
  msg[n++] = 0, msg[n++] = 51, msg[n++] = (uint8_t)((ks + 6) >> 8), msg[n++] = (uint8_t)(ks + 6);
  msg[n++] = (uint8_t)((ks + 4) >> 8), msg[n++] = (uint8_t)(ks + 4), msg[n++] = 0x63, msg[n++] = 0x99;
  msg[n++] = (uint8_t)(ks >> 8), msg[n++] = (uint8_t)ks;
  for (size_t i = 0; i < ks; i++) msg[n++] = (uint8_t)(i * 29);
  /* padding to 1,800 */
  size_t pad = 1800 - n - 4;
  msg[n++] = 0, msg[n++] = 21, msg[n++] = (uint8_t)(pad >> 8), msg[n++] = (uint8_t)pad;
  memset(msg + n, 0, pad), n += pad;
  msg[ext_at] = (uint8_t)((n - ext_at - 2) >> 8), msg[ext_at + 1] = (uint8_t)(n - ext_at - 2);
  msg[0] = 1, msg[1] = 0, msg[2] = (uint8_t)((n - 4) >> 8), msg[3] = (uint8_t)(n - 4);
  size_t o = 0, cut = 1000;
  for (size_t at = 0; at < n; at += cut) {
    size_t f = n - at < cut ? n - at : cut;
    out[o++] = 22, out[o++] = 3, out[o++] = 1, out[o++] = (uint8_t)(f >> 8), out[o++] = (uint8_t)f;
    memcpy(out + o, msg + at, f), o += f;
  }
  return o;
}

int main(int argc, char **argv) {
  const char *dir = S5_SNIFF_FIXTURES;
  static uint8_t buf[16384], text[16384];
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--markdown") == 0) markdown = 1;
    else dir = argv[i];
  }
  if (markdown) printf("| parse | bytes | ns | name |\n| --- | --- | --- | --- |\n");
  size_t n = slurp(dir, "tls_curl.bin", buf, sizeof buf);
  bench_tcp("TLS ClientHello (curl)", s5_sniff_tls, buf, n, 2000000);
  n = slurp(dir, "tls_openssl.bin", buf, sizeof buf);
  bench_tcp("TLS ClientHello (openssl s_client)", s5_sniff_tls, buf, n, 2000000);
  n = pq_hello(buf);
  bench_tcp("TLS ClientHello 1.8 KB, two records", s5_sniff_tls, buf, n, 1000000);
  static const char req[] =
    "GET /index.html HTTP/1.1\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n"
    "Host: www.example.com\r\n\r\n";
  bench_tcp("HTTP Host", s5_sniff_http, (const uint8_t *)req, sizeof req - 1, 2000000);
  n = slurp(dir, "rfc9001_a2_client_initial.hex", text, sizeof text);
  n = unhex(text, n, buf);
  bench_quic(buf, n, 20000);
  return 0;
}
