/* SPDX-License-Identifier: MIT */
/* See ss2022.h: Shadowsocks 2022 headers, keys from BLAKE3, no I/O. */
#include "socks5/ss2022.h"

#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include <string.h>

#include "blake3.h"

static const char subkey_context[] = "shadowsocks 2022 session subkey";

int s5_ss2022_is(enum s5_ss_method m) { return s5_ss_method_2022(m); }

int s5_ss2022_psk(enum s5_ss_method m, const char *password, uint8_t *psk) {
  size_t klen = s5_ss_key_len(m);
  uint8_t raw[S5_SS2022_KEYS_MAX * S5_SS_KEY_MAX]; /* ini/'s: the configuration check's too */
  int n = s5_b64_key_chain(password, klen, raw, S5_SS2022_KEYS_MAX);
  if (n > 0) memcpy(psk, raw + (size_t)(n - 1) * klen, klen); /* the user's key: the last of a chain */
  explicit_bzero(raw, sizeof raw);
  return n > 0 ? 0 : -1;
}

void s5_ss2022_subkey(enum s5_ss_method m, const uint8_t *psk, const uint8_t *salt, uint8_t *sub) {
  size_t klen = s5_ss_key_len(m);
  blake3_hasher h;
  blake3_hasher_init_derive_key(&h, subkey_context);
  blake3_hasher_update(&h, psk, klen);
  blake3_hasher_update(&h, salt, klen);
  blake3_hasher_finalize(&h, sub, klen);
  explicit_bzero(&h, sizeof h);
}

int s5_ss2022_aead_init(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *psk, const uint8_t *salt) {
  uint8_t sub[S5_SS_KEY_MAX] = {0};
  memset(a, 0, sizeof *a);
  if (!s5_ss2022_is(m)) return -1;
  s5_ss2022_subkey(m, psk, salt, sub);
  return s5_ss_aead_subkey(a, m, sub); /* the thread's cipher; sub cleared */
}

size_t s5_ss2022_request_len(size_t tlen, size_t pad, size_t len) {
  return S5_SS2022_REQ_FIXED + S5_SS_TAG + tlen + 2 + pad + len + S5_SS_TAG;
}

long s5_ss2022_request(struct s5_ss_aead *a, uint64_t now, const uint8_t *target, size_t tlen,
                       const uint8_t *pad, size_t padlen, const uint8_t *payload, size_t len, uint8_t *out) {
  size_t vlen = tlen + 2 + padlen + len;
  if (vlen > S5_SS2022_PAYLOAD_MAX || padlen > S5_SS2022_PAD_MAX) return -1;
  uint8_t fixed[S5_SS2022_REQ_FIXED];
  fixed[0] = 0; /* client stream */
  s5_ss2022_put_be(fixed + 1, now, 8);
  s5_ss2022_put_be(fixed + 9, vlen, 2);
  uint8_t *v = out + sizeof fixed + S5_SS_TAG; /* the variable header, sealed in place */
  memcpy(v, target, tlen);
  s5_ss2022_put_be(v + tlen, padlen, 2);
  if (padlen > 0) memcpy(v + tlen + 2, pad, padlen);
  if (len > 0) memcpy(v + tlen + 2 + padlen, payload, len);
  if (s5_ss_seal(a, fixed, sizeof fixed, out) != 0 || s5_ss_seal(a, v, vlen, v) != 0) return -1;
  return (long)s5_ss2022_request_len(tlen, padlen, len);
}

int s5_ss2022_response(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *in, const uint8_t *req_salt,
                       uint64_t now, size_t *first) {
  size_t klen = s5_ss_key_len(m);
  uint8_t h[1 + 8 + S5_SS_KEY_MAX + 2];
  if (s5_ss_open(a, in, 1 + 8 + klen + 2, h) != 0) return S5_SS_BAD_TAG;
  if (h[0] != 1) return S5_SS2022_WRONG_TYPE;
  uint64_t t = s5_ss2022_get_be(h + 1, 8);
  if (t > now + S5_SS2022_SKEW_S || now > t + S5_SS2022_SKEW_S) return S5_SS2022_CLOCK_SKEW;
  if (memcmp(h + 9, req_salt, klen) != 0) return S5_SS2022_SALT_MISMATCH;
  *first = (size_t)s5_ss2022_get_be(h + 9 + klen, 2);
  return S5_SS_OK;
}

int s5_ss2022_replay_check(struct s5_ss2022_replay *r, const uint8_t *salt, size_t len, uint64_t now) {
  for (size_t i = 0; i < S5_SS2022_REPLAY_MAX; i++)
    if (r->seen[i].at != 0 && now < r->seen[i].at + S5_SS2022_REPLAY_S &&
        memcmp(r->seen[i].salt, salt, len) == 0)
      return S5_SS2022_REPLAY;
  if (r->seen[r->next].at != 0 && now < r->seen[r->next].at + S5_SS2022_REPLAY_S) r->evicted_fresh++;
  r->seen[r->next].at = now;
  memset(r->seen[r->next].salt, 0, sizeof r->seen[r->next].salt);
  memcpy(r->seen[r->next].salt, salt, len);
  r->next = (r->next + 1) % S5_SS2022_REPLAY_MAX;
  return S5_SS_OK;
}

const char *s5_ss2022_status_text(int status) {
  switch (status) {
    case S5_SS2022_WRONG_TYPE: return "the response header's type is not a server stream's";
    case S5_SS2022_SALT_MISMATCH: return "the response names another request salt (tampering or replay)";
    case S5_SS2022_CLOCK_SKEW: return "the response's timestamp is more than 30 s from this host's clock";
    case S5_SS2022_REPLAY: return "the server's salt was seen within 60 s (a replay)";
    default: return s5_ss_status_text(status);
  }
}
