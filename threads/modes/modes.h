/* SPDX-License-Identifier: MIT */
/* The two run modes: the same worker (core/worker/worker.h) on N threads of
 * this process (thread_mode.c), or in N forked processes under a supervisor
 * (process_mode.c). Both start from the device (threads/device/device.h). */
#ifndef S5_THREADS_MODES_H
#define S5_THREADS_MODES_H

#include "ini/config.h"
#include "shared/stats.h"

/* Run until SIGTERM/SIGINT; each returns the process exit code. stats is
 * the shared counter area with one slot per queue. */
int s5_run_threads(const struct s5_config *cfg, struct s5_stats_area *stats);
int s5_run_processes(const struct s5_config *cfg, struct s5_stats_area *stats);

#endif
