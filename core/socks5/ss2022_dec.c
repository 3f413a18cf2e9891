/* SPDX-License-Identifier: MIT */
/* See ss2022_dec.h: Shadowsocks 2022's down stream opened, no I/O. */
#include "socks5/ss2022_dec.h"

#include <string.h>

enum { SALT, FIXED, LENGTH, PAYLOAD };

void s5_ss2022_dec_init(struct s5_ss2022_dec *d, enum s5_ss_method m, const uint8_t *psk,
                        const uint8_t *req_salt) {
  memset(d, 0, offsetof(struct s5_ss2022_dec, in));
  d->method = m;
  memcpy(d->psk, psk, s5_ss_key_len(m));
  memcpy(d->req_salt, req_salt, s5_ss_key_len(m));
  d->state = SALT;
}

void s5_ss2022_dec_free(struct s5_ss2022_dec *d) {
  s5_ss_aead_free(&d->aead);
  explicit_bzero(d->psk, sizeof d->psk);
}

/* One step from in[off] (avail bytes): 1 done (off moved), 0 more input needed, or a failure. */
static int step(struct s5_ss2022_dec *d, struct s5_ss2022_replay *r, uint64_t now, size_t *off) {
  size_t klen = s5_ss_key_len(d->method), avail = d->in_len - *off;
  uint8_t *p = d->in + *off;
  switch (d->state) {
    case SALT:
      if (avail < klen) return 0;
      if (s5_ss2022_aead_init(&d->aead, d->method, d->psk, p) != 0) return S5_SS_FAILED;
      memcpy(d->srv_salt, p, klen); /* for the replay filter, once the header proves it */
      d->state = FIXED;
      *off += klen;
      return 1;
    case FIXED: {
      if (avail < S5_SS2022_RESP_FIXED(klen)) return 0;
      int st = s5_ss2022_response(&d->aead, d->method, p, d->req_salt, now, &d->plen);
      if (st == S5_SS_OK) st = s5_ss2022_replay_check(r, d->srv_salt, klen, now); /* authentic: remembered */
      if (st != S5_SS_OK) return st;
      d->state = PAYLOAD;
      *off += S5_SS2022_RESP_FIXED(klen);
      return 1;
    }
    case LENGTH: {
      uint8_t l[2];
      if (avail < 2 + S5_SS_TAG) return 0;
      if (s5_ss_open(&d->aead, p, 2, l) != 0) return S5_SS_BAD_TAG;
      d->plen = (size_t)(l[0] << 8 | l[1]);
      d->state = PAYLOAD;
      *off += 2 + S5_SS_TAG;
      return 1;
    }
    default: /* PAYLOAD: opened in place, handed out by the caller */
      if (avail < d->plen + S5_SS_TAG) return 0;
      if (s5_ss_open(&d->aead, p, d->plen, p) != 0) return S5_SS_BAD_TAG;
      d->out_off = *off, d->out_len = d->plen;
      d->state = LENGTH;
      if (d->plen == 0) *off += S5_SS_TAG;
      return 1;
  }
}

int s5_ss2022_decode(struct s5_ss2022_dec *d, struct s5_ss2022_replay *r, uint64_t now, uint8_t *out,
                     size_t cap, size_t *n) {
  size_t off = 0;
  int st = S5_SS_OK;
  *n = 0;
  for (;;) {
    if (d->out_len > 0) { /* an opened payload: as much as fits */
      size_t take = cap - *n < d->out_len ? cap - *n : d->out_len;
      memcpy(out + *n, d->in + d->out_off, take);
      *n += take, d->out_off += take, d->out_len -= take;
      if (d->out_len > 0) break;    /* out is full */
      off = d->out_off + S5_SS_TAG; /* the payload and its tag are spent */
      continue;
    }
    int s = step(d, r, now, &off);
    if (s <= 0) {
      st = s;
      break;
    }
  }
  memmove(d->in, d->in + off, d->in_len - off);
  d->in_len -= off;
  if (d->out_len > 0) d->out_off -= off;
  return st;
}

int s5_ss2022_dec_partial(const struct s5_ss2022_dec *d) {
  return d->in_len > 0 || d->state == FIXED || d->state == PAYLOAD;
}
