/* The two run modes: the same worker (core/worker.h) on N threads of this
 * process, or in N forked processes under a supervisor. Both start from a
 * device opened once, here in the main process, with one fd per queue. */
#ifndef S5_THREADS_RUN_H
#define S5_THREADS_RUN_H

#include "config.h"
#include "stats.h"

/* Opens cfg->queues queues of the TUN device and configures its link.
 * Returns 0, or -1 after logging what failed and what to do about it. */
int s5_device_open(const struct s5_config *cfg, int *fds);

/* Opens one more queue of the running device (for a restarted worker). */
int s5_device_open_queue(const struct s5_config *cfg, unsigned index);

/* Closes the queue fds; the device goes with the last one unless persistent. */
void s5_device_close(int *fds, unsigned n);

/* Run until SIGTERM/SIGINT; each returns the process exit code. stats is
 * the shared counter area with one slot per queue. */
int s5_run_threads(const struct s5_config *cfg, struct s5_stats_area *stats);
int s5_run_processes(const struct s5_config *cfg, struct s5_stats_area *stats);

#endif
