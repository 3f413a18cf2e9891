/* SPDX-License-Identifier: MIT */
/* [group NAME] strategy = fastest: queue 0's worker times each member of
 * every fastest group every probe-interval (jittered by up to a tenth
 * either way) with a real request through it, within probe-timeout:
 * `connect HOST:PORT` to the proxy's grant, `http://HOST:PORT/PATH` to the
 * response's status line (a GET on the granted connection). Each answer is
 * a sample of the member's smoothed latency (core/shared/uplat.h: the
 * median of its last three probes, into an EWMA); a probe
 * that fails or times out makes it unmeasured, so that it is not chosen
 * until it answers again (its health is the checks' and the sessions'
 * business, not the probe's). After each sample every fastest group
 * chooses again with hysteresis (tolerance) and a change is said at info.
 *
 * One request per member per interval: a member of several fastest groups
 * is probed once, with the first such group's probe and interval. Down
 * members are not probed (upcheck.c checks them) and lose their figure:
 * one that comes back is measured afresh.
 *
 * Lifecycle: s5_latprobe_init (timer), s5_latprobe_start, s5_latprobe_stop
 * (probes closed; freed in their close callbacks). */
#ifndef S5_CORE_LATPROBE_H
#define S5_CORE_LATPROBE_H

#include <stdint.h>
#include <uv.h>

#include "shared/uptab.h"

struct s5_wctx;

struct s5_latprobe {
  struct s5_wctx *w;
  uv_timer_t timer;
  uint64_t busy;                    /* slots with a probe in flight, a bit each */
  uint64_t due[S5_UPTAB_SLOTS];     /* the loop's ms when each slot's next probe is due; 0 = at once */
  uint64_t last[S5_UPTAB_SLOTS][2]; /* each slot's two probes before (µs; 0 = none): the median's */
  uint64_t rng;                     /* jitter */
  unsigned started : 1;
  unsigned stopped : 1;
  struct s5_latprobe_probe *probes; /* in flight */
};
_Static_assert(S5_UPTAB_SLOTS <= 64, "struct s5_latprobe: busy holds a bit per slot");

void s5_latprobe_init(struct s5_latprobe *l, struct s5_wctx *w);
void s5_latprobe_start(struct s5_latprobe *l);
void s5_latprobe_stop(struct s5_latprobe *l);
/* The worker took a reloaded configuration: its fastest groups are probed
 * from now on (none: the timer stops). */
void s5_latprobe_reload(struct s5_latprobe *l);

#endif
