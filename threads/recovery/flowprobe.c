/* SPDX-License-Identifier: MIT */
/* A TCP segment without payload from a flow's remote to its client (see
 * flowprobe.h): IPv4 or IPv6 header, TCP header, both checksums. */
#include "threads/recovery/flowprobe.h"

#include <string.h>

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}

/* The ones' complement sum of len bytes (big-endian 16-bit words), unfolded. */
static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t)p[i] << 8 | p[i + 1];
  if (len & 1) sum += (uint32_t)p[len - 1] << 8;
  return sum;
}

static uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

size_t s5_flow_probe(const struct s5_flow *f, uint32_t seq, uint32_t ack, uint8_t flags, uint8_t *buf,
                     size_t cap) {
  size_t alen = f->v6 ? 16 : 4, ip_len = f->v6 ? 40 : 20, len = ip_len + 20;
  if (cap < len) return 0;
  memset(buf, 0, len);
  uint8_t *ip = buf, *tcp = buf + ip_len;
  if (f->v6) {
    ip[0] = 0x60;
    put16(ip + 4, 20); /* payload length */
    ip[6] = 6;         /* TCP */
    ip[7] = 64;        /* hop limit */
    memcpy(ip + 8, f->remote, 16);
    memcpy(ip + 24, f->client, 16);
  } else {
    ip[0] = 0x45;
    put16(ip + 2, (uint16_t)len);
    put16(ip + 6, 0x4000); /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, f->remote, 4);
    memcpy(ip + 16, f->client, 4);
    put16(ip + 10, fold(sum16(ip, 20, 0)));
  }
  put16(tcp, f->remote_port);
  put16(tcp + 2, f->client_port);
  put32(tcp + 4, seq);
  put32(tcp + 8, flags & S5_TCP_ACK ? ack : 0);
  tcp[12] = 5 << 4; /* header length: 20 bytes */
  tcp[13] = flags;
  put16(tcp + 14, flags & S5_TCP_RST ? 0 : 0xffff); /* window */
  /* pseudo-header: both addresses, protocol, TCP length */
  uint32_t sum = sum16(f->remote, alen, 0);
  sum = sum16(f->client, alen, sum);
  sum += 6 + 20;
  put16(tcp + 16, fold(sum16(tcp, 20, sum)));
  return len;
}
