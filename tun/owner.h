/* SPDX-License-Identifier: MIT */
/* Which s5tund owns a device or the auto-route table: a claim that lives
 * exactly as long as the daemon.
 *
 * A claim is an abstract unix socket ("\0s5tund/<what>"), bound and
 * listening. Abstract names belong to the network namespace, like device
 * names and routing rules, so a claim covers exactly the namespace where
 * the device and rules live; the kernel drops it with the last fd of the
 * process that holds it, also after kill -9, so no stale lock file can ever
 * outlive its daemon; and a connection to it tells the holder's pid
 * (SO_PEERCRED: the credentials of the process that called listen()). */
#ifndef S5_TUN_OWNER_H
#define S5_TUN_OWNER_H

#include <sys/types.h>

/* Claims `what` (e.g. "dev/tun0", "auto-route"). Returns the claim's fd
 * (close-on-exec, non-blocking), or -EADDRINUSE when a live process holds
 * it, with its pid in *holder (0 when it cannot be told), or -errno. */
int s5_owner_claim(const char *what, pid_t *holder);

/* Accepts and closes the connections of those who asked who holds fd, so
 * that the listen queue never fills; call now and then. */
void s5_owner_tend(int fd);

#endif
