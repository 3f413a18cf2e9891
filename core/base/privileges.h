/* SPDX-License-Identifier: MIT */
/* Dropping a worker's privileges to [run] user once its queue and listener
 * are set up. The raw syscalls change the calling thread's credentials
 * only, so in thread mode the workers run as the user while the main
 * thread keeps what it needs to clean up (auto-route) - and in process mode
 * the worker is its process's only thread, so the whole worker drops. */
#ifndef S5_CORE_PRIVILEGES_H
#define S5_CORE_PRIVILEGES_H

#include "ini/config.h"

/* With [run] user set, the main thread (thread mode) or supervisor
 * (process mode) keeps only what it still needs once the device is up:
 * CAP_NET_ADMIN (queues for restarted workers, removing auto-route),
 * CAP_KILL (signalling workers that run as the user), CAP_SETUID and
 * CAP_SETGID (restarted workers drop to the user). It stays uid 0, so the
 * files it made (pid file, stats socket, log) remain its own. Returns 0 or
 * -errno. */
int s5_privileges_restrict_main(const struct s5_config *cfg);

/* Drops the calling thread to the user, keeping CAP_NET_ADMIN only when
 * [socks5] mark needs it (SO_MARK). Returns 0 or -errno. */
int s5_privileges_drop(const struct s5_config *cfg);

#endif
