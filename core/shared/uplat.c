/* SPDX-License-Identifier: MIT */
/* The upstreams' latency and fastest's choice (see uplat.h). */
#include "shared/uplat.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

uint64_t s5_uplat_ewma(uint64_t old, uint64_t sample) {
  if (sample == 0) sample = 1; /* 0 means none */
  if (old == 0) return sample;
  int64_t next = (int64_t)old + ((int64_t)sample - (int64_t)old) / 4;
  return next > 0 ? (uint64_t)next : 1;
}

uint64_t s5_uplat_median3(uint64_t us, uint64_t prev1, uint64_t prev2) {
  if (prev1 == 0) return us;
  if (prev2 == 0) return us < prev1 ? us : prev1;
  uint64_t lo = us < prev1 ? us : prev1, hi = us < prev1 ? prev1 : us;
  return prev2 < lo ? lo : prev2 > hi ? hi : prev2;
}

void s5_uptab_latency(struct s5_uptab *t, unsigned slot, uint64_t us, uint64_t sample) {
  struct s5_up_slot *u = &t->u[slot];
  STORE(&u->lat_last_us, us != 0 ? us : 1);
  uint64_t old = LOAD(&u->lat_avg_us);
  while (!__atomic_compare_exchange_n(&u->lat_avg_us, &old, s5_uplat_ewma(old, sample), 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
}

void s5_uptab_latency_lost(struct s5_uptab *t, unsigned slot) {
  STORE(&t->u[slot].lat_last_us, 0);
  STORE(&t->u[slot].lat_avg_us, 0);
}

int s5_uplat_choose(const uint64_t *lat, const uint8_t *usable, unsigned n, int current, uint64_t tol_us) {
  int best = -1;
  for (unsigned j = 0; j < n; j++)
    if (usable[j] && lat[j] != 0 && (best < 0 || lat[j] < lat[best])) best = (int)j;
  if (best < 0 || current < 0 || (unsigned)current >= n || !usable[current] || lat[current] == 0) return best;
  return lat[current] > lat[best] + tol_us ? best : current;
}
