/* SPDX-License-Identifier: MIT */
/* See ss2022_dec.h: Shadowsocks 2022's down stream opened, no I/O. */
#include "socks5/ss2022_dec.h"

#include <string.h>

enum { SALT, FIXED, LENGTH, PAYLOAD };
#define DEC_READ 16384 /* what is held moves to the front when less room than this is left behind it */

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

/* One step from in[off] (avail bytes), a payload into out[room] (*n
 * bytes more) when it fits: 1 done (off moved), 0 more input needed, or a failure. */
static int step(struct s5_ss2022_dec *d, struct s5_ss2022_replay *r, uint64_t now, size_t *off, uint8_t *out,
                size_t room, size_t *n) {
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
    default: /* PAYLOAD: opened into out when it fits, else in place and handed out by the caller */
      if (avail < d->plen + S5_SS_TAG) return 0;
      if (d->plen <= room) {
        if (s5_ss_open(&d->aead, p, d->plen, out) != 0) return S5_SS_BAD_TAG;
        *n += d->plen;
        *off += d->plen + S5_SS_TAG;
      } else {
        if (s5_ss_open(&d->aead, p, d->plen, p) != 0) return S5_SS_BAD_TAG;
        d->out_off = *off, d->out_len = d->plen;
      }
      d->state = LENGTH;
      return 1;
  }
}

/* Bytes the next step takes whole from in_off (a payload held opened: none more). */
static size_t need(const struct s5_ss2022_dec *d) {
  size_t klen = s5_ss_key_len(d->method);
  switch (d->state) {
    case SALT: return klen;
    case FIXED: return S5_SS2022_RESP_FIXED(klen);
    case LENGTH: return d->out_len > 0 ? 0 : 2 + S5_SS_TAG;
    default: return d->plen + S5_SS_TAG;
  }
}

int s5_ss2022_decode(struct s5_ss2022_dec *d, struct s5_ss2022_replay *r, uint64_t now, uint8_t *out,
                     size_t cap, size_t *n) {
  size_t off = d->in_off;
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
    if (*n == cap) break; /* out is full: the next payload waits */
    int s = step(d, r, now, &off, out + *n, cap - *n, n);
    if (s <= 0) {
      st = s;
      break;
    }
  }
  d->in_off = off;
  if (d->out_len == 0 && off == d->in_len) d->in_off = d->in_len = 0; /* all spent: nothing moved */
  else if (st == S5_SS_OK && d->out_len == 0 &&
           (off + need(d) > sizeof d->in || /* would not fit; or a read would be small, and the move is */
            (sizeof d->in - d->in_len < DEC_READ && d->in_len - off <= DEC_READ))) { /* cheap: to the front */
    memmove(d->in, d->in + off, d->in_len - off);
    d->in_len -= off, d->in_off = 0;
  }
  return st;
}

int s5_ss2022_dec_partial(const struct s5_ss2022_dec *d) {
  return d->in_len > d->in_off || d->state == FIXED || d->state == PAYLOAD;
}
