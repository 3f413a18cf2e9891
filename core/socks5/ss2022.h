/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 (SIP022, "2022-blake3-*") TCP framing, without I/O:
 * the pre-shared key from the password (base64 of exactly the key's
 * length), each direction's session subkey BLAKE3 derive_key(context
 * "shadowsocks 2022 session subkey", PSK || salt), the salt as long as the
 * key; the request's headers (a fixed one: type 0, a big-endian Unix
 * timestamp, the variable header's length; a variable one: the target,
 * padding, the first payload) and the response's fixed header (type 1, the
 * timestamp, the request's salt, the first chunk's length) checked: type,
 * tag, request salt, timestamp within 30 s; a filter of server salts seen
 * within 60 s. Seal and open, the nonce counter and the chunks after the
 * headers are ss_aead.h's. */
#ifndef S5_CORE_SOCKS5_SS2022_H
#define S5_CORE_SOCKS5_SS2022_H

#include <stddef.h>
#include <stdint.h>

#include "socks5/ss_aead.h"

#define S5_SS2022_PAYLOAD_MAX 0xFFFF
#define S5_SS2022_PAD_MAX 900
#define S5_SS2022_SKEW_S 30   /* a header's timestamp may differ from now by this much */
#define S5_SS2022_REPLAY_S 60 /* a server salt is remembered this long */
#define S5_SS2022_REQ_FIXED (1 + 8 + 2)
/* The response's fixed header, sealed, for a key (and salt) of klen bytes. */
#define S5_SS2022_RESP_FIXED(klen) (1 + 8 + (klen) + 2 + S5_SS_TAG)

/* 1 for the three 2022-blake3-* methods. */
int s5_ss2022_is(enum s5_ss_method m);

/* The PSK from the password: base64 (RFC 4648, with its padding) of
 * exactly s5_ss_key_len(m) bytes into psk; of a chain `iPSK:...:uPSK`
 * (ss2022_udp.h), the last, the user's. 0, or -1 (not base64, or of
 * another length). */
int s5_ss2022_psk(enum s5_ss_method m, const char *password, uint8_t *psk);

/* The session subkey (s5_ss_key_len(m) bytes) of psk and salt. */
void s5_ss2022_subkey(enum s5_ss_method m, const uint8_t *psk, const uint8_t *salt, uint8_t *sub);

/* One direction's AEAD from psk and that direction's salt; 0 or -1. */
int s5_ss2022_aead_init(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *psk, const uint8_t *salt);

/* Bytes s5_ss2022_request writes (salt excluded) for a target of tlen
 * bytes, pad bytes of padding, len bytes of payload. */
size_t s5_ss2022_request_len(size_t tlen, size_t pad, size_t len);

/* The request's two headers sealed into out (room: s5_ss2022_request_len):
 * target[tlen] (ATYP, address, port), pad bytes of padding (their content
 * is the caller's: random), then payload[len]; now the Unix time in
 * seconds. The variable header must fit 0xFFFF. Returns the bytes
 * written, or -1. */
long s5_ss2022_request(struct s5_ss_aead *a, uint64_t now, const uint8_t *target, size_t tlen,
                       const uint8_t *pad, size_t padlen, const uint8_t *payload, size_t len, uint8_t *out);

enum s5_ss2022_status {
  S5_SS2022_WRONG_TYPE = -10,    /* the header's type is not a server stream's */
  S5_SS2022_SALT_MISMATCH = -11, /* it names another request salt: tampering or replay */
  S5_SS2022_CLOCK_SKEW = -12,    /* its timestamp is more than 30 s from now */
  S5_SS2022_REPLAY = -13,        /* its salt was seen within 60 s */
};

/* Opens the response's fixed header in[S5_SS2022_RESP_FIXED(klen)] and
 * checks it against the request's salt req_salt and now (Unix seconds):
 * S5_SS_OK and *first the length of the first payload chunk (whose
 * payload and tag follow at once, with no length chunk), S5_SS_BAD_TAG or
 * one of the statuses above. */
int s5_ss2022_response(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *in, const uint8_t *req_salt,
                       uint64_t now, size_t *first);

/* The server salts seen lately (per worker): a ring of the last
 * S5_SS2022_REPLAY_MAX, each with when it came. A salt older than 60 s is
 * forgotten; when more than that many came within 60 s, the oldest are
 * forgotten early (counted in evicted_fresh). */
#define S5_SS2022_REPLAY_MAX 1024
struct s5_ss2022_replay {
  size_t next;
  uint64_t evicted_fresh;
  struct {
    uint64_t at; /* Unix seconds; 0: empty */
    uint8_t salt[S5_SS_KEY_MAX];
  } seen[S5_SS2022_REPLAY_MAX];
};

/* S5_SS2022_REPLAY when salt[len] was seen within 60 s of now, else
 * S5_SS_OK and the salt remembered. */
int s5_ss2022_replay_check(struct s5_ss2022_replay *r, const uint8_t *salt, size_t len, uint64_t now);

/* Text of a status (these and ss_aead.h's), for the log. */
const char *s5_ss2022_status_text(int status);

/* n bytes of v big-endian at p (the headers' timestamps, lengths, ids);
 * and back. */
static inline void s5_ss2022_put_be(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = n; i-- > 0; v >>= 8) p[i] = (uint8_t)v;
}

static inline uint64_t s5_ss2022_get_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

#endif
