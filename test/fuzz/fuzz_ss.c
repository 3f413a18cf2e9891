/* SPDX-License-Identifier: MIT */
/* Fuzz target: the Shadowsocks down stream's decoder (core/socks5/ss_aead.c),
 * what a hostile or broken server could send. The harness seals what the
 * input describes with the right key, so the fuzzer reaches past the
 * first tag: input[0] the method, input[1] the feeding step, then records
 * [flags][length (2 bytes)][payload]: sealed as a chunk of that length
 * (over 0x3FFF too) with the input's next bytes as payload (fewer when the
 * input ends: the stream is cut), its tag flipped when flags & 2; or
 * (flags & 1) the bytes copied raw, unsealed.
 *
 * Promises checked: the bytes opened are the sealed payloads, in order,
 * up to the first bad record; a failure only for a stream that is not
 * well formed (a raw record, a flipped tag, a length over 0x3FFF) and the
 * failure the first bad record calls for; a stream cut short is partial,
 * a whole one is not. */
#include "fuzz_check.h"
#define S5_OSSL_TABLE_ONLY /* the loader only: this file calls OpenSSL itself */
#include "base/ossl.h"
#include "socks5/ss_aead.h"

#define PW "fuzz password"

static uint8_t stream[1 << 17], want[1 << 17], got[(1 << 17) + S5_SS_PAYLOAD_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  char e[200];
  FUZZ_CHECK(s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) == 0, "%s", e);
  enum s5_ss_method m = (enum s5_ss_method)(data[0] % 3);
  size_t step = data[1] + 1u, klen = s5_ss_key_len(m), slen = klen, wlen = 0, i = 2;
  uint8_t key[S5_SS_KEY_MAX];
  struct s5_ss_aead a;
  for (size_t k = 0; k < klen; k++) stream[k] = (uint8_t)(k * 13);
  FUZZ_CHECK(s5_ss_password_key(m, PW, key) == 0 && s5_ss_aead_init(&a, m, key, stream) == 0, "cipher");
  int expect = S5_SS_OK, cut = 0; /* the first bad record's failure; the stream ends inside a chunk */
  while (i + 3 <= size && !cut && slen + 3 * S5_SS_CHUNK_MAX < sizeof stream) {
    uint8_t flags = data[i];
    size_t len = (size_t)data[i + 1] << 8 | data[i + 2], have;
    i += 3;
    if (flags & 1) { /* raw bytes: garbage where a chunk should be */
      have = len % 64 < size - i ? len % 64 : size - i;
      memcpy(stream + slen, data + i, have);
      slen += have, i += have;
      if (have > 0 && expect == S5_SS_OK) expect = S5_SS_BAD_TAG;
      if (have > 0) break;
      continue;
    }
    len &= 0x7fff;
    uint8_t l[2] = {(uint8_t)(len >> 8), (uint8_t)len};
    FUZZ_CHECK(s5_ss_seal(&a, l, 2, stream + slen) == 0, "seal length");
    if (flags & 2) stream[slen + 2 + flags % 16] ^= 1; /* within the length's seal */
    slen += 2 + S5_SS_TAG;
    if (expect == S5_SS_OK && (flags & 2)) expect = S5_SS_BAD_TAG;
    if (expect == S5_SS_OK && len > S5_SS_PAYLOAD_MAX) expect = S5_SS_OVERSIZE;
    if (len > S5_SS_PAYLOAD_MAX) break; /* nothing opens past it */
    have = len < size - i ? len : size - i;
    if (len == have) {
      FUZZ_CHECK(s5_ss_seal(&a, data + i, len, stream + slen) == 0, "seal payload");
      slen += len + S5_SS_TAG;
      if (expect == S5_SS_OK) memcpy(want + wlen, data + i, len), wlen += len;
    } else { /* the input ends: a payload cut short */
      memcpy(stream + slen, data + i, have);
      slen += have, cut = 1;
    }
    i += have;
    if (flags & 2) break;
  }
  s5_ss_aead_free(&a);

  static struct s5_ss_dec d;
  s5_ss_dec_init(&d, m, key);
  int st = S5_SS_OK;
  size_t n, out = 0;
  for (size_t off = 0; off < slen && st == S5_SS_OK;) {
    size_t take = slen - off < step ? slen - off : step;
    if (take > sizeof d.in - d.in_len) take = sizeof d.in - d.in_len;
    FUZZ_CHECK(take > 0, "no room in the decoder's input with %zu bytes held", d.in_len);
    memcpy(d.in + d.in_len, stream + off, take);
    d.in_len += take, off += take;
    do {
      st = s5_ss_decode(&d, got + out, S5_SS_PAYLOAD_MAX, &n);
      FUZZ_CHECK(n <= S5_SS_PAYLOAD_MAX, "%zu bytes from one call", n);
      out += n;
    } while (st == S5_SS_OK && n > 0);
  }
  FUZZ_CHECK(st == expect || (st == S5_SS_OK && expect != S5_SS_OK && out == wlen),
             "status %d, want %d (%zu of %zu bytes)", st, expect, out, wlen);
  FUZZ_CHECK(out <= wlen && memcmp(got, want, out) == 0, "opened %zu bytes, not the %zu sealed", out, wlen);
  if (expect == S5_SS_OK) {
    FUZZ_CHECK(out == wlen, "a well-formed stream: %zu of %zu bytes opened", out, wlen);
    FUZZ_CHECK(s5_ss_dec_partial(&d) == cut, "cut %d, partial %d", cut, s5_ss_dec_partial(&d));
  }
  s5_ss_dec_free(&d);
  return 0;
}
