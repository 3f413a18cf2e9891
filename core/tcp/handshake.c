/* SPDX-License-Identifier: MIT */
/* The proxy side of a new session: what it asks of the SOCKS5 client
 * (proxy.c), a CONNECT to the client's original destination (by name for a
 * mapped DNS address, so the proxy resolves it), and what the answer means
 * for the session: the SYN-ACK for the client, or a reset. The session
 * table reaches it through its start_proxy pointer, which the worker sets
 * (the packet fuzzer sets its own scripted proxy, test/fuzz/fuzz_packet.c). */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "dns/dnsmap.h"
#include "base/addr.h"
#include "base/log.h"
#include "shared/rules.h"
#include "shared/uptab.h"
#include "socks5/pool.h"
#include "tcp/handshake.h"

#include "lwip/tcp.h"

/* The address the client asked for: lwIP's "any destination" listener gave
 * the accepted pcb the SYN's destination as its local address. */
static void original_destination(const struct tcp_pcb *pcb, struct sockaddr_storage *ss) {
  s5_addr_to_sockaddr(&pcb->local_ip, pcb->local_port, ss);
}

/* The CONNECT's destination: the client's, written by the client in
 * proxy.c as the upstream's type asks. */
static int hs_target(void *session, struct s5_proxy_target *t) {
  struct s5_session *s = session;
  original_destination(s->conn.pcb, &t->addr);
  /* A mapped DNS address: CONNECT by name, the proxy resolves it. */
  int mapped = s5_dnsmap_name_of((struct sockaddr *)&t->addr, t->name, sizeof t->name);
  if (mapped < 0) return -1;
  if (mapped == 0) t->name[0] = '\0';
  if (mapped > 0) s5_session_named(s, t->name); /* the session log, --connections */
  return 0;
}

/* Why a set-up failed, when it is the upstream's fault; -1 when the
 * destination answered (a refused CONNECT: the next upstream would hear
 * the same) or the session itself is going. A refusal in words that say
 * the proxy is broken (s5_upstream_broken) is the upstream's. */
static int hs_cause(const struct s5_proxy_result *r, uint64_t left, int broken) {
  if (left == 0 || r->slow) return S5_UP_TIMEOUT;
  if (broken) return S5_UP_REFUSING;
  if (r->status == S5_SOCKS5_REFUSED) return -1;
  if (r->status == S5_SOCKS5_AUTH_FAILED || r->status == S5_SOCKS5_NO_METHOD) return S5_UP_AUTH;
  if (r->step == S5_PROXY_CONNECTING) return S5_UP_CONNECT;
  return S5_UP_HANDSHAKE;
}

static unsigned hs_index(const struct s5_session *s) { return (unsigned)(s->proxy.up - s->cfg->upstreams); }

/* An upstream failed the set-up: the next healthy one, unseen by the
 * client, while connect-timeout lasts. Not once the client's own bytes
 * may have gone to the failed one (optimistic, after the request). */
static int hs_failover(struct s5_session *s, const struct s5_proxy_result *r) {
  struct s5_uptab *t = s5_uptab();
  /* connect-timeout counts from the SYN, over every upstream tried */
  uint64_t end = s->rec.started_ms + s->cfg->session.connect_timeout * 1000ull, now = uv_now(&s->w->loop);
  uint64_t left = now < end ? end - now : 0;
  int broken = s5_upstream_broken(s->proxy.up, r->status, r->rep, r->http); /* 0, or how it counts */
  int cause = hs_cause(r, left, broken);
  if (t == NULL || cause < 0) {
    if (t != NULL && r->status == S5_SOCKS5_REFUSED)
      __atomic_add_fetch(&t->u[s->proxy.up->slot].refused, 1, __ATOMIC_RELAXED);
    return -1;
  }
  if (s->proxy.up->type == S5_UPSTREAM_DIRECT) return -1; /* direct: the destination's answer */
  unsigned from = hs_index(s);
  if (cause == S5_UP_REFUSING) { /* by destination: one's trouble is not the proxy's */
    struct s5_proxy_target dest;
    memset(&dest, 0, sizeof dest);
    uint64_t h = hs_target(s, &dest) == 0 ? s5_uptab_hash(&dest.addr, dest.name) : 0;
    s5_uptab_refusing(t, s->proxy.up->slot, h, broken == S5_BROKEN_EACH, r->why);
  } else s5_uptab_failed(t, s->proxy.up->slot, (enum s5_up_cause)cause, r->why);
  if (s->up_ruled) return -1; /* a rule named this upstream: no other carries the flow */
  if (s->conn.early == S5_RELAY_EARLY_KICKED || s->conn.early == S5_RELAY_EARLY_SENT)
    return -1; /* the request went out with the client's bytes behind it (or about to): to from */
  s->up_tried |= 1u << from;
  int next = s5_uptab_pick(t, s->cfg, s->up_hash, s->up_tried);
  if (next < 0 || left == 0) return -1;
  s->up_downs = s5_uptab_downs(t, s->cfg->upstreams[next].slot);
  if (s5_proxy_retry(&s->proxy, &s->cfg->upstreams[next], left) < 0) return -1;
  __atomic_add_fetch(&t->u[s->cfg->upstreams[from].slot].retried, 1, __ATOMIC_RELAXED);
  s->rec.upstream = s->cfg->upstreams[next].name;
  char line[300]; /* silence is a warning (through the limiter); the rest, debug */
  snprintf(line, sizeof line, "s%llu upstream %s failed (%s): trying %s", (unsigned long long)s->id,
           s->cfg->upstreams[from].name, r->why, s->cfg->upstreams[next].name);
  s5_debug("%s", line);
  if (r->slow) s5_wctx_failure(s->w, S5_LOG_WARN, line);
  return 0;
}

/* A failure's text with the rule that chose the outbound, when there are rules. */
static const char *hs_why(const struct s5_session *s, const char *why, char *buf, size_t len) {
  if (s->rec.rule[0] == '\0') return why;
  snprintf(buf, len, "%s (rule %s)", why, s->rec.rule);
  return buf;
}

/* No answer within the upstream's handshake-timeout: the next upstream
 * (counted toward down), or, with none to move to, on waiting. */
static void hs_slow(void *session, const struct s5_proxy_result *r) {
  struct s5_session *s = session;
  if (s->state == S5_SESSION_CLOSED || hs_failover(s, r) == 0) return;
  s5_debug("s%llu upstream %s: %s; no other upstream to try, waiting on", (unsigned long long)s->id,
           s->proxy.up->name, r->why);
}

/* Queue 0: what the checks of down upstreams CONNECT to without [balance]
 * check-target: the last destination reached through a proxy. */
static void hs_reached(struct s5_session *s) {
  if (s->w->index != 0 || s->cfg->n_upstreams < 2 || s->proxy.up->type == S5_UPSTREAM_DIRECT) return;
  original_destination(s->conn.pcb, &s->w->reached.addr);
  snprintf(s->w->reached.name, sizeof s->w->reached.name, "%s", s->rec.name != NULL ? s->rec.name : "");
}

static void hs_result(void *session, const struct s5_proxy_result *r) {
  struct s5_session *s = session;
  char why[480];
  if (s->state == S5_SESSION_CLOSED) return;
  if (r->outcome != S5_PROXY_GRANTED) {
    if (hs_failover(s, r) == 0) return;
    char tried[400]; /* the outbound tried, by name (direct's texts say direct) */
    if (s->proxy.up->type == S5_UPSTREAM_DIRECT)
      snprintf(tried, sizeof tried, "%s", r->why != NULL ? r->why : "direct");
    else
      snprintf(tried, sizeof tried, "upstream %s%s%s", s->proxy.up->name, r->why != NULL ? ": " : "",
               r->why != NULL ? r->why : "");
    s5_session_abort_at(s, r->level, hs_why(s, tried, why, sizeof why));
  } else {
    s->rec.upstream = s->proxy.up->name;
    hs_reached(s);
    if (s5_uptab() != NULL && s->proxy.up->type != S5_UPSTREAM_DIRECT) {
      uint64_t hs_ms = uv_now(&s->w->loop) - s->rec.started_ms;
      s5_uptab_granted(s5_uptab(), s->w->index, s->proxy.up->slot, hs_ms * 1000, s->up_downs);
      s->up_open = 1;
    }
    s5_session_established(s);
  }
}

/* [socks5] optimistic: the client's bytes that came meanwhile follow the request. */
static void hs_requested(void *session) {
  struct s5_session *s = session;
  if (s5_relay_early(&s->conn)) s5_relay_kick(&s->conn);
}

/* The pooled connection the request went out on died before the reply,
 * with none of the client's bytes on it: they wait for the fresh one's. */
static void hs_withdrawn(void *session) {
  struct s5_session *s = session;
  if (s5_relay_early(&s->conn)) s5_relay_unkick(&s->conn);
}

static const struct s5_proxy_ops hs_ops = {
  .cmd = S5_PROXY_CONNECT,
  .target = hs_target,
  .requested = hs_requested,
  .withdrawn = hs_withdrawn,
  .result = hs_result,
  .slow = hs_slow,
  .closed = s5_session_release,
};

/* [rules]: the flow's outbound, decided once, here (an upstream's index,
 * direct, block, or balance: any upstream [balance] chooses). */
static int hs_outbound(struct s5_session *s, const struct s5_proxy_target *dest) {
  struct s5_rules *t = s5_rules_of(s->cfg);
  if (t == NULL) return S5_OUTBOUND_BALANCE;
  struct sockaddr_storage src;
  struct s5_flow f;
  s5_addr_to_sockaddr(&s->conn.pcb->remote_ip, s->conn.pcb->remote_port, &src);
  s5_flow_init(&f, IPPROTO_TCP, &dest->addr, &src, dest->name[0] != '\0' ? dest->name : NULL);
  int out = s5_rules_match(t, &f, &s->rule);
  if (s5_rules_configured(t)) s5_rules_label(t, s->rule, s->rec.rule, sizeof s->rec.rule);
  return out;
}

/* The upstream the session tries first: the one its rule names (none
 * while that one is down), or by the strategy, from the shared health
 * table (none while every upstream is down). */
static int hs_choose(struct s5_session *s, int out) {
  struct s5_uptab *t = s5_uptab();
  if (out < S5_OUTBOUND_DIRECT) { /* an upstream's index */
    s->up_ruled = 1;
    if (t == NULL) return out;
    return __atomic_load_n(&t->u[s->cfg->upstreams[out].slot].down, __ATOMIC_RELAXED) == 0 ? out : -1;
  }
  if (t == NULL) return 0;
  if (s->cfg->balance.strategy == S5_BALANCE_HASH) {
    struct s5_proxy_target dest;
    memset(&dest, 0, sizeof dest);
    if (hs_target(s, &dest) == 0) s->up_hash = s5_uptab_hash(&dest.addr, dest.name);
  }
  return s5_uptab_pick(t, s->cfg, s->up_hash, s->up_tried);
}

/* [rules] direct: s5tund connects to the destination itself; refused at
 * once when the destination would come back into the device (a loop). */
static int hs_direct(struct s5_session *s) {
  char why[400], ruled[480], line[640], peer[128];
  s5_proxy_use(&s->proxy, &s->cfg->direct);
  s->rec.upstream = s->cfg->direct.name;
  int r = s5_proxy_start(&s->proxy, why, sizeof why);
  if (r == 0) return 0;
  s5_debug("s%llu direct: %s", (unsigned long long)s->id, why);
  if (r == UV_ELOOP) {
    S5_STAT_ADD(s->w->stats, drop_proxy_loop, 1);
    snprintf(line, sizeof line, "s%llu %s: %s", (unsigned long long)s->id,
             s5_session_peer(s, peer, sizeof peer), hs_why(s, why, ruled, sizeof ruled));
    s5_wctx_failure(s->w, S5_LOG_WARN, line);
  }
  return -1;
}

int s5_handshake_start(struct s5_session *s) {
  s5_proxy_init(&s->proxy, s->w, s->cfg, &hs_ops, s);
  s5_session_retain(s);
  char why[160];
  struct s5_proxy_target dest;
  memset(&dest, 0, sizeof dest);
  int out = hs_target(s, &dest) == 0 ? hs_outbound(s, &dest) : S5_OUTBOUND_BALANCE;
  if (out == S5_OUTBOUND_BLOCK) {
    s->rec.upstream = "block";
    s5_debug("s%llu blocked by [rules] (rule %s)", (unsigned long long)s->id, s->rec.rule);
    return -1;
  }
  if (out == S5_OUTBOUND_DIRECT) return hs_direct(s);
  int first = hs_choose(s, out);
  for (int i = first; i >= 0;
       i = s->up_ruled ? -1 : s5_uptab_pick(s5_uptab(), s->cfg, s->up_hash, s->up_tried)) {
    s5_proxy_use(&s->proxy, &s->cfg->upstreams[i]);
    s->rec.upstream = s->proxy.up->name;
    if (s5_uptab() != NULL) s->up_downs = s5_uptab_downs(s5_uptab(), s->proxy.up->slot);
    if (s->proxy.up->optimistic) s5_session_optimistic(s);
    /* A warm pooled connection when there is one: its CONNECT goes out now. */
    if (s5_pool_connect(s5_session_pool(s), &s->proxy, why, sizeof why) == 0) return 0;
    if (s5_uptab() == NULL || s->proxy.sock_open) break; /* a socket is in play: the session closes it */
    s->up_tried |= 1u << i; /* this one cannot carry it (SOCKS4, IPv6): the next */
  }
  if (first < 0 && s->up_ruled) {
    s->rec.upstream = s->cfg->upstreams[out].name;
    if (s5_uptab() != NULL) __atomic_add_fetch(&s5_uptab()->no_upstream, 1, __ATOMIC_RELAXED);
    s5_debug("s%llu refused: upstream %s, which its rule names, is down", (unsigned long long)s->id,
             s->cfg->upstreams[out].name);
    return -1;
  }
  if (s5_uptab() != NULL && s->up_tried == 0 && s->proxy.step == S5_PROXY_CONNECTING && !s->proxy.sock_open) {
    /* Every upstream is down: refused at once; uptab said so once. */
    s->rec.upstream = "none";
    __atomic_add_fetch(&s5_uptab()->no_upstream, 1, __ATOMIC_RELAXED);
    s5_debug("s%llu refused: no upstream is up", (unsigned long long)s->id);
    return -1;
  }
  char line[200];
  snprintf(line, sizeof line, "s%llu %s", (unsigned long long)s->id, why);
  s5_debug("%s", line);
  s5_wctx_failure(s->w, S5_LOG_WARN, line);
  return -1;
}
