/* SPDX-License-Identifier: MIT */
/* Live reload (SIGHUP, systemctl reload): the control loop reads the
 * configuration again exactly as at start (the --config file, then the
 * flags), keeps what cannot change while running (one warning per key: the
 * key table says which are live), and publishes the result in the config
 * slot (core/shared/config_slot.h), from which every worker takes it for the
 * sessions it opens from then on. A file that does not load changes
 * nothing: the error is logged with file:line:key and counted. */
#ifndef S5_THREADS_RELOAD_H
#define S5_THREADS_RELOAD_H

#include "ini/config.h"
#include "shared/stats.h"

/* main(): the command line to read again, and the config slot. Returns 0
 * or -1 (logged). */
int s5_reload_setup(int argc, char **argv);

/* Reads and checks the configuration; on success merges it into *live,
 * applies the log settings of this process, publishes it and returns 1;
 * on failure logs why, counts it in stats and returns 0, *live untouched. */
int s5_reload(struct s5_config *live, struct s5_stats_area *stats);

#endif
