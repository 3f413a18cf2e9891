/* SPDX-License-Identifier: MIT */
/* The mapped-DNS lookups: which name a pool address stands for (a CONNECT
 * or a UDP datagram to it goes to the proxy by name) and which address
 * stands for a name (the resolver's answers; a datagram the proxy reports
 * as coming from a name). One module over the shared table (dns_table.c),
 * so that the resolver (dns.c), the sessions (handshake.c) and the UDP
 * associations (udp.c) each use it and none reaches into another.
 *
 * The table is created by s5_dnsmap_setup() in the main process before any
 * worker starts, in a shared mapping, so every worker thread or worker
 * process of one s5tund uses the same names and addresses. */
#ifndef S5_CORE_DNSMAP_H
#define S5_CORE_DNSMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ini/config.h"
#include "lwip/ip_addr.h"

/* Creates the shared table for [dns] network (and network6). Call once,
 * before the workers start. Returns 0, or -1 (logged). */
int s5_dnsmap_setup(const struct s5_config *cfg);

/* The state file ([dns] state, see dns_state.h) is read by
 * s5_dnsmap_setup() and written by the main process only, never by a
 * worker: s5_dnsmap_state_tick(), called about once a second, writes it
 * when names were mapped since the last write and that was at least
 * S5_DNSMAP_STATE_PERIOD_MS ago (the first change after start at once);
 * s5_dnsmap_state_stop() writes it at stop, once the workers are gone. The
 * table's lock is held only while the names are copied out. */
#define S5_DNSMAP_STATE_PERIOD_MS 60000
void s5_dnsmap_state_tick(void);
void s5_dnsmap_state_stop(void);

/* 1 once the table exists (mapped DNS is on). */
int s5_dnsmap_on(void);

/* 1 when the table has IPv6 addresses too ([dns] network6). */
int s5_dnsmap_has_pool6(void);

/* The name a destination address stands for. Returns 1 with the name in
 * name (cap >= 256), 0 when dst is not a mapped address (or mapped DNS is
 * off), -1 when it is in the pool but stands for no name (any more). */
int s5_dnsmap_name_of(const struct sockaddr *dst, char *name, size_t cap);
int s5_dnsmap_name_of_ip(const ip_addr_t *dst, char *name, size_t cap);

/* The pool address (network order; 4 bytes, or 16 from the IPv6 pool when
 * v6 is set) standing for name (lowercase, 1..253 bytes), mapping it if
 * needed. Returns 0, or -1 when that pool is off or len is out of range. */
int s5_dnsmap_address(const char *name, size_t len, int v6, uint8_t addr[16]);

/* The same for a name as a proxy gave it (any case), as an lwIP address:
 * for datagrams a proxy reports as coming from a name. */
int s5_dnsmap_address_of(const char *name, size_t len, int v6, ip_addr_t *out);

#endif
