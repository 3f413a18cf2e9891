/* SPDX-License-Identifier: MIT */
/* The failure limiter (failure.h): one line now, then one summary line per
 * S5_FAILURE_LOG_MS while failures go on. */
#include "base/failure.h"

#include <stdio.h>

static void failures_flush(struct s5_failures *f, uint64_t now) {
  if (f->unlogged == 0) return;
  s5_log(f->level, "%llu more sessions failed in the last %llu s (latest: %s)",
         (unsigned long long)f->unlogged, (unsigned long long)(now - f->logged_ms) / 1000, f->last);
  f->unlogged = 0;
  f->level = S5_LOG_DEBUG;
  f->logged_ms = now;
}

void s5_failures_note(struct s5_failures *f, uint64_t now, enum s5_log_level level, const char *what) {
  int quiet = f->logged_ms != 0 && now - f->logged_ms < S5_FAILURE_LOG_MS;
  if (quiet || f->unlogged > 0) {
    snprintf(f->last, sizeof f->last, "%s", what);
    if (f->unlogged++ == 0 || level < f->level) f->level = level;
    if (!quiet) failures_flush(f, now);
    return;
  }
  s5_log(level, "%s (further failures: one line per %u s)", what, S5_FAILURE_LOG_MS / 1000);
  f->logged_ms = now;
}

void s5_failures_tick(struct s5_failures *f, uint64_t now) {
  if (f->unlogged > 0 && now - f->logged_ms >= S5_FAILURE_LOG_MS) failures_flush(f, now);
}
