/* SPDX-License-Identifier: MIT */
/* Shadowsocks UDP for the associations (see udp_ss.h). */
#include "udp/udp_ss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/failure.h"
#include "base/log.h"
#include "base/ossl.h"
#include "ctx/wctx.h"
#include "shared/uptab.h"
#include "socks5/ss2022_udp.h"
#include "socks5/ss_aead.h"

#include "lwip/pbuf.h"

/* Room for the largest packet: the salt or 2022's headers, the largest text, the tag. */
#define SS_HEAD_MAX 128
#define SS_BUF (SS_HEAD_MAX + S5_SS_UDP_MAX + S5_SS_TAG)

int s5__udp_ss_init(struct s5_assoc *a, char *why, size_t cap) {
  const struct s5_upstream_cfg *up = a->proxy.up;
  char e[160];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) != 0) {
    snprintf(why, cap, "Shadowsocks UDP to upstream %s: %s", up->name, e);
    return -1;
  }
  if (a->u->ss_buf == NULL && (a->u->ss_buf = malloc(SS_BUF)) == NULL) {
    snprintf(why, cap, "Shadowsocks UDP to upstream %s: out of memory", up->name);
    return -1;
  }
  if (s5_ss_method_2022(up->ss_method)) {
    if ((a->ss22 = malloc(sizeof *a->ss22)) == NULL ||
        s5_ss2022_udp_init(a->ss22, up->ss_method, up->password, NULL) != 0) {
      free(a->ss22);
      a->ss22 = NULL;
      snprintf(why, cap,
               "Shadowsocks 2022 UDP to upstream %s: out of memory, or OpenSSL failed (key or cipher)",
               up->name);
      return -1;
    }
  } else if (s5_ss_udp_init(&a->ss, up->ss_method, up->password) != 0) {
    snprintf(why, cap, "Shadowsocks UDP to upstream %s: OpenSSL failed (key or cipher)", up->name);
    return -1;
  }
  a->ss_on = 1;
  return 0;
}

void s5__udp_relay_send(struct s5_assoc *a, const uint8_t *hdr, size_t hlen, const struct pbuf *p) {
  if (!a->ss_on) {
    s5_udp_sock_send(&a->relay, hdr, hlen, p);
    return;
  }
  struct s5_wctx *w = a->w;
  size_t sl = a->ss22 != NULL ? s5_ss2022_udp_head(a->ss22) : s5_ss_key_len(a->ss.method);
  size_t len = hlen + p->tot_len;
  /* The text is the SOCKS5 datagram without RSV and FRAG (3 bytes): it is
   * copied to start 3 bytes before where the text goes, the salt written
   * over those 3 bytes afterwards. */
  if (len < 3 || len - 3 + sl + S5_SS_TAG > S5_SS_UDP_MAX) {
    S5_STAT_ADD(w->stats, drop_udp, 1);
    s5_debug("u%llu datagram of %zu bytes dropped: sealed for Shadowsocks it would exceed %u bytes",
             (unsigned long long)a->id, (size_t)p->tot_len, S5_SS_UDP_MAX);
    return;
  }
  uint8_t *pkt = a->u->ss_buf, *at = pkt + sl - 3;
  if (hlen > 0) memcpy(at, hdr, hlen);
  pbuf_copy_partial(p, at + hlen, p->tot_len, 0);
  long n = a->ss22 != NULL ? s5_ss2022_udp_seal(a->ss22, (uint64_t)time(NULL), pkt, len - 3)
                           : s5_ss_udp_seal(&a->ss, NULL, pkt, len - 3);
  if (n < 0) {
    S5_STAT_ADD(w->stats, drop_udp, 1);
    s5_warn("upstream %s: Shadowsocks UDP: sealing failed (OpenSSL); datagram dropped", a->proxy.up->name);
    return;
  }
  s5_udp_sock_send(&a->relay, pkt, (size_t)n, NULL);
}

/* Datagrams that failed their tag: one line per worker per 10 s, with the count. */
static __thread struct s5_failures bad;

/* 2022: a server packet refused, by cause: counted, one warning per worker per 10 s. */
static __thread struct s5_failures bad22;

static int open22(struct s5_assoc *a, uint8_t **buf, size_t *len) {
  size_t off = 0;
  long n = s5_ss2022_udp_open(a->ss22, (uint64_t)time(NULL), *buf, *len, &off);
  if (n < 0) {
    const struct s5_upstream_cfg *up = a->proxy.up;
    int st = (int)n;
    enum s5_up_ss_cause cause =
      st == S5_SS2022_CLOCK_SKEW ? S5_UP_SS_CLOCK_SKEW
      : st == S5_SS2022_REPLAY || st == S5_SS2022_WRONG_SESSION || st == S5_SS2022_TOO_MANY
        ? S5_UP_SS_REPLAY
        : S5_UP_SS_BAD_TAG;
    char what[400], f[200];
    if (cause == S5_UP_SS_CLOCK_SKEW)
      snprintf(f, sizeof f, "set this host's clock (and the server's) right, e.g. by NTP");
    else if (cause == S5_UP_SS_REPLAY)
      snprintf(f, sizeof f, "a replay or tampering on the path, or a faulty server");
    else
      snprintf(
        f, sizeof f,
        "a wrong password or method (check [upstream %s] password and method against the server's), or tampering",
        up->name);
    S5_STAT_ADD(a->w->stats, drop_udp, 1);
    if (s5_uptab() != NULL) s5_uptab_count_stream_bad(s5_uptab(), up->slot);
    if (s5_uptab() != NULL) s5_uptab_count_ss_bad(s5_uptab(), up->slot, cause);
    snprintf(what, sizeof what, "upstream %s: Shadowsocks 2022 UDP datagram from the server dropped: %s: %s",
             up->name, s5_ss2022_udp_status_text(st), f);
    s5_failures_note(&bad22, s5_now_ms(), S5_LOG_WARN, what);
    return -1;
  }
  uint8_t *d = *buf + off - 3; /* RSV RSV FRAG over the main header's last bytes: SOCKS5's form */
  d[0] = d[1] = d[2] = 0;
  *buf = d;
  *len = (size_t)n + 3;
  return 0;
}

int s5__udp_ss_open(struct s5_assoc *a, uint8_t **buf, size_t *len) {
  if (a->ss22 != NULL) return open22(a, buf, len);
  size_t sl = s5_ss_key_len(a->ss.method);
  long n = s5_ss_udp_open(&a->ss, *buf, *len);
  if (n < 0) {
    const struct s5_upstream_cfg *up = a->proxy.up;
    char what[360];
    S5_STAT_ADD(a->w->stats, drop_udp, 1);
    if (s5_uptab() != NULL) s5_uptab_count_stream_bad(s5_uptab(), up->slot);
    snprintf(what, sizeof what,
             "upstream %s: Shadowsocks UDP datagram from the server dropped: %s: a wrong password or method "
             "(check [upstream %s] password and method against the server's), or tampering",
             up->name, n == S5_SS_BAD_TAG ? "its tag failed authentication" : s5_ss_status_text((int)n),
             up->name);
    s5_failures_note(&bad, s5_now_ms(), S5_LOG_WARN, what);
    return -1;
  }
  uint8_t *d = *buf + sl - 3; /* RSV RSV FRAG over the salt's last bytes: SOCKS5's form */
  d[0] = d[1] = d[2] = 0;
  *buf = d;
  *len = (size_t)n + 3;
  return 0;
}

void s5__udp_ss_free(struct s5_assoc *a) {
  if (a->ss22 != NULL) {
    s5_ss2022_udp_free(a->ss22);
    free(a->ss22);
    a->ss22 = NULL;
  } else {
    s5_ss_udp_free(&a->ss);
  }
  a->ss_on = 0;
}

void s5__udp_ss_stop(struct s5_udp *u) {
  free(u->ss_buf);
  u->ss_buf = NULL;
}
