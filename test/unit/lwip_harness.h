/* SPDX-License-Identifier: MIT */
/* Driving a real lwIP instance with hand-built segments, for the unit tests
 * that do (test_relay.c, test_lwip_timewait.c, test_lwip_tls.c): what lwIP
 * outputs is captured from the netif, client segments are built here with
 * their checksums, and fed in as the TUN would carry them.
 *
 * The checksums are computed here on purpose, not with the product's
 * (core/base/chksum.c): a test's expectations come from its own arithmetic.
 *
 * Header only, included by one file of each test program. A test whose
 * lwIP instances run in several threads defines LH_THREAD as __thread
 * before including it, so each thread captures its own instance's output. */
#ifndef S5_TEST_LWIP_HARNESS_H
#define S5_TEST_LWIP_HARNESS_H

#include <stdint.h>
#include <string.h>

#include "check.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"

#ifndef LH_THREAD
#define LH_THREAD
#endif

/* ---- captured output ---------------------------------------------------- */

#define CAP_MAX 16
#define CAP_LEN 2048

struct captured {
  struct netif *netif; /* the netif it was sent on */
  size_t len;
  uint8_t data[CAP_LEN];
};

static LH_THREAD struct captured cap[CAP_MAX];
static LH_THREAD int cap_n; /* packets output since the test reset it; CAP_MAX are kept */

static inline err_t capture(struct netif *netif, struct pbuf *p) {
  if (cap_n < CAP_MAX) {
    cap[cap_n].netif = netif;
    cap[cap_n].len = pbuf_copy_partial(p, cap[cap_n].data, CAP_LEN, 0);
  }
  cap_n++;
  return ERR_OK;
}

/* The netif's output and output_ip6. */
static inline err_t output4(struct netif *netif, struct pbuf *p, const ip4_addr_t *dst) {
  return capture(netif, p);
}
static inline err_t output6(struct netif *netif, struct pbuf *p, const ip6_addr_t *dst) {
  return capture(netif, p);
}

/* The netif's init function: a TUN-like netif (MTU 1500, no link layer)
 * that takes any destination, as s5tund's does, its output captured. */
static inline err_t netif_setup(struct netif *netif) {
  netif->name[0] = 't';
  netif->name[1] = 'n';
  netif->mtu = 1500;
  netif->output = output4;
  netif->output_ip6 = output6;
  netif->flags = NETIF_FLAG_ANY_DEST;
  return ERR_OK;
}

/* ---- bytes and checksums ------------------------------------------------ */

static inline void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

/* Adds n bytes as big-endian 16-bit words to the unfolded sum acc. */
static inline uint32_t sum16(uint32_t acc, const uint8_t *d, size_t n) {
  size_t i;

  for (i = 0; i + 1 < n; i += 2) acc += (uint32_t)(d[i] << 8 | d[i + 1]);
  if (n & 1) acc += (uint32_t)d[n - 1] << 8;
  return acc;
}

static inline uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return (uint16_t)~acc;
}

/* Sum of the TCP pseudo header (RFC 793 / RFC 8200 8.1). */
static inline uint32_t pseudo_sum(int v6, const uint8_t *src, const uint8_t *dst, size_t tcplen) {
  uint8_t tail[4] = {0, 0, 0, 6};
  size_t alen = v6 ? 16 : 4;
  uint32_t acc = 0;

  acc = sum16(acc, src, alen);
  acc = sum16(acc, dst, alen);
  acc += (uint32_t)(tcplen >> 16) + (uint32_t)(tcplen & 0xffff);
  return sum16(acc, tail, sizeof tail);
}

/* ---- client segments ---------------------------------------------------- */

struct flow {
  int v6;
  uint8_t src[16], dst[16]; /* client address, address the client dials */
  uint16_t sport, dport;
};

/* A client segment of flow f (client -> dialled address) with len bytes of
 * payload; a SYN carries an MSS option. Returns its length. */
static inline size_t build(uint8_t *buf, const struct flow *f, uint32_t seq, uint32_t ack, uint8_t flags,
                           const void *data, size_t len) {
  size_t iphl = f->v6 ? 40 : 20;
  size_t tcpl = (flags & TCP_SYN) ? 24 : 20;
  uint8_t *t = buf + iphl;

  memset(buf, 0, iphl + tcpl);
  if (f->v6) {
    buf[0] = 0x60;
    put16(buf + 4, (uint16_t)(tcpl + len));
    buf[6] = 6;  /* next header: TCP */
    buf[7] = 64; /* hop limit */
    memcpy(buf + 8, f->src, 16);
    memcpy(buf + 24, f->dst, 16);
  } else {
    buf[0] = 0x45;
    put16(buf + 2, (uint16_t)(iphl + tcpl + len));
    put16(buf + 6, 0x4000); /* DF */
    buf[8] = 64;
    buf[9] = 6;
    memcpy(buf + 12, f->src, 4);
    memcpy(buf + 16, f->dst, 4);
    put16(buf + 10, fold(sum16(0, buf, 20)));
  }
  put16(t, f->sport);
  put16(t + 2, f->dport);
  put32(t + 4, seq);
  put32(t + 8, ack);
  t[12] = (uint8_t)((tcpl / 4) << 4);
  t[13] = flags;
  put16(t + 14, 65535);
  if (flags & TCP_SYN) {
    t[20] = 2; /* MSS 1460 */
    t[21] = 4;
    put16(t + 22, 1460);
  }
  if (data != NULL && len > 0) memcpy(t + tcpl, data, len);
  put16(t + 16, fold(sum16(pseudo_sum(f->v6, f->src, f->dst, tcpl + len), t, tcpl + len)));
  return iphl + tcpl + len;
}

/* Feeds the segment of flow f to lwIP through netif, as the TUN would. */
static inline void feed_flow(struct netif *netif, const struct flow *f, uint32_t seq, uint32_t ack,
                             uint8_t flags, const char *data) {
  uint8_t buf[256];
  size_t dlen = data ? strlen(data) : 0;
  size_t len;
  struct pbuf *p;

  if (dlen > sizeof buf - 64) {
    CHECK(0, "segment payload of %zu bytes too long for the harness", dlen);
    return;
  }
  len = build(buf, f, seq, ack, flags, data, dlen);
  p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM);
  if (p == NULL) {
    CHECK(0, "pbuf_alloc failed");
    return;
  }
  pbuf_take(p, buf, (u16_t)len);
  if (ip_input(p, netif) != ERR_OK) pbuf_free(p);
}

/* ---- the one IPv4 client of the single-instance tests ------------------- */

static const uint8_t client_addr[4] = {10, 0, 0, 2};
static const uint8_t dialled_addr[4] = {192, 0, 2, 10};
#define DPORT 80

/* Feeds a segment from client_addr:sport to dialled_addr:DPORT; what lwIP
 * sends in answer is captured from the start of cap[]. */
static inline void feed_client(struct netif *netif, uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags,
                               const char *data) {
  struct flow f = {.v6 = 0, .sport = sport, .dport = DPORT};

  memcpy(f.src, client_addr, 4);
  memcpy(f.dst, dialled_addr, 4);
  cap_n = 0;
  feed_flow(netif, &f, seq, ack, flags, data);
}

#endif
