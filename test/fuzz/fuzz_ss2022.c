/* SPDX-License-Identifier: MIT */
/* Fuzz target: Shadowsocks 2022's down stream decoder (core/socks5/
 * ss2022_dec.c), what a hostile or broken server could send. The harness
 * seals what the input describes with the right key, so the fuzzer
 * reaches past the header: input[0] the method, input[1] the feeding step,
 * input[2] the header's faults (1: type 0, 2: timestamp 31 s off, 4:
 * another request salt, 8: a tag bit flipped), input[3..4] the first
 * chunk's length, its payload the input's next bytes; then records
 * [flags][length (2 bytes)][payload] as fuzz_ss.c's (flags & 1: raw bytes,
 * & 2: a flipped tag; a payload cut when the input ends).
 *
 * Promises checked: the bytes opened are the sealed payloads, in order,
 * up to the first fault; the status is the first fault's (the header's in
 * the order the header is checked: tag, type, time, salt); a stream cut
 * short is partial, a whole one is not. */
#include "fuzz_check.h"
#include "base/ossl.h"
#include "socks5/ss2022_dec.h"

#define NOW 1700000000u

static uint8_t stream[1 << 18], want[1 << 18], got[1 << 18];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  char e[200];
  FUZZ_CHECK(s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) == 0, "%s", e);
  static const enum s5_ss_method ms[] = {S5_SS_2022_AES_128_GCM, S5_SS_2022_AES_256_GCM,
                                         S5_SS_2022_CHACHA20_POLY1305};
  enum s5_ss_method m = ms[data[0] % 3];
  size_t step = data[1] * 64u + 1u, klen = s5_ss_key_len(m), slen = klen, wlen = 0, i = 5;
  uint8_t psk[S5_SS_KEY_MAX], req[S5_SS_KEY_MAX], h[1 + 8 + S5_SS_KEY_MAX + 2];
  uint8_t hf = data[2];
  for (size_t k = 0; k < klen; k++)
    psk[k] = (uint8_t)(k * 7), req[k] = (uint8_t)(k + 1), stream[k] = (uint8_t)(k * 13);
  struct s5_ss_aead a;
  FUZZ_CHECK(s5_ss2022_aead_init(&a, m, psk, stream) == 0, "cipher");
  uint64_t ts = NOW + ((hf & 2) ? 31 : 0);
  h[0] = (hf & 1) ? 0 : 1;
  for (int k = 0; k < 8; k++) h[1 + k] = (uint8_t)(ts >> (56 - 8 * k));
  memcpy(h + 9, req, klen);
  if (hf & 4) h[9] ^= 1;
  size_t len = (size_t)data[3] << 8 | data[4];
  h[9 + klen] = data[3], h[10 + klen] = data[4];
  FUZZ_CHECK(s5_ss_seal(&a, h, 11 + klen, stream + slen) == 0, "seal header");
  if (hf & 8) stream[slen + 11 + klen + hf % 16] ^= 1;
  slen += S5_SS2022_RESP_FIXED(klen);
  int expect = (hf & 8)   ? S5_SS_BAD_TAG
               : (hf & 1) ? S5_SS2022_WRONG_TYPE
               : (hf & 2) ? S5_SS2022_CLOCK_SKEW
               : (hf & 4) ? S5_SS2022_SALT_MISMATCH
                          : S5_SS_OK;
  int cut = 0, first = 1;
  while ((expect == S5_SS_OK || first) && !cut && slen + 3 * (S5_SS2022_PAYLOAD_MAX + 64) < sizeof stream) {
    uint8_t flags = 0;
    if (!first) { /* a record: [flags][length] */
      if (i + 3 > size) break;
      flags = data[i];
      len = (size_t)data[i + 1] << 8 | data[i + 2];
      i += 3;
      if (flags & 1) { /* raw bytes where a chunk should be */
        size_t have = len % 64 < size - i ? len % 64 : size - i;
        memcpy(stream + slen, data + i, have);
        slen += have, i += have;
        if (have > 0) expect = S5_SS_BAD_TAG;
        if (have > 0) break;
        continue;
      }
      uint8_t l[2] = {(uint8_t)(len >> 8), (uint8_t)len};
      FUZZ_CHECK(s5_ss_seal(&a, l, 2, stream + slen) == 0, "seal length");
      if (flags & 2) stream[slen + 2 + flags % 16] ^= 1, expect = S5_SS_BAD_TAG;
      slen += 2 + S5_SS_TAG;
      if (flags & 2) break;
    }
    first = 0;
    size_t have = len < size - i ? len : size - i;
    if (len == have) {
      FUZZ_CHECK(s5_ss_seal(&a, data + i, len, stream + slen) == 0, "seal payload");
      slen += len + S5_SS_TAG;
      if (expect == S5_SS_OK)
        memcpy(want + wlen, data + i, len), wlen += len; /* past a bad header: never opened */
    } else {                                             /* the input ends: a payload cut short */
      memcpy(stream + slen, data + i, have);
      slen += have, cut = 1;
    }
    i += have;
  }
  s5_ss_aead_free(&a);

  static struct s5_ss2022_dec d;
  static struct s5_ss2022_replay r;
  memset(&r, 0, sizeof r);
  s5_ss2022_dec_init(&d, m, psk, req);
  int st = S5_SS_OK;
  size_t n, out = 0, cap = 1 + data[1] * 97u;
  for (size_t off = 0; off < slen && st == S5_SS_OK;) {
    size_t take = slen - off < step ? slen - off : step;
    if (take > sizeof d.in - d.in_len) take = sizeof d.in - d.in_len;
    FUZZ_CHECK(take > 0, "no room in the decoder's input with %zu bytes held", d.in_len);
    memcpy(d.in + d.in_len, stream + off, take);
    d.in_len += take, off += take;
    do {
      st = s5_ss2022_decode(&d, &r, NOW, got + out, cap, &n);
      FUZZ_CHECK(n <= cap, "%zu bytes from one call of %zu", n, cap);
      out += n;
    } while (st == S5_SS_OK && n > 0);
  }
  FUZZ_CHECK(st == expect || (st == S5_SS_OK && expect != S5_SS_OK && out == wlen),
             "status %d, want %d (%zu of %zu bytes)", st, expect, out, wlen);
  FUZZ_CHECK(out <= wlen && memcmp(got, want, out) == 0, "opened %zu bytes, not the %zu sealed", out, wlen);
  if (expect == S5_SS_OK) {
    FUZZ_CHECK(out == wlen, "a well-formed stream: %zu of %zu bytes opened", out, wlen);
    FUZZ_CHECK(s5_ss2022_dec_partial(&d) == cut, "cut %d, partial %d", cut, s5_ss2022_dec_partial(&d));
  }
  s5_ss2022_dec_free(&d);
  return 0;
}
