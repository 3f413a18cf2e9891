/* SPDX-License-Identifier: MIT */
/* See ss.h: the Shadowsocks codec of a pump (pump.c). */
#include "socks5/ss.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/failure.h"
#include "base/log.h"
#include "base/ossl.h" /* OpenSSL, loaded on demand */
#include "ini/config.h"
#include "shared/uptab.h"
#include "socks5/ss2022_dec.h"
#include "socks5/ss2022_udp.h"
#include "socks5/ss_aead.h"

/* One allocation per connection, not zeroed: the fields before wire set
 * at the start, the buffers written before they are read. */
struct ss_cx {
  enum s5_ss_method method;
  unsigned salt_sent : 1, eof : 1, heard : 1, v22 : 1, dec_set : 1;
  struct s5_ss_aead enc;
  uint8_t salt[S5_SS_KEY_MAX];
  uint8_t eih[16 * (S5_SS2022_KEYS_MAX - 1)]; /* 2022: identity headers after the salt (ss2022_udp.h) */
  size_t eih_len;
  size_t wire_off, wire_len, wire_for; /* sealed bytes not yet sent, and the plain ones they carry */
  uint8_t wire[S5_SS_KEY_MAX + 16 * (S5_SS2022_KEYS_MAX - 1) + S5_PUMP_UP + 2 * (2 + 2 * S5_SS_TAG) +
               S5_SS2022_REQ_FIXED + 2 + S5_SS2022_PAD_MAX];
  union {
    struct s5_ss_dec dec;       /* 2017's down stream */
    struct s5_ss2022_dec dec22; /* 2022's (v22) */
  } down;
};
_Static_assert(S5_PUMP_UP <= 2 * S5_SS_SEAL_MAX, "ss_cx.wire: a pump's write is at most two chunks");

static int ss_handshake(struct s5_pump *p, char *why, size_t cap) {
  (void)p, (void)why, (void)cap;
  return 0; /* nothing to agree: the first chunk carries the target */
}

/* The stream failed: one warning naming the upstream and the fix; counted. */
static int ss_bad(struct s5_pump *p, const char *what, int status) {
  s5_warn(
    "upstream %s: Shadowsocks stream from the server: %s: a wrong password or method (check [upstream "
    "%s] password and method against the server's), or tampering; connection closed",
    p->up_name, what, p->up_name);
  if (s5_uptab() != NULL) s5_uptab_count_stream_bad(s5_uptab(), p->slot);
  if (s5_uptab() != NULL && status == S5_SS_BAD_TAG)
    s5_uptab_count_ss_bad(s5_uptab(), p->slot, S5_UP_SS_BAD_TAG);
  return -1;
}

/* The server hung up without a byte, not even its salt, after our first
 * chunk: what ss-server and v2ray do (after a while) with a wrong password
 * or method, and also what a destination that refused or closed at once
 * looks like through any Shadowsocks server: warned about, limited (one
 * line per worker per 10 s, with the count), counted. */
static __thread struct s5_failures silent;

static int ss_silent(struct s5_pump *p) {
  char what[320];
  snprintf(what, sizeof what,
           "upstream %s: Shadowsocks server hung up with no reply: a wrong password or method (check "
           "[upstream %s] password and method), the destination refused, or the server stopped",
           p->up_name, p->up_name);
  s5_failures_note(&silent, s5_now_ms(), S5_LOG_WARN, what);
  if (s5_uptab() != NULL) s5_uptab_count_stream_bad(s5_uptab(), p->slot);
  return -S5_PUMP_EOF;
}

/* 2022's first bytes: the target (SOCKS5's ATYP, address, port) that
 * starts buf, with the rest as the first payload, or random padding when
 * there is none, in the request's headers (ss2022.h). */
static long ss_request(struct ss_cx *c, const uint8_t *buf, size_t len, uint8_t *out) {
  size_t tlen = len < 2 ? 0 : buf[0] == 1 ? 7 : buf[0] == 4 ? 19 : buf[0] == 3 ? 4 + (size_t)buf[1] : 0;
  if (tlen == 0 || tlen > len) return -1;      /* the pair's first write is the whole target (upstream.c) */
  static const uint8_t pad[S5_SS2022_PAD_MAX]; /* zeros: sealed, they look random on the wire */
  uint8_t r[2];
  size_t padlen = 0;
  if (len == tlen) { /* no payload yet: 1..900 bytes of padding */
    if (RAND_bytes(r, sizeof r) != 1) return -1;
    padlen = 1 + (size_t)((r[0] << 8 | r[1]) % S5_SS2022_PAD_MAX);
  }
  return s5_ss2022_request(&c->enc, (uint64_t)time(NULL), buf, tlen, pad, padlen, buf + tlen, len - tlen,
                           out);
}

static int ss_write(struct s5_pump *p, const uint8_t *buf, size_t len) {
  struct ss_cx *c = p->cx;
  if (c->wire_len == 0) { /* seal the next bytes: the salt first, once */
    /* whole chunks when there is more than one: the pump tops up the tail */
    if (len > S5_SS_SEAL_MAX) len -= len % S5_SS_SEAL_MAX;
    size_t off = c->salt_sent ? 0 : s5_ss_key_len(c->method);
    memcpy(c->wire, c->salt, off);
    if (off > 0 && c->eih_len > 0) memcpy(c->wire + off, c->eih, c->eih_len), off += c->eih_len;
    long n = off > 0 && c->v22 ? ss_request(c, buf, len, c->wire + off)
                               : s5_ss_encode(&c->enc, buf, len, c->wire + off);
    if (n < 0) {
      s5_warn("upstream %s: Shadowsocks: sealing failed (OpenSSL); connection closed", p->up_name);
      return -1;
    }
    c->salt_sent = 1;
    c->wire_off = 0, c->wire_len = off + (size_t)n, c->wire_for = len;
  }
  while (c->wire_len > 0) {
    ssize_t n = send(p->net, c->wire + c->wire_off, c->wire_len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      p->want_write = 1;
      return 0;
    }
    if (n < 0) {
      s5_debug("upstream %s: Shadowsocks connection ended: %s", p->up_name, strerror(errno));
      return -1;
    }
    c->wire_off += (size_t)n, c->wire_len -= (size_t)n;
  }
  return (int)c->wire_for;
}

/* 2022's failures by cause: one warning naming the upstream and the fix; counted. */
static int ss_bad22(struct s5_pump *p, int st) {
  char f[200];
  if (st == S5_SS2022_CLOCK_SKEW)
    snprintf(f, sizeof f, "set this host's clock (and the server's) right, e.g. by NTP");
  else if (st == S5_SS2022_REPLAY || st == S5_SS2022_SALT_MISMATCH)
    snprintf(f, sizeof f, "a replay or tampering on the path, or a faulty server");
  else
    snprintf(f, sizeof f,
             "a wrong password or method (check [upstream %s] password and method against the server's), or "
             "tampering",
             p->up_name);
  s5_warn("upstream %s: Shadowsocks 2022 stream from the server: %s: %s; connection closed", p->up_name,
          s5_ss2022_status_text(st), f);
  enum s5_up_ss_cause cause = st == S5_SS2022_CLOCK_SKEW                                ? S5_UP_SS_CLOCK_SKEW
                              : st == S5_SS2022_REPLAY || st == S5_SS2022_SALT_MISMATCH ? S5_UP_SS_REPLAY
                              : st == S5_SS_BAD_TAG                                     ? S5_UP_SS_BAD_TAG
                                                                                        : S5_UP_SS_CAUSES;
  if (s5_uptab() != NULL) s5_uptab_count_stream_bad(s5_uptab(), p->slot);
  if (s5_uptab() != NULL && cause != S5_UP_SS_CAUSES) s5_uptab_count_ss_bad(s5_uptab(), p->slot, cause);
  return -1;
}

/* The worker's server salts (ss2022.h): in its thread's storage, no allocation to leak at its end. */
static __thread struct s5_ss2022_replay replay;

static int ss_read(struct s5_pump *p, uint8_t *buf, size_t cap) {
  struct ss_cx *c = p->cx;
  struct s5_ss2022_dec *d22 = c->v22 ? &c->down.dec22 : NULL;
  struct s5_ss_dec *d = &c->down.dec;
  for (;;) {
    size_t n = 0;
    int st = d22 != NULL ? s5_ss2022_decode(d22, &replay, (uint64_t)time(NULL), buf, cap, &n)
                         : s5_ss_decode(d, buf, cap, &n);
    if (st != S5_SS_OK) return d22 != NULL ? ss_bad22(p, st) : ss_bad(p, s5_ss_status_text(st), st);
    if (n > 0) return (int)n;
    int partial = d22 != NULL ? s5_ss2022_dec_partial(d22) : s5_ss_dec_partial(d);
    if (c->eof && partial) return ss_bad(p, "it ended inside a chunk", S5_SS_OK);
    if (c->eof) return !c->heard && c->salt_sent ? ss_silent(p) : -S5_PUMP_EOF;
    uint8_t *in = d22 != NULL ? d22->in : d->in;
    size_t *in_len = d22 != NULL ? &d22->in_len : &d->in_len;
    /* 2017: as much as fits, up to what opens into buf whole (no chunk is
     * left whole for a read the pump might not make) */
    size_t room = d22 != NULL ? sizeof d22->in - *in_len : s5_ss_dec_room(d, cap);
    if (room == 0) return 0; /* nothing to take now (never so at the pump's full cap) */
    ssize_t r = recv(p->net, in + *in_len, room, 0);
    if (r > 0) *in_len += (size_t)r, c->heard = 1;
    else if (r == 0) c->eof = 1;
    else if (errno == EAGAIN) return 0;
    else if (errno != EINTR) {
      s5_debug("upstream %s: Shadowsocks connection ended: %s", p->up_name, strerror(errno));
      return -1;
    }
  }
}

static void ss_shutdown(struct s5_pump *p) { (void)p; /* the FIN alone: no chunk marks the end */ }

static void ss_free(void *cx) {
  struct ss_cx *c = cx;
  if (c == NULL) return;
  s5_ss_aead_free(&c->enc);
  if (c->dec_set && c->v22) s5_ss2022_dec_free(&c->down.dec22);
  else if (c->dec_set) s5_ss_dec_free(&c->down.dec);
  free(c);
}

static const struct s5_pump_codec ss_codec = {ss_handshake, ss_write, ss_read, ss_shutdown, ss_free};

struct s5_pump *s5_ss_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_pump_done *done, void *arg,
                            int *plain, char *why, size_t cap) {
  char e[160];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) != 0) { /* a worker forked before the reload that needs it */
    snprintf(why, cap, "Shadowsocks to upstream %s: %s", up->name, e);
    return NULL;
  }
  struct ss_cx *c = malloc(sizeof *c);
  if (c == NULL) {
    snprintf(why, cap, "Shadowsocks to upstream %s: out of memory", up->name);
    return NULL;
  }
  memset(c, 0, offsetof(struct ss_cx, wire));
  uint8_t key[S5_SS_KEY_MAX];
  size_t klen = s5_ss_key_len(up->ss_method);
  c->method = up->ss_method;
  c->v22 = s5_ss2022_is(up->ss_method) != 0;
  struct s5_ss2022_keys chain;
  int keyed = s5_ss_master_key(up->ss_method, up->password, key) == 0 &&
              RAND_bytes(c->salt, (int)klen) == 1 &&
              (c->v22 ? s5_ss2022_aead_init(&c->enc, up->ss_method, key, c->salt)
                      : s5_ss_aead_init(&c->enc, up->ss_method, key, c->salt)) == 0;
  int eih = 1; /* 2022: the identity headers of a key chain, after the salt */
  if (keyed && c->v22) {
    eih = s5_ss2022_keys(up->ss_method, up->password, &chain) == 0 &&
          s5_ss2022_eih_tcp(&chain, c->salt, c->eih) == 0;
    c->eih_len = eih ? 16 * (chain.n - 1) : 0;
    s5_ss2022_keys_clear(&chain);
  }
  if (!keyed || !eih) {
    snprintf(why, cap, "Shadowsocks to upstream %s: OpenSSL failed (%s)", up->name,
             keyed ? "identity headers" : "key, salt or cipher");
    explicit_bzero(key, sizeof key);
    ss_free(c);
    return NULL;
  }
  if (c->v22) s5_ss2022_dec_init(&c->down.dec22, up->ss_method, key, c->salt);
  else s5_ss_dec_init(&c->down.dec, up->ss_method, key);
  c->dec_set = 1;
  explicit_bzero(key, sizeof key);
  return s5_pump_start(loop, up, &ss_codec, c, done, arg, plain, why, cap);
}
