/* SPDX-License-Identifier: MIT */
/* Fuzz target: what an HTTP or SOCKS4 upstream answers a CONNECT with
 * (core/socks5/http_connect.c, socks4.c).
 *
 * Input: byte 0 chooses the parser (bit 7: SOCKS4, else HTTP) and, for
 * HTTP, the size of the pieces the response arrives in (bits 0-6, plus 1);
 * the rest are the bytes received.
 *
 * HTTP's promises, which proxy.c relies on when it drops what was read of a
 * header: the answer and where the header ended do not depend on how the
 * bytes were cut into pieces; a piece is never taken past its end; NEED_MORE
 * only while fewer than S5_HTTP_HEADER_MAX bytes were taken; a 2xx only
 * after a blank line, and never beyond the input. SOCKS4's: the streaming
 * promise of fuzz_socks5 (NEED_MORE, then one final answer). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "socks5/http_connect.h"
#include "socks5/socks4.h"
#include "socks5/socks5.h"

/* Feeds msg in pieces of step; the answer, and the bytes taken in *taken. */
static int http_feed(struct s5_http_reply *r, const uint8_t *msg, size_t len, size_t step, size_t *taken) {
  s5_http_reply_init(r);
  *taken = 0;
  int rc = S5_SOCKS5_NEED_MORE;
  while (*taken < len) {
    size_t n = len - *taken < step ? len - *taken : step, used = 0;
    uint8_t *piece = fuzz_dup(msg + *taken, n);
    rc = s5_http_reply_feed(r, piece, n, &used);
    free(piece);
    FUZZ_CHECK(used <= n && (rc != S5_SOCKS5_NEED_MORE || used == n), "used %zu of %zu (rc %d)", used, n, rc);
    *taken += used;
    if (rc != S5_SOCKS5_NEED_MORE) break;
  }
  FUZZ_CHECK(r->line[sizeof r->line - 1] == '\0' && strlen(r->line) == r->line_len,
             "status line not a string");
  return rc;
}

static void check_http(const uint8_t *msg, size_t len, size_t step) {
  struct s5_http_reply a, b;
  size_t ta, tb;
  int ra = http_feed(&a, msg, len, len > 0 ? len : 1, &ta);
  int rb = http_feed(&b, msg, len, step, &tb);
  FUZZ_CHECK(ra == rb && ta == tb, "whole: %d at %zu; pieces of %zu: %d at %zu", ra, ta, step, rb, tb);
  FUZZ_CHECK(ra != S5_SOCKS5_NEED_MORE || ta < S5_HTTP_HEADER_MAX + 1, "NEED_MORE after %zu bytes", ta);
  if (ra > 0) {
    FUZZ_CHECK(ra >= 200 && ra < 300 && ta >= 2 && msg[ta - 1] == '\n', "granted %d at %zu", ra, ta);
    FUZZ_CHECK(msg[ta - 2] == '\n' || (ta >= 3 && msg[ta - 2] == '\r' && msg[ta - 3] == '\n'),
               "no blank line");
  }
}

static void check_socks4(const uint8_t *msg, size_t len) {
  int final = S5_SOCKS5_NEED_MORE;
  for (size_t m = 0; m <= len && m <= 64; m++) {
    uint8_t *buf = fuzz_dup(msg, m), cd = 0;
    int r = s5_socks4_parse_reply(buf, m, &cd);
    free(buf);
    FUZZ_CHECK(r <= (int)m, "reply of %d bytes in %zu", r, m);
    if (final != S5_SOCKS5_NEED_MORE)
      FUZZ_CHECK(r == final, "answer changed from %d to %d at %zu", final, r, m);
    final = r;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 0x80) check_socks4(data + 1, size - 1);
  else check_http(data + 1, size - 1, (size_t)(data[0] & 0x7f) + 1);
  return 0;
}
