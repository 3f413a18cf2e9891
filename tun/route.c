/* SPDX-License-Identifier: MIT */
/* auto-route over rtnetlink: see route.h.
 *
 * Installing never leaves a moment in which the rule points at a table that
 * lets packets fall through to the main table: the routes go in first (with
 * NLM_F_REPLACE, so a stale copy is replaced in place, never removed and
 * added again), then the rule (an identical stale one is kept as it is),
 * and only then is whatever else an earlier run left in our table or at our
 * priority removed. Removing goes the other way: rules first, then routes. */
#include "tun/route.h"
#include "tun/netlink.h"
#include "tun/nft.h"
#include "tun/route_table.h"
#include "tun/srcmark.h"

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define STALE_MAX 32 /* stale rules or routes handled per family and start */

static const int families[] = {AF_INET, AF_INET6};

static const char *family_name(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

/* ---- rules --------------------------------------------------------------- */

/* One policy rule: "[not] [iif DEV] [fwmark MARK] [uidrange A-B] lookup
 * TABLE [suppress_prefixlength N] pref PREF". mark < 0: no fwmark selector;
 * !has_uid: no uidrange; iif "": any; !has_suppress: none. */
struct rule {
  uint32_t table, pref;
  int64_t mark;
  int invert;
  int has_uid;
  uint32_t uid_start, uid_end;
  char iif[IFNAMSIZ]; /* "" = any */
  int has_suppress;
  uint32_t suppress; /* suppress_prefixlength */
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
  if (ru->iif[0] != '\0') s5_nl_put_attr(&r, FRA_IIFNAME, ru->iif, strlen(ru->iif) + 1);
  if (ru->has_suppress) s5_nl_put_attr(&r, FRA_SUPPRESS_PREFIXLEN, &ru->suppress, sizeof ru->suppress);
  return s5_nl_talk(c, &r);
}

/* The catch-all rule: everything but the proxy sockets' mark into our table. */
static struct rule rule_main(uint32_t mark) {
  return (struct rule){.table = S5_ROUTE_TABLE, .pref = S5_ROUTE_PREF, .mark = mark, .invert = 1};
}

/* Rules of ours (our priorities: S5_ROUTE_LOCAL_PREF with the main table,
 * S5_ROUTE_UID_PREF with the main table or ours, S5_ROUTE_PREF with ours),
 * as a dump lists them. */
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
  if (ru->pref == S5_ROUTE_LOCAL_PREF) return ru->table == RT_TABLE_MAIN;
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
    } else if (a->rta_type == FRA_IIFNAME) {
      size_t n = strnlen(RTA_DATA(a), RTA_PAYLOAD(a));
      if (n < sizeof ru.iif) memcpy(ru.iif, RTA_DATA(a), n);
    } else if (a->rta_type == FRA_SUPPRESS_PREFIXLEN) {
      ru.suppress = attr_u32(a);
      /* The kernel lists it only when set; all ones is "not set". */
      ru.has_suppress = ru.suppress != 0xffffffffu;
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
         a->has_uid == b->has_uid && a->has_suppress == b->has_suppress &&
         (!a->has_suppress || a->suppress == b->suppress) && strcmp(a->iif, b->iif) == 0 &&
         (!a->has_uid || (a->uid_start == b->uid_start && a->uid_end == b->uid_end));
}

static int rule_kept(const struct rule *ru, const struct rule *keep, unsigned nkeep) {
  for (unsigned i = 0; i < nkeep; i++)
    if (rule_same(ru, &keep[i])) return 1;
  return 0;
}

/* Removes the rules of ours at priority pref (0: all three) but the nkeep
 * in keep. */
static int rules_remove_others(struct nl_conn *c, int family, uint32_t pref, const struct rule *keep,
                               unsigned nkeep) {
  struct rule_list l;
  int r = rules_list(c, family, &l), removed = 0;
  if (r == -EAFNOSUPPORT) return 0;
  if (r < 0) return r;
  for (unsigned i = 0; i < l.n; i++) {
    if ((pref != 0 && l.r[i].pref != pref) || rule_kept(&l.r[i], keep, nkeep)) continue;
    r = rule_request(c, RTM_DELRULE, 0, family, &l.r[i]);
    if (r < 0 && r != -ENOENT) return r;
    removed += r == 0;
  }
  return removed;
}

/* ---- public -------------------------------------------------------------- */

/* Everything of ours, as far as it goes: one failure does not keep the
 * rest in place. Returns how many were removed, or the first -errno. */
static int remove_all(struct nl_conn *c) {
  int removed = 0, first = 0;
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    int r = rules_remove_others(c, families[i], 0, NULL, 0);
    if (r < 0 && first == 0) first = r;
    removed += r > 0 ? r : 0;
  }
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    int r = s5_route_table_clear(c, families[i]);
    if (r < 0 && first == 0) first = r;
    removed += r > 0 ? r : 0;
  }
  int r = s5_nft_remove(NULL, 0);
  if (r < 0 && first == 0) first = r;
  return first < 0 ? first : removed + (r > 0 ? r : 0);
}

int s5_route_remove(void) {
  struct nl_conn c;
  int r = s5_nl_open(&c);
  if (r == 0) r = remove_all(&c);
  s5_nl_close(&c);
  int e = s5_srcmark_restore(); /* if threads/device/device.c's start set it */
  return r < 0 ? r : e < 0 ? e : r;
}

/* The per-user rules, before the catch-all one: each excluded range looks
 * up the main table (around the tunnel); with include, the proxy sockets'
 * mark first goes around it, then each included range goes into our table,
 * and there is no catch-all rule. Rules of an earlier run at this priority
 * go first: for a moment at start their users meet the catch-all rule. */
static int install_uid_rules(struct nl_conn *c, int family, const struct s5_route_users *users, uint32_t mark,
                             char *err, size_t errlen) {
  const char *fam = family_name(family);
  int r = rules_remove_others(c, family, S5_ROUTE_UID_PREF, NULL, 0);
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

/* The rules that keep the main table first, at S5_ROUTE_LOCAL_PREF:
 * "iif DEV lookup main" (what s5tund writes into the device for a client
 * that is not this host, a router's LAN client, goes back out the way the
 * main table says, not into the tunnel again), and with exclude-local
 * "lookup main suppress_prefixlength 0" (every route of the main table
 * but the default ones: the connected networks, and any added later). */
static int install_local_rules(struct nl_conn *c, int family, const struct s5_route_spec *spec, char *err,
                               size_t errlen) {
  struct rule want[2] = {
    {.table = RT_TABLE_MAIN, .pref = S5_ROUTE_LOCAL_PREF, .mark = -1},
    {.table = RT_TABLE_MAIN, .pref = S5_ROUTE_LOCAL_PREF, .mark = -1, .has_suppress = 1}};
  unsigned n = spec->exclude_local ? 2 : 1;
  snprintf(want[0].iif, sizeof want[0].iif, "%s", spec->name);
  for (unsigned i = 0; i < n; i++) {
    int r = rule_request(c, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, family, &want[i]);
    if (r < 0 && r != -EEXIST) /* EEXIST: an earlier run's, the same: ours now */
      return s5_nl_fail(c, r, err, errlen,
                        s5_nl_what(err, errlen, "auto-route: %s rule '%s lookup main'", family_name(family),
                                   i == 0 ? "iif DEV" : "suppress_prefixlength 0"));
  }
  int r = rules_remove_others(c, family, S5_ROUTE_LOCAL_PREF, want, n);
  if (r < 0)
    return s5_nl_fail(c, r, err, errlen,
                      s5_nl_what(err, errlen, "auto-route: removing stale %s rules of priority %u",
                                 family_name(family), S5_ROUTE_LOCAL_PREF));
  return 0;
}

static int install_family(struct nl_conn *c, int family, int ifindex, const struct s5_route_spec *spec,
                          char *err, size_t errlen) {
  const char *fam = family_name(family);
  int include = spec->users.include && spec->users.n > 0;
  int r = s5_route_table_set(c, family, ifindex, spec, err, errlen);
  if (r < 0) return r;
  if ((r = install_local_rules(c, family, spec, err, errlen)) < 0) return r;
  if ((r = install_uid_rules(c, family, &spec->users, spec->mark, err, errlen)) < 0) return r;
  struct rule all = rule_main(spec->mark);
  r = include ? 0 : rule_request(c, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, family, &all);
  if (r < 0 && r != -EEXIST) /* EEXIST: an earlier run's, the same: ours now */
    return s5_nl_fail(c, r, err, errlen,
                      s5_nl_what(err, errlen, "auto-route: %s rule 'not fwmark 0x%x lookup %u'", fam,
                                 spec->mark, S5_ROUTE_TABLE));
  if ((r = rules_remove_others(c, family, S5_ROUTE_PREF, &all, include ? 0 : 1)) < 0)
    return s5_nl_fail(
      c, r, err, errlen,
      s5_nl_what(err, errlen, "auto-route: removing stale %s rules of priority %u", fam, S5_ROUTE_PREF));
  return 0;
}

/* The device's index and a netlink conversation, for install and update.
 * Returns the ifindex, or -errno with err (nothing left open). */
static int route_begin(const struct s5_route_spec *spec, struct nl_conn *c, char *err, size_t errlen) {
  int ifindex = (int)if_nametoindex(spec->name);
  if (ifindex == 0)
    return s5_nl_fail(NULL, -errno, err, errlen,
                      s5_nl_what(err, errlen, "auto-route: device %s", spec->name));
  int r = s5_nl_open(c);
  if (r < 0) {
    s5_nl_close(c);
    return s5_nl_fail(NULL, r, err, errlen, s5_nl_what(err, errlen, "auto-route: rtnetlink"));
  }
  return ifindex;
}

int s5_route_install(const struct s5_route_spec *spec, char *err, size_t errlen) {
  struct nl_conn c;
  int ifindex = route_begin(spec, &c, err, errlen), r;
  if (ifindex < 0) return ifindex;
  /* Connections are marked before the rules can take their replies. */
  r = s5_nft_install(spec, err, errlen);
  for (size_t i = 0; r >= 0 && i < sizeof families / sizeof *families; i++)
    r = install_family(&c, families[i], ifindex, spec, err, errlen);
  if (r < 0) remove_all(&c);
  s5_nl_close(&c);
  return r < 0 ? r : 0;
}

int s5_route_update(const struct s5_route_spec *spec, char *err, size_t errlen) {
  struct nl_conn c;
  int ifindex = route_begin(spec, &c, err, errlen), r = 0;
  if (ifindex < 0) return ifindex;
  for (size_t i = 0; r >= 0 && i < sizeof families / sizeof *families; i++)
    r = s5_route_table_set(&c, families[i], ifindex, spec, err, errlen);
  s5_nl_close(&c);
  return r < 0 ? r : 0;
}
