/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 framing (core/socks5/ss2022.c): known answers for the
 * three 2022-blake3-* methods, derived independently by ss/vectors2022.py
 * (BLAKE3 by Debian's b3sum, the AEADs by python3-cryptography; its output
 * is the table below): the PSK from base64, the session subkey, a request
 * with fixed salt, timestamp, padding and payload byte for byte, a
 * server's response opened; then the response refused when its request
 * salt differs, its timestamp is 31 s off, its type is a client's, a byte
 * is changed; PSKs of the wrong length or not base64; the replay filter.
 * The down stream's decoder (ss2022_dec.c) on the vector's response at
 * every split, and on a longer stream (chunks of 0xFFFF, 0 and 3 bytes)
 * at several splits and output sizes, cut short, tampered, replayed. */
#include <stdlib.h>

#include "check.h"
#include "base/ossl.h"
#include "socks5/ss2022.h"
#include "socks5/ss2022_dec.h"

#define NOW 1700000000u

static const struct {
  const char *method, *psk, *subkey, *request, *response;
} vectors[] = {
  /* python3 test/unit/ss/vectors2022.py */
  {"2022-blake3-aes-128-gcm", "BRIfLDlGU2BteoeUoa67yA==", "e97f6e60615895c400d053fea5cb80c9",
   "f72404eacdcd606db5b8759368f4338cf0feb79d8a3463d8f02e2c06b8de24e56f4f2899cb703e3d27cf661c110ee882efd1a84d6e9c18cf534f612f8bcdb860a3983c61bd8f35bdf117761def",
   "808182838485868788898a8b8c8d8e8f131c8d7b94db593e31e50dd5d437087f98a3f8cd1f10a256520795b9616fdd400fd1b76fa196cfdf224bfff375b657be1fe668424e4568a60c6bff4533d4a797"},
  {"2022-blake3-aes-256-gcm", "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=",
   "1531884d70cde46eb98f5a52555d307f716cfb58546da7e98966ab5bed188053",
   "593104c85d008b9d2200344d5d3307cb40919bf8da4265971ae79050b44d34ff86cb743fe79ce0d7f92e80c1d45f957cf009fc856993489513ea683fa2ced5356603eae982ae3b03bae43ede4f",
   "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fc212ac7c11ceaa5c78f7bcfaf9cbbfc122f733456c647e637ca5a655d35f9aa94f9fe1a9530c40e6fe3ecfae59ac357df13488eeefb1bfb1d77b0f516a42f7393f140b38d99b2c163798567ae8b1f154"},
  {"2022-blake3-chacha20-poly1305", "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=",
   "1531884d70cde46eb98f5a52555d307f716cfb58546da7e98966ab5bed188053",
   "400f426fcbdf5225c526a72da334f2773035b8d212bf93b66b84e0f3729ec92d16fb325636f082d7dc73f8700506d1ffb23749a15249cefe4e741e74cf8b64e3216951dac918a6c7eda7b694e5",
   "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f2409254fcfe65c9ad903f12cd0861bc2a926c0a6e78e859ba17a29148d125377df09bed86fc3163b3eef482b3c732da34a412a550ba8b169f855ac9fa25e29170aa24d1e7ddc28d8891a8d9160d709bd"},
};
static const enum s5_ss_method methods[] = {S5_SS_2022_AES_128_GCM, S5_SS_2022_AES_256_GCM,
                                            S5_SS_2022_CHACHA20_POLY1305};
static const uint8_t target[] = {1, 10, 0, 0, 1, 0, 80}; /* 10.0.0.1:80 */
static const char payload[] = "GET / HTTP/1.0\r\n\r\n";

static size_t unhex(const char *s, uint8_t *out) {
  size_t n = strlen(s) / 2;
  for (size_t i = 0; i < n; i++) {
    unsigned v = 0;
    sscanf(s + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
  return n;
}

/* The response r (salt first) checked against salt at now: its status, and the reply opened into out. */
static int response(enum s5_ss_method m, const uint8_t *psk, const uint8_t *r, const uint8_t *salt,
                    uint64_t now, uint8_t *out) {
  size_t klen = s5_ss_key_len(m), first = 0;
  struct s5_ss_aead a;
  CHECK(s5_ss2022_aead_init(&a, m, psk, r) == 0, "server's cipher");
  int st = s5_ss2022_response(&a, m, r + klen, salt, now, &first);
  if (st == S5_SS_OK) {
    CHECK(first == 5, "first chunk: %zu bytes", first);
    CHECK(s5_ss_open(&a, r + klen + S5_SS2022_RESP_FIXED(klen), 5, out) == 0, "first chunk opened");
  }
  s5_ss_aead_free(&a);
  return st;
}

static void test_vectors(void) {
  for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
    enum s5_ss_method m = methods[v];
    size_t klen = s5_ss_key_len(m);
    uint8_t psk[S5_SS_KEY_MAX], want[512], got[512], salt[S5_SS_KEY_MAX], sub[S5_SS_KEY_MAX];
    for (size_t i = 0; i < klen; i++) salt[i] = (uint8_t)(0x40 + i);
    CHECK(s5_ss2022_is(m), "%s is 2022", vectors[v].method);
    CHECK(s5_ss2022_psk(m, vectors[v].psk, psk) == 0, "%s: PSK from base64", vectors[v].method);
    for (size_t i = 0; i < klen; i++)
      CHECK(psk[i] == (uint8_t)(i * 13 + 5), "%s: PSK byte %zu", vectors[v].method, i);
    unhex(vectors[v].subkey, want);
    s5_ss2022_subkey(m, psk, salt, sub);
    CHECK(memcmp(sub, want, klen) == 0, "%s: session subkey", vectors[v].method);

    uint8_t pad[7];
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = (uint8_t)(i * 5 + 1);
    struct s5_ss_aead a;
    CHECK(s5_ss2022_aead_init(&a, m, psk, salt) == 0, "%s: client's cipher", vectors[v].method);
    size_t wlen = unhex(vectors[v].request, want), plen = sizeof payload - 1;
    long n =
      s5_ss2022_request(&a, NOW, target, sizeof target, pad, sizeof pad, (const uint8_t *)payload, plen, got);
    CHECK(n == (long)wlen && n == (long)s5_ss2022_request_len(sizeof target, sizeof pad, plen),
          "%s: request %ld bytes, want %zu", vectors[v].method, n, wlen);
    CHECK(n > 0 && memcmp(got, want, wlen) == 0, "%s: request's bytes", vectors[v].method);
    /* The chunks after the headers: counter 2 onwards. */
    CHECK(a.nonce[0] == 2, "%s: nonce after the headers %u", vectors[v].method, a.nonce[0]);
    s5_ss_aead_free(&a);

    uint8_t r[512], out[8] = {0}, other[S5_SS_KEY_MAX];
    size_t rlen = unhex(vectors[v].response, r);
    CHECK(rlen == klen + S5_SS2022_RESP_FIXED(klen) + 5 + S5_SS_TAG, "%s: response length",
          vectors[v].method);
    CHECK(response(m, psk, r, salt, NOW, out) == S5_SS_OK && memcmp(out, "hello", 5) == 0,
          "%s: response opened", vectors[v].method);
    CHECK(response(m, psk, r, salt, NOW + 30, out) == S5_SS_OK, "%s: 30 s late: accepted", vectors[v].method);
    CHECK(response(m, psk, r, salt, NOW - 30, out) == S5_SS_OK, "%s: 30 s early: accepted",
          vectors[v].method);
    CHECK(response(m, psk, r, salt, NOW + 31, out) == S5_SS2022_CLOCK_SKEW, "%s: 31 s late",
          vectors[v].method);
    CHECK(response(m, psk, r, salt, NOW - 31, out) == S5_SS2022_CLOCK_SKEW, "%s: 31 s early",
          vectors[v].method);
    memcpy(other, salt, klen);
    other[klen - 1] ^= 1;
    CHECK(response(m, psk, r, other, NOW, out) == S5_SS2022_SALT_MISMATCH, "%s: another request salt",
          vectors[v].method);
    for (size_t i = klen; i < klen + S5_SS2022_RESP_FIXED(klen); i += 7) {
      r[i] ^= 0x10;
      CHECK(response(m, psk, r, salt, NOW, out) == S5_SS_BAD_TAG, "%s: byte %zu changed", vectors[v].method,
            i);
      r[i] ^= 0x10;
    }
    r[0] ^= 1; /* another server salt: another subkey */
    CHECK(response(m, psk, r, salt, NOW, out) == S5_SS_BAD_TAG, "%s: salt changed", vectors[v].method);
    r[0] ^= 1;
    uint8_t wrong[S5_SS_KEY_MAX];
    memcpy(wrong, psk, klen);
    wrong[3] ^= 0x80;
    CHECK(response(m, wrong, r, salt, NOW, out) == S5_SS_BAD_TAG, "%s: another PSK", vectors[v].method);

    /* A header of the client's type (0), sealed as the server would: refused. */
    uint8_t h[1 + 8 + S5_SS_KEY_MAX + 2] = {0};
    for (int i = 0; i < 8; i++) h[1 + i] = (uint8_t)((uint64_t)NOW >> (56 - 8 * i));
    memcpy(h + 9, salt, klen);
    h[9 + klen + 1] = 5;
    CHECK(s5_ss2022_aead_init(&a, m, psk, r) == 0 && s5_ss_seal(&a, h, 11 + klen, r + klen) == 0, "sealed");
    s5_ss_aead_free(&a);
    CHECK(response(m, psk, r, salt, NOW, out) == S5_SS2022_WRONG_TYPE, "%s: type 0", vectors[v].method);
  }
}

static void test_limits(void) {
  uint8_t psk[S5_SS_KEY_MAX], salt[S5_SS_KEY_MAX] = {0};
  enum s5_ss_method m128 = S5_SS_2022_AES_128_GCM, m256 = S5_SS_2022_AES_256_GCM;
  CHECK(!s5_ss2022_is(S5_SS_AES_128_GCM) && !s5_ss2022_is(S5_SS_CHACHA20_POLY1305),
        "2017 methods are not 2022");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2BteoeUoa67yA==", psk) == 0, "16 bytes for 128");
  CHECK(s5_ss2022_psk(m256, "BRIfLDlGU2BteoeUoa67yA==", psk) != 0, "16 bytes for 256: refused");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=", psk) != 0,
        "32 bytes for 128: refused");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2BteoeUoa67yA", psk) != 0, "no padding: refused");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2BteoeUoa67yB==", psk) != 0, "bits past the key: refused");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2Bteoe!oa67yA==", psk) != 0, "not base64: refused");
  CHECK(s5_ss2022_psk(m128, "BRIfLDlGU2BteoeUoa67yAA=", psk) != 0, "pad as data: refused");
  CHECK(s5_ss2022_psk(m256, "a plain password of 44 characters, not b64!!", psk) != 0,
        "2017 password: refused");
  CHECK(s5_ss2022_psk(m128, "", psk) != 0, "empty: refused");

  struct s5_ss_aead a;
  static uint8_t big[0x10000 + 1024], out[0x10000 + 1024 + 64];
  CHECK(s5_ss2022_aead_init(&a, m128, psk, salt) == 0, "cipher");
  CHECK(s5_ss2022_request(&a, NOW, (const uint8_t *)"\1\1\1\1\1\0\1", 7, big, 901, NULL, 0, out) == -1,
        "padding 901: refused");
  CHECK(s5_ss2022_request(&a, NOW, (const uint8_t *)"\1\1\1\1\1\0\1", 7, NULL, 0, big, 0xFFFF - 8, out) == -1,
        "variable header over 0xFFFF: refused");
  CHECK(s5_ss2022_request(&a, NOW, (const uint8_t *)"\1\1\1\1\1\0\1", 7, NULL, 0, big, 0xFFFF - 9, out) ==
          (long)s5_ss2022_request_len(7, 0, 0xFFFF - 9),
        "variable header of 0xFFFF: sealed");
  s5_ss_aead_free(&a);
  CHECK(s5_ss2022_aead_init(&a, S5_SS_AES_128_GCM, psk, salt) == -1, "a 2017 method: no 2022 cipher");
}

static void test_replay(void) {
  static struct s5_ss2022_replay r;
  uint8_t s[32] = {1, 2, 3}, t[32] = {1, 2, 4};
  CHECK(s5_ss2022_replay_check(&r, s, 32, NOW) == S5_SS_OK, "first: accepted");
  CHECK(s5_ss2022_replay_check(&r, t, 32, NOW) == S5_SS_OK, "another: accepted");
  CHECK(s5_ss2022_replay_check(&r, s, 32, NOW + 59) == S5_SS2022_REPLAY, "again 59 s later: replay");
  CHECK(s5_ss2022_replay_check(&r, s, 32, NOW + 60) == S5_SS_OK, "again 60 s later: forgotten, accepted");
  CHECK(s5_ss2022_replay_check(&r, s, 16, NOW + 61) == S5_SS2022_REPLAY, "16 bytes: replay");
  for (unsigned i = 0; i < S5_SS2022_REPLAY_MAX; i++) {
    uint8_t u[16] = {0xEE};
    memcpy(u + 1, &i, sizeof i);
    CHECK(s5_ss2022_replay_check(&r, u, 16, NOW + 70) == S5_SS_OK, "filler %u", i);
  }
  CHECK(r.evicted_fresh > 0, "evicted while fresh: %llu", (unsigned long long)r.evicted_fresh);
}

/* Feeds s[len] step bytes at a time, reading cap bytes at most per call: the status, bytes into out. */
static int feed(enum s5_ss_method m, const uint8_t *psk, const uint8_t *req_salt, struct s5_ss2022_replay *r,
                const uint8_t *s, size_t len, size_t step, size_t cap, uint8_t *out, size_t *got,
                int *partial) {
  static struct s5_ss2022_dec d;
  size_t fed = 0;
  int st = S5_SS_OK;
  *got = 0;
  s5_ss2022_dec_init(&d, m, psk, req_salt);
  for (;;) {
    size_t n = 0;
    st = s5_ss2022_decode(&d, r, NOW, out + *got, cap, &n);
    *got += n;
    if (st != S5_SS_OK) break;
    if (n > 0) continue;
    if (fed == len) break;
    size_t take = len - fed < step ? len - fed : step, room = sizeof d.in - d.in_len;
    if (room == 0) {
      st = 99; /* the decoder waits with no room: a defect */
      break;
    }
    if (take > room) take = room;
    memcpy(d.in + d.in_len, s + fed, take);
    d.in_len += take, fed += take;
  }
  *partial = s5_ss2022_dec_partial(&d);
  s5_ss2022_dec_free(&d);
  return st;
}

#define LONG_LEN (0xFFFF + 3)
static void test_decoder(void) {
  enum s5_ss_method m = S5_SS_2022_AES_256_GCM;
  size_t klen = s5_ss_key_len(m), got = 0;
  uint8_t psk[S5_SS_KEY_MAX], salt[S5_SS_KEY_MAX], r[512];
  static uint8_t out[LONG_LEN + 16], s[2 * LONG_LEN], plain[LONG_LEN];
  static struct s5_ss2022_replay filter;
  int partial = 0;
  for (size_t i = 0; i < klen; i++) salt[i] = (uint8_t)(0x40 + i);
  CHECK(s5_ss2022_psk(m, vectors[1].psk, psk) == 0, "PSK");
  size_t rlen = unhex(vectors[1].response, r);
  for (size_t step = 1; step <= rlen; step++) {
    memset(&filter, 0, sizeof filter);
    int st = feed(m, psk, salt, &filter, r, rlen, step, 3, out, &got, &partial);
    CHECK(st == S5_SS_OK && got == 5 && memcmp(out, "hello", 5) == 0 && !partial, "vector by %zu: %d, %zu",
          step, st, got);
  }
  CHECK(feed(m, psk, salt, &filter, r, rlen, rlen, 100, out, &got, &partial) == S5_SS2022_REPLAY && got == 0,
        "the same server salt again: replay");
  for (size_t cut = 1; cut < rlen; cut++) {
    memset(&filter, 0, sizeof filter);
    int st = feed(m, psk, salt, &filter, r, cut, cut, 100, out, &got, &partial);
    CHECK(st == S5_SS_OK && partial, "vector cut at %zu: partial", cut);
  }
  memset(&filter, 0, sizeof filter);
  CHECK(feed(m, psk, salt, &filter, r, 0, 1, 100, out, &got, &partial) == S5_SS_OK && !partial,
        "nothing: not partial");

  /* A longer stream, sealed here: header (first chunk 0xFFFF), chunks of 0 and 3 bytes. */
  for (size_t i = 0; i < sizeof plain; i++) plain[i] = (uint8_t)(i * 11 + 1);
  struct s5_ss_aead a;
  uint8_t h[1 + 8 + S5_SS_KEY_MAX + 2] = {1}, l[2] = {0, 0};
  for (int i = 0; i < 8; i++) h[1 + i] = (uint8_t)((uint64_t)NOW >> (56 - 8 * i));
  memcpy(h + 9, salt, klen);
  h[9 + klen] = 0xFF, h[10 + klen] = 0xFF;
  size_t w = klen;
  memset(s, 0x77, klen);
  int ok = s5_ss2022_aead_init(&a, m, psk, s) == 0 && s5_ss_seal(&a, h, 11 + klen, s + w) == 0;
  w += 11 + klen + S5_SS_TAG;
  ok = ok && s5_ss_seal(&a, plain, 0xFFFF, s + w) == 0;
  w += 0xFFFF + S5_SS_TAG;
  ok = ok && s5_ss_seal(&a, l, 2, s + w) == 0 && s5_ss_seal(&a, NULL, 0, s + w + 18) == 0;
  w += 2 * S5_SS_TAG + 2;
  l[1] = 3;
  ok = ok && s5_ss_seal(&a, l, 2, s + w) == 0 && s5_ss_seal(&a, plain + 0xFFFF, 3, s + w + 18) == 0;
  w += 2 * S5_SS_TAG + 2 + 3;
  s5_ss_aead_free(&a);
  CHECK(ok, "long stream sealed");
  const size_t steps[] = {1, 1000, 16384, 70000, 200000}, caps[] = {1, 100, 16384, 0x10000};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    for (size_t j = 0; j < sizeof caps / sizeof caps[0]; j++) {
      if (steps[i] == 1 && caps[j] == 1) continue; /* slow, and covered by its neighbours */
      memset(&filter, 0, sizeof filter);
      memset(out, 0, sizeof out);
      int st = feed(m, psk, salt, &filter, s, w, steps[i], caps[j], out, &got, &partial);
      CHECK(st == S5_SS_OK && got == LONG_LEN && memcmp(out, plain, LONG_LEN) == 0 && !partial,
            "long by %zu, out %zu: %d, %zu bytes", steps[i], caps[j], st, got);
    }
  memset(&filter, 0, sizeof filter);
  CHECK(feed(m, psk, salt, &filter, s, w - 1, 5000, 16384, out, &got, &partial) == S5_SS_OK && partial &&
          got == 0xFFFF,
        "long cut before the last byte: partial, %zu bytes", got);
  s[klen + 11 + klen + S5_SS_TAG + 0x8000] ^= 4;
  memset(&filter, 0, sizeof filter);
  CHECK(feed(m, psk, salt, &filter, s, w, 5000, 16384, out, &got, &partial) == S5_SS_BAD_TAG && got == 0,
        "a payload byte changed: bad tag");
}

int main(void) {
  char e[200];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) != 0) { /* as the daemon at start */
    fprintf(stderr, "%s\n", e);
    return 1;
  }
  test_vectors();
  test_limits();
  test_replay();
  test_decoder();
  return check_done();
}
