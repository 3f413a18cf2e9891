/* auto-route over rtnetlink: see route.h. */
#include "route.h"
#include "netlink.h"

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>

static const int families[] = {AF_INET, AF_INET6};

static int rule_request(struct nl_conn *c, uint16_t type, uint16_t flags, int family,
                        uint32_t mark) {
  struct fib_rule_hdr frh = {.family = (uint8_t)family, .action = FR_ACT_TO_TBL};
  struct nl_req r;
  uint32_t table = S5_ROUTE_TABLE, pref = S5_ROUTE_PREF, mask = 0xffffffffu;
  if (type == RTM_NEWRULE) frh.flags = FIB_RULE_INVERT;   /* "not fwmark" */
  s5_nl_init(&r, type, flags, &frh, sizeof frh);
  s5_nl_put_attr(&r, FRA_TABLE, &table, sizeof table);
  s5_nl_put_attr(&r, FRA_PRIORITY, &pref, sizeof pref);
  if (type == RTM_NEWRULE) {
    s5_nl_put_attr(&r, FRA_FWMARK, &mark, sizeof mark);
    s5_nl_put_attr(&r, FRA_FWMASK, &mask, sizeof mask);
  }
  return s5_nl_talk(c, &r);
}

static int route_request(struct nl_conn *c, int family, int ifindex) {
  struct rtmsg rtm = {
      .rtm_family = (uint8_t)family,
      .rtm_table = RT_TABLE_UNSPEC,   /* the real table id is in RTA_TABLE */
      .rtm_protocol = RTPROT_STATIC,
      .rtm_scope = RT_SCOPE_LINK,
      .rtm_type = RTN_UNICAST,
  };
  struct nl_req r;
  uint32_t table = S5_ROUTE_TABLE, oif = (uint32_t)ifindex;
  s5_nl_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &rtm, sizeof rtm);
  s5_nl_put_attr(&r, RTA_TABLE, &table, sizeof table);
  s5_nl_put_attr(&r, RTA_OIF, &oif, sizeof oif);
  return s5_nl_talk(c, &r);
}

/* Deletes every rule with our table and priority, in both families. */
static int remove_rules(struct nl_conn *c) {
  int removed = 0;
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    for (int n = 0; n < 64; n++) {   /* bounded: each round removes one */
      int r = rule_request(c, RTM_DELRULE, 0, families[i], 0);
      if (r == -ENOENT || r == -EAFNOSUPPORT) break;
      if (r < 0) return r;
      removed++;
    }
  }
  return removed;
}

int s5_route_remove(void) {
  struct nl_conn c;
  int r = s5_nl_open(&c);
  if (r == 0) r = remove_rules(&c);
  s5_nl_close(&c);
  return r;
}

int s5_route_install(const char *name, uint32_t mark, char *err, size_t errlen) {
  struct nl_conn c;
  int ifindex = (int)if_nametoindex(name);
  if (ifindex == 0) return s5_nl_fail(NULL, -errno, err, errlen, s5_nl_what(err, errlen, "auto-route: device %s", name));
  int r = s5_nl_open(&c);
  if (r < 0) return s5_nl_fail(NULL, r, err, errlen, s5_nl_what(err, errlen, "auto-route: rtnetlink"));
  r = remove_rules(&c);
  for (size_t i = 0; r >= 0 && i < sizeof families / sizeof *families; i++) {
    const char *fam = families[i] == AF_INET ? "IPv4" : "IPv6";
    r = route_request(&c, families[i], ifindex);
    if (r < 0) {
      r = s5_nl_fail(&c, r, err, errlen,
                     s5_nl_what(err, errlen, "auto-route: %s default route via %s in table %u", fam,
                                name, S5_ROUTE_TABLE));
      break;
    }
    r = rule_request(&c, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, families[i], mark);
    if (r < 0)
      r = s5_nl_fail(&c, r, err, errlen,
                     s5_nl_what(err, errlen, "auto-route: %s rule 'not fwmark 0x%x lookup %u'", fam,
                                mark, S5_ROUTE_TABLE));
  }
  if (r < 0) remove_rules(&c);
  s5_nl_close(&c);
  return r < 0 ? r : 0;
}
