/* SPDX-License-Identifier: MIT */
/* Unit test for tun/: opens a multi-queue TUN device, configures it with
 * rtnetlink and moves packets both ways, reads a device's state (queues,
 * persist, kind) and claims a name (owner.h), inside a private network namespace
 * (unshare(CLONE_NEWNET)) that disappears with the process, so nothing on
 * the host is touched and nothing needs cleaning up.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for unshare) and /dev/net/tun;
 * without them it prints why and exits 77 (ctest SKIP_RETURN_CODE).
 * Otherwise prints one line per failed check, then "N passed, M failed",
 * and exits 1 when anything failed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare() */
#endif
#include "tun/tun.h"
#include "ini/config.h"
#include "tun/netlink.h"
#include "tun/owner.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define SKIP 77
#define DEV "s5tun0"
#define NQUEUES 4

/* What s5tund itself never does, for the checks only: re-attaching a
 * detached queue, and deleting the device with RTM_DELLINK. Both return 0
 * or -errno (-ENODEV when there is no such device). */
static int queue_attach(int fd) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_ATTACH_QUEUE;
  return ioctl(fd, TUNSETQUEUE, &ifr) < 0 ? -errno : 0;
}

static int link_delete(const char *name) {
  struct ifinfomsg ifi;
  struct nl_conn c;
  struct nl_req r;
  int err = s5_tun_name_check(name);
  if (err < 0) return err;
  memset(&ifi, 0, sizeof ifi);
  ifi.ifi_family = AF_UNSPEC;
  s5_nl_init(&r, RTM_DELLINK, 0, &ifi, sizeof ifi);
  err = s5_nl_put_attr(&r, IFLA_IFNAME, name, strlen(name) + 1);
  if (err < 0) return err;
  err = s5_nl_open(&c);
  if (err == 0) err = s5_nl_talk(&c, &r);
  s5_nl_close(&c);
  return err;
}
#define UDP_PORT 4242

static struct s5_prefix prefix(int family, const char *text, unsigned len) {
  struct s5_prefix p;

  memset(&p, 0, sizeof p);
  p.family = family;
  p.len = len;
  if (inet_pton(family, text, p.addr) != 1) {
    fprintf(stderr, "inet_pton %s failed\n", text);
    exit(2);
  }
  return p;
}

/* ---- interface queries through the plain ioctl interface, so the test
 * does not check netlink code with netlink code ---------------------------- */

static int ctl_socket(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

  if (s < 0) {
    perror("socket");
    exit(2);
  }
  return s;
}

static int if_get(const char *name, unsigned long req, struct ifreq *ifr) {
  int s = ctl_socket();
  int r;

  memset(ifr, 0, sizeof *ifr);
  snprintf(ifr->ifr_name, sizeof ifr->ifr_name, "%s", name);
  r = ioctl(s, req, ifr);
  if (r < 0) r = -errno;
  close(s);
  return r;
}

static int if_mtu(const char *name) {
  struct ifreq ifr;

  return if_get(name, SIOCGIFMTU, &ifr) < 0 ? -1 : ifr.ifr_mtu;
}

static int if_flags(const char *name) {
  struct ifreq ifr;

  return if_get(name, SIOCGIFFLAGS, &ifr) < 0 ? -1 : (unsigned short)ifr.ifr_flags;
}

/* Is addr (with this netmask / prefix) on the interface? */
static int if_has_addr(const char *name, int family, const char *addr, const char *mask) {
  struct ifaddrs *list, *i;
  char a[INET6_ADDRSTRLEN], m[INET6_ADDRSTRLEN];
  const void *ap, *mp;
  int found = 0;

  if (getifaddrs(&list) < 0) {
    perror("getifaddrs");
    return 0;
  }
  for (i = list; i != NULL; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, name)) continue;
    if (family == AF_INET) {
      ap = &((struct sockaddr_in *)i->ifa_addr)->sin_addr;
      mp = &((struct sockaddr_in *)i->ifa_netmask)->sin_addr;
    } else {
      ap = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
      mp = &((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
    }
    if (inet_ntop(family, ap, a, sizeof a) && inet_ntop(family, mp, m, sizeof m) && strcmp(a, addr) == 0 &&
        strcmp(m, mask) == 0)
      found = 1;
  }
  freeifaddrs(list);
  return found;
}

/* The device goes away synchronously on last close; allow a little slack
 * anyway so a slow machine does not fail the test. */
static int if_gone(const char *name) {
  struct timespec ts = {0, 10 * 1000 * 1000};
  int i;

  for (i = 0; i < 100; i++) {
    if (if_nametoindex(name) == 0) return 1;
    nanosleep(&ts, NULL);
  }
  return 0;
}

static void close_all(int *fds, int n) {
  int i;

  for (i = 0; i < n; i++)
    if (fds[i] >= 0 && close(fds[i]) < 0) perror("close");
}

/* ---- packets ------------------------------------------------------------- */

/* Reads from any queue until a packet of `version` to UDP port UDP_PORT
 * arrives (the kernel also sends IPv6 router solicitations and MLD reports
 * on its own), or 2 s pass. Returns its length, or -1. */
static int read_udp_packet(const int *fds, int n, int version, uint8_t *buf, size_t cap, int *queue) {
  struct pollfd p[NQUEUES];
  size_t ihl;
  ssize_t len;
  int i, tries;

  for (tries = 0; tries < 50; tries++) {
    for (i = 0; i < n; i++) {
      p[i].fd = fds[i];
      p[i].events = POLLIN;
      p[i].revents = 0;
    }
    if (poll(p, (nfds_t)n, 2000) <= 0) return -1;
    for (i = 0; i < n; i++) {
      if (!(p[i].revents & POLLIN)) continue;
      len = read(fds[i], buf, cap);
      if (len < 1 || buf[0] >> 4 != version) continue;
      ihl = version == 4 ? (size_t)(buf[0] & 0xF) * 4 : 40;
      if (version == 4 && (len < (ssize_t)ihl + 8 || buf[9] != IPPROTO_UDP)) continue;
      if (version == 6 && (len < 48 || buf[6] != IPPROTO_UDP)) continue;
      if (buf[ihl + 2] != UDP_PORT >> 8 || buf[ihl + 3] != (UDP_PORT & 0xFF)) continue;
      *queue = i;
      return (int)len;
    }
  }
  return -1;
}

static uint16_t ip_checksum(const uint8_t *p, size_t len) {
  uint32_t sum = 0;
  size_t i;

  for (i = 0; i + 1 < len; i += 2) sum += (uint32_t)(p[i] << 8 | p[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return (uint16_t)~sum;
}

/* Kernel -> queue: a datagram sent to an address routed via the device must
 * come out of one of the queues, unchanged. */
static void test_kernel_to_queue(const int *fds, int family, const char *dst) {
  static const char payload[] = "s5tund-test";
  struct sockaddr_storage ss;
  socklen_t sslen;
  uint8_t buf[65536];
  int s, len, queue = -1;
  size_t off;

  memset(&ss, 0, sizeof ss);
  if (family == AF_INET) {
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

    sin->sin_family = AF_INET;
    sin->sin_port = htons(UDP_PORT);
    inet_pton(AF_INET, dst, &sin->sin_addr);
    sslen = sizeof *sin;
  } else {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(UDP_PORT);
    inet_pton(AF_INET6, dst, &sin6->sin6_addr);
    sslen = sizeof *sin6;
  }
  s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHECK(s >= 0, "socket: %s", strerror(errno));
  if (s < 0) return;
  CHECK(sendto(s, payload, sizeof payload, 0, (struct sockaddr *)&ss, sslen) == (ssize_t)sizeof payload,
        "sendto %s: %s", dst, strerror(errno));
  close(s);

  len = read_udp_packet(fds, NQUEUES, family == AF_INET ? 4 : 6, buf, sizeof buf, &queue);
  CHECK(len > 0, "no UDP packet to %s on any queue", dst);
  if (len <= 0) return;
  off = family == AF_INET ? (size_t)(buf[0] & 0xF) * 4 + 8 : 48;
  CHECK((size_t)len == off + sizeof payload && memcmp(buf + off, payload, sizeof payload) == 0,
        "packet to %s: length %d, payload differs", dst, len);
  printf("# UDP to %s read from queue %d (%d bytes)\n", dst, queue, len);
}

/* Queue -> kernel: an IPv4/UDP packet written into a queue must be
 * delivered to a socket bound to the device's address. */
static void test_queue_to_kernel(int fd) {
  static const char payload[] = "from-tun";
  struct sockaddr_in sin;
  uint8_t pkt[28 + sizeof payload];
  char got[64];
  struct pollfd p;
  uint16_t sum;
  ssize_t n;
  int s;

  s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  CHECK(s >= 0, "socket: %s", strerror(errno));
  if (s < 0) return;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons(UDP_PORT);
  inet_pton(AF_INET, "198.18.0.1", &sin.sin_addr);
  CHECK(bind(s, (struct sockaddr *)&sin, sizeof sin) == 0, "bind 198.18.0.1: %s", strerror(errno));

  /* IPv4 header 198.18.0.2 -> 198.18.0.1, UDP 5353 -> UDP_PORT, no UDP
   * checksum (allowed for IPv4). */
  memset(pkt, 0, sizeof pkt);
  pkt[0] = 0x45;
  pkt[2] = sizeof pkt >> 8;
  pkt[3] = sizeof pkt & 0xFF;
  pkt[8] = 64;
  pkt[9] = IPPROTO_UDP;
  memcpy(pkt + 12, "\xc6\x12\x00\x02", 4);
  memcpy(pkt + 16, "\xc6\x12\x00\x01", 4);
  sum = ip_checksum(pkt, 20);
  pkt[10] = (uint8_t)(sum >> 8);
  pkt[11] = (uint8_t)(sum & 0xFF);
  pkt[20] = 5353 >> 8;
  pkt[21] = 5353 & 0xFF;
  pkt[22] = UDP_PORT >> 8;
  pkt[23] = UDP_PORT & 0xFF;
  pkt[24] = (8 + sizeof payload) >> 8;
  pkt[25] = (8 + sizeof payload) & 0xFF;
  memcpy(pkt + 28, payload, sizeof payload);

  n = write(fd, pkt, sizeof pkt);
  CHECK(n == (ssize_t)sizeof pkt, "write to queue: %zd (%s)", n, strerror(errno));
  p.fd = s;
  p.events = POLLIN;
  CHECK(poll(&p, 1, 2000) == 1, "no datagram from the queue reached the socket");
  n = recv(s, got, sizeof got, MSG_DONTWAIT);
  CHECK(n == (ssize_t)sizeof payload && memcmp(got, payload, sizeof payload) == 0,
        "datagram from queue: %zd bytes", n);
  close(s);
}

/* ---- tests --------------------------------------------------------------- */

static void check_queue_fd(int fd, int i) {
  struct ifreq ifr;
  int fl;

  fl = fcntl(fd, F_GETFL);
  CHECK(fl >= 0 && (fl & O_NONBLOCK), "queue %d not O_NONBLOCK", i);
  fl = fcntl(fd, F_GETFD);
  CHECK(fl >= 0 && (fl & FD_CLOEXEC), "queue %d not FD_CLOEXEC", i);
  memset(&ifr, 0, sizeof ifr);
  CHECK(ioctl(fd, TUNGETIFF, &ifr) == 0, "TUNGETIFF queue %d: %s", i, strerror(errno));
  CHECK(strcmp(ifr.ifr_name, DEV) == 0, "queue %d on \"%s\"", i, ifr.ifr_name);
  CHECK((ifr.ifr_flags & (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE)) == (IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE),
        "queue %d flags 0x%x", i, (unsigned)ifr.ifr_flags);
}

/* bind() to a tentative IPv6 address fails; with IFA_F_NODAD it works at
 * once. */
static void check_ipv6_usable(void) {
  struct sockaddr_in6 sin6;
  int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

  CHECK(s >= 0, "socket6: %s", strerror(errno));
  if (s < 0) return;
  memset(&sin6, 0, sizeof sin6);
  sin6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "fc00::1", &sin6.sin6_addr);
  CHECK(bind(s, (struct sockaddr *)&sin6, sizeof sin6) == 0,
        "bind fc00::1 right after setup: %s (tentative?)", strerror(errno));
  close(s);
}

static void test_multi_queue(void) {
  struct s5_prefix v4 = prefix(AF_INET, "198.18.0.1", 15);
  struct s5_prefix v6 = prefix(AF_INET6, "fc00::1", 64);
  int fds[NQUEUES];
  char err[256];
  int i, r;

  for (i = 0; i < NQUEUES; i++) {
    fds[i] = s5_tun_open_queue(DEV, 0);
    CHECK(fds[i] >= 0, "open queue %d: %s", i, strerror(-fds[i]));
    if (fds[i] < 0) {
      close_all(fds, i);
      return;
    }
    check_queue_fd(fds[i], i);
  }

  r = s5_tun_link_setup(DEV, 8500, &v4, &v6, err, sizeof err);
  CHECK(r == 0, "link setup: %d: %s", r, err);
  CHECK(r != 0 || err[0] == '\0', "link setup left err \"%s\"", err);
  CHECK(if_mtu(DEV) == 8500, "mtu %d", if_mtu(DEV));
  CHECK(if_flags(DEV) > 0 && (if_flags(DEV) & IFF_UP), "not up: flags 0x%x", if_flags(DEV));
  CHECK(if_has_addr(DEV, AF_INET, "198.18.0.1", "255.254.0.0"), "no 198.18.0.1/15");
  CHECK(if_has_addr(DEV, AF_INET6, "fc00::1", "ffff:ffff:ffff:ffff::"), "no fc00::1/64");
  check_ipv6_usable();

  /* Again, as after a restart with a persistent device. */
  r = s5_tun_link_setup(DEV, 8500, &v4, &v6, err, sizeof err);
  CHECK(r == 0, "second link setup: %d: %s", r, err);

  /* Errors name the step. */
  r = s5_tun_link_setup(DEV, 70000, NULL, NULL, err, sizeof err);
  CHECK(r == -EINVAL, "mtu 70000: %d", r);
  CHECK(strncmp(err, "setting MTU 70000 on " DEV ": Invalid argument",
                strlen("setting MTU 70000 on " DEV ": Invalid argument")) == 0,
        "mtu 70000 message \"%s\"", err);
  printf("# %s\n", err);
  {
    struct s5_prefix bad = v4;

    bad.len = 33;
    r = s5_tun_link_setup(DEV, 0, &bad, NULL, err, sizeof err);
    CHECK(r == -EINVAL && strstr(err, "adding address 198.18.0.1/33 to " DEV) == err, "prefix /33: %d \"%s\"",
          r, err);
  }
  r = s5_tun_link_setup("nosuchdev0", 1500, NULL, NULL, err, sizeof err);
  CHECK(r == -ENODEV && strcmp(err, "finding nosuchdev0: No such device") == 0, "missing device: %d \"%s\"",
        r, err);
  /* A tiny err buffer is truncated, not overrun. */
  r = s5_tun_link_setup(DEV, 70000, NULL, NULL, err, 8);
  CHECK(r == -EINVAL && strlen(err) == 7, "short err: \"%s\"", err);
  CHECK(if_mtu(DEV) == 8500, "mtu changed by failed setup: %d", if_mtu(DEV));

  test_kernel_to_queue(fds, AF_INET, "198.18.0.2");
  test_kernel_to_queue(fds, AF_INET6, "fc00::2");
  test_queue_to_kernel(fds[1]);

  /* Detach and re-attach; a detached queue cannot be detached twice. */
  r = s5_tun_queue_detach(fds[0]);
  CHECK(r == 0, "detach: %s", strerror(-r));
  r = s5_tun_queue_detach(fds[0]);
  CHECK(r == -EINVAL, "detach twice: %d", r);
  r = queue_attach(fds[0]);
  CHECK(r == 0, "attach: %s", strerror(-r));
  test_kernel_to_queue(fds, AF_INET, "198.18.0.3");

  close_all(fds, NQUEUES);
  CHECK(if_gone(DEV), "device still there after closing all queues");
}

static void test_persist(void) {
  int fd, fd2, r;

  fd = s5_tun_open_queue(DEV, 0);
  CHECK(fd >= 0, "open: %s", strerror(-fd));
  if (fd < 0) return;
  r = s5_tun_set_persist(fd, 1);
  CHECK(r == 0, "persist: %s", strerror(-r));
  close(fd);
  CHECK(if_nametoindex(DEV) != 0, "persistent device gone after close");

  /* Queues attach to the persistent device; persist can be cleared. */
  fd = s5_tun_open_queue(DEV, 0);
  fd2 = s5_tun_open_queue(DEV, 0);
  CHECK(fd >= 0 && fd2 >= 0, "reopen persistent: %d %d", fd, fd2);
  r = fd >= 0 ? s5_tun_set_persist(fd, 0) : -EBADF;
  CHECK(r == 0, "unpersist: %s", strerror(-r));
  if (fd >= 0) close(fd);
  if (fd2 >= 0) close(fd2);
  CHECK(if_gone(DEV), "device still there after unpersist and close");

  /* RTM_DELLINK removes a persistent device, even with no queue open. */
  fd = s5_tun_open_queue(DEV, 0);
  CHECK(fd >= 0, "open: %s", strerror(-fd));
  if (fd < 0) return;
  CHECK(s5_tun_set_persist(fd, 1) == 0, "persist again");
  close(fd);
  r = link_delete(DEV);
  CHECK(r == 0, "link delete: %s", strerror(-r));
  CHECK(if_gone(DEV), "device still there after link delete");
  r = link_delete(DEV);
  CHECK(r == -ENODEV, "delete missing device: %d", r);

  /* And with queues open: they stay valid fds, the device goes. */
  fd = s5_tun_open_queue(DEV, 0);
  CHECK(fd >= 0, "open: %s", strerror(-fd));
  if (fd < 0) return;
  r = link_delete(DEV);
  CHECK(r == 0, "link delete with queue open: %s", strerror(-r));
  CHECK(if_gone(DEV), "device still there after link delete (queue open)");
  close(fd);
}

static void test_bad_names(void) {
  struct ifreq ifr;
  int fd, r;

  r = s5_tun_open_queue("", 0);
  CHECK(r == -EINVAL, "empty name: %d", r);
  r = s5_tun_open_queue(NULL, 0);
  CHECK(r == -EINVAL, "NULL name: %d", r);
  r = s5_tun_open_queue("tun%d", 0);
  CHECK(r == -EINVAL, "template name: %d", r);
  r = s5_tun_open_queue("abcdefghijklmnop", 0);
  CHECK(r == -ENAMETOOLONG, "16-byte name: %d", r);
  r = s5_tun_open_queue("abcdefghijklmno", 0); /* 15: fits */
  CHECK(r >= 0, "15-byte name: %d", r);
  if (r >= 0) close(r);
  r = s5_tun_open_queue("lo", 0);
  CHECK(r == -EBUSY, "name of loopback: %d", r);

  /* A single-queue TUN of the same name is in the way. */
  fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  CHECK(fd >= 0, "open /dev/net/tun: %s", strerror(errno));
  if (fd < 0) return;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "s5single");
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  CHECK(ioctl(fd, TUNSETIFF, &ifr) == 0, "single-queue TUNSETIFF: %s", strerror(errno));
  r = s5_tun_open_queue("s5single", 0);
  CHECK(r == -EBUSY, "single-queue device in the way: %d", r);
  if (r >= 0) close(r);
  close(fd);

  r = s5_tun_name_check("");
  CHECK(r == -EINVAL, "empty name: %d", r);
}

/* What s5_tun_link_state reports: nothing, then queues attached and
 * detached, then a persistent device no one serves, then a foreign one. */
static void test_link_state(void) {
  struct s5_tun_state st;
  int fds[2], r;

  r = s5_tun_link_state(DEV, &st);
  CHECK(r == 0 && !st.exists, "no device: %d exists %d", r, st.exists);
  fds[0] = s5_tun_open_queue(DEV, 0);
  fds[1] = s5_tun_open_queue(DEV, 0);
  CHECK(fds[0] >= 0 && fds[1] >= 0, "open: %d %d", fds[0], fds[1]);
  if (fds[0] < 0 || fds[1] < 0) return;
  r = s5_tun_link_state(DEV, &st);
  CHECK(r == 0 && st.exists && strcmp(st.kind, "tun") == 0, "state: %d exists %d kind %s", r, st.exists,
        st.kind);
  CHECK(st.known && !st.tap && st.multi_queue && !st.persist && st.queues == 2,
        "known %d tap %d mq %d persist %d queues %u", st.known, st.tap, st.multi_queue, st.persist,
        st.queues);
  CHECK(st.ifindex == (int)if_nametoindex(DEV), "ifindex %d", st.ifindex);
  /* A detached queue is still held. */
  CHECK(s5_tun_queue_detach(fds[1]) == 0, "detach");
  r = s5_tun_link_state(DEV, &st);
  CHECK(r == 0 && st.queues == 2, "with one detached: queues %u", st.queues);
  CHECK(s5_tun_set_persist(fds[0], 1) == 0, "persist");
  close_all(fds, 2);
  r = s5_tun_link_state(DEV, &st);
  CHECK(r == 0 && st.exists && st.persist && st.queues == 0,
        "idle persistent: exists %d persist %d queues %u", st.exists, st.persist, st.queues);
  CHECK(link_delete(DEV) == 0, "delete");
  r = s5_tun_link_state("lo", &st);
  CHECK(r == 0 && st.exists && strcmp(st.kind, "tun") != 0 && !st.known, "lo: kind \"%s\" known %d", st.kind,
        st.known);
}

/* A claim is held once per network namespace; the second asker learns the
 * holder's pid, and may claim once the first is closed. */
static void test_owner(void) {
  pid_t holder = -1;
  int a, b;

  a = s5_owner_claim("dev/" DEV, &holder);
  CHECK(a >= 0, "first claim: %s", strerror(-a));
  b = s5_owner_claim("dev/" DEV, &holder);
  CHECK(b == -EADDRINUSE && holder == getpid(), "second claim: %d, holder %d (we are %d)", b, (int)holder,
        (int)getpid());
  s5_owner_tend(a); /* takes the asker's connection off the queue */
  b = s5_owner_claim("dev/other0", &holder);
  CHECK(b >= 0, "another name: %s", strerror(-b));
  if (b >= 0) close(b);
  if (a >= 0) close(a);
  b = s5_owner_claim("dev/" DEV, &holder);
  CHECK(b >= 0, "claim after release: %s", strerror(-b));
  if (b >= 0) close(b);
}

int main(void) {
  if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0) {
    printf("test_tun: skipped: needs root and /dev/net/tun\n");
    return SKIP;
  }
  /* Our own network namespace: the device, its addresses and routes are
   * invisible to the host and vanish when we exit. */
  if (unshare(CLONE_NEWNET) < 0) {
    printf("test_tun: skipped: unshare(CLONE_NEWNET): %s\n", strerror(errno));
    return SKIP;
  }
  test_bad_names();
  test_multi_queue();
  test_persist();
  test_link_state();
  test_owner();
  return check_done();
}
