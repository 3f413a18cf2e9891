/* SPDX-License-Identifier: MIT */
/* Handing free heap back to the kernel once a load is over. glibc's malloc
 * keeps what a burst of sessions freed: the top of a heap only beyond
 * M_TRIM_THRESHOLD (S5_MEMTRIM_BUSY_THRESHOLD), and nothing at all of free
 * chunks below a chunk still in use. After 10,000 connections the daemon
 * kept its peak RSS although every session was gone (e2e.rss_after_load).
 * So a worker that opened and closed no session for a whole period after a
 * busy one lets go of what it keeps for bursts and of the free top of its
 * own arena, and the last worker of the process to go idle calls
 * malloc_trim(0), which releases the free pages inside every arena (thread
 * mode: every worker's). Never on the data path: checked from the worker's
 * lwIP timer, once a period. */
#ifndef S5_CORE_MEMTRIM_H
#define S5_CORE_MEMTRIM_H

#include <stdint.h>

#include "shared/stats.h"

/* Free heap malloc keeps before giving pages back to the kernel while
 * busy. By default (128 KiB) every burst of 64 KiB packets freed and
 * allocated again costs page faults: 9-13k per GB uploaded, none with
 * this. Idle, the worker gives it back (above). */
#define S5_MEMTRIM_BUSY_THRESHOLD (8 << 20)

/* A whole period with no session opened or closed is idle. The worker
 * looks on every tick while busy: 1-1.25 s after the last session while
 * lwIP still holds its pcbs (closing, TIME_WAIT: the tick runs at 250 ms),
 * 1-2 s once it holds none (the idle tick, once a second, which runs
 * whether or not anything else wakes the worker), plus the tick's
 * lateness. */
#define S5_MEMTRIM_PERIOD_MS 1000

struct s5_memtrim {
  uint64_t seen[4];  /* tcp_total, tcp_active, udp_total, udp_active at the last check */
  uint64_t moved_ms; /* when a check last saw them move */
  int busy;          /* sessions came or went since this worker last went idle */
};

/* At start, before any thread or worker: malloc's busy threshold. Returns
 * 0, or -1 when malloc refused it (the default then holds; idle workers
 * then skip their own arena's step too). */
int s5_memtrim_setup(void);

/* Once a period at least, and as often as wished while m->busy (now_ms:
 * the loop's clock): 1 when the worker has just gone idle after a busy
 * period (it should then let go of its caches and call
 * s5_memtrim_release()). */
int s5_memtrim_went_idle(struct s5_memtrim *m, const struct s5_queue_stats *st, uint64_t now_ms);

/* The worker went idle: the free top of its own arena goes back, and when
 * no other worker of the process is busy, the free pages of every arena.
 * Returns 1 when the latter was done. */
int s5_memtrim_release(void);

/* The worker stops: a busy one no longer keeps the others from trimming. */
void s5_memtrim_stop(struct s5_memtrim *m);

#endif
