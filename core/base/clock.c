/* SPDX-License-Identifier: MIT */
#include "base/clock.h"

#include <time.h>

uint64_t s5_now_ms(void) {
  struct timespec ts;
  /* Cannot fail on Linux with a valid pointer and a clock every kernel has. */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
