/* SPDX-License-Identifier: MIT */
/* Live reload (SIGHUP, systemctl reload): the configuration read again
 * exactly as at start (the --config file, then the flags), what cannot
 * change while running kept (one warning per key: the key table says which
 * are live), and the result published in the config slot
 * (core/shared/config_slot.h), from which every worker takes it for the
 * sessions it opens from then on. A file that does not load changes
 * nothing: the error is logged with file:line:key and counted.
 *
 * The reading and the rules' compile take seconds for a list of millions
 * of names, so they run on a thread of their own, one reload at a time,
 * against a copy of the live configuration; the control loop goes on
 * answering the stats socket, signals and dead workers meanwhile, and
 * publishes (config slot, upstream table, counters, the log lines) when the
 * thread says it is done through an eventfd the loop polls. */
#ifndef S5_THREADS_RELOAD_H
#define S5_THREADS_RELOAD_H

#include "ini/config.h"
#include "shared/stats.h"

/* main(): the command line to read again, the config slot, the eventfd.
 * Returns 0 or -1 (logged). */
int s5_reload_setup(int argc, char **argv);

/* The fd that turns readable when a reload's thread is done (the control
 * loop polls it; s5_reload_finish then). */
int s5_reload_fd(void);

/* Starts a reload's thread, reading against a copy of *live; none may be
 * running. Returns 0, or -1 when the thread did not start (logged as a
 * failed reload, counted in stats; the configuration unchanged). */
int s5_reload_start(const struct s5_config *live, struct s5_stats_area *stats);

/* 1 from s5_reload_start until s5_reload_finish (or s5_reload_abandon)
 * joined the thread: no fork() meanwhile (threads/modes/process_mode.c). */
int s5_reload_running(void);

/* The fd was readable: joins the thread and, when the configuration loaded
 * and checked, merges it into *live, applies the log settings of this
 * process, publishes it and returns 1; on failure logs why, counts it in
 * stats and returns 0, *live untouched; -1 when no reload was done. */
int s5_reload_finish(struct s5_config *live, struct s5_stats_area *stats);

/* Process mode: worker q died; its rules may be compiled over until its
 * replacement takes some. */
void s5_reload_worker_died(unsigned q);

/* The daemon stops: a running reload is abandoned (its walk over the rules
 * stops at its next line; waited for at most 1 s), nothing published. */
void s5_reload_abandon(void);

#endif
