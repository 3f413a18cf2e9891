/* SPDX-License-Identifier: MIT */
/* [sniff] quic for UDP associations (see udp_sniff.h). */
#include "udp/udp_sniff.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/log.h"
#include "ctx/wctx.h"
#include "netif/icmp.h"
#include "shared/stats.h"
#include "sniff/sniff.h"
#include "sniff/sniff_skip.h"
#include "socks5/socks5_udp.h"
#include "udp/udp_dest.h"

#include "lwip/pbuf.h"

/* The largest datagram read: a QUIC Initial's is at most a path's MTU
 * (RFC 9000 14: 1200 at least); a larger one is not read (NONE). */
#define S5_UDP_SNIFF_DGRAM_MAX 2048

static void sniff_decide(struct s5_assoc *a, int src, const char *name, const char *what);

static void sniff_timer_fired(uv_timer_t *timer) {
  struct s5_assoc *a = timer->data;
  if (a->state != S5_ASSOC_SNIFFING) return;
  S5_STAT_ADD(a->w->stats, sniff_timeout, 1);
  sniff_decide(a, S5_NAME_NONE, NULL, "no name within [sniff] timeout");
}

void s5__udp_sniff_start(struct s5_assoc *a) {
  a->quic = malloc(sizeof *a->quic);
  if (a->quic == NULL) {
    S5_STAT_ADD(a->w->stats, drop_no_memory, 1);
    sniff_decide(a, S5_NAME_NONE, NULL, "no memory to sniff");
    return;
  }
  s5_quic_sniff_init(a->quic);
  uv_timer_start(&a->timer, sniff_timer_fired, a->cfg->sniff.timeout, 0);
}

/* The datagram's bytes, contiguous: lwIP's own when they are in one pbuf
 * (the common case), else copied into buf; NULL when too large. */
static const uint8_t *sniff_bytes(const struct pbuf *p, uint8_t *buf, size_t cap) {
  if (p->len == p->tot_len) return p->payload;
  if (p->tot_len > cap || pbuf_copy_partial(p, buf, p->tot_len, 0) != p->tot_len) return NULL;
  return buf;
}

void s5__udp_sniff_datagram(struct s5_assoc *a, struct pbuf *p, const ip_addr_t *dst, uint16_t dport) {
  if (dport != a->rec.dest_port || !ip_addr_cmp(dst, &a->rec.dest)) {
    S5_STAT_ADD(a->w->stats, sniff_none, 1);
    sniff_decide(a, S5_NAME_NONE, NULL, "a datagram to another destination");
    if (a->state != S5_ASSOC_CLOSED) s5__udp_datagram(a, p, dst, dport);
    else s5_icmp_port_unreachable(a->w, p);
    return;
  }
  uint8_t buf[S5_UDP_SNIFF_DGRAM_MAX];
  char name[S5_SNIFF_NAME_MAX + 1];
  const uint8_t *bytes = sniff_bytes(p, buf, sizeof buf);
  enum s5_sniff r = bytes != NULL ? s5_quic_sniff_feed(a->quic, bytes, p->tot_len, name) : S5_SNIFF_NONE;
  a->queue[a->queued++] = p; /* held, in order; sent (or freed) with the others */
  if (r == S5_SNIFF_MORE && a->queued < S5_UDP_SNIFF_HOLD) return;
  if (r == S5_SNIFF_FOUND) {
    S5_STAT_ADD(a->w->stats, sniff_quic, 1);
    sniff_decide(a, S5_NAME_QUIC, name, "its ClientHello");
    return;
  }
  S5_STAT_ADD(a->w->stats, sniff_none, 1);
  sniff_decide(a, S5_NAME_NONE, NULL, r == S5_SNIFF_MORE ? "no name in the datagrams held" : "no name");
}

/* [sniff] override: the SOCKS5 header of rec.dest's port by the name. */
static void sniff_named_header(struct s5_assoc *a, const char *name) {
  struct s5_socks5_addr to;
  uint8_t hdr[S5_SOCKS5_UDP_HDR_MAX];
  memset(&to, 0, sizeof to);
  to.family = AF_UNSPEC;
  to.port = a->rec.dest_port;
  to.name_len = (uint8_t)snprintf(to.name, sizeof to.name, "%s", name);
  int n = s5_socks5_udp_header_write(hdr, sizeof hdr, &to);
  if (n <= 0 || (a->named_hdr = malloc((size_t)n)) == NULL) {
    if (n > 0) S5_STAT_ADD(a->w->stats, drop_no_memory, 1);
    s5_info("u%llu [sniff] override: no header by the name %s (%s): by address", (unsigned long long)a->id,
            name, n > 0 ? "no memory" : "too long");
    return;
  }
  memcpy(a->named_hdr, hdr, (size_t)n);
  a->named_hdr_len = (uint16_t)n;
}

/* Decided (what: why, for the debug line): the route with the name (or
 * none), the association through its upstream, then the held datagrams. */
static void sniff_decide(struct s5_assoc *a, int src, const char *name, const char *what) {
  struct s5_wctx *w = a->w;
  struct pbuf *held[S5_UDP_SNIFF_HOLD];
  unsigned n = a->queued;
  memcpy(held, a->queue, n * sizeof held[0]);
  a->queued = 0;
  uv_timer_stop(&a->timer);
  s5_quic_sniff_free(a->quic);
  free(a->quic);
  a->quic = NULL;
  if (w->sniff_skips != NULL)
    s5_sniff_learnt(w->sniff_skips, IPPROTO_UDP, &a->rec.dest, a->rec.dest_port, uv_now(&w->loop),
                    src == S5_NAME_NONE);

  struct sockaddr_storage from;
  char why[160];
  s5_addr_to_sockaddr(&a->client, a->client_port, &from);
  enum s5_route_kind kind = s5_route_named(&a->route, name, src, &from);
  if (a->route.named != S5_NAME_NONE && (a->name = strdup(name)) != NULL) {
    a->rec.name = a->name;
    a->rec.named_by = s5_name_src_str(a->route.named);
  }
  memcpy(a->rec.rule, a->route.label, sizeof a->rec.rule);
  s5_debug("u%llu sniffed %s%s (%s%s), %u datagrams held: rule %s", (unsigned long long)a->id,
           name != NULL ? "quic " : "no name", name != NULL ? name : "", what,
           name != NULL && a->name == NULL ? ", not used" : "", n, a->rec.rule[0] ? a->rec.rule : "default");
  const struct s5_upstream_cfg *up = s5__udp_route_up(&a->route, kind, why, sizeof why);
  if (up != NULL && a->name != NULL && a->cfg->sniff.override && up->type != S5_UPSTREAM_DIRECT)
    sniff_named_header(a, a->name);
  if (up == NULL) {
    s5_debug("u%llu %s: ICMP port unreachable", (unsigned long long)a->id, why);
    S5_STAT_ADD(w->stats, drop_udp, n > 1 ? n - 1 : 0);
    for (unsigned i = 1; i < n; i++) pbuf_free(held[i]);
    if (n > 0) s5_icmp_port_unreachable(w, held[0]);
    s5_assoc_end(a, why);
    return;
  }
  if (s5_assoc_go(a, up) < 0) { /* it ended: its datagrams with it */
    S5_STAT_ADD(w->stats, drop_udp, n);
    for (unsigned i = 0; i < n; i++) pbuf_free(held[i]);
    return;
  }
  for (unsigned i = 0; i < n; i++) s5__udp_datagram(a, held[i], &a->rec.dest, a->rec.dest_port);
}
