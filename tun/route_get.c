/* SPDX-License-Identifier: MIT */
/* RTM_GETROUTE: see route_get.h. */
#include "tun/route_get.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>

#include "tun/netlink.h"
#include "ini/sockaddr.h"

static void oif_seen(const struct nlmsghdr *h, void *arg) {
  const struct rtmsg *rtm = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof *rtm)) return;
  int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *rtm));
  for (const struct rtattr *a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len))
    if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(uint32_t))
      memcpy(arg, RTA_DATA(a), sizeof(uint32_t));
}

int s5_route_get_oif(const struct sockaddr *dst, const struct sockaddr *src, uint32_t mark) {
  if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6) return -EAFNOSUPPORT;
  size_t alen;
  const void *addr = s5_sockaddr_raw((const struct sockaddr_storage *)dst, &alen);
  struct rtmsg rtm = {.rtm_family = (uint8_t)dst->sa_family, .rtm_dst_len = (uint8_t)(alen * 8)};
  struct nl_req r;
  s5_nl_init(&r, RTM_GETROUTE, 0, &rtm, sizeof rtm);
  ((struct rtmsg *)NLMSG_DATA(&r.u.h))->rtm_dst_len = (uint8_t)(alen * 8);
  s5_nl_put_attr(&r, RTA_DST, addr, alen);
  if (src != NULL && src->sa_family == dst->sa_family) {
    size_t slen;
    const void *saddr = s5_sockaddr_raw((const struct sockaddr_storage *)src, &slen);
    ((struct rtmsg *)NLMSG_DATA(&r.u.h))->rtm_src_len = (uint8_t)(slen * 8);
    s5_nl_put_attr(&r, RTA_SRC, saddr, slen);
  }
  if (mark != 0) s5_nl_put_attr(&r, RTA_MARK, &mark, sizeof mark);
  struct nl_conn c;
  uint32_t oif = 0;
  int e = s5_nl_open(&c);
  if (e == 0) e = s5_nl_query(&c, &r, oif_seen, &oif);
  s5_nl_close(&c);
  if (e < 0) return e;
  return oif != 0 ? (int)oif : -ENOENT;
}
