/* SPDX-License-Identifier: MIT */
/* Shadowsocks UDP for the associations (see udp_ss.h). */
#include "udp/udp_ss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/failure.h"
#include "base/log.h"
#include "base/ossl.h"
#include "ctx/wctx.h"
#include "shared/uptab.h"
#include "socks5/ss_aead.h"

#include "lwip/pbuf.h"

/* Room for the largest packet: the salt, the largest text, the tag. */
#define SS_BUF (S5_SS_KEY_MAX + S5_SS_UDP_MAX + S5_SS_TAG)

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
  if (s5_ss_udp_init(&a->ss, up->ss_method, up->password) != 0) {
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
  size_t sl = s5_ss_key_len(a->ss.method), len = hlen + p->tot_len;
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
  long n = s5_ss_udp_seal(&a->ss, NULL, pkt, len - 3);
  if (n < 0) {
    S5_STAT_ADD(w->stats, drop_udp, 1);
    s5_warn("upstream %s: Shadowsocks UDP: sealing failed (OpenSSL); datagram dropped", a->proxy.up->name);
    return;
  }
  s5_udp_sock_send(&a->relay, pkt, (size_t)n, NULL);
}

/* Datagrams that failed their tag: one line per worker per 10 s, with the count. */
static __thread struct s5_failures bad;

int s5__udp_ss_open(struct s5_assoc *a, uint8_t **buf, size_t *len) {
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

void s5__udp_ss_stop(struct s5_udp *u) {
  free(u->ss_buf);
  u->ss_buf = NULL;
}
