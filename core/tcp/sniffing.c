/* SPDX-License-Identifier: MIT */
/* [sniff] for TCP sessions (sniffing.h): the held bytes parsed, the
 * outcome counted, the destinations that failed told (sniff/sniff_skip.h). */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "outbound/route.h"
#include "shared/stats.h"
#include "tcp/session.h"
#include "tcp/sniffing.h"

#include "lwip/pbuf.h"

int s5_sniffing_begin(struct s5_session *s, unsigned as) {
  struct s5_sniffing *h = malloc(sizeof *h);
  if (h == NULL) return -1;
  h->as = (uint8_t)as;
  h->state = S5_SNIFFING_WAIT;
  h->src = S5_NAME_NONE;
  h->len = h->again = h->writing = 0;
  h->name[0] = '\0';
  s->sniff = h;
  s5_relay_hold(&s->conn);
  return 0;
}

/* Decided: counted, and the destination's failures kept. */
static void sniffing_done(struct s5_session *s, int src) {
  struct s5_sniffing *h = s->sniff;
  h->state = S5_SNIFFING_DONE;
  h->src = (uint8_t)src;
  if (src == S5_NAME_TLS) S5_STAT_ADD(s->w->stats, sniff_tls, 1);
  else if (src == S5_NAME_HTTP) S5_STAT_ADD(s->w->stats, sniff_http, 1);
  if (src == S5_NAME_NONE) h->name[0] = '\0';
  s5_sniff_learnt(&s->tab->skips, IPPROTO_TCP, &s->rec.dest, s->rec.dest_port, uv_now(&s->w->loop),
                  src == S5_NAME_NONE);
}

int s5_sniffing_look(struct s5_session *s) {
  struct s5_sniffing *h = s->sniff;
  size_t n = 0;
  for (const struct pbuf *q = s->conn.out; q != NULL && n < sizeof h->buf; q = q->next) {
    size_t off = q == s->conn.out ? s->conn.out_off : 0, k = q->len - off;
    if (k > sizeof h->buf - n) k = sizeof h->buf - n;
    memcpy(h->buf + n, (const uint8_t *)q->payload + off, k);
    n += k;
  }
  h->len = (uint16_t)n;
  if (n == 0 && !s->conn.client_eof) return 0;
  enum s5_sniff tls = S5_SNIFF_NONE, http = S5_SNIFF_NONE;
  if (h->as & S5_ROUTE_SNIFF_TLS) tls = s5_sniff_tls(h->buf, n, h->name);
  if (tls == S5_SNIFF_FOUND) {
    sniffing_done(s, S5_NAME_TLS);
    return 1;
  }
  if (h->as & S5_ROUTE_SNIFF_HTTP) http = s5_sniff_http(h->buf, n, h->name);
  if (http == S5_SNIFF_FOUND) {
    sniffing_done(s, S5_NAME_HTTP);
    return 1;
  }
  if ((tls == S5_SNIFF_MORE || http == S5_SNIFF_MORE) && n < sizeof h->buf && !s->conn.client_eof) return 0;
  S5_STAT_ADD(s->w->stats, sniff_none, 1);
  sniffing_done(s, S5_NAME_NONE);
  return 1;
}

void s5_sniffing_granted(struct s5_session *s) {
  s->sniff->state = S5_SNIFFING_GRANTED;
  if (!s->sniff->writing) s5_sniffing_free(s);
}

void s5_sniffing_free(struct s5_session *s) {
  free(s->sniff);
  s->sniff = NULL;
}

void s5_sniffing_timeout(struct s5_session *s) {
  S5_STAT_ADD(s->w->stats, sniff_timeout, 1);
  sniffing_done(s, S5_NAME_NONE);
}
