/* SPDX-License-Identifier: MIT */
/* LWIP_RAND() (and the TCP ISN hook): a per-thread xorshift64* generator.
 *
 * Each worker thread owns an lwIP instance, so the generator state is
 * thread-local too: no locking, no sharing of sequence between workers.
 * The state is seeded from getrandom() on first use. In process mode the
 * workers are forked; a child inheriting an already-seeded state would
 * repeat its parent's (and its siblings') numbers, so a fork handler
 * (pthread_atfork, registered before main) clears the state in the child,
 * which reseeds at its first draw: no system call per draw (LWIP_RAND() is
 * called once per new connection, for its ISN). Not a CSPRNG: ISNs here
 * only need to be unpredictable to blind off-path guessing, and the peers
 * are local. */
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "arch/cc.h"

static __thread uint64_t s5_rand_state; /* 0: not seeded (in this process) yet */

/* In the child of a fork: the forking thread's state, the only one the
 * child has, is its parent's; it reseeds. */
static void s5_rand_forked(void) { s5_rand_state = 0; }

__attribute__((constructor)) static void s5_rand_register(void) {
  if (pthread_atfork(NULL, NULL, s5_rand_forked) != 0) abort(); /* ENOMEM at start-up */
}

/* splitmix64 step: spreads weak fallback entropy over all 64 bits. */
static uint64_t s5_rand_mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void s5_rand_seed(void) {
  uint64_t seed = 0;
  struct timespec ts;

  /* GRND_NONBLOCK: never stall a worker at early boot; a short or failed
   * read falls back to clock, pid and a per-thread address, which still
   * differ between workers. */
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed ^= (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
    seed ^= (uint64_t)getpid() << 16;
    seed ^= (uint64_t)(uintptr_t)&s5_rand_state;
  }
  seed = s5_rand_mix(seed);
  s5_rand_state = seed != 0 ? seed : 0x2545f4914f6cdd1dull; /* 0 is a fixed point */
}

uint32_t s5_lwip_rand(void) {
  uint64_t x;

  if (s5_rand_state == 0) s5_rand_seed();
  x = s5_rand_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  s5_rand_state = x;
  return (uint32_t)((x * 0x2545f4914f6cdd1dull) >> 32);
}
