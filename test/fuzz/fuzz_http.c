/* SPDX-License-Identifier: MIT */
/* Fuzz target: the metrics endpoint's request parser (threads/ctl/http.c), the
 * only code that reads what a client of [stats] http sends. Byte 0 picks
 * the cap (below 0x80: 16 + 4 * byte, so that 414 and 431 are reached with
 * short inputs; else S5_HTTP_HEAD_MAX, the server's); the rest is what the
 * connection received, handed over in an exactly sized heap copy.
 *
 * The promises metrics.c relies on:
 *   - the answer is one of the results in http.h, with a reason phrase;
 *   - NEED_MORE only below the cap (a full buffer always gets an answer, so
 *     a connection never waits with nowhere to read into);
 *   - streaming: once a prefix has an answer, every longer input (the same
 *     prefix plus more bytes) has the same one, so reading more can never
 *     change what was, or would have been, answered;
 *   - 200 only for a head that starts (after empty lines) with "GET /" and
 *     is ended by an empty line within the bytes read;
 *   - 405 only for a method other than GET. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "threads/ctl/http.h"

static int known(enum s5_http_result r) {
  switch (r) {
    case S5_HTTP_NEED_MORE:
    case S5_HTTP_OK:
    case S5_HTTP_BAD_REQUEST:
    case S5_HTTP_NOT_FOUND:
    case S5_HTTP_METHOD_NOT_ALLOWED:
    case S5_HTTP_URI_TOO_LONG:
    case S5_HTTP_HEADERS_TOO_LARGE: return 1;
  }
  return 0;
}

static enum s5_http_result parse_copy(const uint8_t *data, size_t len, size_t cap) {
  uint8_t *copy = fuzz_dup(data, len);
  if (len == 0) copy[0] = 'x'; /* never read: len says so (and keeps gcc from warning) */
  enum s5_http_result r = s5_http_parse((const char *)copy, len, cap);
  free(copy);
  FUZZ_CHECK(known(r), "unknown result %d", (int)r);
  FUZZ_CHECK(r != S5_HTTP_NEED_MORE || len < cap, "NEED_MORE with %zu bytes of a %zu-byte cap", len, cap);
  FUZZ_CHECK(strcmp(s5_http_reason(r), "Internal Server Error") != 0 || r == S5_HTTP_NEED_MORE,
             "no reason phrase for %d", (int)r);
  return r;
}

/* Where the request line starts: after the empty lines before it. */
static size_t skip_empty_lines(const uint8_t *p, size_t len) {
  size_t i = 0;
  for (;;) {
    if (i < len && p[i] == '\n') i++;
    else if (i + 1 < len && p[i] == '\r' && p[i + 1] == '\n') i += 2;
    else return i;
  }
}

static int has_end_of_head(const uint8_t *p, size_t len) {
  for (size_t i = 0; i + 1 < len; i++) {
    if (p[i] != '\n') continue;
    if (p[i + 1] == '\n' || (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')) return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t cap = data[0] < 0x80 ? 16 + 4 * (size_t)data[0] : S5_HTTP_HEAD_MAX;
  const uint8_t *req = data + 1;
  size_t len = size - 1;
  enum s5_http_result full = parse_copy(req, len, cap);
  size_t seen = len < cap ? len : cap;

  if (full == S5_HTTP_OK) {
    size_t at = skip_empty_lines(req, seen);
    FUZZ_CHECK(seen - at >= 5 && memcmp(req + at, "GET /", 5) == 0,
               "200 for a request line not \"GET /...\"");
    FUZZ_CHECK(has_end_of_head(req + at, seen - at), "200 without an empty line ending the head");
  }
  if (full == S5_HTTP_METHOD_NOT_ALLOWED) {
    size_t at = skip_empty_lines(req, seen);
    FUZZ_CHECK(!(seen - at >= 4 && memcmp(req + at, "GET ", 4) == 0), "405 for GET");
  }

  /* Every prefix up to 512 bytes, then every 61st: an answer given early
   * is the answer of the whole input. */
  for (size_t n = 0; n < len; n += n < 512 ? 1 : 61) {
    enum s5_http_result r = parse_copy(req, n, cap);
    FUZZ_CHECK(r == S5_HTTP_NEED_MORE || r == full, "%zu bytes answer %d, all %zu bytes %d", n, (int)r, len,
               (int)full);
  }
  return 0;
}
