/* SPDX-License-Identifier: MIT */
/* See ss_aead.h: Shadowsocks AEAD chunks, sealed and opened with EVP. */
#include "socks5/ss_aead.h"

#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include <string.h>

static const EVP_CIPHER *ss_cipher(enum s5_ss_method m) {
  switch (m) {
    case S5_SS_AES_128_GCM: return EVP_aes_128_gcm();
    case S5_SS_AES_256_GCM: return EVP_aes_256_gcm();
    case S5_SS_CHACHA20_POLY1305: return EVP_chacha20_poly1305();
    default: return NULL; /* the 2022 methods: refused by the configuration check */
  }
}

size_t s5_ss_key_len(enum s5_ss_method m) {
  return m == S5_SS_AES_128_GCM || m == S5_SS_2022_AES_128_GCM ? 16 : 32;
}

/* EVP_BytesToKey(MD5, no salt, 1 round): D1 = MD5(pw), Di = MD5(Di-1 || pw), the key their concatenation. */
int s5_ss_password_key(enum s5_ss_method m, const char *password, uint8_t *key) {
  size_t len = s5_ss_key_len(m), have = 0, plen = strlen(password);
  uint8_t d[16];
  while (have < len) {
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned n = 0;
    int ok = c != NULL && EVP_DigestInit_ex(c, EVP_md5(), NULL) == 1 &&
             (have == 0 || EVP_DigestUpdate(c, d, sizeof d) == 1) &&
             EVP_DigestUpdate(c, password, plen) == 1 && EVP_DigestFinal_ex(c, d, &n) == 1 && n == sizeof d;
    EVP_MD_CTX_free(c);
    if (!ok) return -1;
    size_t take = len - have < sizeof d ? len - have : sizeof d;
    memcpy(key + have, d, take);
    have += take;
  }
  return 0;
}

/* HKDF-SHA1 (RFC 5869) of key with salt and info "ss-subkey", len bytes (<= 40). */
static int ss_subkey(const uint8_t *key, const uint8_t *salt, size_t len, uint8_t *out) {
  static const char info[] = "ss-subkey";
  uint8_t prk[20], t[20 + sizeof info + 1];
  unsigned n = 0;
  if (HMAC(EVP_sha1(), salt, (int)len, key, len, prk, &n) == NULL) return -1;
  size_t tlen = 0, have = 0;
  for (uint8_t i = 1; have < len; i++) {
    memcpy(t + tlen, info, sizeof info - 1);
    t[tlen + sizeof info - 1] = i;
    uint8_t block[20];
    if (HMAC(EVP_sha1(), prk, sizeof prk, t, tlen + sizeof info, block, &n) == NULL) return -1;
    size_t take = len - have < sizeof block ? len - have : sizeof block;
    memcpy(out + have, block, take);
    have += take;
    memcpy(t, block, sizeof block); /* T(i) leads the next block's input */
    tlen = sizeof block;
  }
  return 0;
}

int s5_ss_aead_init(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *key, const uint8_t *salt) {
  uint8_t sub[S5_SS_KEY_MAX];
  memset(a, 0, sizeof *a);
  const EVP_CIPHER *c = ss_cipher(m);
  if (c == NULL || ss_subkey(key, salt, s5_ss_key_len(m), sub) != 0) return -1;
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  /* The key set once; each seal or open sets its nonce (and the direction). */
  if (ctx == NULL || EVP_CipherInit_ex(ctx, c, NULL, sub, a->nonce, 1) != 1) {
    EVP_CIPHER_CTX_free(ctx);
    return -1;
  }
  a->ctx = ctx;
  return 0;
}

void s5_ss_aead_free(struct s5_ss_aead *a) {
  EVP_CIPHER_CTX_free(a->ctx);
  a->ctx = NULL;
}

static void ss_next(struct s5_ss_aead *a) {
  for (size_t i = 0; i < sizeof a->nonce; i++)
    if (++a->nonce[i] != 0) break;
}

int s5_ss_seal(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out) {
  int n = 0, f = 0;
  int ok = EVP_EncryptInit_ex(a->ctx, NULL, NULL, NULL, a->nonce) == 1 &&
           (len == 0 || EVP_EncryptUpdate(a->ctx, out, &n, in, (int)len) == 1) &&
           EVP_EncryptFinal_ex(a->ctx, out + n, &f) == 1 &&
           EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_GET_TAG, S5_SS_TAG, out + len) == 1;
  ss_next(a);
  return ok ? 0 : -1;
}

int s5_ss_open(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out) {
  int n = 0, f = 0;
  uint8_t tag[S5_SS_TAG];
  memcpy(tag, in + len, sizeof tag);
  int ok = EVP_DecryptInit_ex(a->ctx, NULL, NULL, NULL, a->nonce) == 1 &&
           (len == 0 || EVP_DecryptUpdate(a->ctx, out, &n, in, (int)len) == 1) &&
           EVP_CIPHER_CTX_ctrl(a->ctx, EVP_CTRL_AEAD_SET_TAG, S5_SS_TAG, tag) == 1 &&
           EVP_DecryptFinal_ex(a->ctx, out + n, &f) == 1;
  ss_next(a);
  return ok ? 0 : -1;
}

size_t s5_ss_sealed_len(size_t len) {
  size_t chunks = (len + S5_SS_PAYLOAD_MAX - 1) / S5_SS_PAYLOAD_MAX;
  return len + chunks * (2 + 2 * S5_SS_TAG);
}

long s5_ss_encode(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out) {
  size_t w = 0;
  while (len > 0) {
    size_t n = len < S5_SS_PAYLOAD_MAX ? len : S5_SS_PAYLOAD_MAX;
    uint8_t l[2] = {(uint8_t)(n >> 8), (uint8_t)n};
    if (s5_ss_seal(a, l, 2, out + w) != 0 || s5_ss_seal(a, in, n, out + w + 2 + S5_SS_TAG) != 0) return -1;
    w += 2 + 2 * S5_SS_TAG + n;
    in += n, len -= n;
  }
  return (long)w;
}

void s5_ss_dec_init(struct s5_ss_dec *d, enum s5_ss_method m, const uint8_t *key) {
  memset(d, 0, offsetof(struct s5_ss_dec, in));
  d->method = m;
  memcpy(d->key, key, s5_ss_key_len(m));
  d->plen = -1;
}

void s5_ss_dec_free(struct s5_ss_dec *d) { s5_ss_aead_free(&d->aead); }

int s5_ss_decode(struct s5_ss_dec *d, uint8_t *out, size_t cap, size_t *n) {
  size_t off = 0, salt = s5_ss_key_len(d->method);
  int st = S5_SS_OK;
  *n = 0;
  if (!d->salted && d->in_len >= salt) {
    if (s5_ss_aead_init(&d->aead, d->method, d->key, d->in) != 0) return S5_SS_FAILED;
    d->salted = 1, off = salt;
  }
  while (d->salted) {
    if (d->plen < 0) { /* the next length */
      uint8_t l[2];
      if (d->in_len - off < 2 + S5_SS_TAG) break;
      if (s5_ss_open(&d->aead, d->in + off, 2, l) != 0) {
        st = S5_SS_BAD_TAG;
        break;
      }
      d->plen = l[0] << 8 | l[1];
      off += 2 + S5_SS_TAG;
      if (d->plen > S5_SS_PAYLOAD_MAX) {
        st = S5_SS_OVERSIZE;
        break;
      }
    }
    if (d->in_len - off < (size_t)d->plen + S5_SS_TAG || cap - *n < (size_t)d->plen) break;
    if (s5_ss_open(&d->aead, d->in + off, (size_t)d->plen, out + *n) != 0) {
      st = S5_SS_BAD_TAG;
      break;
    }
    *n += (size_t)d->plen;
    off += (size_t)d->plen + S5_SS_TAG;
    d->plen = -1;
  }
  memmove(d->in, d->in + off, d->in_len - off);
  d->in_len -= off;
  return st;
}

int s5_ss_dec_partial(const struct s5_ss_dec *d) { return d->in_len > 0 || d->plen >= 0; }

const char *s5_ss_status_text(int status) {
  switch (status) {
    case S5_SS_BAD_TAG: return "a chunk failed authentication";
    case S5_SS_OVERSIZE: return "a chunk's length is over 0x3FFF";
    case S5_SS_FAILED: return "OpenSSL failed";
    default: return "ok";
  }
}
