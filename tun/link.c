/* SPDX-License-Identifier: MIT */
/* Configuring the TUN link with rtnetlink: MTU, addresses, up, and
 * reading what a device of our name is before we touch it.
 *
 * rtnetlink rather than ioctl(SIOCSIF*) because it is the only interface
 * that sets IPv6 addresses with flags (IFA_F_NODAD), and rather than
 * running ip(8) so that s5tund depends on no external program and gets the
 * kernel's errno (and its extended-ack text) back directly. Every request
 * asks for an ack and is waited for, so each step's failure is reported as
 * that step's failure. */
#include "tun/tun.h"
#include "ini/config.h"
#include "tun/netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- link steps ---------------------------------------------------------- */

static int link_set_mtu(struct nl_conn *c, int ifindex, unsigned mtu) {
  struct ifinfomsg ifi;
  struct nl_req r;
  uint32_t v = mtu;
  int err;

  memset(&ifi, 0, sizeof ifi);
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  s5_nl_init(&r, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  err = s5_nl_put_attr(&r, IFLA_MTU, &v, sizeof v);
  if (err < 0) return err;
  return s5_nl_talk(c, &r);
}

static int link_set_up(struct nl_conn *c, int ifindex) {
  struct ifinfomsg ifi;
  struct nl_req r;

  memset(&ifi, 0, sizeof ifi);
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  s5_nl_init(&r, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  return s5_nl_talk(c, &r);
}

static size_t prefix_addr_len(const struct s5_prefix *p) {
  if (p->family == AF_INET) return 4;
  if (p->family == AF_INET6) return 16;
  return 0;
}

/* NLM_F_REPLACE makes adding an address the device already has a success,
 * so a persistent device can be set up again after a restart. */
static int link_add_addr(struct nl_conn *c, int ifindex, const struct s5_prefix *p) {
  size_t alen = prefix_addr_len(p);
  struct ifaddrmsg ifa;
  struct nl_req r;
  int err;

  if (alen == 0) return -EAFNOSUPPORT;
  if (p->len > alen * 8) return -EINVAL;
  memset(&ifa, 0, sizeof ifa);
  ifa.ifa_family = (unsigned char)p->family;
  ifa.ifa_prefixlen = (unsigned char)p->len;
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_index = (unsigned)ifindex;
  /* Duplicate address detection would keep the address "tentative" (not
   * usable as a source) for a second or more; on a TUN link we own there
   * is nobody to collide with. */
  if (p->family == AF_INET6) ifa.ifa_flags = IFA_F_NODAD;
  s5_nl_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &ifa, sizeof ifa);
  /* Local and "peer" equal, as ip(8) does: on a point-to-point link a
   * different IFA_ADDRESS would be taken as the peer's address. */
  err = s5_nl_put_attr(&r, IFA_LOCAL, p->addr, alen);
  if (err == 0) err = s5_nl_put_attr(&r, IFA_ADDRESS, p->addr, alen);
  if (err < 0) return err;
  return s5_nl_talk(c, &r);
}

/* ---- public -------------------------------------------------------------- */

static int setup_addr(struct nl_conn *c, const char *name, int ifindex, const struct s5_prefix *p, char *err,
                      size_t errlen) {
  char text[INET6_ADDRSTRLEN];
  size_t used;
  int r;

  if (p == NULL || p->family == 0) return 0;
  if (prefix_addr_len(p) == 0 || inet_ntop(p->family, p->addr, text, sizeof text) == NULL)
    snprintf(text, sizeof text, "(family %d)", p->family);
  used = s5_nl_what(err, errlen, "adding address %s/%u to %s", text, p->len, name);
  r = link_add_addr(c, ifindex, p);
  return r < 0 ? s5_nl_fail(c, r, err, errlen, used) : 0;
}

static int setup_steps(struct nl_conn *c, const char *name, int ifindex, unsigned mtu,
                       const struct s5_prefix *ipv4, const struct s5_prefix *ipv6, char *err, size_t errlen) {
  size_t used;
  int r;

  /* MTU first: below 1280 the kernel disables IPv6 on the link, and the
   * IPv6 address could not be added. */
  if (mtu != 0) {
    used = s5_nl_what(err, errlen, "setting MTU %u on %s", mtu, name);
    r = link_set_mtu(c, ifindex, mtu);
    if (r < 0) return s5_nl_fail(c, r, err, errlen, used);
  }
  r = setup_addr(c, name, ifindex, ipv4, err, errlen);
  if (r < 0) return r;
  r = setup_addr(c, name, ifindex, ipv6, err, errlen);
  if (r < 0) return r;
  /* Up last, so that routes through the link appear only once it is
   * fully configured. */
  used = s5_nl_what(err, errlen, "bringing %s up", name);
  r = link_set_up(c, ifindex);
  if (r < 0) return s5_nl_fail(c, r, err, errlen, used);
  return 0;
}

int s5_tun_link_setup(const char *name, unsigned mtu, const struct s5_prefix *ipv4,
                      const struct s5_prefix *ipv6, char *err, size_t errlen) {
  struct nl_conn c;
  unsigned ifindex;
  size_t used;
  int r;

  r = s5_tun_name_check(name);
  if (r < 0) {
    used = s5_nl_what(err, errlen, "bad interface name \"%s\"", name != NULL ? name : "(null)");
    return s5_nl_fail(NULL, r, err, errlen, used);
  }
  ifindex = if_nametoindex(name);
  if (ifindex == 0) {
    r = -errno;
    used = s5_nl_what(err, errlen, "finding %s", name);
    return s5_nl_fail(NULL, r, err, errlen, used);
  }
  r = s5_nl_open(&c);
  if (r < 0) {
    s5_nl_close(&c);
    used = s5_nl_what(err, errlen, "opening rtnetlink socket");
    return s5_nl_fail(NULL, r, err, errlen, used);
  }
  r = setup_steps(&c, name, (int)ifindex, mtu, ipv4, ipv6, err, errlen);
  s5_nl_close(&c);
  if (r == 0 && err != NULL && errlen > 0) err[0] = '\0';
  return r;
}

/* ---- inside [tun] netns ------------------------------------------------- */

/* A default route via the device in the main table of its namespace. */
static int route_default(struct nl_conn *c, int family, int ifindex) {
  struct rtmsg rtm = {
    .rtm_family = (uint8_t)family,
    .rtm_table = RT_TABLE_MAIN,
    .rtm_protocol = RTPROT_STATIC,
    .rtm_scope = RT_SCOPE_LINK,
    .rtm_type = RTN_UNICAST,
  };
  struct nl_req r;
  uint32_t oif = (uint32_t)ifindex;
  s5_nl_init(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &rtm, sizeof rtm);
  s5_nl_put_attr(&r, RTA_OIF, &oif, sizeof oif);
  return s5_nl_talk(c, &r);
}

int s5_tun_netns_setup(const char *name, int ipv4, int ipv6, char *err, size_t errlen) {
  struct nl_conn c;
  unsigned lo = if_nametoindex("lo"), ifindex = if_nametoindex(name);
  if (lo == 0 || ifindex == 0) {
    int r = -errno;
    return s5_nl_fail(NULL, r, err, errlen, s5_nl_what(err, errlen, "finding %s", lo == 0 ? "lo" : name));
  }
  int r = s5_nl_open(&c);
  size_t used = s5_nl_what(err, errlen, "bringing lo up");
  if (r == 0) r = link_set_up(&c, (int)lo);
  if (r == 0 && ipv4) {
    used = s5_nl_what(err, errlen, "IPv4 default route via %s", name);
    r = route_default(&c, AF_INET, (int)ifindex);
  }
  if (r == 0 && ipv6) {
    used = s5_nl_what(err, errlen, "IPv6 default route via %s", name);
    r = route_default(&c, AF_INET6, (int)ifindex);
  }
  if (r < 0) s5_nl_fail(&c, r, err, errlen, used);
  s5_nl_close(&c);
  return r;
}

/* ---- what the device is ------------------------------------------------- */

static const struct rtattr *attr_find(const struct rtattr *rta, int len, unsigned short type) {
  for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
    if ((rta->rta_type & NLA_TYPE_MASK) == type) /* nests may carry NLA_F_NESTED */
      return rta;
  return NULL;
}

static unsigned attr_uint(const struct rtattr *rta) {
  if (rta == NULL) return 0;
  if (RTA_PAYLOAD(rta) >= sizeof(uint32_t)) return *(const uint32_t *)RTA_DATA(rta);
  if (RTA_PAYLOAD(rta) >= 1) return *(const uint8_t *)RTA_DATA(rta);
  return 0;
}

/* IFLA_LINKINFO { IFLA_INFO_KIND "tun", IFLA_INFO_DATA { IFLA_TUN_* } }:
 * the tun driver reports its type and flags there (Linux >= 4.20; older
 * kernels give the kind only), and, for a multi-queue device, its queues. */
static void state_from_info(const struct rtattr *info, struct s5_tun_state *st) {
  const struct rtattr *kind, *data;
  int len = (int)RTA_PAYLOAD(info);

  kind = attr_find(RTA_DATA(info), len, IFLA_INFO_KIND);
  if (kind == NULL) return;
  snprintf(st->kind, sizeof st->kind, "%.*s", (int)RTA_PAYLOAD(kind), (const char *)RTA_DATA(kind));
  if (strcmp(st->kind, "tun") != 0) return;
  data = attr_find(RTA_DATA(info), len, IFLA_INFO_DATA);
  if (data == NULL) return;
  len = (int)RTA_PAYLOAD(data);
  const struct rtattr *type = attr_find(RTA_DATA(data), len, IFLA_TUN_TYPE);
  const struct rtattr *nq = attr_find(RTA_DATA(data), len, IFLA_TUN_NUM_QUEUES);
  if (type == NULL) return;
  st->known = 1;
  st->tap = attr_uint(type) == IFF_TAP;
  st->multi_queue = attr_uint(attr_find(RTA_DATA(data), len, IFLA_TUN_MULTI_QUEUE)) != 0;
  st->persist = attr_uint(attr_find(RTA_DATA(data), len, IFLA_TUN_PERSIST)) != 0;
  /* Reported for multi-queue devices only. A detached queue (TUNSETQUEUE)
   * is still open in some process. */
  st->queues = attr_uint(nq) + attr_uint(attr_find(RTA_DATA(data), len, IFLA_TUN_NUM_DISABLED_QUEUES));
}

static void state_reply(const struct nlmsghdr *h, void *arg) {
  struct s5_tun_state *st = arg;
  const struct ifinfomsg *ifi = NLMSG_DATA(h);
  const struct rtattr *info;

  if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof *ifi)) return;
  st->exists = 1;
  st->ifindex = ifi->ifi_index;
  info = attr_find(IFLA_RTA(ifi), (int)IFLA_PAYLOAD(h), IFLA_LINKINFO);
  if (info != NULL) state_from_info(info, st);
}

int s5_tun_link_state(const char *name, struct s5_tun_state *st) {
  struct ifinfomsg ifi;
  struct nl_conn c;
  struct nl_req r;
  int err;

  memset(st, 0, sizeof *st);
  err = s5_tun_name_check(name);
  if (err < 0) return err;
  memset(&ifi, 0, sizeof ifi);
  ifi.ifi_family = AF_UNSPEC;
  s5_nl_init(&r, RTM_GETLINK, 0, &ifi, sizeof ifi);
  err = s5_nl_put_attr(&r, IFLA_IFNAME, name, strlen(name) + 1);
  if (err < 0) return err;
  err = s5_nl_open(&c);
  if (err == 0) err = s5_nl_query(&c, &r, state_reply, st);
  s5_nl_close(&c);
  /* No such device is an answer, not a failure. */
  if (err == -ENODEV) err = 0;
  return err;
}
