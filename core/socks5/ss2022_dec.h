/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022's down stream, without I/O: the server's salt, its
 * fixed header checked (ss2022.h: tag, type, timestamp, our request's
 * salt; then the salt against the replay filter), the first payload chunk
 * (no length chunk before it), then length and payload chunks of up to
 * 0xFFFF bytes. A payload is opened straight into the caller's buffer
 * when it fits there, else in place and handed out in pieces of the
 * caller's size. The caller puts the bytes read at in + in_len (room:
 * sizeof in - in_len, never 0 while the decoder waits for more) and adds
 * to in_len; in[in_off..in_len) is not spent yet (moved to the front when
 * what it must hold whole would not fit behind, or less than 16 KB is left
 * there). */
#ifndef S5_CORE_SOCKS5_SS2022_DEC_H
#define S5_CORE_SOCKS5_SS2022_DEC_H

#include "socks5/ss2022.h"

struct s5_ss2022_dec {
  enum s5_ss_method method;
  int state;               /* what comes next: salt, fixed header, length, payload */
  size_t plen;             /* the payload's length, in the payload state */
  size_t out_off, out_len; /* an opened payload's bytes in in[] not handed out yet */
  uint8_t psk[S5_SS_KEY_MAX], req_salt[S5_SS_KEY_MAX], srv_salt[S5_SS_KEY_MAX];
  struct s5_ss_aead aead;
  size_t in_off, in_len;
  uint8_t in[S5_SS_KEY_MAX + S5_SS2022_RESP_FIXED(S5_SS_KEY_MAX) + 2 + S5_SS2022_PAYLOAD_MAX + S5_SS_TAG];
};

/* For psk and the salt our request started with. */
void s5_ss2022_dec_init(struct s5_ss2022_dec *d, enum s5_ss_method m, const uint8_t *psk,
                        const uint8_t *req_salt);
void s5_ss2022_dec_free(struct s5_ss2022_dec *d);

/* Plain bytes into out[cap] (cap > 0): *n written (0: more input
 * needed). now: Unix seconds; r: the worker's filter of server salts.
 * S5_SS_OK, or a failure of ss_aead.h or ss2022.h (the stream is over):
 * S5_SS_BAD_TAG, S5_SS2022_WRONG_TYPE, S5_SS2022_CLOCK_SKEW,
 * S5_SS2022_SALT_MISMATCH, S5_SS2022_REPLAY, S5_SS_FAILED. */
int s5_ss2022_decode(struct s5_ss2022_dec *d, struct s5_ss2022_replay *r, uint64_t now, uint8_t *out,
                     size_t cap, size_t *n);

/* 1 when the stream has begun (a salt byte came) and is inside a header
 * or a chunk: an end here truncates. */
int s5_ss2022_dec_partial(const struct s5_ss2022_dec *d);

#endif
