/* SPDX-License-Identifier: MIT */
/* See ss2022_udp.h: a 2022 password's key chain and the TCP identity
 * headers (SIP023), HChaCha20 and XChaCha20-Poly1305 (draft-irtf-cfrg-
 * xchacha) over OpenSSL's ChaCha20-Poly1305, the packet id window. */
#include "socks5/ss2022_udp.h"

#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include <string.h>

#include "blake3.h"

static const char identity_context[] = "shadowsocks 2022 identity subkey";

int s5_ss2022_keys(enum s5_ss_method m, const char *password, struct s5_ss2022_keys *k) {
  size_t klen = s5_ss_key_len(m);
  uint8_t raw[S5_SS2022_KEYS_MAX * S5_SS_KEY_MAX];
  memset(k, 0, sizeof *k);
  k->method = m;
  int n = s5_b64_key_chain(password, klen, raw, S5_SS2022_KEYS_MAX);
  if (n < 1 || (n > 1 && m == S5_SS_2022_CHACHA20_POLY1305)) {
    explicit_bzero(raw, sizeof raw);
    return -1;
  }
  k->n = (size_t)n;
  for (size_t i = 0; i < k->n; i++) memcpy(k->k[i], raw + i * klen, klen);
  explicit_bzero(raw, sizeof raw);
  for (size_t i = 0; i + 1 < k->n; i++) {
    uint8_t h[32];
    blake3_hasher b;
    blake3_hasher_init(&b);
    blake3_hasher_update(&b, k->k[i + 1], klen);
    blake3_hasher_finalize(&b, h, sizeof h);
    memcpy(k->next_hash[i], h, 16);
  }
  return 0;
}

void s5_ss2022_keys_clear(struct s5_ss2022_keys *k) { explicit_bzero(k, sizeof *k); }

/* AES-ECB of one block in[16] with key (the method's length) into out. */
static int ecb_block(enum s5_ss_method m, const uint8_t *key, const uint8_t *in, uint8_t *out) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int n = 0;
  int ok = c != NULL &&
           EVP_EncryptInit_ex(c, m == S5_SS_2022_AES_128_GCM ? EVP_aes_128_ecb() : EVP_aes_256_ecb(), NULL,
                              key, NULL) == 1 &&
           EVP_CIPHER_CTX_set_padding(c, 0) == 1 && EVP_EncryptUpdate(c, out, &n, in, 16) == 1 && n == 16;
  EVP_CIPHER_CTX_free(c);
  return ok ? 0 : -1;
}

int s5_ss2022_eih_tcp(const struct s5_ss2022_keys *k, const uint8_t *salt, uint8_t *out) {
  size_t klen = s5_ss_key_len(k->method);
  for (size_t i = 0; i + 1 < k->n; i++) {
    uint8_t sub[S5_SS_KEY_MAX];
    blake3_hasher h;
    blake3_hasher_init_derive_key(&h, identity_context);
    blake3_hasher_update(&h, k->k[i], klen);
    blake3_hasher_update(&h, salt, klen);
    blake3_hasher_finalize(&h, sub, klen);
    explicit_bzero(&h, sizeof h);
    int bad = ecb_block(k->method, sub, k->next_hash[i], out + 16 * i);
    explicit_bzero(sub, sizeof sub);
    if (bad) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- HChaCha20 */

static uint32_t rotl(uint32_t v, int c) { return v << c | v >> (32 - c); }
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define QR(a, b, c, d)                          \
  do {                                          \
    x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 16); \
    x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 12); \
    x[a] += x[b], x[d] = rotl(x[d] ^ x[a], 8);  \
    x[c] += x[d], x[b] = rotl(x[b] ^ x[c], 7);  \
  } while (0)

void s5_hchacha20(const uint8_t *key, const uint8_t *nonce, uint8_t *out) {
  uint32_t x[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574}; /* "expand 32-byte k" */
  for (int i = 0; i < 8; i++) x[4 + i] = le32(key + 4 * i);
  for (int i = 0; i < 4; i++) x[12 + i] = le32(nonce + 4 * i);
  for (int r = 0; r < 10; r++) { /* 20 rounds: a column round and a diagonal round, ten times */
    QR(0, 4, 8, 12);
    QR(1, 5, 9, 13);
    QR(2, 6, 10, 14);
    QR(3, 7, 11, 15);
    QR(0, 5, 10, 15);
    QR(1, 6, 11, 12);
    QR(2, 7, 8, 13);
    QR(3, 4, 9, 14);
  }
  static const int pick[8] = {0, 1, 2, 3, 12, 13, 14, 15}; /* no final addition, unlike ChaCha20's block */
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(x[pick[i]] >> (8 * j));
  explicit_bzero(x, sizeof x);
}

/* ChaCha20-Poly1305 keyed with HChaCha20(key, nonce[0..16]), its nonce 4 zero bytes then nonce[16..24]. */
static int xchacha(void *ctx, int enc, const uint8_t *key, const uint8_t *nonce, const uint8_t *ad,
                   size_t adlen, const uint8_t *in, size_t len, uint8_t *out) {
  uint8_t sub[32], n12[12] = {0}, tag[S5_SS_TAG];
  int n = 0, f = 0;
  s5_hchacha20(key, nonce, sub);
  memcpy(n12 + 4, nonce + 16, 8);
  if (!enc) memcpy(tag, in + len, sizeof tag);
  int ok =
    EVP_CipherInit_ex(ctx, NULL, NULL, sub, n12, enc) == 1; /* the cipher set once: not fetched again */
  explicit_bzero(sub, sizeof sub);
  ok = ok && (adlen == 0 || EVP_CipherUpdate(ctx, NULL, &n, ad, (int)adlen) == 1) &&
       (len == 0 || EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1) &&
       (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, S5_SS_TAG, tag) == 1) &&
       EVP_CipherFinal_ex(ctx, out + n, &f) == 1 &&
       (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, S5_SS_TAG, out + len) == 1);
  return ok ? 0 : -1;
}

int s5_xchacha_seal(void *ctx, const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                    const uint8_t *in, size_t len, uint8_t *out) {
  return xchacha(ctx, 1, key, nonce, ad, adlen, in, len, out);
}

int s5_xchacha_open(void *ctx, const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                    const uint8_t *in, size_t len, uint8_t *out) {
  return xchacha(ctx, 0, key, nonce, ad, adlen, in, len, out);
}

/* ---------------------------------------------------------------- the window */

#define WBIT(id) ((id) % S5_SS2022_WINDOW)

int s5_ss2022_window_check(const struct s5_ss2022_window *w, uint64_t id) {
  if (id == UINT64_MAX) return S5_SS2022_REPLAY; /* the last id: top would wrap */
  if (id >= w->top) return S5_SS_OK;
  if (w->top - 1 - id >= S5_SS2022_WINDOW) return S5_SS2022_REPLAY; /* too old to tell */
  return w->bits[WBIT(id) / 64] >> (WBIT(id) % 64) & 1 ? S5_SS2022_REPLAY : S5_SS_OK;
}

void s5_ss2022_window_mark(struct s5_ss2022_window *w, uint64_t id) {
  if (id >= w->top) { /* ahead: the ids skipped are not seen */
    if (id - w->top >= S5_SS2022_WINDOW) memset(w->bits, 0, sizeof w->bits);
    else
      for (uint64_t j = w->top; j < id; j++) w->bits[WBIT(j) / 64] &= ~(1ull << (WBIT(j) % 64));
    w->top = id + 1;
  }
  w->bits[WBIT(id) / 64] |= 1ull << (WBIT(id) % 64);
}
