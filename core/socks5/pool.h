/* SPDX-License-Identifier: MIT */
/* A worker's warm pool of proxy connections (pool = N in [socks5] or an
 * [upstream NAME], N per upstream while it is up): each one
 * connected, greeted and authenticated ahead of time (proxy.c's steps,
 * stopping before the request), so that a new TCP session costs one round
 * trip to the proxy, its CONNECT, before the client's SYN-ACK. A
 * Shadowsocks one is connected with nothing sent (no salt yet: its pump
 * makes one per connection, sent with the target in a session's first
 * chunk), so such a session costs no round trip before its SYN-ACK; ss-server
 * keeps an idle connection 60 s by default (-t), over our age.
 *
 * - Refilled in the background up to N, one worker's loop, no locks.
 * - Recycled after a jittered age (S5_POOL_AGE_MS plus up to
 *   S5_POOL_JITTER_MS), below the shortest idle-negotiation timeout of
 *   common servers (danted: timeout.negotiate, 30 s by default; microsocks
 *   and OpenSSH's ssh -D keep an idle negotiation open).
 * - Never hands out a dead connection: one the proxy closed is dropped as
 *   its EOF arrives, and each is checked (a non-blocking MSG_PEEK) when
 *   taken; one that dies between that check and its CONNECT reply is
 *   retried once on a fresh connection (proxy.c, pool_retried).
 * - Backs off (exponential, S5_POOL_BACKOFF_MIN_MS..MAX, jittered) while
 *   the proxy refuses or warm-ups fail; sessions then connect fresh.
 * - Stops refilling after S5_POOL_IDLE_MS without a session (an idle
 *   daemon holds no proxy connections and does not wake up for them);
 *   the next session is a miss and fills it again.
 * - Flushed when a reload changes the proxy (address, port, credentials,
 *   mark) or the size; closed on drain and stop.
 * UDP associations do not use it (one control connection per association,
 * rare next to TCP sessions, and ASSOCIATE names our relay socket).
 *
 * Lifecycle: s5_pool_init (timer), s5_pool_start (fills), s5_pool_stop
 * (everything closed; entries freed in their close callbacks). */
#ifndef S5_CORE_POOL_H
#define S5_CORE_POOL_H

#include <stdint.h>
#include <uv.h>

#include "shared/uptab.h"
#include "socks5/proxy.h"

struct s5_wctx;
struct s5_config;
struct s5_pool_conn;

#define S5_POOL_AGE_MS 20000u          /* recycled after this ... */
#define S5_POOL_JITTER_MS 5000u        /* ... plus up to this: all under danted's 30 s */
#define S5_POOL_BACKOFF_MIN_MS 500u    /* first wait after a failed warm-up */
#define S5_POOL_BACKOFF_MAX_MS 30000u  /* doubling stops here */
#define S5_POOL_IDLE_MS (300u * 1000u) /* no session for this long: no more refills */
/* S5TUND_POOL_SHORT_AGE=1 (tests): recycled after 1 s plus up to 0.5 s,
 * no refills after 5 s without a session. */
#define S5_POOL_SHORT_AGE_MS 1000u
#define S5_POOL_SHORT_JITTER_MS 500u
#define S5_POOL_SHORT_IDLE_MS 5000u

struct s5_pool {
  struct s5_wctx *w;
  uv_timer_t timer;          /* the next recycle or the end of a backoff */
  struct s5_pool_conn *list; /* warming and ready connections */
  unsigned live;             /* in list */
  /* Per upstream, by its row in the shared table (core/shared/uptab.h): */
  unsigned live_up[S5_UPTAB_SLOTS];    /* entries in list */
  uint64_t backoff_ms[S5_UPTAB_SLOTS]; /* 0 while warm-ups succeed */
  uint64_t retry_at[S5_UPTAB_SLOTS];   /* no warm-up before (uv_now) */
  uint64_t last_demand;                /* uv_now of the last session */
  uint64_t rng;                        /* jitter */
  uint64_t age_ms, jitter_ms, idle_ms; /* S5_POOL_AGE_MS, _JITTER_MS, _IDLE_MS, or the short ones */
  unsigned started : 1;
  unsigned stopped : 1;
  unsigned await_demand : 1; /* the proxy closed a warm connection before its recycle: */
                             /* no refill until the next session (no churn while idle) */
};

void s5_pool_init(struct s5_pool *pool, struct s5_wctx *w);
void s5_pool_start(struct s5_pool *pool);
void s5_pool_stop(struct s5_pool *pool);

/* The worker took a new configuration: connections to a proxy it no
 * longer has (or with other credentials) are closed, each upstream's
 * share resized. */
void s5_pool_reload(struct s5_pool *pool);

/* In place of s5_proxy_start for a session's CONNECT (p initialised with
 * its configuration): a pooled connection when one is ready (pool_hits),
 * else a fresh one (pool_misses while the pool is on). pool may be NULL.
 * Returns 0, or < 0 with why (nothing reported then). */
int s5_pool_connect(struct s5_pool *pool, struct s5_proxy *p, char *why, size_t cap);

#endif
