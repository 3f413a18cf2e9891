/* SPDX-License-Identifier: MIT */
/* Unit test of UDP segmentation offload on the TUN queue
 * (core/netif/udp_tun.c), the real code on a real multi-queue TUN device
 * with USO, inside a private network namespace (unshare(CLONE_NEWNET):
 * nothing on the host is touched, everything goes with the process).
 *
 * Download: datagrams collected with s5_udp_tun_put() and written by
 * s5_udp_tun_flush() as one GSO packet. Written once into a socket pair,
 * the packet is read back and checked field by field against what is
 * computed here independently: the virtio_net_hdr (NEEDS_CSUM, csum_start
 * and offset, GSO_UDP_L4, gso_size, hdr_len), the IP header (lengths, id,
 * a valid header checksum), the UDP header (ports, length, the pseudo-header
 * partial checksum; completed as a device does for a single datagram, it
 * verifies). Written once into the TUN device, the kernel cuts it: a
 * socket bound to the device's address receives every datagram with its
 * size, bytes and source, in order. IPv4 and IPv6.
 *
 * Upload: a client socket sends with UDP_SEGMENT through the device; the
 * kernel hands the TUN a GSO packet, which s5_udp_tun_split() cuts into one
 * packet per datagram for lwIP (a capturing netif input here): lengths,
 * IPv4 ids, header checksums and payloads checked.
 *
 * Needs root and /dev/net/tun, and a kernel with USO on TUN (6.2); else
 * exits 77 saying why. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare() */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctx/wctx.h"
#include "netif/udp_tun.h"
#include "shared/stats.h"
#include "tun/tun.h"

#include "lwip/init.h"
#include "lwip/pbuf.h"

#include "check.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define DEV "s5uso0"
#define VH sizeof(struct virtio_net_hdr)
#define MAXCAP 16

static struct s5_wctx w;
static struct s5_config cfg;
static int tun_fd = -1;
static struct s5_udp_tun *t;
/* The writer keeps the fd it was started with: this one, which aim() points
 * at the device or at a socket pair (dup2) as a test needs. */
static int wfd = -1;

static void aim(int fd) {
  if (dup2(fd, wfd) < 0) CHECK(0, "dup2: %s", strerror(errno));
}

/* ---- independent arithmetic ---- */

static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i += 2) s += (uint32_t)p[i] << 8 | p[i + 1];
  if (n & 1) s += (uint32_t)p[n - 1] << 8;
  return s;
}

static uint16_t fold(uint32_t s) {
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return (uint16_t)s;
}

/* The pseudo-header sum (addresses, protocol, UDP length), folded, not
 * complemented: what CHECKSUM_PARTIAL leaves in the UDP checksum field. */
static uint16_t pseudo(const uint8_t *addrs, size_t alen, size_t udplen) {
  return fold(sum16(17 + (uint32_t)udplen, addrs, alen));
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* ---- addresses ---- */

static ip_addr_t addr_of(int v6, const char *text) {
  ip_addr_t a;
  CHECK(ipaddr_aton(text, &a) == 1 && IP_IS_V6(&a) == v6, "address %s", text);
  return a;
}

static uint8_t payload_byte(unsigned k, size_t j) { return (uint8_t)(k * 13 + j * 5 + 3); }

/* ---- download ---- */

struct family {
  int v6;
  const char *local, *remote; /* the device's address, a client's behind it */
};

/* Collects n datagrams (all len bytes, the last last bytes). */
static void put_run(const struct family *f, uint8_t (*data)[1400], unsigned n, size_t len, size_t last) {
  ip_addr_t src = addr_of(f->v6, f->remote), dst = addr_of(f->v6, f->local);
  for (unsigned k = 0; k < n; k++) {
    size_t l = k + 1 == n ? last : len;
    for (size_t j = 0; j < l; j++) data[k][j] = payload_byte(k, j);
    CHECK(s5_udp_tun_put(t, &src, 6000, &dst, 5000, data[k], l) == 0, "put %u of %u: refused", k, n);
  }
}

/* The packet as written, read from the socket pair that stood in for the TUN. */
static void check_written(const struct family *f, const uint8_t *pkt, size_t plen, unsigned n, size_t len,
                          size_t last) {
  struct virtio_net_hdr vh;
  size_t iphl = f->v6 ? 40 : 20, hl = iphl + 8, payload = (n - 1) * len + last, udplen = 8 + payload;
  const uint8_t *ip = pkt + VH, *u = ip + iphl;

  CHECK(plen == VH + hl + payload, "written %zu bytes, want %zu", plen, VH + hl + payload);
  if (plen != VH + hl + payload) return;
  memcpy(&vh, pkt, VH);
  CHECK(vh.flags == VIRTIO_NET_HDR_F_NEEDS_CSUM && vh.csum_start == iphl && vh.csum_offset == 6,
        "virtio_net_hdr: flags %u csum_start %u offset %u", vh.flags, vh.csum_start, vh.csum_offset);
  if (n > 1)
    CHECK(vh.gso_type == VIRTIO_NET_HDR_GSO_UDP_L4 && vh.gso_size == len && vh.hdr_len == hl,
          "GSO: type %u size %u hdr_len %u, want %u %zu %zu", vh.gso_type, vh.gso_size, vh.hdr_len,
          VIRTIO_NET_HDR_GSO_UDP_L4, len, hl);
  else CHECK(vh.gso_type == VIRTIO_NET_HDR_GSO_NONE, "a single datagram without GSO (type %u)", vh.gso_type);
  if (f->v6) {
    CHECK(ip[0] >> 4 == 6 && ip[6] == 17 && be16(ip + 4) == udplen,
          "IPv6 header: payload length %u, want %zu", be16(ip + 4), udplen);
  } else {
    CHECK(ip[0] == 0x45 && ip[9] == 17 && be16(ip + 2) == iphl + udplen,
          "IPv4 header: total length %u, want %zu", be16(ip + 2), iphl + udplen);
    CHECK(fold(sum16(0, ip, 20)) == 0xffff, "IPv4 header checksum invalid");
  }
  CHECK(be16(u) == 6000 && be16(u + 2) == 5000 && be16(u + 4) == udplen, "UDP ports %u %u length %u", be16(u),
        be16(u + 2), be16(u + 4));
  uint16_t want = f->v6 ? pseudo(ip + 8, 32, udplen) : pseudo(ip + 12, 8, udplen);
  CHECK(be16(u + 6) == want, "UDP partial checksum %04x, want the pseudo-header sum %04x", be16(u + 6), want);
  for (unsigned k = 0, off = 0; k < n; k++) {
    size_t l = k + 1 == n ? last : len;
    int same = 1;
    for (size_t j = 0; j < l && same; j++) same = u[8 + off + j] == payload_byte(k, j);
    CHECK(same, "payload of datagram %u", k);
    off += (unsigned)l;
  }
  if (n == 1) { /* completed as a device completes it, it must verify */
    uint8_t d[1500];
    memcpy(d, u, udplen);
    uint16_t c = (uint16_t)~fold(sum16(0, d, udplen));
    d[6] = (uint8_t)(c >> 8);
    d[7] = (uint8_t)c;
    uint32_t s = sum16(17 + (uint32_t)udplen, f->v6 ? ip + 8 : ip + 12, f->v6 ? 32 : 8);
    CHECK(fold(sum16(s, d, udplen)) == 0xffff, "the completed UDP checksum does not verify");
  }
}

/* A UDP socket on the device's address, port 5000. */
static int bound_socket(const struct family *f) {
  struct sockaddr_storage ss;
  socklen_t sl;
  int s = socket(f->v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  memset(&ss, 0, sizeof ss);
  if (f->v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(5000);
    inet_pton(AF_INET6, f->local, &a->sin6_addr);
    sl = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(5000);
    inet_pton(AF_INET, f->local, &a->sin_addr);
    sl = sizeof *a;
  }
  if (s < 0 || bind(s, (struct sockaddr *)&ss, sl) < 0) {
    CHECK(0, "bind %s port 5000: %s", f->local, strerror(errno));
    if (s >= 0) close(s);
    return -1;
  }
  return s;
}

/* Until one datagram written to the device reaches a socket on its address:
 * right after the device came up the kernel may not deliver yet (seen with
 * IPv6). Bounded; whether it worked is for the tests after it to say. */
static void wait_delivery(const struct family *f) {
  static uint8_t one[1] = {42}, got[16];
  ip_addr_t src = addr_of(f->v6, f->remote), dst = addr_of(f->v6, f->local);
  int rx = bound_socket(f);

  for (int i = 0; i < 100 && rx >= 0; i++) {
    struct pollfd pfd = {rx, POLLIN, 0};
    aim(tun_fd);
    if (s5_udp_tun_put(t, &src, 6000, &dst, 5000, one, 1) < 0) break;
    s5_udp_tun_flush(t);
    if (poll(&pfd, 1, 100) == 1 && recv(rx, got, sizeof got, 0) == 1) break;
  }
  if (rx >= 0) close(rx);
}

static void test_download(const struct family *f, unsigned n, size_t len, size_t last) {
  static uint8_t data[64][1400];
  static uint8_t pkt[70000];
  int sp[2];
  char what[64];

  snprintf(what, sizeof what, "%s, %u x %zu (last %zu)", f->v6 ? "IPv6" : "IPv4", n, len, last);
  /* Once into a socket pair, to see the bytes. */
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) {
    CHECK(0, "socketpair: %s", strerror(errno));
    return;
  }
  aim(sp[0]);
  put_run(f, data, n, len, last);
  s5_udp_tun_flush(t);
  ssize_t r = recv(sp[1], pkt, sizeof pkt, MSG_DONTWAIT);
  CHECK(r > 0, "%s: nothing written", what);
  if (r > 0) check_written(f, pkt, (size_t)r, n, len, last);
  close(sp[0]);
  close(sp[1]);
  /* Once into the device: the kernel cuts it, a socket receives. */
  int rx = bound_socket(f);
  if (rx < 0) return;
  aim(tun_fd);
  uint64_t tx = w.stats->tun_tx_packets;
  put_run(f, data, n, len, last);
  s5_udp_tun_flush(t);
  CHECK(w.stats->tun_tx_packets - tx == n, "%s: tun_tx_packets moved by %llu", what,
        (unsigned long long)(w.stats->tun_tx_packets - tx));
  for (unsigned k = 0; k < n; k++) {
    struct pollfd pfd = {rx, POLLIN, 0};
    struct sockaddr_storage from;
    socklen_t fl = sizeof from;
    char host[64];
    if (poll(&pfd, 1, 5000) != 1) { /* only a bound */
      CHECK(0, "%s: datagram %u of %u never arrived", what, k, n);
      break;
    }
    r = recvfrom(rx, pkt, sizeof pkt, 0, (struct sockaddr *)&from, &fl);
    size_t l = k + 1 == n ? last : len;
    CHECK(r == (ssize_t)l, "%s: datagram %u is %zd bytes, want %zu", what, k, r, l);
    int same = r == (ssize_t)l;
    for (size_t j = 0; same && j < l; j++) same = pkt[j] == payload_byte(k, j);
    CHECK(same, "%s: datagram %u: wrong bytes or order", what, k);
    const void *a = from.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&from)->sin6_addr
                                               : (const void *)&((struct sockaddr_in *)&from)->sin_addr;
    inet_ntop(from.ss_family, a, host, sizeof host);
    CHECK(strcmp(host, f->remote) == 0, "%s: datagram %u from %s, want %s", what, k, host, f->remote);
  }
  close(rx);
}

/* ---- upload ---- */

static struct pbuf *cap[MAXCAP];
static unsigned ncap;

static err_t capture(struct pbuf *p, struct netif *inp) {
  (void)inp;
  if (ncap < MAXCAP) cap[ncap++] = p;
  else pbuf_free(p);
  return ERR_OK;
}

/* The next GSO UDP packet the kernel hands the device (other packets, such
 * as IPv6 router solicitations, are passed over). */
static ssize_t read_gso(uint8_t *buf, size_t cap_len, struct virtio_net_hdr *vh) {
  for (int tries = 0; tries < 50; tries++) {
    struct pollfd pfd = {tun_fd, POLLIN, 0};
    if (poll(&pfd, 1, 5000) != 1) return -1; /* only a bound */
    ssize_t r = read(tun_fd, buf, cap_len);
    if (r < (ssize_t)VH) continue;
    memcpy(vh, buf, VH);
    if (vh->gso_type == VIRTIO_NET_HDR_GSO_UDP_L4) return r - (ssize_t)VH;
  }
  return -1;
}

static void test_upload(const struct family *f, size_t seg, size_t total) {
  static uint8_t data[8000], buf[70000];
  struct sockaddr_storage ss;
  struct virtio_net_hdr vh;
  socklen_t sl;
  int s = socket(f->v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), gso = (int)seg;
  const char *what = f->v6 ? "IPv6 upload" : "IPv4 upload";

  memset(&ss, 0, sizeof ss);
  if (f->v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(7000);
    inet_pton(AF_INET6, f->remote, &a->sin6_addr);
    sl = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(7000);
    inet_pton(AF_INET, f->remote, &a->sin_addr);
    sl = sizeof *a;
  }
  for (size_t j = 0; j < total; j++) data[j] = payload_byte((unsigned)(j / seg), j % seg);
  if (s < 0 || connect(s, (struct sockaddr *)&ss, sl) < 0 ||
      setsockopt(s, SOL_UDP, UDP_SEGMENT, &gso, sizeof gso) < 0 ||
      send(s, data, total, 0) != (ssize_t)total) {
    CHECK(0, "%s: sending %zu bytes in segments of %zu: %s", what, total, seg, strerror(errno));
    if (s >= 0) close(s);
    return;
  }
  close(s);
  ssize_t n = read_gso(buf, sizeof buf, &vh);
  CHECK(n > 0, "%s: no GSO packet from the kernel", what);
  if (n <= 0) return;
  CHECK(vh.gso_size == seg, "%s: gso_size %u, want %zu", what, vh.gso_size, seg);
  struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)n, PBUF_RAM);
  if (p == NULL) return;
  memcpy(p->payload, buf + VH, (size_t)n);
  size_t iphl = f->v6 ? 40 : 20;
  uint16_t id0 = be16(buf + VH + 4);
  ncap = 0;
  CHECK(s5_udp_tun_split(&w, t, p, vh.gso_size) == 0, "%s: s5_udp_tun_split refused the packet", what);
  unsigned want = (unsigned)((total + seg - 1) / seg);
  CHECK(ncap == want, "%s: %u packets into lwIP, want %u", what, ncap, want);
  for (unsigned k = 0; k < ncap && k < want; k++) {
    const uint8_t *h = cap[k]->payload;
    size_t plen = k + 1 == want ? total - k * seg : seg;
    CHECK(cap[k]->tot_len == iphl + 8 + plen, "%s: packet %u is %u bytes, want %zu", what, k, cap[k]->tot_len,
          iphl + 8 + plen);
    if (cap[k]->tot_len != iphl + 8 + plen) continue;
    if (f->v6) {
      CHECK(be16(h + 4) == 8 + plen, "%s: packet %u: IPv6 payload length %u", what, k, be16(h + 4));
    } else {
      CHECK(be16(h + 2) == iphl + 8 + plen, "%s: packet %u: IPv4 total length %u", what, k, be16(h + 2));
      CHECK(be16(h + 4) == (uint16_t)(id0 + k), "%s: packet %u: IPv4 id %u, want %u", what, k, be16(h + 4),
            (uint16_t)(id0 + k));
      CHECK(fold(sum16(0, h, 20)) == 0xffff, "%s: packet %u: IPv4 header checksum invalid", what, k);
    }
    CHECK(be16(h + iphl + 2) == 7000 && be16(h + iphl + 4) == 8 + plen,
          "%s: packet %u: UDP port %u length %u", what, k, be16(h + iphl + 2), be16(h + iphl + 4));
    CHECK(memcmp(h + iphl + 8, data + k * seg, plen) == 0, "%s: packet %u: payload", what, k);
  }
  for (unsigned k = 0; k < ncap; k++) pbuf_free(cap[k]);
}

/* ---- set-up ---- */

static int setup(void) {
  struct s5_prefix v4 = {AF_INET, {0}, 24}, v6 = {AF_INET6, {0}, 64};
  char err[256];
  static struct s5_stats_area *area;

  if (unshare(CLONE_NEWNET) < 0) {
    printf("test_udp_tun: skipped: unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
    return CHECK_SKIP;
  }
  tun_fd = s5_tun_open_queue(DEV, S5_TUN_OFFLOAD);
  if (tun_fd < 0) {
    printf("test_udp_tun: skipped: opening TUN %s: %s\n", DEV, strerror(-tun_fd));
    return CHECK_SKIP;
  }
  inet_pton(AF_INET, "10.77.0.1", v4.addr);
  inet_pton(AF_INET6, "fd77::1", v6.addr);
  int r = s5_tun_link_setup(DEV, 1500, &v4, &v6, err, sizeof err);
  CHECK(r == 0, "link set-up: %s", err);
  area = s5_stats_create(1);
  s5_config_defaults(&cfg);
  cfg.tun.offload = true;
  cfg.tun.mtu = 1500;
  if (r != 0 || area == NULL || s5_wctx_init(&w, &cfg, 0, &area->q[0]) != 0) return 1;
  wfd = dup(tun_fd);
  w.netif.input = capture;
  lwip_init();
  t = s5_udp_tun_start(&w, wfd, 1);
  CHECK(t != NULL, "s5_udp_tun_start");
  if (t == NULL) return 1;
  /* Whether the kernel took USO shows in whether a datagram is taken. */
  ip_addr_t a = addr_of(0, "10.77.0.2"), b = addr_of(0, "10.77.0.1");
  static const uint8_t one[1] = {0};
  if (s5_udp_tun_put(t, &a, 1, &b, 1, one, 1) < 0) {
    printf("test_udp_tun: skipped: this kernel has no UDP segmentation offload on TUN (Linux 6.2)\n");
    return CHECK_SKIP;
  }
  int sp[2]; /* the probe goes nowhere */
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) < 0) return 1;
  aim(sp[0]);
  s5_udp_tun_flush(t);
  close(sp[0]);
  close(sp[1]);
  return 0;
}

int main(void) {
  static const struct family v4 = {0, "10.77.0.1", "10.77.0.2"}, v6 = {1, "fd77::1", "fd77::2"};
  int r = setup();

  if (r != 0) return r == CHECK_SKIP ? CHECK_SKIP : check_done();
  for (int i = 0; i < 2; i++) {
    const struct family *f = i ? &v6 : &v4;
    wait_delivery(f);
    test_download(f, 10, 1200, 1200);
    test_download(f, 5, 1000, 37);
    test_download(f, 64, 100, 100);
    test_download(f, 1, 900, 900);
    test_upload(f, 1000, 3500);
    test_upload(f, 1200, 7200);
  }
  s5_udp_tun_stop(t);
  return check_done();
}
