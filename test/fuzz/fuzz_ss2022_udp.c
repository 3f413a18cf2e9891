/* SPDX-License-Identifier: MIT */
/* Fuzz target: a Shadowsocks 2022 UDP packet from the server
 * (core/socks5/ss2022_udp.c's s5_ss2022_udp_open), then its address
 * header read as core/udp/udp_ss.c does (RSV and FRAG written before the
 * opened text, SOCKS5's parser). input[0] the method (the three
 * 2022-blake3-* ones), input[1] flags: bit 0, the rest of the input is the
 * packet as it came (hostile bytes); else input[2] is the server's packet
 * id, input[3] its timestamp's offset from now (signed seconds), and the
 * rest the text, sealed as the server would for our session; then bit 1
 * flips one bit (at input[1] >> 3 of the packet), bit 2 cuts the last byte.
 *
 * Promises checked: a sealed, untouched packet within 30 s opens to its
 * text exactly, and a second copy of it is a replay; one beyond 30 s is
 * clock skew; a flipped or cut one never opens; whatever opens lies within
 * the packet and is parsed within its bounds. */
#include "fuzz_check.h"
#define S5_OSSL_TABLE_ONLY /* the loader only */
#include "base/ossl.h"
#include "socks5/socks5_udp.h"
#include "socks5/ss2022_udp.h"

#define K16 "BRIfLDlGU2BteoeUoa67yA=="
#define K32 "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g="
#define NOW 1700000000u

static uint8_t pkt[128 + S5_SS_UDP_MAX + S5_SS_TAG], copy[sizeof pkt];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  char e[200];
  FUZZ_CHECK(s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) == 0, "%s", e);
  static const enum s5_ss_method ms[] = {S5_SS_2022_AES_128_GCM, S5_SS_2022_AES_256_GCM,
                                         S5_SS_2022_CHACHA20_POLY1305};
  enum s5_ss_method m = ms[data[0] % 3];
  const char *key = m == S5_SS_2022_AES_128_GCM ? K16 : K32;
  static const uint8_t csid[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ssid[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  uint8_t flags = data[1];
  int skew = (int8_t)data[3];
  const uint8_t *in = data + 4;
  size_t n = size - 4, len;
  struct s5_ss2022_udp c, s;
  FUZZ_CHECK(s5_ss2022_udp_init(&c, m, key, csid) == 0 && s5_ss2022_udp_init(&s, m, key, ssid) == 0, "init");
  int sealed = !(flags & 1), touched = 0;
  size_t h = s5_ss2022_udp_head(&s) + 8; /* the server's main header is 8 bytes longer */
  if (!sealed) {                         /* all after method and flags */
    len = size - 2 > S5_SS_UDP_MAX ? S5_SS_UDP_MAX : size - 2;
    memcpy(pkt, data + 2, len);
  } else {
    if (h + n + S5_SS_TAG > S5_SS_UDP_MAX) n = S5_SS_UDP_MAX - h - S5_SS_TAG;
    memcpy(pkt + h, in, n);
    s.pid = data[2];
    long r = s5_ss2022_udp_seal_as(&s, csid, (uint64_t)((int64_t)NOW + skew), pkt, n);
    FUZZ_CHECK(r == (long)(h + n + S5_SS_TAG), "sealed %ld bytes of %zu", r, n);
    len = (size_t)r;
    if (flags & 2) pkt[(flags >> 3) % len] ^= 0x20, touched = 1;
    if (flags & 4) len--, touched = 1;
  }
  memcpy(copy, pkt, len);
  size_t off = 0;
  long t = s5_ss2022_udp_open(&c, NOW, pkt, len, &off);
  int in_time = skew <= S5_SS2022_SKEW_S && skew >= -S5_SS2022_SKEW_S;
  if (sealed && !touched && in_time)
    FUZZ_CHECK(t == (long)n && off == h && memcmp(pkt + off, in, n) == 0, "opened %ld of %zu", t, n);
  if (sealed && !touched && !in_time) FUZZ_CHECK(t == S5_SS2022_CLOCK_SKEW, "%d s off: %ld", skew, t);
  if (sealed && touched) FUZZ_CHECK(t < 0, "a flipped or cut packet opened (%ld)", t);
  if (t >= 0) {
    FUZZ_CHECK(off >= 3 && off + (size_t)t <= len, "text at %zu, %ld bytes, in %zu", off, t, len);
    long again = s5_ss2022_udp_open(&c, NOW, copy, len, &off);
    FUZZ_CHECK(again == S5_SS2022_REPLAY, "the same packet twice: %ld", again);
    uint8_t *d = pkt + off - 3;
    d[0] = d[1] = d[2] = 0;
    struct s5_socks5_addr src;
    int hl = s5_socks5_udp_header_parse(d, (size_t)t + 3, &src);
    FUZZ_CHECK(hl < 0 || (size_t)hl <= (size_t)t + 3, "header of %d bytes in %ld", hl, t + 3);
  }
  s5_ss2022_udp_free(&c);
  s5_ss2022_udp_free(&s);
  return 0;
}
