/* SPDX-License-Identifier: MIT */
/* [sniff]'s table of destinations that failed (sniff_skip.h). */
#include "sniff/sniff_skip.h"

#include <string.h>

static struct s5_sniff_skip_slot *skip_slot(struct s5_sniff_skips *t, uint8_t proto, const ip_addr_t *ip,
                                            uint16_t port, uint8_t addr[16], uint8_t *v6) {
  memset(addr, 0, 16);
  *v6 = IP_IS_V6(ip) ? 1 : 0;
  if (*v6) memcpy(addr, ip_2_ip6(ip)->addr, 16);
  else memcpy(addr, &ip_2_ip4(ip)->addr, 4);
  uint64_t h = (0xcbf29ce484222325ull ^ port ^ (uint64_t)proto << 16) * 0x100000001b3ull;
  for (int i = 0; i < 16; i++) h = (h ^ addr[i]) * 0x100000001b3ull;
  h ^= h >> 29;
  return &t->slot[h & (S5_SNIFF_SKIP_SLOTS - 1)];
}

static int skip_same(const struct s5_sniff_skip_slot *e, uint8_t proto, const uint8_t addr[16], uint16_t port,
                     uint8_t v6) {
  return e->port == port && e->proto == proto && e->v6 == v6 && memcmp(e->addr, addr, 16) == 0;
}

int s5_sniff_skipped(struct s5_sniff_skips *t, uint8_t proto, const ip_addr_t *ip, uint16_t port,
                     uint64_t now) {
  uint8_t addr[16], v6;
  struct s5_sniff_skip_slot *e = skip_slot(t, proto, ip, port, addr, &v6);
  if (!skip_same(e, proto, addr, port, v6) || e->until == 0) return 0;
  if (now >= e->until) { /* its time is over: sniffed again, from no failure */
    e->until = 0;
    return 0;
  }
  return 1;
}

void s5_sniff_learnt(struct s5_sniff_skips *t, uint8_t proto, const ip_addr_t *ip, uint16_t port,
                     uint64_t now, int failed) {
  uint8_t addr[16], v6;
  struct s5_sniff_skip_slot *e = skip_slot(t, proto, ip, port, addr, &v6);
  if (!skip_same(e, proto, addr, port, v6)) {
    if (!failed) return; /* nothing to remember */
    memset(e, 0, sizeof *e);
    memcpy(e->addr, addr, 16);
    e->port = port;
    e->proto = proto;
    e->v6 = v6;
  }
  if (!failed) {
    e->fails = 0;
    return;
  }
  if (++e->fails >= S5_SNIFF_SKIP_FAILS) {
    e->fails = 0;
    e->until = now + S5_SNIFF_SKIP_MS;
  }
}
