/* SPDX-License-Identifier: MIT */
/* The shared counter area: creation and reading (its JSON, table and
 * summary forms are threads/ctl/stats_render.c, their only users'). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "shared/stats.h"

struct s5_stats_area *s5_stats_create(unsigned queues) {
  size_t size = sizeof(struct s5_stats_area) + (size_t)queues * sizeof(struct s5_queue_stats);
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  struct s5_stats_area *a = p; /* mmap gives zeroed memory */
  a->queues = queues;
  a->started_unix = (uint64_t)time(NULL);
  return a;
}

static void stats_add(struct s5_queue_stats *sum, const struct s5_queue_stats *st) {
#define S5_STATS_SUM(name, kind, help) sum->name += S5_STAT_GET(st, name);
  S5_STATS_COUNTERS(S5_STATS_SUM)
#undef S5_STATS_SUM
  sum->ready += S5_STAT_GET(st, ready);
}

void s5_stats_read(const struct s5_stats_area *a, unsigned i, struct s5_queue_stats *out) {
  memset(out, 0, sizeof *out);
  if (i < a->queues) {
    stats_add(out, &a->q[i]);
    out->heartbeat_ms = S5_STAT_GET(&a->q[i], heartbeat_ms);
    out->pid = S5_STAT_GET(&a->q[i], pid);
    return;
  }
  for (unsigned q = 0; q < a->queues; q++) stats_add(out, &a->q[q]);
}
