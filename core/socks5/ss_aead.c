/* SPDX-License-Identifier: MIT */
/* See ss_aead.h: Shadowsocks AEAD chunks, sealed and opened with EVP. */
#include "socks5/ss_aead.h"

#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include <string.h>

/* This thread's: the ciphers fetched once (EVP_aes_128_gcm() and the like
 * would fetch theirs at every key), one HMAC-SHA1 context re-keyed for
 * each subkey, and the master keys of the last passwords. */
#define SS_KEYS 8
static __thread struct {
  EVP_CIPHER *cipher[3]; /* AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305 */
  EVP_MAC_CTX *hmac;
  unsigned next;
  struct {
    int used;
    enum s5_ss_method m;
    char password[256];
    uint8_t key[S5_SS_KEY_MAX];
  } keys[SS_KEYS];
} kit;

static EVP_CIPHER *ss_cipher(enum s5_ss_method m) {
  static const char *const names[] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"};
  int i;
  switch (m) {
    case S5_SS_AES_128_GCM:
    case S5_SS_2022_AES_128_GCM: i = 0; break;
    case S5_SS_AES_256_GCM:
    case S5_SS_2022_AES_256_GCM: i = 1; break;
    case S5_SS_CHACHA20_POLY1305:
    case S5_SS_2022_CHACHA20_POLY1305: i = 2; break;
    default: return NULL;
  }
  if (kit.cipher[i] == NULL) kit.cipher[i] = EVP_CIPHER_fetch(NULL, names[i], NULL);
  return kit.cipher[i];
}

/* The thread's HMAC-SHA1 context, made at its first use; NULL when OpenSSL failed. */
static EVP_MAC_CTX *ss_hmac_ctx(void) {
  if (kit.hmac != NULL) return kit.hmac;
  EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *mac = hmac != NULL ? EVP_MAC_CTX_new(hmac) : NULL;
  EVP_MAC_free(hmac); /* the context holds its own reference */
  char digest[] = "SHA1";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (mac != NULL && EVP_MAC_CTX_set_params(mac, params) != 1) {
    EVP_MAC_CTX_free(mac);
    mac = NULL;
  }
  return kit.hmac = mac;
}

void s5_ss_end(void) {
  /* Only what was made: without OpenSSL loaded (no upstream needed it) its functions are not there. */
  for (size_t i = 0; i < sizeof kit.cipher / sizeof kit.cipher[0]; i++)
    if (kit.cipher[i] != NULL) EVP_CIPHER_free(kit.cipher[i]);
  if (kit.hmac != NULL) EVP_MAC_CTX_free(kit.hmac);
  explicit_bzero(&kit, sizeof kit);
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

/* 2022's PSK: the user's key, the last of an identity chain (iPSK:...:uPSK). */
static int ss_psk(const char *password, size_t klen, uint8_t *psk) {
  uint8_t raw[4 * S5_SS_KEY_MAX]; /* S5_SS2022_KEYS_MAX keys */
  int n = s5_b64_key_chain(password, klen, raw, 4);
  if (n > 0) memcpy(psk, raw + (size_t)(n - 1) * klen, klen);
  explicit_bzero(raw, sizeof raw);
  return n > 0 ? 0 : -1;
}

int s5_ss_master_key(enum s5_ss_method m, const char *password, uint8_t *key) {
  size_t klen = s5_ss_key_len(m), plen = strlen(password);
  for (size_t i = 0; i < SS_KEYS; i++)
    if (kit.keys[i].used && kit.keys[i].m == m && strcmp(kit.keys[i].password, password) == 0) {
      memcpy(key, kit.keys[i].key, klen);
      return 0;
    }
  if ((s5_ss_method_2022(m) ? ss_psk(password, klen, key) : s5_ss_password_key(m, password, key)) != 0)
    return -1;
  if (plen < sizeof kit.keys[0].password) { /* longer: derived each time */
    unsigned i = kit.next++ % SS_KEYS;
    kit.keys[i].used = 1, kit.keys[i].m = m;
    memcpy(kit.keys[i].password, password, plen + 1);
    memcpy(kit.keys[i].key, key, klen);
  }
  return 0;
}

/* HMAC-SHA1 of d with k into out (20 bytes), with the thread's context re-keyed. */
static int ss_hmac(EVP_MAC_CTX *mac, const uint8_t *k, size_t kl, const uint8_t *d, size_t dl, uint8_t *out) {
  size_t outl = 0;
  return EVP_MAC_init(mac, k, kl, NULL) == 1 && EVP_MAC_update(mac, d, dl) == 1 &&
             EVP_MAC_final(mac, out, &outl, 20) == 1 && outl == 20
           ? 0
           : -1;
}

/* HKDF-SHA1 (RFC 5869) of key with salt and info "ss-subkey", len bytes (<= 40). */
static int ss_subkey(const uint8_t *key, const uint8_t *salt, size_t len, uint8_t *out) {
  static const char info[] = "ss-subkey";
  EVP_MAC_CTX *mac = ss_hmac_ctx();
  uint8_t prk[20], t[20 + sizeof info + 1];
  if (mac == NULL || ss_hmac(mac, salt, len, key, len, prk) != 0) return -1;
  size_t tlen = 0, have = 0;
  for (uint8_t i = 1; have < len; i++) {
    memcpy(t + tlen, info, sizeof info - 1);
    t[tlen + sizeof info - 1] = i;
    uint8_t block[20];
    if (ss_hmac(mac, prk, sizeof prk, t, tlen + sizeof info, block) != 0) return -1;
    size_t take = len - have < sizeof block ? len - have : sizeof block;
    memcpy(out + have, block, take);
    have += take;
    memcpy(t, block, sizeof block); /* T(i) leads the next block's input */
    tlen = sizeof block;
    explicit_bzero(block, sizeof block);
  }
  explicit_bzero(prk, sizeof prk);
  explicit_bzero(t, sizeof t);
  return 0;
}

int s5_ss_aead_subkey(struct s5_ss_aead *a, enum s5_ss_method m, uint8_t *sub) {
  memset(a, 0, sizeof *a);
  const EVP_CIPHER *c = ss_cipher(m);
  EVP_CIPHER_CTX *ctx = c != NULL ? EVP_CIPHER_CTX_new() : NULL;
  /* The key set once; each seal or open sets its nonce (and the direction). */
  int ok = ctx != NULL && EVP_CipherInit_ex(ctx, c, NULL, sub, a->nonce, 1) == 1;
  explicit_bzero(sub, S5_SS_KEY_MAX);
  if (!ok) {
    EVP_CIPHER_CTX_free(ctx);
    return -1;
  }
  a->ctx = ctx;
  return 0;
}

int s5_ss_aead_init(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *key, const uint8_t *salt) {
  uint8_t sub[S5_SS_KEY_MAX] = {0};
  memset(a, 0, sizeof *a);
  if (s5_ss_method_2022(m) || ss_subkey(key, salt, s5_ss_key_len(m), sub) != 0) {
    explicit_bzero(sub, sizeof sub);
    return -1;
  }
  return s5_ss_aead_subkey(a, m, sub);
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
  size_t chunks = (len + S5_SS_SEAL_MAX - 1) / S5_SS_SEAL_MAX;
  return len + chunks * (2 + 2 * S5_SS_TAG);
}

long s5_ss_encode(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out) {
  size_t w = 0;
  while (len > 0) {
    size_t n = len < S5_SS_SEAL_MAX ? len : S5_SS_SEAL_MAX;
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

void s5_ss_dec_free(struct s5_ss_dec *d) {
  s5_ss_aead_free(&d->aead);
  explicit_bzero(d->key, sizeof d->key);
}

int s5_ss_decode(struct s5_ss_dec *d, uint8_t *out, size_t cap, size_t *n) {
  size_t off = d->in_off, salt = s5_ss_key_len(d->method);
  int st = S5_SS_OK;
  *n = 0;
  if (!d->salted && d->in_len - off >= salt) {
    if (s5_ss_aead_init(&d->aead, d->method, d->key, d->in + off) != 0) return S5_SS_FAILED;
    d->salted = 1, off += salt;
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
    if (s5_ss_open(&d->aead, d->in + off, (size_t)d->plen, out + *n) != 0) { /* straight into out */
      st = S5_SS_BAD_TAG;
      break;
    }
    *n += (size_t)d->plen;
    off += (size_t)d->plen + S5_SS_TAG;
    d->plen = -1;
  }
  d->in_off = off;
  if (off == d->in_len) d->in_off = d->in_len = 0; /* all opened: from the front again, nothing moved */
  else if (st == S5_SS_OK && off + S5_SS_DEC_READ > sizeof d->in) {
    /* less room behind than one read's worth (the part of one chunk held fits, too): it moves to the front */
    memmove(d->in, d->in + off, d->in_len - off);
    d->in_len -= off, d->in_off = 0;
  }
  return st;
}

int s5_ss_dec_partial(const struct s5_ss_dec *d) { return d->in_len > d->in_off || d->plen >= 0; }

size_t s5_ss_dec_room(const struct s5_ss_dec *d, size_t cap) {
  /* Held: less than one thing whole (the decoder opened what was). What
   * comes may complete the salt, then the chunk whose length is open
   * (plen: its payload and tag), then chunks whose lengths are unknown: k
   * whole ones in u bytes carry at most min(k * 0x3FFF, u - 34k), within
   * the c bytes cap has left for every k while u <= c + 34 (c / 0x3FFF + 1). */
  size_t held = d->in_len - d->in_off, space = sizeof d->in - d->in_len, c = cap, want = 0;
  if (!d->salted) want += s5_ss_key_len(d->method);
  if (d->plen >= 0 && (size_t)d->plen > cap) return 0; /* a payload cap cannot take: a larger cap first */
  if (d->plen >= 0) want += (size_t)d->plen + S5_SS_TAG, c -= (size_t)d->plen;
  want += c + (c / S5_SS_PAYLOAD_MAX + 1) * (2 + 2 * S5_SS_TAG);
  if (held >= want) return 0;
  return want - held < space ? want - held : space;
}

/* ---------------------------------------------------------------- UDP */

int s5_ss_udp_init(struct s5_ss_udp *u, enum s5_ss_method m, const char *password) {
  memset(u, 0, sizeof *u);
  u->method = m;
  const EVP_CIPHER *c = s5_ss_method_2022(m) ? NULL : ss_cipher(m);
  if (c == NULL || s5_ss_master_key(m, password, u->key) != 0) return -1;
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  u->ctx = ctx;
  if (ctx == NULL || EVP_CipherInit_ex(ctx, c, NULL, NULL, NULL, 1) != 1) { /* the key per packet */
    s5_ss_udp_free(u);
    return -1;
  }
  return 0;
}

void s5_ss_udp_free(struct s5_ss_udp *u) {
  EVP_CIPHER_CTX_free(u->ctx);
  u->ctx = NULL;
  explicit_bzero(u->key, sizeof u->key);
}

long s5_ss_udp_seal(struct s5_ss_udp *u, const uint8_t *salt, uint8_t *pkt, size_t len) {
  static const uint8_t zero[12];
  size_t sl = s5_ss_key_len(u->method);
  uint8_t sub[S5_SS_KEY_MAX];
  int n = 0, f = 0;
  if (salt != NULL) memcpy(pkt, salt, sl);
  else if (RAND_bytes(pkt, (int)sl) != 1) return S5_SS_FAILED;
  uint8_t *text = pkt + sl;
  int ok = ss_subkey(u->key, pkt, sl, sub) == 0 && EVP_EncryptInit_ex(u->ctx, NULL, NULL, sub, zero) == 1 &&
           (len == 0 || EVP_EncryptUpdate(u->ctx, text, &n, text, (int)len) == 1) &&
           EVP_EncryptFinal_ex(u->ctx, text + n, &f) == 1 &&
           EVP_CIPHER_CTX_ctrl(u->ctx, EVP_CTRL_AEAD_GET_TAG, S5_SS_TAG, text + len) == 1;
  explicit_bzero(sub, sizeof sub);
  return ok ? (long)(sl + len + S5_SS_TAG) : S5_SS_FAILED;
}

long s5_ss_udp_open(struct s5_ss_udp *u, uint8_t *pkt, size_t len) {
  static const uint8_t zero[12];
  size_t sl = s5_ss_key_len(u->method);
  if (len < sl + S5_SS_TAG) return S5_SS_SHORT;
  size_t tl = len - sl - S5_SS_TAG;
  uint8_t sub[S5_SS_KEY_MAX], tag[S5_SS_TAG], *text = pkt + sl;
  int n = 0, f = 0;
  memcpy(tag, text + tl, sizeof tag);
  if (ss_subkey(u->key, pkt, sl, sub) != 0 || EVP_DecryptInit_ex(u->ctx, NULL, NULL, sub, zero) != 1) {
    explicit_bzero(sub, sizeof sub);
    return S5_SS_FAILED;
  }
  explicit_bzero(sub, sizeof sub);
  int ok = (tl == 0 || EVP_DecryptUpdate(u->ctx, text, &n, text, (int)tl) == 1) &&
           EVP_CIPHER_CTX_ctrl(u->ctx, EVP_CTRL_AEAD_SET_TAG, S5_SS_TAG, tag) == 1 &&
           EVP_DecryptFinal_ex(u->ctx, text + n, &f) == 1;
  return ok ? (long)tl : S5_SS_BAD_TAG;
}

const char *s5_ss_status_text(int status) {
  switch (status) {
    case S5_SS_BAD_TAG: return "a chunk failed authentication";
    case S5_SS_OVERSIZE: return "a chunk's length is over 0x3FFF";
    case S5_SS_FAILED: return "OpenSSL failed";
    case S5_SS_SHORT: return "a datagram shorter than its salt and tag";
    default: return "ok";
  }
}
