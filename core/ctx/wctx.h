/* SPDX-License-Identifier: MIT */
/* The worker context: what every module of one worker reaches (its loop,
 * its configuration, its counters, its lwIP netif, its failure limiter),
 * and nothing else: what a module owns (the TUN fd, UDP's batching and
 * TUN writer) stays with that module. The modules below the worker (netif.c, session.c,
 * handshake.c, proxy.c, udp.c, assoc.c, dns.c, dns_tcp.c, icmp.c,
 * sessionlog.c) take this instead of the worker, so that none of them can
 * reach up into it: the worker (core/worker/worker.c) creates them, drives them,
 * and is told what it needs to know through callbacks. Touched only by the worker's own thread. */
#ifndef S5_CORE_WCTX_H
#define S5_CORE_WCTX_H

#include <stdint.h>
#include <uv.h>

#include "ini/config.h"
#include "base/failure.h"
#include "shared/stats.h"
#include "lwip/netif.h"

struct s5_cfg_snap;
struct s5_flowq;
struct s5_sniff_skips;

struct s5_wctx {
  uv_loop_t loop;
  struct netif netif; /* the TUN queue as lwIP sees it (core/netif/netif.c) */
  unsigned index;     /* queue number, for logs */

  const struct s5_config *cfg;  /* the newest configuration; sessions hold the one they started with */
  const struct s5_config *cfg0; /* the start-up one (not a snapshot: never freed here) */
  struct s5_cfg_snap *snap;     /* cfg's snapshot after a reload, NULL before */
  uint64_t cfg_gen;             /* generation of the config slot taken (core/shared/config_slot.h) */

  struct s5_queue_stats *stats; /* this queue's slot in the shared area */
  struct s5_flowq
    *flows; /* process mode: this queue's shared flow table (core/shared/flowtab.h), else NULL */

  struct s5_sniff_skips *sniff_skips; /* [sniff]: destinations that failed (sniff/sniff_skip.h), the
                                         TCP session table's, given by the worker; NULL: none */

  int draining; /* no new sessions; the worker ends when the last one does */
  int stopping; /* everything is being closed */

  struct s5_failures fail;        /* s5_wctx_failure() */
  struct {                        /* queue 0: the last destination a session reached through a proxy, */
    struct sockaddr_storage addr; /* what checks CONNECT to without [balance] check-target */
    char name[256];               /* (core/socks5/upcheck.c); its mapped name, or "" */
  } reached;
  struct {              /* [log] sessions: this second's line budget (core/ctx/sessionlog.c) */
    uint64_t second_ms; /* start of this second's lines */
    unsigned lines;     /* written in it */
    uint64_t dropped;   /* left out since the last summary */
  } slog;
};

/* Starts w for queue `index` with the start-up configuration: its loop
 * exists afterwards. Returns 0 or a libuv error (nothing to undo then). */
int s5_wctx_init(struct s5_wctx *w, const struct s5_config *cfg, unsigned index,
                 struct s5_queue_stats *stats);

/* Releases the configuration taken last and closes the loop (after the
 * last handle closed). */
void s5_wctx_close(struct s5_wctx *w);

/* Live reload. A session or association holds the configuration it
 * started with: hold at its start, release when it is freed. A snapshot
 * lives while something holds it. */
const struct s5_config *s5_wctx_cfg_hold(struct s5_wctx *w);
void s5_wctx_cfg_release(struct s5_wctx *w, const struct s5_config *cfg);

/* Takes the config slot's newest generation, if there is one: sessions
 * from now on start with it. Returns 1 when it took one, 0 otherwise. */
int s5_wctx_cfg_take(struct s5_wctx *w);

/* A session or association failed (what: why, and whose): through the
 * failure limiter (core/base/failure.h). Failures to reach the proxy itself are
 * S5_LOG_WARN (visible at level = warn); the rest, S5_LOG_INFO. */
void s5_wctx_failure(struct s5_wctx *w, enum s5_log_level level, const char *what);

#endif
