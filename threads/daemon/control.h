/* SPDX-License-Identifier: MIT */
/* The main thread's loop, the same in both run modes: signals (through a
 * signalfd), the stats socket, readiness, and a watchdog over the workers'
 * heartbeats. The run mode plugs in what differs: what a SIGCHLD means and
 * when it next needs a tick (process mode: restarts). */
#ifndef S5_THREADS_CONTROL_H
#define S5_THREADS_CONTROL_H

#include "ini/config.h"
#include "shared/stats.h"

struct s5_control_mode {
  void *arg;
  /* SIGCHLD arrived. Returns 0, or -1 when the daemon must stop (exit 1). */
  int (*on_child)(void *arg);
  /* SIGHUP arrived, after the main log was reopened (may be NULL). */
  void (*on_hangup)(void *arg);
  /* --connections: ask every worker for its list (core/shared/conntab.h). */
  void (*on_list)(void *arg);
  /* Milliseconds until tick is wanted, or -1 for never. */
  long (*next_tick)(void *arg);
  void (*tick)(void *arg);
};

/* Runs until SIGTERM/SIGINT (returns 0) or until the mode asks to stop
 * (returns 1). The signals must be blocked in every thread beforehand
 * (s5_control_block_signals) so that only the signalfd sees them. */
int s5_control_run(const struct s5_config *cfg, struct s5_stats_area *stats,
                   const struct s5_control_mode *mode);

/* Blocks the signals the control loop handles; *old receives the previous mask. */
void s5_control_block_signals(sigset_t *old);

#endif
