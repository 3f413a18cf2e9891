/* SPDX-License-Identifier: MIT */
/* A new flow's route (see route.h): the value, made once, and the cursor
 * over its candidate upstreams. */
#include "outbound/route.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "dns/dnsmap.h"
#include "shared/rules.h"
#include "sniff/sniff.h"

/* Every upstream's index, in file order: [balance]'s candidates. */
static const uint8_t every_upstream[S5_UPSTREAMS_MAX] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                         8, 9, 10, 11, 12, 13, 14, 15};
_Static_assert(S5_UPSTREAMS_MAX == 16, "every_upstream lists each index");

/* A rule named one upstream: no other carries the flow. */
static int route_ruled(const struct s5_route *r) {
  return r->outbound >= 0 && r->outbound < S5_OUTBOUND_DIRECT;
}

/* The group whose members are the candidates; -1: [balance]'s, every upstream. */
static int route_group(const struct s5_route *r) {
  int g = r->outbound - S5_OUTBOUND_GROUP;
  return g >= 0 && (unsigned)g < r->cfg->n_groups ? g : -1;
}

/* The candidates, in their order. */
static unsigned route_candidates(const struct s5_route *r, const uint8_t **members) {
  int g = route_group(r);
  if (route_ruled(r)) {
    *members = &every_upstream[r->outbound];
    return 1;
  }
  if (g >= 0) {
    *members = r->cfg->groups[g].members;
    return r->cfg->groups[g].n_members;
  }
  *members = every_upstream;
  return r->cfg->n_upstreams < S5_UPSTREAMS_MAX ? r->cfg->n_upstreams : S5_UPSTREAMS_MAX;
}

/* The flow stays on its first upstream: a rule named it, or a select
 * group's operator chose it. */
static int route_pinned(const struct s5_route *r) {
  int g = route_group(r);
  return route_ruled(r) || (g >= 0 && r->cfg->groups[g].strategy == S5_BALANCE_SELECT);
}

/* The next candidate not tried, by the strategy and health; -1: none. */
static int route_pick(struct s5_route *r) {
  struct s5_uptab *t = s5_uptab();
  const uint8_t *m;
  unsigned n = route_candidates(r, &m);
  if (t == NULL || route_ruled(r)) { /* one upstream, or no shared table (tests): in order */
    for (unsigned j = 0; j < n; j++)
      if (!(r->tried & (1u << m[j])) && (t == NULL || s5_uptab_up(t, r->cfg->upstreams[m[j]].slot)))
        return m[j];
    return -1;
  }
  int g = route_group(r);
  enum s5_balance strategy = g >= 0 ? r->cfg->groups[g].strategy : r->cfg->balance.strategy;
  if (strategy == S5_BALANCE_HASH && r->hash == 0) r->hash = s5_uptab_hash(&r->target.addr, r->target.name);
  return s5_uptab_pick_in(t, r->cfg, g, r->hash, r->tried);
}

static const struct s5_upstream_cfg *route_take(struct s5_route *r, int i) {
  r->up = i;
  if (i < 0) return NULL;
  if (s5_uptab() != NULL) r->downs = s5_uptab_downs(s5_uptab(), r->cfg->upstreams[i].slot);
  return &r->cfg->upstreams[i];
}

/* UDP goes only through SOCKS5 and Shadowsocks upstreams with udp = associate. */
static uint32_t route_cannot_udp(const struct s5_config *cfg) {
  uint32_t no = 0;
  for (unsigned i = 0; i < cfg->n_upstreams && i < S5_UPSTREAMS_MAX; i++) { /* as s5_upstream_udp says */
    const struct s5_upstream_cfg *u = &cfg->upstreams[i];
    int ss = u->type == S5_UPSTREAM_SHADOWSOCKS; /* each datagram sealed */
    if ((u->type != S5_UPSTREAM_SOCKS5 && !ss) || !u->udp || u->tls) no |= 1u << i;
  }
  return no;
}

/* [sniff]: what a flow to port is sniffed for, S5_ROUTE_SNIFF_* bits. */
unsigned s5_route_sniff_port(const struct s5_config *cfg, uint8_t proto, uint16_t port) {
  unsigned as = 0;
  if (proto == IPPROTO_UDP) {
    for (unsigned i = 0; i < cfg->sniff.quic.n; i++)
      as |= cfg->sniff.quic.port[i] == port ? S5_ROUTE_SNIFF_QUIC : 0;
    return as;
  }
  if (proto != IPPROTO_TCP) return 0;
  for (unsigned i = 0; i < cfg->sniff.tls.n; i++)
    as |= cfg->sniff.tls.port[i] == port ? S5_ROUTE_SNIFF_TLS : 0;
  for (unsigned i = 0; i < cfg->sniff.http.n; i++)
    as |= cfg->sniff.http.port[i] == port ? S5_ROUTE_SNIFF_HTTP : 0;
  return as;
}

/* A listed flow: sniffed (r->sniff set, its rule left uncounted until it
 * has its name) when not skipped and a name could send it elsewhere. */
static unsigned route_sniffs(struct s5_route *r, const struct s5_rules *t, const struct s5_flow *f,
                             unsigned as) {
  for (unsigned i = 0; i < r->cfg->sniff.skip.pfx.n; i++)
    if (s5_prefix_covers(&r->cfg->sniff.skip.pfx.p[i], &r->target.addr)) return 0;
  r->outbound = s5_rules_lookup(t, f, &r->rule);
  if (!s5_rules_by_name(t, f, r->rule, r->outbound)) return 0;
  return r->sniff = (uint8_t)as;
}

/* A name under one of [sniff] skip's. */
int s5_route_name_skipped(const struct s5_config *cfg, const char *name) {
  size_t n = strlen(name);
  for (unsigned i = 0; i < cfg->sniff.skip.names.n; i++) {
    const char *k = cfg->sniff.skip.names.name[i];
    size_t kl = strlen(k);
    if (n == kl ? strcmp(name, k) == 0 : n > kl && name[n - kl - 1] == '.' && strcmp(name + n - kl, k) == 0)
      return 1;
  }
  return 0;
}

static enum s5_route_kind route_kind(struct s5_route *r) {
  if (r->outbound == S5_OUTBOUND_BLOCK) return r->kind = S5_ROUTE_BLOCK;
  if (r->outbound == S5_OUTBOUND_DIRECT) return r->kind = S5_ROUTE_DIRECT;
  return r->kind = S5_ROUTE_PROXY;
}

enum s5_route_kind s5_route_named(struct s5_route *r, const char *name, int src,
                                  const struct sockaddr_storage *srcaddr) {
  struct s5_rules *t = s5_rules_of(r->cfg);
  struct s5_flow f;
  int use = name != NULL && name[0] != '\0' && !s5_route_name_skipped(r->cfg, name);
  s5_flow_init(&f, r->proto, &r->target.addr, srcaddr, use ? name : NULL);
  r->sniff = 0;
  r->named = (uint8_t)(use ? src : S5_NAME_NONE);
  if (use && r->cfg->sniff.override) snprintf(r->target.name, sizeof r->target.name, "%s", name);
  if (t == NULL) return r->kind;
  r->outbound = s5_rules_match(t, &f, &r->rule);
  if (s5_rules_configured(t)) s5_rules_label(t, r->rule, r->label, sizeof r->label);
  return route_kind(r);
}

enum s5_route_kind s5_route_init(struct s5_route *r, const struct s5_config *cfg, uint8_t proto,
                                 const struct sockaddr_storage *dst, const struct sockaddr_storage *src) {
  memset(r, 0, sizeof *r);
  r->cfg = cfg;
  r->proto = proto;
  r->up = -1;
  r->rule = S5_RULE_DEFAULT;
  r->outbound = S5_OUTBOUND_BALANCE;
  r->target.addr = *dst;
  int mapped = s5_dnsmap_name_of((const struct sockaddr *)dst, r->target.name, sizeof r->target.name);
  if (mapped <= 0) r->target.name[0] = '\0';
  if (mapped < 0) return r->kind = S5_ROUTE_GONE;
  if (proto == IPPROTO_UDP) r->tried = route_cannot_udp(cfg);
  if (mapped > 0) r->named = S5_NAME_MAPPED;
  struct s5_rules *t = s5_rules_of(cfg);
  if (t != NULL) {
    struct s5_flow f;
    s5_flow_init(&f, proto, dst, src, mapped > 0 ? r->target.name : NULL);
    unsigned as = mapped == 0 && s5_rules_named(t) ? s5_route_sniff_port(cfg, proto, f.dport) : 0;
    if (as != 0 && route_sniffs(r, t, &f, as) == 0) as = 0;
    if (as == 0) r->outbound = s5_rules_match(t, &f, &r->rule);
    if (s5_rules_configured(t)) s5_rules_label(t, r->rule, r->label, sizeof r->label);
  }
  return route_kind(r);
}

const struct s5_upstream_cfg *s5_route_first(struct s5_route *r, char *why, size_t len) {
  int i = route_pick(r);
  if (i >= 0) return route_take(r, i);
  uint32_t cannot = r->proto == IPPROTO_UDP ? route_cannot_udp(r->cfg) : 0, any = 0;
  const uint8_t *m;
  unsigned n = route_candidates(r, &m);
  for (unsigned j = 0; j < n; j++) any |= !(cannot & (1u << m[j]));
  if (!any && route_ruled(r))
    snprintf(why, len, "upstream %s, which its rule names, cannot carry UDP", r->cfg->upstreams[m[0]].name);
  else if (!any) snprintf(why, len, "no upstream carries UDP");
  else if (route_ruled(r))
    snprintf(why, len, "upstream %s, which its rule names, is down", r->cfg->upstreams[m[0]].name);
  else if (route_pinned(r) && s5_uptab() != NULL) {
    int g = route_group(r), sel = s5_uptab_group_member(s5_uptab(), r->cfg, (unsigned)g);
    snprintf(why, len, "upstream %s, selected in group %s, is down", r->cfg->upstreams[sel].name,
             r->cfg->groups[g].name);
  } else if (route_group(r) >= 0)
    snprintf(why, len, "no upstream of group %s is up", r->cfg->groups[route_group(r)].name);
  else snprintf(why, len, "no upstream is up");
  if (any && s5_uptab() != NULL) s5_uptab_count_no_upstream(s5_uptab()); /* for want of a healthy one */
  return route_take(r, -1);
}

const struct s5_upstream_cfg *s5_route_next(struct s5_route *r, enum s5_up_cause cause, int every,
                                            const char *why, int move) {
  struct s5_uptab *t = s5_uptab();
  if (r->up < 0) return NULL;
  unsigned slot = r->cfg->upstreams[r->up].slot;
  if (cause == S5_UP_DESTINATION) { /* the next upstream would hear the same */
    if (t != NULL) s5_uptab_count_refused(t, slot);
    return NULL;
  }
  if (cause >= S5_UP_CAUSES) return NULL;
  if (t != NULL && cause == S5_UP_REFUSING) /* by destination: one's trouble is not the proxy's */
    s5_uptab_refusing(t, slot, s5_uptab_hash(&r->target.addr, r->target.name), every, why);
  else if (t != NULL) s5_uptab_failed(t, slot, cause, why);
  r->tried |= 1u << r->up;
  if (!move || route_pinned(r) || t == NULL) return NULL;
  int next = route_pick(r);
  if (next < 0) return NULL;
  s5_uptab_count_retried(t, slot);
  return route_take(r, next);
}

const struct s5_upstream_cfg *s5_route_skip(struct s5_route *r) {
  if (r->up < 0) return NULL;
  r->tried |= 1u << r->up;
  return route_take(r, route_pick(r));
}

void s5_route_granted(struct s5_route *r, unsigned q, uint64_t hs_us) {
  if (r->up >= 0 && s5_uptab() != NULL)
    s5_uptab_granted(s5_uptab(), q, r->cfg->upstreams[r->up].slot, hs_us, r->downs);
}

int s5_route_up(const struct s5_route *r) {
  return r->up < 0 || s5_uptab() == NULL || s5_uptab_up(s5_uptab(), r->cfg->upstreams[r->up].slot);
}

const char *s5_route_group_name(const struct s5_route *r) {
  if (r->kind != S5_ROUTE_PROXY || r->outbound < S5_OUTBOUND_GROUP) return NULL;
  unsigned g = (unsigned)(r->outbound - S5_OUTBOUND_GROUP);
  return g < r->cfg->n_groups ? r->cfg->groups[g].name : NULL;
}
