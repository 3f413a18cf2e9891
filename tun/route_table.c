/* SPDX-License-Identifier: MIT */
/* auto-route's table: see route_table.h and route.h.
 *
 * For one family the table holds, with include empty: a default route via
 * the device (and, with the kill switch, an unreachable default behind it);
 * with include set: each included prefix via the device (and, with the kill
 * switch, an unreachable copy behind each); in both cases a throw route for
 * each excluded prefix, which sends the lookup on to the next rule (the main
 * table). An included prefix that an excluded one covers is left out, so
 * that exclude wins whatever the lengths. */
#include "tun/route_table.h"

#include "ini/config.h" /* struct s5_prefix */

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* One route of the table, as we write it and as a dump lists it. */
struct rt {
  uint8_t type; /* RTN_UNICAST (via the device), RTN_THROW, RTN_UNREACHABLE */
  uint8_t len;
  uint8_t addr[16];
  uint32_t metric; /* IPv6's 0 is stored as the kernel reports it: 1024 */
  uint32_t oif;    /* unicast only */
};

struct rt_vec {
  size_t n, cap;
  struct rt *v;
};

static int vec_push(struct rt_vec *vec, const struct rt *r) {
  if (vec->n == vec->cap) {
    size_t cap = vec->cap ? vec->cap * 2 : 64;
    struct rt *v = realloc(vec->v, cap * sizeof *v);
    if (v == NULL) return -ENOMEM;
    vec->v = v;
    vec->cap = cap;
  }
  vec->v[vec->n++] = *r;
  return 0;
}

static size_t addr_len(int family) { return family == AF_INET ? 4 : 16; }

/* Order by prefix alone. */
static int rt_prefix_cmp(const void *pa, const void *pb) {
  const struct rt *a = pa, *b = pb;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  return memcmp(a->addr, b->addr, sizeof a->addr);
}

/* Order by prefix, then metric: the lookup key of a route. */
static int rt_cmp(const void *pa, const void *pb) {
  const struct rt *a = pa, *b = pb;
  int c = rt_prefix_cmp(a, b);
  if (c != 0) return c;
  return a->metric < b->metric ? -1 : a->metric > b->metric;
}

static int rt_same(const struct rt *a, const struct rt *b) {
  return rt_cmp(a, b) == 0 && a->type == b->type && (a->type != RTN_UNICAST || a->oif == b->oif);
}

/* 1 if a prefix in the sorted excludes covers (equals or holds) p. By
 * prefix alone: the metric (IPv6's is 1024) is no part of the question. */
static int excluded(const struct rt_vec *ex, const struct rt *p) {
  if (ex->n == 0) return 0; /* and ex->v may be NULL, which bsearch must not get */
  for (unsigned len = 0; len <= p->len; len++) {
    struct rt key = {.len = (uint8_t)len};
    for (unsigned bit = 0; bit < len; bit++) key.addr[bit / 8] |= p->addr[bit / 8] & (0x80u >> (bit % 8));
    if (bsearch(&key, ex->v, ex->n, sizeof *ex->v, rt_prefix_cmp) != NULL) return 1;
  }
  return 0;
}

static int push_prefixes(struct rt_vec *vec, int family, const struct s5_route_prefixes *l, uint8_t type,
                         uint32_t metric) {
  for (size_t i = 0; i < l->n; i++) {
    if (l->p[i].family != family) continue;
    struct rt r = {.type = type, .len = (uint8_t)l->p[i].len, .metric = metric};
    memcpy(r.addr, l->p[i].addr, addr_len(family));
    int e = vec_push(vec, &r);
    if (e < 0) return e;
  }
  return 0;
}

/* Sorts and drops repeats (the same prefix listed twice, or inline and in a file). */
static void vec_unique(struct rt_vec *vec) {
  if (vec->n == 0) return;
  qsort(vec->v, vec->n, sizeof *vec->v, rt_cmp);
  size_t w = 1;
  for (size_t i = 1; i < vec->n; i++)
    if (rt_cmp(&vec->v[i], &vec->v[w - 1]) != 0) vec->v[w++] = vec->v[i];
  vec->n = w;
}

/* The routes the table should hold for this family, sorted. */
static int table_wanted(int family, int ifindex, const struct s5_route_spec *spec, struct rt_vec *want) {
  uint32_t base = family == AF_INET6 ? 1024 : 0;
  struct rt_vec ex = {0}, in = {0};
  int e = push_prefixes(&ex, family, &spec->exclude, RTN_THROW, base);
  if (e == 0) e = push_prefixes(&in, family, &spec->include, RTN_UNICAST, base);
  vec_unique(&ex);
  vec_unique(&in);
  for (size_t i = 0; e == 0 && i < ex.n; i++) e = vec_push(want, &ex.v[i]);
  if (spec->include.n == 0) { /* everything: the default route */
    struct rt def = {.type = RTN_UNICAST, .metric = base, .oif = (uint32_t)ifindex};
    if (e == 0) e = vec_push(want, &def);
    in.n = 0;
  }
  for (size_t i = 0; e == 0 && i < in.n; i++) {
    if (excluded(&ex, &in.v[i])) continue;
    in.v[i].oif = (uint32_t)ifindex;
    e = vec_push(want, &in.v[i]);
  }
  /* The kill switch: an unreachable copy of each via-device route, last. */
  for (size_t i = 0, n = want->n; e == 0 && spec->kill_switch && i < n; i++) {
    if (want->v[i].type != RTN_UNICAST) continue;
    struct rt block = want->v[i];
    block.type = RTN_UNREACHABLE;
    block.metric = S5_ROUTE_BLOCK_METRIC;
    block.oif = 0;
    e = vec_push(want, &block);
  }
  free(ex.v);
  free(in.v);
  if (e == 0 && want->n > 0) qsort(want->v, want->n, sizeof *want->v, rt_cmp);
  return e;
}

static void rt_request(struct nl_req *req, int family, uint16_t type, uint16_t flags, const struct rt *r) {
  struct rtmsg rtm = {
    .rtm_family = (uint8_t)family,
    .rtm_dst_len = r->len,
    .rtm_table = RT_TABLE_UNSPEC, /* the real table id is in RTA_TABLE */
    .rtm_protocol = RTPROT_STATIC,
    .rtm_scope = r->type == RTN_UNICAST ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
    .rtm_type = r->type,
  };
  uint32_t table = S5_ROUTE_TABLE;
  if (type == RTM_DELROUTE) rtm.rtm_scope = RT_SCOPE_NOWHERE; /* any scope */
  s5_nl_init(req, type, flags, &rtm, sizeof rtm);
  s5_nl_put_attr(req, RTA_TABLE, &table, sizeof table);
  if (r->len > 0) s5_nl_put_attr(req, RTA_DST, r->addr, addr_len(family));
  if (r->type == RTN_UNICAST && r->oif != 0) s5_nl_put_attr(req, RTA_OIF, &r->oif, sizeof r->oif);
  if (r->metric != 0) s5_nl_put_attr(req, RTA_PRIORITY, &r->metric, sizeof r->metric);
}

/* Every route of our table, as a dump lists it. */
struct dump {
  struct rt_vec *vec;
  int err;
};

static void route_seen(const struct nlmsghdr *h, void *arg) {
  struct dump *d = arg;
  const struct rtmsg *rtm = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof *rtm)) return;
  struct rt r = {.type = rtm->rtm_type, .len = rtm->rtm_dst_len};
  uint32_t table = rtm->rtm_table;
  int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *rtm));
  for (const struct rtattr *a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    size_t n = RTA_PAYLOAD(a);
    if (a->rta_type == RTA_TABLE && n >= 4) memcpy(&table, RTA_DATA(a), 4);
    else if (a->rta_type == RTA_OIF && n >= 4) memcpy(&r.oif, RTA_DATA(a), 4);
    else if (a->rta_type == RTA_PRIORITY && n >= 4) memcpy(&r.metric, RTA_DATA(a), 4);
    else if (a->rta_type == RTA_DST && n <= sizeof r.addr) memcpy(r.addr, RTA_DATA(a), n);
  }
  if (table != S5_ROUTE_TABLE || d->err != 0) return;
  d->err = vec_push(d->vec, &r);
}

static int table_dump(struct nl_conn *c, int family, struct rt_vec *have) {
  struct rtmsg rtm = {.rtm_family = (uint8_t)family};
  struct nl_req req;
  struct dump d = {have, 0};
  s5_nl_init(&req, RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof rtm);
  int r = s5_nl_query(c, &req, route_seen, &d);
  return r < 0 ? r : d.err;
}

/* Deletes the dumped routes that are not wanted (want sorted; NULL: all). */
static int table_prune(struct nl_conn *c, int family, const struct rt_vec *have, const struct rt_vec *want) {
  struct nl_batch *b = malloc(sizeof *b);
  if (b == NULL) return -ENOMEM;
  s5_nl_batch_init(b, c, -ESRCH, -ENOENT);
  int e = 0, removed = 0;
  for (size_t i = 0; e == 0 && i < have->n; i++) {
    const struct rt *w =
      want != NULL && want->n > 0 ? bsearch(&have->v[i], want->v, want->n, sizeof *want->v, rt_cmp) : NULL;
    if (w != NULL && rt_same(w, &have->v[i])) continue;
    struct nl_req req;
    rt_request(&req, family, RTM_DELROUTE, 0, &have->v[i]);
    e = s5_nl_batch_add(b, &req);
    removed++;
  }
  if (e == 0) e = s5_nl_batch_end(b);
  free(b);
  return e < 0 ? e : removed;
}

static int table_add(struct nl_conn *c, int family, const struct rt_vec *want) {
  struct nl_batch *b = malloc(sizeof *b);
  if (b == NULL) return -ENOMEM;
  s5_nl_batch_init(b, c, 0, 0);
  int e = 0;
  for (size_t i = 0; e == 0 && i < want->n; i++) {
    struct nl_req req;
    rt_request(&req, family, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &want->v[i]);
    e = s5_nl_batch_add(b, &req);
  }
  if (e == 0) e = s5_nl_batch_end(b);
  free(b);
  return e;
}

int s5_route_table_set(struct nl_conn *c, int family, int ifindex, const struct s5_route_spec *spec,
                       char *err, size_t errlen) {
  const char *fam = family == AF_INET ? "IPv4" : "IPv6";
  struct rt_vec want = {0}, have = {0};
  int e = table_wanted(family, ifindex, spec, &want);
  if (e < 0) {
    s5_nl_fail(NULL, e, err, errlen, s5_nl_what(err, errlen, "auto-route: %s routes", fam));
    goto out;
  }
  if ((e = table_add(c, family, &want)) < 0) {
    s5_nl_fail(
      c, e, err, errlen,
      s5_nl_what(err, errlen, "auto-route: adding %zu %s routes to table %u", want.n, fam, S5_ROUTE_TABLE));
    goto out;
  }
  if ((e = table_dump(c, family, &have)) == 0 && (e = table_prune(c, family, &have, &want)) >= 0) e = 0;
  if (e < 0)
    s5_nl_fail(
      c, e, err, errlen,
      s5_nl_what(err, errlen, "auto-route: removing stale %s routes of table %u", fam, S5_ROUTE_TABLE));
out:
  free(want.v);
  free(have.v);
  return e;
}

int s5_route_table_clear(struct nl_conn *c, int family) {
  struct rt_vec have = {0};
  int e = table_dump(c, family, &have);
  if (e == 0) e = table_prune(c, family, &have, NULL);
  free(have.v);
  return e == -EAFNOSUPPORT ? 0 : e;
}
