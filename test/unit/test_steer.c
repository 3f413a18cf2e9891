/* SPDX-License-Identifier: MIT */
/* Unit test for tun/steer.c: loads the steering program and runs it on
 * packets built here with BPF_PROG_TEST_RUN (the kernel's own interpreter
 * or JIT, the verifier included), no device involved. Checks the promises
 * the workers rely on: every packet of one UDP source (any destination,
 * whole or fragmented, IPv4 and IPv6 with extension headers) gets the same
 * queue; fragments of interleaved datagrams each follow their own first
 * fragment; the map entry goes with the last fragment; TCP and UDP spread
 * over the queues; short packets do not break it.
 *
 * Needs root (CAP_BPF or CAP_SYS_ADMIN); without it prints why and exits
 * 77 (ctest SKIP_RETURN_CODE). */
#include "tun/tun.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

#define SKIP 77
#define QUEUES 4

static int prog_fd, map_fd;

/* Runs the program on pkt (an Ethernet header is put in front: the test
 * run strips it, as the TUN device has none; the program reads the IP
 * version from the packet, not the type, but the kernel checks that an
 * IPv4 or IPv6 packet has a whole header). Returns the queue the
 * kernel would pick from the result (u16, modulo the queues), or -1. */
static int run_raw(const uint8_t *pkt, size_t len, uint16_t ethertype, uint32_t *raw) {
  uint8_t buf[256];
  memset(buf, 0, 14);
  buf[12] = (uint8_t)(ethertype >> 8);
  buf[13] = (uint8_t)ethertype;
  memcpy(buf + 14, pkt, len);
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.test.prog_fd = (uint32_t)prog_fd;
  attr.test.data_in = (uint64_t)(uintptr_t)buf;
  attr.test.data_size_in = (uint32_t)(14 + len);
  attr.test.repeat = 1;
  if (syscall(SYS_bpf, BPF_PROG_TEST_RUN, &attr, sizeof attr) < 0) {
    printf("BPF_PROG_TEST_RUN: %s\n", strerror(errno));
    return -1;
  }
  if (raw != NULL) *raw = attr.test.retval;
  return (int)((uint16_t)attr.test.retval % QUEUES);
}

/* IPv4 header + 8 bytes of L4 (ports) + a little payload. frag: the
 * flags/offset field (MF 0x2000, offset in 8-byte units). */
static size_t ipv4(uint8_t *p, uint8_t proto, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                   uint16_t id, uint16_t frag) {
  memset(p, 0, 48);
  p[0] = 0x45;
  p[2] = 0;
  p[3] = 48;
  p[4] = (uint8_t)(id >> 8);
  p[5] = (uint8_t)id;
  p[6] = (uint8_t)(frag >> 8);
  p[7] = (uint8_t)frag;
  p[8] = 64;
  p[9] = proto;
  uint32_t s = htonl(src), d = htonl(dst);
  memcpy(p + 12, &s, 4);
  memcpy(p + 16, &d, 4);
  if ((frag & 0x1fff) == 0) { /* a later fragment has payload, not ports, there */
    p[20] = (uint8_t)(sport >> 8);
    p[21] = (uint8_t)sport;
    p[22] = (uint8_t)(dport >> 8);
    p[23] = (uint8_t)dport;
  } else {
    memset(p + 20, 0xab, 8);
  }
  return 48;
}

/* q4 and q6 return the program's whole 32-bit result (or -1), so that two
 * packets given the same queue by chance (1 in 4) do not pass a check that
 * they were steered alike; QUEUE() is what the kernel makes of it. */
#define QUEUE(r) ((int)((uint16_t)(r) % QUEUES))

static long q4(uint8_t proto, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint16_t id,
               uint16_t frag) {
  uint8_t p[64];
  uint32_t raw;
  size_t n = ipv4(p, proto, src, dst, sport, dport, id, frag);
  return run_raw(p, n, 0x0800, &raw) < 0 ? -1 : (long)raw;
}

/* IPv6 header, optionally a hop-by-hop header (8 bytes) and a Fragment
 * header (frag >= 0: offset << 3 | M), then 8 bytes of L4. */
static size_t ipv6(uint8_t *p, uint8_t proto, uint8_t src_last, uint8_t dst_last, uint16_t sport,
                   uint16_t dport, int hbh, long frag, uint32_t id) {
  size_t off = 40;
  memset(p, 0, 96);
  p[0] = 0x60;
  p[7] = 64;
  p[8] = 0xfc;
  p[23] = src_last;
  p[24] = 0xfd;
  p[39] = dst_last;
  uint8_t *nh = &p[6];
  if (hbh) {
    *nh = 0;
    nh = &p[off];
    p[off + 1] = 0; /* (0 + 1) * 8 bytes */
    off += 8;
  }
  if (frag >= 0) {
    *nh = 44;
    nh = &p[off];
    p[off + 2] = (uint8_t)(frag >> 8);
    p[off + 3] = (uint8_t)frag;
    p[off + 4] = (uint8_t)(id >> 24);
    p[off + 5] = (uint8_t)(id >> 16);
    p[off + 6] = (uint8_t)(id >> 8);
    p[off + 7] = (uint8_t)id;
    off += 8;
  }
  *nh = proto;
  if (frag < 0 || (frag & 0xfff8) == 0) {
    p[off] = (uint8_t)(sport >> 8);
    p[off + 1] = (uint8_t)sport;
    p[off + 2] = (uint8_t)(dport >> 8);
    p[off + 3] = (uint8_t)dport;
  } else {
    memset(p + off, 0xcd, 8);
  }
  off += 8;
  p[4] = (uint8_t)((off - 40) >> 8);
  p[5] = (uint8_t)(off - 40);
  return off;
}

static long q6(uint8_t proto, uint8_t src, uint8_t dst, uint16_t sport, uint16_t dport, int hbh, long frag,
               uint32_t id) {
  uint8_t p[128];
  uint32_t raw;
  size_t n = ipv6(p, proto, src, dst, sport, dport, hbh, frag, id);
  return run_raw(p, n, 0x86dd, &raw) < 0 ? -1 : (long)raw;
}

static int map_empty(void) {
  uint8_t key[40], next[40];
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.map_fd = (uint32_t)map_fd;
  attr.key = 0; /* NULL: the first key */
  attr.next_key = (uint64_t)(uintptr_t)next;
  (void)key;
  return syscall(SYS_bpf, BPF_MAP_GET_NEXT_KEY, &attr, sizeof attr) < 0 && errno == ENOENT;
}

#define A 0x0a000001u
#define B 0x0a000002u
#define C 0x0a000003u

static void test_udp4(void) {
  long q = q4(17, A, B, 40000, 7001, 1, 0);
  CHECK(q >= 0, "IPv4 UDP ran");
  CHECK(q4(17, A, B, 40001, 7001, 1, 0) != q, "IPv4 UDP: another source port, the same hash");
  CHECK(q4(17, A, C, 40000, 7002, 2, 0) == q, "IPv4 UDP: another destination, another queue");
  CHECK(q4(17, A, B, 40000, 7001, 3, 0x4000) == q, "IPv4 UDP with DF: another queue");
  /* Fragments of datagram 10 (first, middle, last) interleaved with those
   * of datagram 11 from another source. */
  long other = q4(17, B, A, 50001, 53, 9, 0);
  CHECK(q4(17, A, B, 40000, 7001, 10, 0x2000) == q, "IPv4 first fragment: another queue");
  CHECK(q4(17, B, A, 50001, 53, 11, 0x2000) == other, "IPv4 first fragment of another source");
  CHECK(q4(17, A, B, 0, 0, 10, 0x2000 | 185) == q, "IPv4 middle fragment: another queue");
  CHECK(q4(17, B, A, 0, 0, 11, 0x2000 | 185) == other, "IPv4 middle fragment of another source");
  CHECK(q4(17, A, B, 0, 0, 10, 370) == q, "IPv4 last fragment: another queue");
  CHECK(q4(17, B, A, 0, 0, 11, 370) == other, "IPv4 last fragment of another source");
  CHECK(map_empty(), "IPv4: the last fragments removed their map entries");
  /* A whole datagram after them: still the same queue. */
  CHECK(q4(17, A, B, 40000, 7001, 12, 0) == q, "IPv4 UDP after fragments: another queue");
}

static void test_udp6(void) {
  long q = q6(17, 1, 2, 40000, 7001, 0, -1, 0);
  CHECK(q >= 0, "IPv6 UDP ran");
  CHECK(q6(17, 1, 2, 40001, 7001, 0, -1, 0) != q, "IPv6 UDP: another source port, the same hash");
  CHECK(q6(17, 1, 3, 40000, 7002, 0, -1, 0) == q, "IPv6 UDP: another destination, another queue");
  CHECK(q6(17, 1, 2, 40000, 7001, 1, -1, 0) == q, "IPv6 UDP behind hop-by-hop: another queue");
  CHECK(q6(17, 1, 2, 40000, 7001, 0, 1, 0x1234) == q, "IPv6 first fragment: another queue");
  CHECK(q6(17, 1, 2, 40000, 7001, 1, 1, 0x1235) == q, "IPv6 first fragment behind hop-by-hop");
  CHECK(q6(17, 1, 2, 0, 0, 0, (100 << 3) | 1, 0x1234) == q, "IPv6 middle fragment: another queue");
  CHECK(q6(17, 1, 2, 0, 0, 1, (100 << 3) | 1, 0x1235) == q, "IPv6 middle fragment behind hop-by-hop");
  CHECK(q6(17, 1, 2, 0, 0, 0, 200 << 3, 0x1234) == q, "IPv6 last fragment: another queue");
  CHECK(q6(17, 1, 2, 0, 0, 1, 200 << 3, 0x1235) == q, "IPv6 last fragment behind hop-by-hop");
  CHECK(q6(17, 1, 2, 40000, 7001, 0, 0, 0x1236) == q, "IPv6 atomic fragment: another queue");
  CHECK(map_empty(), "IPv6: the last fragments removed their map entries, an atomic one left none");
}

/* Over many sources, every queue gets some: UDP by source port, TCP by
 * 4-tuple (also when only the destination port differs). */
static void test_spread(void) {
  int udp[QUEUES] = {0}, tcp[QUEUES] = {0}, tcp_dport[QUEUES] = {0}, tcp6[QUEUES] = {0};
  for (int i = 0; i < 64; i++) {
    long u = q4(17, A, B, (uint16_t)(30000 + i), 53, (uint16_t)i, 0);
    long t = q4(6, A, B, (uint16_t)(30000 + i), 443, 0, 0x4000);
    long d = q4(6, A, B, 40000, (uint16_t)(1000 + i), 0, 0x4000);
    long t6 = q6(6, 1, 2, (uint16_t)(30000 + i), 443, 0, -1, 0);
    if (u < 0 || t < 0 || d < 0 || t6 < 0) return;
    udp[QUEUE(u)]++;
    tcp[QUEUE(t)]++;
    tcp_dport[QUEUE(d)]++;
    tcp6[QUEUE(t6)]++;
  }
  for (int i = 0; i < QUEUES; i++) {
    CHECK(udp[i] > 0, "64 UDP sources: none on queue %d", i);
    CHECK(tcp[i] > 0, "64 TCP flows: none on queue %d", i);
    CHECK(tcp_dport[i] > 0, "64 TCP flows to different ports: none on queue %d", i);
    CHECK(tcp6[i] > 0, "64 IPv6 TCP flows: none on queue %d", i);
  }
  /* The same TCP flow: the same queue, each time. */
  CHECK(q4(6, A, B, 30000, 443, 0, 0x4000) == q4(6, A, B, 30000, 443, 9, 0x4000), "one TCP flow, two queues");
}

static void test_other(void) {
  CHECK(q4(1, A, B, 0, 0, 1, 0) == q4(1, A, C, 0, 0, 2, 0), "ICMP of one source: two queues");
  uint8_t p[4] = {0x45, 0, 0, 4};
  uint32_t raw = 1;
  CHECK(run_raw(p, sizeof p, 0x88b5, &raw) == 0 && raw == 0, "a truncated IPv4 header: queue 0 (got %u)",
        raw);
  uint8_t p6[41] = {0x60};
  p6[6] = 17; /* UDP, but the packet ends before the ports */
  raw = 1;
  CHECK(run_raw(p6, sizeof p6, 0x88b5, &raw) == 0 && raw == 0, "a truncated IPv6 packet: queue 0 (got %u)",
        raw);
  uint8_t junk[20] = {0x10};
  CHECK(run_raw(junk, sizeof junk, 0x88b5, NULL) >= 0, "not IP: no failure");
}

int main(void) {
  char err[256];
  prog_fd =
    s5_tun_steer_load(0x5eed, 0, &map_fd, err, sizeof err); /* 0: the raw hash, as the checks expect */
  if (prog_fd == -EPERM || prog_fd == -EACCES) {
    printf("SKIP: %s (needs root)\n", err);
    return SKIP;
  }
  CHECK(prog_fd >= 0, "%s", err);
  if (prog_fd < 0) return check_done();
  test_udp4();
  test_udp6();
  test_spread();
  test_other();
  return check_done();
}
