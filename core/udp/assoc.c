/* SPDX-License-Identifier: MIT */
/* A worker's UDP associations: the table and one association's life (see
 * assoc.h for the design). */
#include "udp/assoc.h"
#include "udp/udp_ss.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/assert.h"
#include "shared/conntab.h"
#include "shared/uptab.h"
#include "ctx/wctx.h"
#include "sniff/sniff.h"

#include "lwip/pbuf.h"

/* After an association failed at the proxy, new ones are refused for a
 * hold-down that doubles with each failed probe, so a proxy whose UDP side
 * is broken costs one attempt per hold-down, not one per datagram. */
#define S5_UDP_HOLD_MIN_MS 1000
#define S5_UDP_HOLD_MAX_MS 30000

static void assoc_timer_fired(uv_timer_t *timer);

static unsigned assoc_hash(const ip_addr_t *ip, uint16_t port) {
  uint32_t h = 2166136261u ^ port;
  if (IP_IS_V6(ip)) {
    for (int i = 0; i < 4; i++) h = (h ^ ip_2_ip6(ip)->addr[i]) * 16777619u;
  } else {
    h = (h ^ ip_2_ip4(ip)->addr) * 16777619u;
  }
  h ^= h >> 15;
  return h & (S5_UDP_BUCKETS - 1);
}

const char *s5_assoc_client(const struct s5_assoc *a, char *buf, size_t len) {
  return s5_addr_port_str(&a->client, a->client_port, buf, len);
}

/* ---------------------------------------------------------------- life and death */

/* The association's lifetime has one owner, this file: its timer and its
 * proxy client hold it from birth, its relay socket (retained) once
 * open; each
 * handle's close callback releases it, and the last release frees it. */
void s5_assoc_retain(struct s5_assoc *a) {
  S5_ASSERT(a->state != S5_ASSOC_CLOSED && a->handles_open > 0);
  a->handles_open++;
}

void s5_assoc_release(void *assoc) {
  struct s5_assoc *a = assoc;
  S5_ASSERT(a->handles_open > 0 && a->state == S5_ASSOC_CLOSED); /* closed handles of an ended one */
  if (--a->handles_open > 0) return;
  s5_wctx_cfg_release(a->w, a->cfg);
  free(a->name);
  free(a->named_hdr);
  free(a);
}

static void assoc_handle_closed(uv_handle_t *handle) { s5_assoc_release(handle->data); }

void s5_assoc_end(struct s5_assoc *a, const char *why) {
  if (a->state == S5_ASSOC_CLOSED) return;
  struct s5_udp *u = a->u;
  if (s5_session_log_on(a->cfg)) {
    snprintf(a->end_why, sizeof a->end_why, "%s", why);
    a->rec.end = a->end_why;
    s5_session_log(u->w, a->cfg, &a->rec);
  }
  char c[80];
  s5_debug("u%llu %s: association ended: %s", (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c),
           why);
  a->state = S5_ASSOC_CLOSED;
  struct s5_assoc **link = &u->buckets[assoc_hash(&a->client, a->client_port)];
  while (*link != NULL && *link != a) link = &(*link)->hnext;
  if (*link == a) *link = a->hnext;
  if (a->prev != NULL) a->prev->next = a->next;
  else u->all = a->next;
  if (a->next != NULL) a->next->prev = a->prev;
  u->active--;
  S5_STAT_SUB(u->w->stats, udp_active, 1);
  if (a->up_open)
    s5_uptab_ended(s5_uptab(), u->w->index, a->proxy.up->slot, a->rec.bytes_up, a->rec.bytes_down);
  a->up_open = 0;
  for (unsigned i = 0; i < a->queued; i++) pbuf_free(a->queue[i]);
  a->queued = 0;
  if (a->quic != NULL) s5_quic_sniff_free(a->quic);
  free(a->quic);
  a->quic = NULL;
  if (a->ss_on) s5__udp_ss_free(a);
  uv_timer_stop(&a->timer);
  uv_close((uv_handle_t *)&a->timer, assoc_handle_closed);
  s5_proxy_close(&a->proxy, 0);
  if (a->relay_open) s5_udp_sock_close(&a->relay, assoc_handle_closed);
}

/* 1 s, doubling to 30 s. */
static unsigned hold_next_ms(unsigned ms) {
  return ms == 0 ? S5_UDP_HOLD_MIN_MS : ms >= S5_UDP_HOLD_MAX_MS / 2 ? S5_UDP_HOLD_MAX_MS : 2 * ms;
}

/* An association failed at the proxy. Failures while a hold-down runs (the
 * associations that started before it) do not lengthen it. */
void s5_assoc_hold(struct s5_udp *u) {
  uint64_t now = uv_now(&u->w->loop);
  if (now < u->hold_until) return;
  u->hold_ms = hold_next_ms(u->hold_ms);
  u->hold_until = now + u->hold_ms;
  s5_debug("UDP: new associations refused for %u ms after a failure at the proxy", u->hold_ms);
}

static struct s5_udp_held *held_find(struct s5_udp *u, const ip_addr_t *client, uint16_t port) {
  for (unsigned i = 0; i < S5_UDP_HELD_CLIENTS; i++) {
    struct s5_udp_held *h = &u->held[i];
    if (h->hold_ms != 0 && h->port == port && ip_addr_cmp(&h->client, client)) return h;
  }
  return NULL;
}

/* Eight slots, taken in turn: a client pushed out by eight others failing
 * since is the proxy's whole UDP side failing, which s5_assoc_hold covers. */
unsigned s5_assoc_hold_client(struct s5_udp *u, const ip_addr_t *client, uint16_t port, int *again) {
  struct s5_udp_held *h = held_find(u, client, port);
  *again = h != NULL;
  if (h == NULL) {
    h = &u->held[u->held_next];
    u->held_next = (u->held_next + 1) % S5_UDP_HELD_CLIENTS;
    ip_addr_copy(h->client, *client);
    h->port = port;
    h->hold_ms = 0;
  }
  uint64_t now = uv_now(&u->w->loop);
  if (now >= h->until + S5_UDP_HOLD_MAX_MS) h->hold_ms = 0; /* it failed long ago: start over */
  h->hold_ms = hold_next_ms(h->hold_ms);
  h->until = now + h->hold_ms;
  return h->hold_ms;
}

int s5_assoc_held(struct s5_udp *u, const ip_addr_t *client, uint16_t port) {
  uint64_t now = uv_now(&u->w->loop);
  if (now < u->hold_until) return 1;
  const struct s5_udp_held *h = held_find(u, client, port);
  return h != NULL && now < h->until;
}

void s5_assoc_fail_at(struct s5_assoc *a, enum s5_log_level level, const char *why) {
  s5_assoc_hold(a->u);
  char c[80], line[200];
  snprintf(line, sizeof line, "u%llu %s: %s", (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c),
           why);
  s5_wctx_failure(a->u->w, level, line);
  s5_assoc_end(a, why);
}

void s5_assoc_fail(struct s5_assoc *a, const char *why) { s5_assoc_fail_at(a, S5_LOG_INFO, why); }

int s5_assoc_failover(struct s5_assoc *a, const struct s5_proxy_result *r) {
  if (a->direct) return -1;
  uint64_t end = a->rec.started_ms + a->cfg->session.connect_timeout * 1000ull, now = uv_now(&a->w->loop);
  uint64_t left = now < end ? end - now : 0;
  const char *from = a->proxy.up->name;
  /* Not once its relay socket is open: that was bound for the failed
   * upstream's path, and the client's next datagram makes a new one. */
  int move = left != 0 && !a->relay_open;
  const struct s5_upstream_cfg *next = s5_route_next(&a->route, r->cause, r->every, r->why, move);
  /* Not between a Shadowsocks upstream and another kind: one has a control
   * connection to retry on, the other none (the next association's route
   * starts afresh). */
  if (next == NULL ||
      (next->type == S5_UPSTREAM_SHADOWSOCKS) != (a->proxy.up->type == S5_UPSTREAM_SHADOWSOCKS) ||
      s5_proxy_retry(&a->proxy, next, left) < 0)
    return -1;
  s5_debug("u%llu upstream %s failed (%s): trying %s", (unsigned long long)a->id, from, r->why, next->name);
  a->rec.upstream = next->name;
  return 0;
}

void s5_assoc_touch(struct s5_assoc *a) { a->last_active = uv_now(&a->u->w->loop); }

/* Runs once the association is ready (the proxy client's connect-timeout
 * covers the time before). */
static void assoc_timer_fired(uv_timer_t *timer) {
  struct s5_assoc *a = timer->data;
  uint64_t idle_ms = a->cfg->session.udp_idle_timeout * 1000ull;
  uint64_t quiet = uv_now(&a->u->w->loop) - a->last_active;
  if (quiet >= idle_ms) {
    s5_assoc_end(a, "idle timeout");
    return;
  }
  uv_timer_start(timer, assoc_timer_fired, idle_ms - quiet, 0);
}

void s5_assoc_set_ready(struct s5_assoc *a, uint16_t relay_port) {
  S5_ASSERT(a->state == S5_ASSOC_CONNECTING); /* once, from the proxy's reply */
  a->state = S5_ASSOC_READY;
  s5_assoc_touch(a);
  uv_timer_start(&a->timer, assoc_timer_fired, a->cfg->session.udp_idle_timeout * 1000ull, 0);
  char c[80];
  s5_debug("u%llu %s: association ready (relay port %u)", (unsigned long long)a->id,
           s5_assoc_client(a, c, sizeof c), relay_port);
}

/* Where datagrams go: [socks5] udp-address if set, else BND.ADDR unless it
 * is unspecified (0.0.0.0, ::) or a name, then the proxy's own address;
 * always with BND.PORT. */
int s5_assoc_relay_target(const struct s5_assoc *a, const struct s5_socks5_addr *bnd,
                          struct sockaddr_storage *out) {
  const struct s5_upstream_cfg *up = a->proxy.up;
  static const uint8_t zero[16];
  memset(out, 0, sizeof *out);
  if (up->udp_addr.ss_family != 0) {
    *out = up->udp_addr;
  } else if ((bnd->family == AF_INET && memcmp(bnd->ip, zero, 4) != 0) ||
             (bnd->family == AF_INET6 && memcmp(bnd->ip, zero, 16) != 0)) {
    s5_sockaddr_from_raw(bnd->ip, bnd->family == AF_INET ? 4 : 16, 0, out);
  } else {
    *out = up->addr;
  }
  if (out->ss_family != a->udp_local.ss_family) {
    /* A relay of the other family than the control connection (a dual-stack
     * proxy reached over one family): its own address is the safe bet. */
    if (up->udp_addr.ss_family != 0) return -1;
    *out = up->addr;
  }
  s5_sockaddr_set_port(out, bnd->port);
  return bnd->port == 0 ? -1 : 0;
}

/* The proxy took the greeting (and credentials) and closed the connection
 * on UDP ASSOCIATE without a reply: it has no UDP (OpenSSH's ssh -D does
 * this). Said once per worker, at warn; each refused association is still
 * held back and counted (by the proxy client), but only logged at debug. */
void s5_assoc_no_associate(struct s5_assoc *a, const char *why) {
  struct s5_udp *u = a->u;
  if (!u->no_associate_logged) {
    u->no_associate_logged = 1;
    s5_warn("the proxy does not support UDP ASSOCIATE (%s); set [socks5] udp = off and use [dns] for names",
            why);
  }
  s5_assoc_hold(u);
  s5_assoc_end(a, why);
}

/* ---------------------------------------------------------------- the table */

static void assoc_link(struct s5_udp *u, struct s5_assoc *a) {
  unsigned b = assoc_hash(&a->client, a->client_port);
  a->hnext = u->buckets[b];
  u->buckets[b] = a;
  a->next = u->all;
  if (u->all != NULL) u->all->prev = a;
  u->all = a;
  u->active++;
  S5_STAT_ADD(u->w->stats, udp_active, 1);
  S5_STAT_ADD(u->w->stats, udp_total, 1);
}

struct s5_assoc *s5_assoc_new(struct s5_udp *u, const ip_addr_t *client, uint16_t port, const ip_addr_t *dst,
                              uint16_t dport, const struct s5_route *route,
                              const struct s5_upstream_cfg *up) {
  struct s5_wctx *w = u->w;
  unsigned max = w->cfg->session.max_sessions;
  if (max != 0 && u->active >= max) {
    S5_STAT_ADD(w->stats, drop_max_sessions, 1);
    return NULL;
  }
  struct s5_assoc *a = calloc(1, sizeof *a);
  if (a == NULL) {
    S5_STAT_ADD(w->stats, drop_no_memory, 1);
    return NULL;
  }
  a->u = u;
  a->w = w;
  a->cfg = s5_wctx_cfg_hold(w); /* what it started with, whatever a reload brings */
  a->route = *route;            /* made in the same configuration */
  a->id = ++u->next_id;
  a->rec = (struct s5_session_record){
    .kind = 'u', .id = a->id, .client_port = port, .started_ms = uv_now(&w->loop), .end = "?"};
  ip_addr_copy(a->rec.client, *client);
  ip_addr_copy(a->rec.dest, *dst); /* the first destination: the session log's, and direct's only one */
  a->rec.dest_port = dport;
  a->rec.upstream = "none"; /* until it goes through one */
  ip_addr_copy(a->client, *client);
  a->client_port = port;
  a->state = S5_ASSOC_SNIFFING;
  uv_timer_init(&w->loop, &a->timer);
  a->timer.data = a;
  s5_proxy_init(&a->proxy, w, a->cfg, u->proxy_ops, a);
  a->handles_open = 2; /* the timer and the proxy client */
  assoc_link(u, a);
  char c[80];
  s5_debug("u%llu %s: new association%s", (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c),
           up == NULL ? ", sniffed first" : "");
  return up == NULL || s5_assoc_go(a, up) == 0 ? a : NULL;
}

int s5_assoc_go(struct s5_assoc *a, const struct s5_upstream_cfg *up) {
  S5_ASSERT(a->state == S5_ASSOC_SNIFFING);
  a->direct = up->type == S5_UPSTREAM_DIRECT;
  a->rec.upstream = up->name; /* in a->cfg, held as long as a */
  a->rec.group = s5_route_group_name(&a->route);
  a->state = S5_ASSOC_CONNECTING;
  s5_proxy_use(&a->proxy, up, &a->route.target);
  char why[160];
  int r = s5_proxy_start(&a->proxy, why, sizeof why);
  if (r == 0) return 0;
  snprintf(why, sizeof why, "connecting to the proxy: %s", uv_strerror(r));
  s5_assoc_fail(a, why);
  return -1;
}

struct s5_assoc *s5_assoc_find(struct s5_udp *u, const ip_addr_t *client, uint16_t port) {
  for (struct s5_assoc *a = u->buckets[assoc_hash(client, port)]; a != NULL; a = a->hnext)
    if (a->client_port == port && ip_addr_cmp(&a->client, client)) return a;
  return NULL;
}

void s5_assoc_list(const struct s5_udp *u, struct s5_connq *q) {
  for (const struct s5_assoc *a = u != NULL ? u->all : NULL; a != NULL; a = a->next) {
    struct s5_conn c;
    s5_session_record_entry(&a->rec, &c);
    c.last_ms = a->last_active;
    c.state = u->w->draining               ? S5_CONN_DRAINING
              : a->state == S5_ASSOC_READY ? S5_CONN_OPEN
                                           : S5_CONN_CONNECTING;
    s5_conntab_put(q, &c);
  }
}
