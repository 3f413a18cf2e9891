/* SPDX-License-Identifier: MIT */
/* [balance] check-interval: queue 0's worker checks each down upstream
 * (core/shared/uptab.h) every check-interval, jittered by up to a quarter
 * either way, in its own protocol to the end: greeting, authentication and
 * a CONNECT (to check-target, else to the last destination this queue
 * reached, else to the proxy's own address), within check-timeout. One
 * that works is up again for every worker (upcheck.c says what works). Up upstreams are not checked:
 * the sessions through them are their check. One upstream alone is never
 * down, so never checked.
 *
 * Lifecycle: s5_upcheck_init (timer), s5_upcheck_start, s5_upcheck_stop
 * (probes closed; freed in their close callbacks). */
#ifndef S5_CORE_UPCHECK_H
#define S5_CORE_UPCHECK_H

#include <stdint.h>
#include <uv.h>

struct s5_wctx;

struct s5_upcheck {
  struct s5_wctx *w;
  uv_timer_t timer;
  uint64_t busy; /* upstreams' slots with a probe in flight, a bit each */
  uint64_t rng;  /* jitter */
  unsigned started : 1;
  unsigned stopped : 1;
  struct s5_upcheck_probe *probes; /* in flight */
};

void s5_upcheck_init(struct s5_upcheck *c, struct s5_wctx *w);
void s5_upcheck_start(struct s5_upcheck *c);
void s5_upcheck_stop(struct s5_upcheck *c);
/* The worker took a reloaded configuration: checks start when it brought
 * a second upstream (they stop at the next round when one is left). */
void s5_upcheck_reload(struct s5_upcheck *c);

#endif
