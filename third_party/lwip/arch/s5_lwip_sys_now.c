/* SPDX-License-Identifier: MIT */
/* sys_now(): the millisecond clock lwIP asks for.
 *
 * CLOCK_MONOTONIC is immune to wall-clock steps, and clock_gettime() is
 * thread-safe and (through the vDSO) cheap, so every worker may call it
 * without coordination. The result wraps every ~49.7 days; lwIP compares
 * times only by unsigned difference, so the wrap is harmless. */
#include <time.h>

#include "lwip/sys.h"

u32_t sys_now(void) {
  struct timespec ts;

  /* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer; if it ever
   * did, 0 keeps lwIP's arithmetic defined instead of reading garbage. */
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return (u32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}
