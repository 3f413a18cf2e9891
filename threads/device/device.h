/* SPDX-License-Identifier: MIT */
/* The device, opened once in the main process with one fd per queue, for
 * both run modes: its claims, link, auto-route and hooks, its transmit
 * drops, and the main thread's privileges once it is up. */
#ifndef S5_THREADS_DEVICE_H
#define S5_THREADS_DEVICE_H

#include "ini/config.h"
#include "shared/stats.h"

/* Claims the device (and auto-route), refuses a device in use, opens
 * cfg->queues queues of the TUN device, configures its link, installs
 * auto-route and runs post-up. Returns 0, or -1 after logging what failed
 * and what to do about it (and undoing what it did). */
int s5_device_open(const struct s5_config *cfg, int *fds);

/* Opens one more queue of the running device (for a restarted worker). */
int s5_device_open_queue(const struct s5_config *cfg, unsigned index);

/* Runs pre-down, removes auto-route, closes the queue fds; the device goes
 * with the last one unless persistent. clean: asked to stop (SIGTERM,
 * SIGINT); otherwise, with the kill switch, auto-route's rules stay and
 * traffic stays blocked. Releases the claims on the device and auto-route. */
void s5_device_close(const struct s5_config *cfg, int *fds, int clean);

/* The device's transmit drops since the start into stats (at most once a
 * second; call from the main loop). */
void s5_device_count(const struct s5_config *cfg, struct s5_stats_area *stats);

/* The device's ifindex (in its namespace with [tun] netns), 0 with errno. */
unsigned s5_device_ifindex(const struct s5_config *cfg);

/* After a reload: auto-route's prefix lists (and files, read again) as the
 * configuration now says; a failure is logged and the routes stay. */
void s5_device_reroute(const struct s5_config *cfg);

/* Answers those who asked which s5tund holds the device (call now and then
 * from the main loop). */
void s5_device_tend(void);

/* [run] user: the main thread keeps only the capabilities it still needs
 * (core/base/privileges.h); a failure is logged and the daemon goes on. */
void s5_restrict_main(const struct s5_config *cfg);

/* Runs a [tun] post-up/pre-down command with /bin/sh. Returns 0 or -1 (logged). */
int s5_hook_run(const struct s5_config *cfg, const char *key, const char *command);

#endif
