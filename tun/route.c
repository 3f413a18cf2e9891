/* SPDX-License-Identifier: MIT */
/* auto-route over rtnetlink: see route.h.
 *
 * Installing never leaves a moment in which the rule points at a table that
 * lets packets fall through to the main table: the routes go in first (with
 * NLM_F_REPLACE, so a stale copy is replaced in place, never removed and
 * added again), then the rule (an identical stale one is kept as it is),
 * and only then is whatever else an earlier run left in our table or at our
 * priority removed. Removing goes the other way: rules first, then routes. */
#include "route.h"
#include "netlink.h"

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>

#define STALE_MAX 32 /* stale rules or routes handled per family and start */

static const int families[] = {AF_INET, AF_INET6};

static const char *family_name(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

/* ---- rules --------------------------------------------------------------- */

/* One policy rule: "[not] [fwmark MARK] [uidrange A-B] lookup TABLE pref
 * PREF". mark < 0: no fwmark selector; uid NULL: no uidrange. */
struct rule {
  uint32_t table, pref;
  int64_t mark;
  int invert;
  int has_uid;
  uint32_t uid_start, uid_end;
};

static int rule_request(struct nl_conn *c, uint16_t type, uint16_t flags, int family, const struct rule *ru) {
  struct fib_rule_hdr frh = {.family = (uint8_t)family, .action = FR_ACT_TO_TBL};
  struct nl_req r;
  uint32_t mask = 0xffffffffu, m = (uint32_t)ru->mark;
  if (ru->invert) frh.flags = FIB_RULE_INVERT;
  s5_nl_init(&r, type, flags, &frh, sizeof frh);
  s5_nl_put_attr(&r, FRA_TABLE, &ru->table, sizeof ru->table);
  s5_nl_put_attr(&r, FRA_PRIORITY, &ru->pref, sizeof ru->pref);
  if (ru->mark >= 0) {
    s5_nl_put_attr(&r, FRA_FWMARK, &m, sizeof m);
    s5_nl_put_attr(&r, FRA_FWMASK, &mask, sizeof mask);
  }
  if (ru->has_uid) {
    struct fib_rule_uid_range range = {ru->uid_start, ru->uid_end};
    s5_nl_put_attr(&r, FRA_UID_RANGE, &range, sizeof range);
  }
  return s5_nl_talk(c, &r);
}

/* The catch-all rule: everything but the proxy sockets' mark into our table. */
static struct rule rule_main(uint32_t mark) {
  return (struct rule){.table = S5_ROUTE_TABLE, .pref = S5_ROUTE_PREF, .mark = mark, .invert = 1};
}

/* Rules of ours (our priorities: S5_ROUTE_UID_PREF with the main table or
 * ours, S5_ROUTE_PREF with ours), as a dump lists them. */
struct rule_list {
  unsigned n;
  struct rule r[STALE_MAX];
};

static uint32_t attr_u32(const struct rtattr *a) {
  uint32_t v = 0;
  if (RTA_PAYLOAD(a) >= sizeof v) memcpy(&v, RTA_DATA(a), sizeof v);
  return v;
}

static int rule_ours(const struct rule *ru) {
  if (ru->pref == S5_ROUTE_PREF) return ru->table == S5_ROUTE_TABLE;
  return ru->pref == S5_ROUTE_UID_PREF && (ru->table == S5_ROUTE_TABLE || ru->table == RT_TABLE_MAIN);
}

static void rule_seen(const struct nlmsghdr *h, void *arg) {
  struct rule_list *l = arg;
  const struct fib_rule_hdr *frh = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWRULE || h->nlmsg_len < NLMSG_LENGTH(sizeof *frh)) return;
  struct rule ru = {.table = frh->table, .mark = -1, .invert = (frh->flags & FIB_RULE_INVERT) != 0};
  int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *frh));
  for (const struct rtattr *a = (const struct rtattr *)(frh + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == FRA_TABLE) ru.table = attr_u32(a);
    else if (a->rta_type == FRA_PRIORITY) ru.pref = attr_u32(a);
    else if (a->rta_type == FRA_FWMARK) ru.mark = attr_u32(a);
    else if (a->rta_type == FRA_UID_RANGE && RTA_PAYLOAD(a) >= sizeof(struct fib_rule_uid_range)) {
      const struct fib_rule_uid_range *u = RTA_DATA(a);
      ru.has_uid = 1;
      ru.uid_start = u->start;
      ru.uid_end = u->end;
    }
  }
  if (!rule_ours(&ru) || l->n >= STALE_MAX) return;
  l->r[l->n++] = ru;
}

static int rules_list(struct nl_conn *c, int family, struct rule_list *l) {
  struct fib_rule_hdr frh = {.family = (uint8_t)family};
  struct nl_req r;
  l->n = 0;
  s5_nl_init(&r, RTM_GETRULE, NLM_F_DUMP, &frh, sizeof frh);
  return s5_nl_query(c, &r, rule_seen, l);
}

static int rule_same(const struct rule *a, const struct rule *b) {
  return a->table == b->table && a->pref == b->pref && a->mark == b->mark && a->invert == b->invert &&
         a->has_uid == b->has_uid &&
         (!a->has_uid || (a->uid_start == b->uid_start && a->uid_end == b->uid_end));
}

/* Removes the rules of ours at priority pref (0: both) but keep (NULL: all). */
static int rules_remove_others(struct nl_conn *c, int family, uint32_t pref, const struct rule *keep) {
  struct rule_list l;
  int r = rules_list(c, family, &l), removed = 0;
  if (r == -EAFNOSUPPORT) return 0;
  if (r < 0) return r;
  for (unsigned i = 0; i < l.n; i++) {
    if ((pref != 0 && l.r[i].pref != pref) || (keep != NULL && rule_same(&l.r[i], keep))) continue;
    r = rule_request(c, RTM_DELRULE, 0, family, &l.r[i]);
    if (r < 0 && r != -ENOENT) return r;
    removed += r == 0;
  }
  return removed;
}

/* ---- routes -------------------------------------------------------------- */

/* A default route in our table: via the device (ifindex > 0), or, for the
 * kill switch, unreachable at the lowest priority there is. */
static int route_add(struct nl_conn *c, int family, int ifindex) {
  struct rtmsg rtm = {
    .rtm_family = (uint8_t)family,
    .rtm_table = RT_TABLE_UNSPEC, /* the real table id is in RTA_TABLE */
    .rtm_protocol = RTPROT_STATIC,
    .rtm_scope = ifindex > 0 ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
    .rtm_type = ifindex > 0 ? RTN_UNICAST : RTN_UNREACHABLE,
  };
  struct nl_req r;
  uint32_t table = S5_ROUTE_TABLE, oif = (uint32_t)ifindex, metric = S5_ROUTE_BLOCK_METRIC;
  s5_nl_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &rtm, sizeof rtm);
  s5_nl_put_attr(&r, RTA_TABLE, &table, sizeof table);
  if (ifindex > 0) s5_nl_put_attr(&r, RTA_OIF, &oif, sizeof oif);
  else s5_nl_put_attr(&r, RTA_PRIORITY, &metric, sizeof metric);
  return s5_nl_talk(c, &r);
}

/* Default routes in our table, as a dump lists them. */
struct route_list {
  unsigned n;
  struct {
    uint8_t type;
    uint32_t oif, metric;
  } r[STALE_MAX];
};

static void route_seen(const struct nlmsghdr *h, void *arg) {
  struct route_list *l = arg;
  const struct rtmsg *rtm = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof *rtm)) return;
  uint32_t table = rtm->rtm_table, oif = 0, metric = 0;
  int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *rtm));
  for (const struct rtattr *a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == RTA_TABLE) table = attr_u32(a);
    else if (a->rta_type == RTA_OIF) oif = attr_u32(a);
    else if (a->rta_type == RTA_PRIORITY) metric = attr_u32(a);
  }
  if (table != S5_ROUTE_TABLE || rtm->rtm_dst_len != 0 || l->n >= STALE_MAX) return;
  l->r[l->n].type = rtm->rtm_type;
  l->r[l->n].oif = oif;
  l->r[l->n].metric = metric;
  l->n++;
}

static int route_del(struct nl_conn *c, int family, uint8_t type, uint32_t oif, uint32_t metric) {
  struct rtmsg rtm = {
    .rtm_family = (uint8_t)family,
    .rtm_table = RT_TABLE_UNSPEC,
    .rtm_scope = RT_SCOPE_NOWHERE, /* any scope */
    .rtm_type = type,
  };
  struct nl_req r;
  uint32_t table = S5_ROUTE_TABLE;
  s5_nl_init(&r, RTM_DELROUTE, 0, &rtm, sizeof rtm);
  s5_nl_put_attr(&r, RTA_TABLE, &table, sizeof table);
  if (oif != 0) s5_nl_put_attr(&r, RTA_OIF, &oif, sizeof oif);
  if (metric != 0) s5_nl_put_attr(&r, RTA_PRIORITY, &metric, sizeof metric);
  return s5_nl_talk(c, &r);
}

/* Removes the default routes of our table but the ones to keep (ifindex:
 * the device's; block: the unreachable one), or all (ifindex 0, !block). */
static int routes_remove_others(struct nl_conn *c, int family, int ifindex, int block) {
  struct rtmsg rtm = {.rtm_family = (uint8_t)family};
  struct route_list l = {0};
  struct nl_req req;
  s5_nl_init(&req, RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof rtm);
  int r = s5_nl_query(c, &req, route_seen, &l), removed = 0;
  if (r == -EAFNOSUPPORT) return 0;
  if (r < 0) return r;
  for (unsigned i = 0; i < l.n; i++) {
    if (ifindex > 0 && l.r[i].type == RTN_UNICAST && l.r[i].oif == (uint32_t)ifindex &&
        l.r[i].metric != S5_ROUTE_BLOCK_METRIC)
      continue;
    if (block && l.r[i].type == RTN_UNREACHABLE && l.r[i].metric == S5_ROUTE_BLOCK_METRIC) continue;
    /* IPv6 reports every route with a metric, IPv4 only a non-zero one;
     * with the type, the device and the metric, the delete is exact. */
    r = route_del(c, family, l.r[i].type, l.r[i].type == RTN_UNICAST ? l.r[i].oif : 0, l.r[i].metric);
    if (r < 0 && r != -ESRCH && r != -ENOENT) return r;
    removed += r == 0;
  }
  return removed;
}

/* ---- public -------------------------------------------------------------- */

static int remove_all(struct nl_conn *c) {
  int removed = 0;
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    int r = rules_remove_others(c, families[i], 0, NULL);
    if (r < 0) return r;
    removed += r;
  }
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    int r = routes_remove_others(c, families[i], 0, 0);
    if (r < 0) return r;
    removed += r;
  }
  return removed;
}

int s5_route_remove(void) {
  struct nl_conn c;
  int r = s5_nl_open(&c);
  if (r == 0) r = remove_all(&c);
  s5_nl_close(&c);
  return r;
}

/* The per-user rules, before the catch-all one: each excluded range looks
 * up the main table (around the tunnel); with include, the proxy sockets'
 * mark first goes around it, then each included range goes into our table,
 * and there is no catch-all rule. Rules of an earlier run at this priority
 * go first: for a moment at start their users meet the catch-all rule. */
static int install_uid_rules(struct nl_conn *c, int family, const struct s5_route_users *users, uint32_t mark,
                             char *err, size_t errlen) {
  const char *fam = family_name(family);
  int r = rules_remove_others(c, family, S5_ROUTE_UID_PREF, NULL);
  if (r < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: removing stale %s rules of priority %u", fam, S5_ROUTE_UID_PREF));
  if (users == NULL || users->n == 0) return 0;
  if (users->include) {
    struct rule marked = {.table = RT_TABLE_MAIN, .pref = S5_ROUTE_UID_PREF, .mark = mark};
    if ((r = rule_request(c, RTM_NEWRULE, NLM_F_CREATE, family, &marked)) < 0)
      return s5_nl_fail(c, r, err, errlen,
                        s5_nl_what(err, errlen, "auto-route: %s rule 'fwmark 0x%x lookup main'", fam, mark));
  }
  for (unsigned i = 0; i < users->n; i++) {
    struct rule ru = {.table = users->include ? S5_ROUTE_TABLE : RT_TABLE_MAIN,
                      .pref = S5_ROUTE_UID_PREF,
                      .mark = -1,
                      .has_uid = 1,
                      .uid_start = users->ranges[i][0],
                      .uid_end = users->ranges[i][1]};
    if ((r = rule_request(c, RTM_NEWRULE, NLM_F_CREATE, family, &ru)) < 0)
      return s5_nl_fail(c, r, err, errlen,
                        s5_nl_what(err, errlen, "auto-route: %s rule 'uidrange %u-%u lookup %s'", fam,
                                   ru.uid_start, ru.uid_end, users->include ? "5335" : "main"));
  }
  return 0;
}

static int install_family(struct nl_conn *c, int family, int ifindex, uint32_t mark, int kill_switch,
                          const struct s5_route_users *users, const char *name, char *err, size_t errlen) {
  const char *fam = family_name(family);
  int include = users != NULL && users->include && users->n > 0;
  int r = 0;
  if (kill_switch && (r = route_add(c, family, 0)) < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: %s unreachable default route (kill switch) in table %u", fam,
                 S5_ROUTE_TABLE));
  if ((r = route_add(c, family, ifindex)) < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: %s default route via %s in table %u", fam, name, S5_ROUTE_TABLE));
  if ((r = install_uid_rules(c, family, users, mark, err, errlen)) < 0) return r;
  struct rule all = rule_main(mark);
  r = include ? 0 : rule_request(c, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, family, &all);
  if (r < 0 && r != -EEXIST) /* EEXIST: an earlier run's, the same: ours now */
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: %s rule 'not fwmark 0x%x lookup %u'", fam, mark, S5_ROUTE_TABLE));
  if ((r = rules_remove_others(c, family, S5_ROUTE_PREF, include ? NULL : &all)) < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: removing stale %s rules of priority %u", fam, S5_ROUTE_PREF));
  if ((r = routes_remove_others(c, family, ifindex, kill_switch)) < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: removing stale %s routes of table %u", fam, S5_ROUTE_TABLE));
  return 0;
}

int s5_route_install(const char *name, uint32_t mark, int kill_switch, const struct s5_route_users *users,
                     char *err, size_t errlen) {
  struct nl_conn c;
  int ifindex = (int)if_nametoindex(name);
  if (ifindex == 0)
    return s5_nl_fail(NULL, -errno, err, errlen, s5_nl_what(err, errlen, "auto-route: device %s", name));
  int r = s5_nl_open(&c);
  if (r < 0) {
    s5_nl_close(&c);
    return s5_nl_fail(NULL, r, err, errlen, s5_nl_what(err, errlen, "auto-route: rtnetlink"));
  }
  for (size_t i = 0; r >= 0 && i < sizeof families / sizeof *families; i++)
    r = install_family(&c, families[i], ifindex, mark, kill_switch, users, name, err, errlen);
  if (r < 0) remove_all(&c);
  s5_nl_close(&c);
  return r < 0 ? r : 0;
}
