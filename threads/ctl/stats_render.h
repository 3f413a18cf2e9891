/* SPDX-License-Identifier: MIT */
/* The shared counters (core/shared/stats.h) as text: the stats socket's
 * JSON, --stats's table, SIGUSR1's summary line. */
#ifndef S5_THREADS_STATS_RENDER_H
#define S5_THREADS_STATS_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "shared/stats.h"

/* The JSON document the stats socket answers with: {"totals":{...},"queues":[{...},...]}.
 * Returns its length, or the length it would need when cap is too small. */
size_t s5_stats_json(const struct s5_stats_area *a, char *buf, size_t cap);

/* Parses a document written by s5_stats_json() back into totals and up to
 * max queues. Returns the number of queues, or -1 when it is not one. */
int s5_stats_parse(const char *json, struct s5_queue_stats *totals, struct s5_queue_stats *queues,
                   unsigned max);

/* A human table: one row per queue and a total row, main counters only. */
void s5_stats_table(FILE *out, const struct s5_queue_stats *totals, const struct s5_queue_stats *queues,
                    unsigned n);

/* The one-line summary of one queue that SIGUSR1 logs. */
void s5_stats_summary(const struct s5_queue_stats *st, char *buf, size_t len);

#endif
