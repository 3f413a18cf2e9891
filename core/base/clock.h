/* SPDX-License-Identifier: MIT */
/* The one clock of the control plane and the supervisor: monotonic
 * milliseconds, immune to wall-clock steps. Deadlines, restart delays,
 * heartbeats and ages are all compared on it. A libuv loop's own uv_now()
 * stays the clock of what runs on that loop (it is this clock, cached per
 * turn). */
#ifndef S5_CORE_CLOCK_H
#define S5_CORE_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t s5_now_ms(void);

#endif
