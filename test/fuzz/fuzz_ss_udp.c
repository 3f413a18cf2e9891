/* SPDX-License-Identifier: MIT */
/* Fuzz target: a Shadowsocks UDP packet from the server (core/socks5/ss_aead.c's
 * s5_ss_udp_open), then its address header read as core/udp/udp_ss.c does
 * (RSV and FRAG written before the opened text, SOCKS5's parser). input[0]
 * the method, input[1] flags: bit 0, the rest of the input is the packet
 * as it came (hostile bytes); else the rest is the text, sealed with the
 * right key and a salt from the input's first bytes, then bit 1 flips one
 * bit (at input[1] >> 2 of the packet) and bit 2 cuts the last byte.
 *
 * Promises checked: a packet shorter than salt and tag is S5_SS_SHORT; a
 * sealed, untouched one opens to its text exactly; a flipped or cut one
 * never opens; whatever opens is parsed within its bounds. */
#include "fuzz_check.h"
#define S5_OSSL_TABLE_ONLY /* the loader only */
#include "base/ossl.h"
#include "socks5/socks5_udp.h"
#include "socks5/ss_aead.h"

#define PW "fuzz password"

static uint8_t pkt[S5_SS_KEY_MAX + S5_SS_UDP_MAX + S5_SS_TAG];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  char e[200];
  FUZZ_CHECK(s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) == 0, "%s", e);
  enum s5_ss_method m = (enum s5_ss_method)(data[0] % 3);
  uint8_t flags = data[1];
  const uint8_t *in = data + 2;
  size_t n = size - 2, sl = s5_ss_key_len(m), len;
  if (n > S5_SS_UDP_MAX) n = S5_SS_UDP_MAX;
  struct s5_ss_udp u;
  FUZZ_CHECK(s5_ss_udp_init(&u, m, PW) == 0, "init");
  int sealed = !(flags & 1), touched = 0;
  if (!sealed) {
    memcpy(pkt, in, n);
    len = n;
  } else {
    uint8_t salt[S5_SS_KEY_MAX];
    for (size_t k = 0; k < sl; k++) salt[k] = k < n ? in[k] : (uint8_t)k;
    if (n + sl + S5_SS_TAG > S5_SS_UDP_MAX) n = S5_SS_UDP_MAX - sl - S5_SS_TAG;
    memcpy(pkt + sl, in, n);
    long r = s5_ss_udp_seal(&u, salt, pkt, n);
    FUZZ_CHECK(r == (long)(sl + n + S5_SS_TAG), "sealed %ld bytes of %zu", r, n);
    len = (size_t)r;
    if (flags & 2) pkt[(flags >> 2) % len] ^= 0x20, touched = 1;
    if (flags & 4) len--, touched = 1;
  }
  long t = s5_ss_udp_open(&u, pkt, len);
  if (len < sl + S5_SS_TAG) FUZZ_CHECK(t == S5_SS_SHORT, "%zu bytes: %ld, not short", len, t);
  if (sealed && !touched) FUZZ_CHECK(t == (long)n && memcmp(pkt + sl, in, n) == 0, "opened %ld of %zu", t, n);
  if (sealed && touched) FUZZ_CHECK(t < 0, "a flipped or cut packet opened (%ld)", t);
  if (t >= 0) {
    uint8_t *d = pkt + sl - 3;
    d[0] = d[1] = d[2] = 0;
    struct s5_socks5_addr src;
    int h = s5_socks5_udp_header_parse(d, (size_t)t + 3, &src);
    FUZZ_CHECK(h < 0 || (size_t)h <= (size_t)t + 3, "header of %d bytes in %ld", h, t + 3);
  }
  s5_ss_udp_free(&u);
  return 0;
}
