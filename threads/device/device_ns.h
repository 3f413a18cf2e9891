/* SPDX-License-Identifier: MIT */
/* [tun] netns for device.c: the device made inside a named network
 * namespace while s5tund stays in its own (tun/netns.h), and what the
 * namespace gets besides: lo up, a default route via the device for each
 * family, and with mapped DNS a resolv.conf for `ip netns exec`. Every
 * function is a no-op without [tun] netns. Main thread only. */
#ifndef S5_THREADS_DEVICE_NS_H
#define S5_THREADS_DEVICE_NS_H

#include <stdbool.h>

#include "ini/config.h"

/* Opens (creating if missing) the namespace and steps into it. 0 or -1
 * after logging. */
int s5_device_ns_open(const struct s5_config *cfg);

/* Into the namespace again, and back home: around what must happen there
 * (a queue reopened for a restarted worker, the device's ifindex). The
 * enter returns 0 or -1 after logging. */
int s5_device_ns_enter(void);
void s5_device_ns_leave(void);

/* Inside, once the device is up: lo, the default routes; then home, and
 * the resolv.conf. 0 or -1 after logging (and back home either way). */
int s5_device_ns_finish(const struct s5_config *cfg);

/* At the end (back home first if still inside): with clean, what we
 * created (resolv.conf, the namespace) is removed; otherwise it stays, and
 * the namespace, without its device, has no route at all (fails closed). */
void s5_device_ns_close(bool clean);

#endif
