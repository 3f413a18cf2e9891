/* SPDX-License-Identifier: MIT */
/* Fuzz target: the SOCKS5 replies a proxy sends to s5tund (core/socks5/socks5.c):
 * method selection, RFC 1929 status, CONNECT reply; and the client-side
 * encoders with names, users and passwords taken from the input.
 *
 * Input: byte 0 chooses the parser and options (bit 0: we offered
 * username/password; bits 1-2: which parser goes first), the rest are the
 * bytes "received" from the proxy.
 *
 * Besides memory errors, it checks what proxy.c relies on when it parses
 * its growing receive buffer again after every read: a parser looks only at
 * the bytes it is given, a reply's length never exceeds them, and as bytes
 * arrive the answer goes from NEED_MORE to one final answer that further
 * bytes never change. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "socks5/socks5.h"

enum { P_METHOD, P_AUTH, P_REPLY };

static int parse(int which, const uint8_t *buf, size_t len, int offered_auth, uint8_t *rep) {
  switch (which) {
    case P_METHOD: return s5_socks5_parse_method(buf, len, offered_auth);
    case P_AUTH: return s5_socks5_parse_auth(buf, len);
    default: return s5_socks5_parse_reply(buf, len, rep);
  }
}

/* The streaming promise, checked on every prefix of msg (each one an exact
 * heap copy). Replies longer than the largest message are cut: proxy.c
 * never holds more than S5_SOCKS5_MAX_MSG bytes. */
static void check_parser(int which, const uint8_t *msg, size_t len, int offered_auth) {
  if (len > S5_SOCKS5_MAX_MSG) len = S5_SOCKS5_MAX_MSG;
  int final = S5_SOCKS5_NEED_MORE;
  size_t final_at = 0;
  uint8_t final_rep = 0;
  for (size_t m = 0; m <= len; m++) {
    uint8_t *buf = fuzz_dup(msg, m);
    uint8_t rep = 0xee;
    int r = parse(which, buf, m, offered_auth, &rep);
    free(buf);
    FUZZ_CHECK(r == S5_SOCKS5_NEED_MORE || r > 0 || (r <= S5_SOCKS5_BAD_VERSION && r >= S5_SOCKS5_TOO_LONG),
               "parser %d: unknown status %d at %zu bytes", which, r, m);
    FUZZ_CHECK(r <= (int)m, "parser %d: reply of %d bytes out of %zu", which, r, m);
    FUZZ_CHECK(r != S5_SOCKS5_REFUSED || which == P_REPLY, "parser %d: REFUSED", which);
    if (r == S5_SOCKS5_REFUSED) FUZZ_CHECK(rep != 0 && rep == msg[1], "REFUSED with REP %u", rep);
    if (final != S5_SOCKS5_NEED_MORE) {
      FUZZ_CHECK(r == final, "parser %d: %d at %zu bytes, then %d at %zu", which, final, final_at, r, m);
      if (r == S5_SOCKS5_REFUSED) FUZZ_CHECK(rep == final_rep, "REP changed");
    } else if (r != S5_SOCKS5_NEED_MORE) {
      final = r;
      final_at = m;
      final_rep = rep;
    }
    /* Short and text for every status (they end up in log lines). */
    FUZZ_CHECK(s5_socks5_strerror(r) != NULL, "strerror");
  }
  FUZZ_CHECK(s5_socks5_strrep(final_rep) != NULL, "strrep");
}

/* The encoders with hostile field contents: the result must fit the buffer
 * and be exactly what the RFCs say, or a clean TOO_LONG. */
static void check_encoders(const uint8_t *data, size_t len) {
  char a[300], b[300];
  size_t half = len / 2;
  size_t la = half < sizeof a - 1 ? half : sizeof a - 1;
  size_t lb = len - half < sizeof b - 1 ? len - half : sizeof b - 1;
  memcpy(a, data, la);
  a[la] = '\0';
  memcpy(b, data + half, lb);
  b[lb] = '\0';
  size_t ua = strlen(a), ub = strlen(b);

  for (size_t cap = 0; cap <= S5_SOCKS5_MAX_MSG; cap += cap < 16 ? 1 : 97) {
    uint8_t *out = malloc(cap > 0 ? cap : 1);
    if (out == NULL) abort();
    int n = s5_socks5_write_auth(out, cap, a, b);
    if (ua >= 1 && ua <= 255 && ub >= 1 && ub <= 255 && cap >= 3 + ua + ub) {
      FUZZ_CHECK(n == (int)(3 + ua + ub), "auth: %d", n);
      FUZZ_CHECK(out[0] == 1 && out[1] == ua && memcmp(out + 2, a, ua) == 0 && out[2 + ua] == ub &&
                   memcmp(out + 3 + ua, b, ub) == 0,
                 "auth: wrong bytes");
    } else {
      FUZZ_CHECK(n == S5_SOCKS5_TOO_LONG, "auth: %d for %zu/%zu bytes, cap %zu", n, ua, ub, cap);
    }
    uint16_t port = len >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 80;
    n = s5_socks5_write_connect_name(out, cap, a, port);
    if (ua >= 1 && ua <= 255 && cap >= 7 + ua) {
      FUZZ_CHECK(n == (int)(7 + ua), "connect name: %d", n);
      FUZZ_CHECK(out[3] == 3 && out[4] == ua && memcmp(out + 5, a, ua) == 0 && out[5 + ua] == port >> 8 &&
                   out[6 + ua] == (port & 0xff),
                 "connect name: wrong bytes");
    } else {
      FUZZ_CHECK(n == S5_SOCKS5_TOO_LONG, "connect name: %d", n);
    }
    n = s5_socks5_write_greeting(out, cap, la & 1);
    FUZZ_CHECK(cap < 3 ? n == S5_SOCKS5_TOO_LONG : n == 3, "greeting: %d", n);
    free(out);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t sel = data[0];
  const uint8_t *msg = data + 1;
  size_t len = size - 1;
  int offered_auth = sel & 1;
  int first = (sel >> 1) % 3;
  /* Every parser sees every input; the selector only decides which one
   * libFuzzer's comparison feedback sees first. */
  for (int i = 0; i < 3; i++) check_parser((first + i) % 3, msg, len, offered_auth);
  if (sel & 0x80) check_encoders(msg, len);
  return 0;
}
