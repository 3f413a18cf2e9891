/* SPDX-License-Identifier: MIT */
/* See ss2022_udp.h: Shadowsocks 2022 UDP packets, sealed and opened. */
#include "socks5/ss2022_udp.h"

#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include <string.h>

#include "blake3.h"

#define SEP 16                         /* the separate header: session id, packet id */
#define MAIN_C (1 + 8 + 2)             /* the client's main header: type, timestamp, padding length */
#define MAIN_S (1 + 8 + 8 + 2)         /* the server's: type, timestamp, client session id, padding length */
#define XHEAD (S5_SS2022_XNONCE + SEP) /* chacha: the nonce, then the ids inside the sealed body */

static int chacha(const struct s5_ss2022_udp *u) { return u->keys.method == S5_SS_2022_CHACHA20_POLY1305; }

static const EVP_CIPHER *ecb(enum s5_ss_method m) {
  return m == S5_SS_2022_AES_128_GCM ? EVP_aes_128_ecb() : EVP_aes_256_ecb();
}

static const EVP_CIPHER *gcm(enum s5_ss_method m) {
  return m == S5_SS_2022_AES_128_GCM ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
}

/* ctx keyed for AES-GCM with the session subkey of the user's key and session id sid (8 bytes). */
static int gcm_key(const struct s5_ss2022_udp *u, void *ctx, const uint8_t *sid) {
  size_t klen = s5_ss_key_len(u->keys.method);
  uint8_t sub[S5_SS_KEY_MAX];
  blake3_hasher h;
  blake3_hasher_init_derive_key(&h, "shadowsocks 2022 session subkey");
  blake3_hasher_update(&h, u->keys.k[u->keys.n - 1], klen);
  blake3_hasher_update(&h, sid, 8);
  blake3_hasher_finalize(&h, sub, klen);
  explicit_bzero(&h, sizeof h);
  int ok = EVP_CipherInit_ex(ctx, gcm(u->keys.method), NULL, sub, NULL, 1) == 1;
  explicit_bzero(sub, sizeof sub);
  return ok ? 0 : -1;
}

int s5_ss2022_udp_init(struct s5_ss2022_udp *u, enum s5_ss_method m, const char *password,
                       const uint8_t *sid) {
  memset(u, 0, sizeof *u);
  if (sid != NULL) memcpy(u->sid, sid, sizeof u->sid);
  if (s5_ss2022_keys(m, password, &u->keys) != 0 || (sid == NULL && RAND_bytes(u->sid, sizeof u->sid) != 1))
    return -1;
  int ok = (u->aead = EVP_CIPHER_CTX_new()) != NULL; /* chacha20: the one context, re-keyed per packet */
  if (ok && chacha(u)) ok = EVP_CipherInit_ex(u->aead, EVP_chacha20_poly1305(), NULL, NULL, NULL, 1) == 1;
  if (ok && !chacha(u)) {
    ok = (u->spare = EVP_CIPHER_CTX_new()) != NULL && (u->srv[0].aead = EVP_CIPHER_CTX_new()) != NULL &&
         (u->srv[1].aead = EVP_CIPHER_CTX_new()) != NULL && gcm_key(u, u->aead, u->sid) == 0 &&
         (u->ecb_dec = EVP_CIPHER_CTX_new()) != NULL &&
         EVP_DecryptInit_ex(u->ecb_dec, ecb(m), NULL, u->keys.k[u->keys.n - 1], NULL) == 1 &&
         EVP_CIPHER_CTX_set_padding(u->ecb_dec, 0) == 1;
    for (size_t i = 0; ok && i < u->keys.n; i++)
      ok = (u->ecb[i] = EVP_CIPHER_CTX_new()) != NULL &&
           EVP_EncryptInit_ex(u->ecb[i], ecb(m), NULL, u->keys.k[i], NULL) == 1 &&
           EVP_CIPHER_CTX_set_padding(u->ecb[i], 0) == 1;
  }
  if (!ok) s5_ss2022_udp_free(u);
  return ok ? 0 : -1;
}

void s5_ss2022_udp_free(struct s5_ss2022_udp *u) {
  for (size_t i = 0; i < S5_SS2022_KEYS_MAX; i++) EVP_CIPHER_CTX_free(u->ecb[i]);
  EVP_CIPHER_CTX_free(u->ecb_dec);
  EVP_CIPHER_CTX_free(u->aead);
  EVP_CIPHER_CTX_free(u->spare);
  EVP_CIPHER_CTX_free(u->srv[0].aead);
  EVP_CIPHER_CTX_free(u->srv[1].aead);
  explicit_bzero(u, sizeof *u);
}

size_t s5_ss2022_udp_head(const struct s5_ss2022_udp *u) {
  return chacha(u) ? XHEAD + MAIN_C : SEP + 16 * (u->keys.n - 1) + MAIN_C;
}

static int block(void *ctx, const uint8_t *in, uint8_t *out) {
  int n = 0;
  return EVP_CipherUpdate(ctx, out, &n, in, 16) == 1 && n == 16 ? 0 : -1;
}

/* GCM with ctx's key: seal (enc) or open in[len] (+ tag) in place, nonce n12. */
static int gcm_run(void *ctx, int enc, const uint8_t *n12, uint8_t *in, size_t len) {
  int n = 0, f = 0;
  uint8_t tag[S5_SS_TAG];
  if (!enc) memcpy(tag, in + len, sizeof tag);
  return EVP_CipherInit_ex(ctx, NULL, NULL, NULL, n12, enc) == 1 &&
             (len == 0 || EVP_CipherUpdate(ctx, in, &n, in, (int)len) == 1) &&
             (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, S5_SS_TAG, tag) == 1) &&
             EVP_CipherFinal_ex(ctx, in + n, &f) == 1 &&
             (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, S5_SS_TAG, in + len) == 1)
           ? 0
           : -1;
}

long s5_ss2022_udp_seal_as(struct s5_ss2022_udp *u, const uint8_t *client_sid, uint64_t now, uint8_t *pkt,
                           size_t len) {
  size_t mh = client_sid != NULL ? MAIN_S : MAIN_C;
  uint8_t sep[SEP];
  memcpy(sep, u->sid, 8);
  s5_ss2022_put_be(sep + 8, u->pid++, 8);
  if (chacha(u)) {
    uint8_t *b = pkt + S5_SS2022_XNONCE, *m = b + SEP;
    memcpy(b, sep, SEP);
    m[0] = client_sid != NULL;
    s5_ss2022_put_be(m + 1, now, 8);
    if (client_sid != NULL) memcpy(m + 9, client_sid, 8);
    s5_ss2022_put_be(m + mh - 2, 0, 2);
    size_t blen = SEP + mh + len;
    if (RAND_bytes(pkt, S5_SS2022_XNONCE) != 1 ||
        s5_xchacha_seal(u->aead, u->keys.k[0], pkt, NULL, 0, b, blen, b) != 0)
      return S5_SS_FAILED;
    return (long)(S5_SS2022_XNONCE + blen + S5_SS_TAG);
  }
  size_t eih = client_sid != NULL ? 0 : 16 * (u->keys.n - 1);
  uint8_t *m = pkt + SEP + eih;
  m[0] = client_sid != NULL;
  s5_ss2022_put_be(m + 1, now, 8);
  if (client_sid != NULL) memcpy(m + 9, client_sid, 8);
  s5_ss2022_put_be(m + mh - 2, 0, 2);
  for (size_t i = 0; i < eih / 16; i++) { /* each identity key hides the next one's hash */
    uint8_t x[16];
    for (int j = 0; j < 16; j++) x[j] = u->keys.next_hash[i][j] ^ sep[j];
    if (block(u->ecb[i], x, pkt + SEP + 16 * i) != 0) return S5_SS_FAILED;
  }
  size_t blen = mh + len;
  if (gcm_run(u->aead, 1, sep + 4, m, blen) != 0 || block(u->ecb[0], sep, pkt) != 0) return S5_SS_FAILED;
  return (long)(SEP + eih + blen + S5_SS_TAG);
}

long s5_ss2022_udp_seal(struct s5_ss2022_udp *u, uint64_t now, uint8_t *pkt, size_t len) {
  return s5_ss2022_udp_seal_as(u, NULL, now, pkt, len);
}

/* The server session of sid: its slot, or -1 (a new one). */
static int srv_slot(const struct s5_ss2022_udp *u, const uint8_t *sid) {
  for (int i = 0; i < 2; i++)
    if (u->srv[i].on && memcmp(u->srv[i].sid, sid, 8) == 0) return i;
  return -1;
}

/* A new server session proved itself (its packet opened): the current
 * one becomes the old one, unless the old one is still live. */
static int srv_admit(struct s5_ss2022_udp *u, const uint8_t *sid, uint64_t now) {
  if (u->srv[0].on && u->srv[1].on && now < u->srv[1].last + S5_SS2022_REPLAY_S) return S5_SS2022_TOO_MANY;
  if (u->srv[0].on) {
    void *old = u->srv[1].aead;
    u->srv[1] = u->srv[0];
    u->srv[0].aead = old;
  }
  void *a = u->srv[0].aead; /* aes: the spare holds the new session's key */
  memset(&u->srv[0], 0, sizeof u->srv[0]);
  u->srv[0].on = 1;
  memcpy(u->srv[0].sid, sid, 8);
  if (!chacha(u)) {
    u->srv[0].aead = u->spare;
    u->spare = a;
  } else {
    u->srv[0].aead = a;
  }
  return 0;
}

long s5_ss2022_udp_open(struct s5_ss2022_udp *u, uint64_t now, uint8_t *pkt, size_t len, size_t *off) {
  uint8_t sep[SEP], *m;
  size_t body; /* the main header's offset */
  if (chacha(u)) {
    if (len < XHEAD + MAIN_S + S5_SS_TAG) return S5_SS_SHORT;
    uint8_t *b = pkt + S5_SS2022_XNONCE;
    if (s5_xchacha_open(u->aead, u->keys.k[0], pkt, NULL, 0, b, len - S5_SS2022_XNONCE - S5_SS_TAG, b) != 0)
      return S5_SS_BAD_TAG;
    memcpy(sep, b, SEP);
    body = XHEAD;
  } else {
    if (len < SEP + MAIN_S + S5_SS_TAG) return S5_SS_SHORT;
    if (block(u->ecb_dec, pkt, sep) != 0) return S5_SS_FAILED;
    body = SEP;
  }
  int slot = srv_slot(u, sep);
  uint64_t pid = s5_ss2022_get_be(sep + 8, 8);
  if (slot >= 0 && s5_ss2022_window_check(&u->srv[slot].w, pid) != S5_SS_OK) return S5_SS2022_REPLAY;
  m = pkt + body;
  if (!chacha(u)) {
    void *a = slot >= 0 ? u->srv[slot].aead : u->spare;
    if (slot < 0 && gcm_key(u, a, sep) != 0) return S5_SS_FAILED;
    if (gcm_run(a, 0, sep + 4, m, len - SEP - S5_SS_TAG) != 0) return S5_SS_BAD_TAG;
  }
  size_t tl = len - body - S5_SS_TAG; /* the main header, address and payload */
  if (m[0] != 1) return S5_SS2022_WRONG_TYPE;
  uint64_t t = s5_ss2022_get_be(m + 1, 8);
  if (t > now + S5_SS2022_SKEW_S || now > t + S5_SS2022_SKEW_S) return S5_SS2022_CLOCK_SKEW;
  if (memcmp(m + 9, u->sid, 8) != 0) return S5_SS2022_WRONG_SESSION;
  size_t pad = (size_t)s5_ss2022_get_be(m + 17, 2);
  if (MAIN_S + pad > tl) return S5_SS_SHORT;
  if (slot < 0) {
    int st = srv_admit(u, sep, now);
    if (st != 0) return st;
    slot = 0;
  }
  s5_ss2022_window_mark(&u->srv[slot].w, pid);
  u->srv[slot].last = now;
  *off = body + MAIN_S + pad;
  return (long)(tl - MAIN_S - pad);
}

const char *s5_ss2022_udp_status_text(int status) {
  switch (status) {
    case S5_SS2022_WRONG_SESSION: return "the packet names another client session";
    case S5_SS2022_TOO_MANY: return "a third server session while two are live";
    case S5_SS2022_REPLAY: return "its packet id was seen, or is too old (a replay)";
    case S5_SS2022_WRONG_TYPE: return "its type is not a server packet's";
    case S5_SS2022_CLOCK_SKEW: return "its timestamp is more than 30 s from this host's clock";
    case S5_SS_SHORT: return "a datagram too short for its headers and tag";
    case S5_SS_BAD_TAG: return "it failed authentication";
    default: return s5_ss2022_status_text(status);
  }
}
