/* SPDX-License-Identifier: MIT */
/* [group NAME] strategy = fastest: each upstream's latency in the health
 * table (core/shared/uptab.h: lat_last_us, lat_avg_us), fed by queue 0's
 * probes (core/socks5/latprobe.c), and the choice among a group's members
 * with hysteresis, so that two members of about the same speed do not take
 * turns. */
#ifndef S5_CORE_UPLAT_H
#define S5_CORE_UPLAT_H

#include <stdint.h>

#include "shared/uptab.h"

/* The smoothed latency after sample (µs, > 0) given the one before (0:
 * none yet, the sample is taken as it is): an EWMA of weight 1/4, so that
 * a lasting change shows within a few probes and one slow answer moves it
 * by a quarter. */
uint64_t s5_uplat_ewma(uint64_t old, uint64_t sample);

/* The sample the smoothed figure takes from a probe: the median of the
 * last three probes (us and the two before it, 0 = none: of two, the
 * lower), so that one slow answer in a run of fast ones (a loaded proxy,
 * a lost segment) moves nothing, and a lasting change passes at the second
 * probe. */
uint64_t s5_uplat_median3(uint64_t us, uint64_t prev1, uint64_t prev2);

/* A probe of slot took us: lat_last_us; and lat_avg_us takes sample (its
 * filtered figure, s5_uplat_median3) by s5_uplat_ewma. Lock-free: a
 * compare-and-swap loop, no sample lost when several feed it. */
void s5_uptab_latency(struct s5_uptab *t, unsigned slot, uint64_t us, uint64_t sample);
/* slot's probe failed or timed out: unmeasured again (0), so that fastest
 * does not choose it until a probe answers. */
void s5_uptab_latency_lost(struct s5_uptab *t, unsigned slot);

/* The choice among n members, each with its smoothed latency lat[j] (µs,
 * 0 = unmeasured) and usable[j] (up, not removed): the current one (a
 * position, -1 = none) stays while it is usable and measured, unless a
 * usable measured member is faster by more than tol_us; else the usable
 * measured one of lowest latency (the first of equals). Returns the
 * position, or -1 when no usable member is measured. */
int s5_uplat_choose(const uint64_t *lat, const uint8_t *usable, unsigned n, int current, uint64_t tol_us);

#endif
