/* SPDX-License-Identifier: MIT */
/* [sniff]: a worker's table of destinations that failed to sniff, TCP's
 * and UDP's (core/tcp/sniffing.c, core/udp/udp_sniff.c): 5 failures in a
 * row (no name, or silence) and a destination (protocol, address, port)
 * is not sniffed for 10 minutes, so that a server-first service on a
 * listed port pays the timeout once. Bounded: a newer destination takes
 * an older one's slot. No sharing, no counting (the callers count). */
#ifndef S5_CORE_SNIFF_SKIP_H
#define S5_CORE_SNIFF_SKIP_H

#include <stdint.h>

#include "lwip/ip_addr.h"

#define S5_SNIFF_SKIP_SLOTS 1024 /* a power of two */
#define S5_SNIFF_SKIP_FAILS 5
#define S5_SNIFF_SKIP_MS (10 * 60 * 1000ull)
struct s5_sniff_skips {
  struct s5_sniff_skip_slot {
    uint8_t addr[16];
    uint16_t port;
    uint8_t v6, proto; /* proto: IPPROTO_TCP or IPPROTO_UDP */
    uint8_t fails;     /* in a row, since the last name found */
    uint64_t until;    /* not sniffed before (uv_now); 0: sniffed */
  } slot[S5_SNIFF_SKIP_SLOTS];
};

/* Is the destination skipped now? (The caller counts sniff_skipped.) */
int s5_sniff_skipped(struct s5_sniff_skips *t, uint8_t proto, const ip_addr_t *ip, uint16_t port,
                     uint64_t now);
/* The destination's sniff ended: with a name (failed 0) or without. */
void s5_sniff_learnt(struct s5_sniff_skips *t, uint8_t proto, const ip_addr_t *ip, uint16_t port,
                     uint64_t now, int failed);

#endif
