/* Configuring the TUN link with rtnetlink: MTU, addresses, up, delete.
 *
 * rtnetlink rather than ioctl(SIOCSIF*) because it is the only interface
 * that sets IPv6 addresses with flags (IFA_F_NODAD), and rather than
 * running ip(8) so that s5tund depends on no external program and gets the
 * kernel's errno (and its extended-ack text) back directly. Every request
 * asks for an ack and is waited for, so each step's failure is reported as
 * that step's failure. */
#include "tun.h"
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Our requests are a header, a fixed part and at most two small attributes;
 * replies are acks, which with NETLINK_CAP_ACK carry no copy of the request
 * but may carry the kernel's error text. */
#define NL_REQ_MAX 256
#define NL_REPLY_MAX 8192

struct nl_req {
  union {
    struct nlmsghdr h;
    char buf[NL_REQ_MAX];
  } u;
};

/* One rtnetlink conversation: the socket, the sequence number of the last
 * request, and the kernel's extended-ack text for the last error, if any. */
struct nl_conn {
  int fd;
  uint32_t seq;
  char why[128];
};

/* ---- netlink plumbing --------------------------------------------------- */

static int nl_open(struct nl_conn *c) {
  int one = 1;

  c->seq = 0;
  c->why[0] = '\0';
  c->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (c->fd < 0)
    return -errno;
  /* Extended acks give a reason ("MTU greater than device maximum") on
   * kernels >= 4.12; capped acks keep our request out of the reply. Both
   * are only nice to have, so a kernel that lacks them is not an error. */
  if (setsockopt(c->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)) < 0 &&
      errno != ENOPROTOOPT)
    return -errno;
  if (setsockopt(c->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one)) < 0 &&
      errno != ENOPROTOOPT)
    return -errno;
  return 0;
}

static void nl_close(struct nl_conn *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
}

/* Starts a request of `type` whose fixed part is `fixed` (fixedlen bytes). */
static void nl_init(struct nl_req *r, uint16_t type, uint16_t flags, const void *fixed,
                    size_t fixedlen) {
  memset(r, 0, sizeof(*r));
  r->u.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(fixedlen);
  r->u.h.nlmsg_type = type;
  r->u.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  memcpy(NLMSG_DATA(&r->u.h), fixed, fixedlen);
}

static int nl_put_attr(struct nl_req *r, uint16_t type, const void *data, size_t len) {
  size_t off = NLMSG_ALIGN(r->u.h.nlmsg_len);
  struct rtattr *rta;

  if (off + RTA_SPACE(len) > sizeof(r->u.buf))
    return -EMSGSIZE;
  rta = (struct rtattr *)(r->u.buf + off);
  rta->rta_type = type;
  rta->rta_len = (unsigned short)RTA_LENGTH(len);
  memcpy(RTA_DATA(rta), data, len);
  r->u.h.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
  return 0;
}

static int nl_send(struct nl_conn *c, struct nl_req *r) {
  struct sockaddr_nl kernel;
  ssize_t n;

  memset(&kernel, 0, sizeof(kernel));
  kernel.nl_family = AF_NETLINK;
  r->u.h.nlmsg_seq = ++c->seq;
  do
    n = sendto(c->fd, r->u.buf, r->u.h.nlmsg_len, 0, (struct sockaddr *)&kernel,
               sizeof(kernel));
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  if ((size_t)n != r->u.h.nlmsg_len)
    return -EIO;
  return 0;
}

/* Copies NLMSGERR_ATTR_MSG out of the TLVs that follow an error ack.
 * Works on offsets from the message start so that a bogus length can only
 * make us give up, never point outside the message. */
static void nl_ack_text(struct nl_conn *c, const struct nlmsghdr *h) {
  const struct nlmsgerr *e = NLMSG_DATA(h);
  const char *base = (const char *)h;
  size_t end = h->nlmsg_len;
  size_t off = NLMSG_LENGTH(sizeof(*e));
  const struct nlattr *a;
  size_t len;

  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
    return;
  /* Without NETLINK_CAP_ACK the payload of our request sits in between. */
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
    if (e->msg.nlmsg_len < sizeof(e->msg) || e->msg.nlmsg_len > end)
      return;
    off += NLMSG_ALIGN(e->msg.nlmsg_len - sizeof(e->msg));
  }
  while (off + NLA_HDRLEN <= end) {
    a = (const struct nlattr *)(base + off);
    if (a->nla_len < NLA_HDRLEN || a->nla_len > end - off)
      return;
    if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      len = strnlen(base + off + NLA_HDRLEN, a->nla_len - NLA_HDRLEN);
      if (len >= sizeof(c->why))
        len = sizeof(c->why) - 1;
      memcpy(c->why, base + off + NLA_HDRLEN, len);
      c->why[len] = '\0';
      return;
    }
    off += NLA_ALIGN(a->nla_len);
  }
}

/* Looks for the ack to our last request among the messages in buf.
 * Returns 1 when none is there, else 0 or -errno from the ack. */
static int nl_find_ack(struct nl_conn *c, const char *buf, size_t len) {
  const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
  const struct nlmsgerr *e;
  /* Signed on purpose: NLMSG_NEXT subtracts the aligned length, which can
   * exceed what is left for an unpadded last message; an int goes negative
   * and ends the loop where a size_t would wrap. */
  int left = (int)len;

  for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
    /* Anything else is a late answer to an earlier request: skip it. */
    if (h->nlmsg_seq != c->seq || h->nlmsg_type != NLMSG_ERROR)
      continue;
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
      return -EBADMSG;
    e = NLMSG_DATA(h);
    if (e->error == 0)
      return 0;
    nl_ack_text(c, h);
    /* error is a negative errno; guard against anything else. */
    return e->error < 0 ? e->error : -EPROTO;
  }
  return 1;
}

static int nl_wait_ack(struct nl_conn *c) {
  /* Aligned for struct nlmsghdr. */
  union {
    struct nlmsghdr h;
    char buf[NL_REPLY_MAX];
  } reply;
  struct sockaddr_nl from;
  struct iovec iov = {reply.buf, sizeof(reply.buf)};
  struct msghdr msg;
  ssize_t n;
  int r;

  for (;;) {
    memset(&msg, 0, sizeof(msg));
    msg.msg_name = &from;
    msg.msg_namelen = sizeof(from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    n = recvmsg(c->fd, &msg, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (msg.msg_flags & MSG_TRUNC)
      return -EMSGSIZE;
    /* Only the kernel (port 0) speaks for the kernel. */
    if (msg.msg_namelen != sizeof(from) || from.nl_pid != 0)
      continue;
    r = nl_find_ack(c, reply.buf, (size_t)n);
    if (r <= 0)
      return r;
  }
}

/* Sends one request and waits for its ack. Returns 0 or -errno. */
static int nl_talk(struct nl_conn *c, struct nl_req *r) {
  int err;

  c->why[0] = '\0';
  err = nl_send(c, r);
  if (err < 0)
    return err;
  return nl_wait_ack(c);
}

/* ---- error text --------------------------------------------------------- */

/* "<what>: <strerror>[ (<kernel text>)]", with what already in err. */
static int fail(struct nl_conn *c, int err, char *buf, size_t buflen, size_t used) {
  const char *why = c != NULL ? c->why : "";

  if (buf == NULL || buflen == 0 || used >= buflen)
    return err;
  if (why[0] != '\0')
    snprintf(buf + used, buflen - used, ": %s (%s)", strerror(-err), why);
  else
    snprintf(buf + used, buflen - used, ": %s", strerror(-err));
  return err;
}

/* Writes the start of an error message and returns its length (clamped). */
static size_t what(char *buf, size_t buflen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static size_t what(char *buf, size_t buflen, const char *fmt, ...) {
  va_list ap;
  int n;

  if (buf == NULL || buflen == 0)
    return 0;
  va_start(ap, fmt);
  n = vsnprintf(buf, buflen, fmt, ap);
  va_end(ap);
  if (n < 0) {
    buf[0] = '\0';
    return 0;
  }
  return (size_t)n < buflen ? (size_t)n : buflen - 1;
}

/* ---- link steps ---------------------------------------------------------- */

static int link_set_mtu(struct nl_conn *c, int ifindex, unsigned mtu) {
  struct ifinfomsg ifi;
  struct nl_req r;
  uint32_t v = mtu;
  int err;

  memset(&ifi, 0, sizeof(ifi));
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  nl_init(&r, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
  err = nl_put_attr(&r, IFLA_MTU, &v, sizeof(v));
  if (err < 0)
    return err;
  return nl_talk(c, &r);
}

static int link_set_up(struct nl_conn *c, int ifindex) {
  struct ifinfomsg ifi;
  struct nl_req r;

  memset(&ifi, 0, sizeof(ifi));
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  nl_init(&r, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
  return nl_talk(c, &r);
}

static size_t prefix_addr_len(const struct s5_prefix *p) {
  if (p->family == AF_INET)
    return 4;
  if (p->family == AF_INET6)
    return 16;
  return 0;
}

/* NLM_F_REPLACE makes adding an address the device already has a success,
 * so a persistent device can be set up again after a restart. */
static int link_add_addr(struct nl_conn *c, int ifindex, const struct s5_prefix *p) {
  size_t alen = prefix_addr_len(p);
  struct ifaddrmsg ifa;
  struct nl_req r;
  int err;

  if (alen == 0)
    return -EAFNOSUPPORT;
  if (p->len > alen * 8)
    return -EINVAL;
  memset(&ifa, 0, sizeof(ifa));
  ifa.ifa_family = (unsigned char)p->family;
  ifa.ifa_prefixlen = (unsigned char)p->len;
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_index = (unsigned)ifindex;
  /* Duplicate address detection would keep the address "tentative" (not
   * usable as a source) for a second or more; on a TUN link we own there
   * is nobody to collide with. */
  if (p->family == AF_INET6)
    ifa.ifa_flags = IFA_F_NODAD;
  nl_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &ifa, sizeof(ifa));
  /* Local and "peer" equal, as ip(8) does: on a point-to-point link a
   * different IFA_ADDRESS would be taken as the peer's address. */
  err = nl_put_attr(&r, IFA_LOCAL, p->addr, alen);
  if (err == 0)
    err = nl_put_attr(&r, IFA_ADDRESS, p->addr, alen);
  if (err < 0)
    return err;
  return nl_talk(c, &r);
}

/* ---- public -------------------------------------------------------------- */

static int check_name(const char *name) {
  size_t n;

  if (name == NULL)
    return -EINVAL;
  n = strnlen(name, IFNAMSIZ);
  if (n == 0)
    return -EINVAL;
  if (n >= IFNAMSIZ)
    return -ENAMETOOLONG;
  return 0;
}

static int setup_addr(struct nl_conn *c, const char *name, int ifindex,
                      const struct s5_prefix *p, char *err, size_t errlen) {
  char text[INET6_ADDRSTRLEN];
  size_t used;
  int r;

  if (p == NULL || p->family == 0)
    return 0;
  if (prefix_addr_len(p) == 0 || inet_ntop(p->family, p->addr, text, sizeof(text)) == NULL)
    snprintf(text, sizeof(text), "(family %d)", p->family);
  used = what(err, errlen, "adding address %s/%u to %s", text, p->len, name);
  r = link_add_addr(c, ifindex, p);
  return r < 0 ? fail(c, r, err, errlen, used) : 0;
}

static int setup_steps(struct nl_conn *c, const char *name, int ifindex, unsigned mtu,
                       const struct s5_prefix *ipv4, const struct s5_prefix *ipv6,
                       char *err, size_t errlen) {
  size_t used;
  int r;

  /* MTU first: below 1280 the kernel disables IPv6 on the link, and the
   * IPv6 address could not be added. */
  if (mtu != 0) {
    used = what(err, errlen, "setting MTU %u on %s", mtu, name);
    r = link_set_mtu(c, ifindex, mtu);
    if (r < 0)
      return fail(c, r, err, errlen, used);
  }
  r = setup_addr(c, name, ifindex, ipv4, err, errlen);
  if (r < 0)
    return r;
  r = setup_addr(c, name, ifindex, ipv6, err, errlen);
  if (r < 0)
    return r;
  /* Up last, so that routes through the link appear only once it is
   * fully configured. */
  used = what(err, errlen, "bringing %s up", name);
  r = link_set_up(c, ifindex);
  if (r < 0)
    return fail(c, r, err, errlen, used);
  return 0;
}

int s5_tun_link_setup(const char *name, unsigned mtu, const struct s5_prefix *ipv4,
                      const struct s5_prefix *ipv6, char *err, size_t errlen) {
  struct nl_conn c;
  unsigned ifindex;
  size_t used;
  int r;

  r = check_name(name);
  if (r < 0) {
    used = what(err, errlen, "bad interface name \"%s\"", name != NULL ? name : "(null)");
    return fail(NULL, r, err, errlen, used);
  }
  ifindex = if_nametoindex(name);
  if (ifindex == 0) {
    r = -errno;
    used = what(err, errlen, "finding %s", name);
    return fail(NULL, r, err, errlen, used);
  }
  r = nl_open(&c);
  if (r < 0) {
    nl_close(&c);
    used = what(err, errlen, "opening rtnetlink socket");
    return fail(NULL, r, err, errlen, used);
  }
  r = setup_steps(&c, name, (int)ifindex, mtu, ipv4, ipv6, err, errlen);
  nl_close(&c);
  if (r == 0 && err != NULL && errlen > 0)
    err[0] = '\0';
  return r;
}

int s5_tun_link_delete(const char *name) {
  struct ifinfomsg ifi;
  struct nl_conn c;
  struct nl_req r;
  int err;

  err = check_name(name);
  if (err < 0)
    return err;
  /* By name, so there is no window between looking up an index and using
   * it in which the device could be replaced. */
  memset(&ifi, 0, sizeof(ifi));
  ifi.ifi_family = AF_UNSPEC;
  nl_init(&r, RTM_DELLINK, 0, &ifi, sizeof(ifi));
  err = nl_put_attr(&r, IFLA_IFNAME, name, strlen(name) + 1);
  if (err < 0)
    return err;
  err = nl_open(&c);
  if (err == 0)
    err = nl_talk(&c, &r);
  nl_close(&c);
  return err;
}
