/* SPDX-License-Identifier: MIT */
/* The failure limiter: a line about every failed session or association
 * would let a dead proxy (or a flood of refused CONNECTs) fill the log, so
 * the first failure is logged at once, then at most one line per
 * S5_FAILURE_LOG_MS with the count of failures meanwhile, at the most
 * severe level among them, naming the latest. One per worker (core/ctx/wctx.h);
 * it only sees times handed in, so it needs no loop of its own. */
#ifndef S5_CORE_FAILURE_H
#define S5_CORE_FAILURE_H

#include <stdint.h>

#include "base/log.h"

#define S5_FAILURE_LOG_MS 10000

struct s5_failures {
  uint64_t logged_ms;      /* last line about a failure */
  uint64_t unlogged;       /* failures since, not logged */
  enum s5_log_level level; /* the most severe of them */
  char last[200];          /* the latest of them */
};

/* A failure (what: why, and whose) at time now (ms). */
void s5_failures_note(struct s5_failures *f, uint64_t now, enum s5_log_level level, const char *what);

/* From a timer: the summary line, once S5_FAILURE_LOG_MS passed since the last line. */
void s5_failures_tick(struct s5_failures *f, uint64_t now);

#endif
