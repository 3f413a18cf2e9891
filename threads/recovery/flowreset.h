/* SPDX-License-Identifier: MIT */
/* Process mode: the TCP clients of a worker that died are reset by the
 * supervisor (design in flowreset.c). */
#ifndef S5_THREADS_FLOWRESET_H
#define S5_THREADS_FLOWRESET_H

#include "ini/config.h"
#include "shared/flowtab.h"
#include "shared/stats.h"

struct s5_flowreset;

/* fd_of(arg, queue): that queue's fd when its worker serves, else -1. */
typedef int (*s5_serving_fd_fn)(void *arg, unsigned queue);

/* Maps the flow tables (before the first fork). NULL after logging why. */
struct s5_flowreset *s5_flowreset_create(const struct s5_config *cfg, struct s5_stats_area *stats,
                                         s5_serving_fd_fn fd_of, void *arg);
void s5_flowreset_free(struct s5_flowreset *r);

/* The table a worker of this queue records its flows in. */
struct s5_flowq *s5_flowreset_table(struct s5_flowreset *r, unsigned queue);

/* The queue's worker died (reaped; its replacement not yet started): takes
 * its flows, logs one line, sends the first round of probes. */
void s5_flowreset_worker_died(struct s5_flowreset *r, unsigned queue);

/* Milliseconds until the next round is due, or -1 for none; and sending
 * the rounds that are due. */
long s5_flowreset_next_in(const struct s5_flowreset *r);
void s5_flowreset_due(struct s5_flowreset *r);

#endif
