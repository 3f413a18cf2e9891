/* SPDX-License-Identifier: MIT */
/* Telling the outside world the daemon's state: systemd's NOTIFY_SOCKET
 * (READY=1, STOPPING=1; the protocol is one datagram, no libsystemd needed)
 * and the pid file. */
#ifndef S5_THREADS_NOTIFY_H
#define S5_THREADS_NOTIFY_H

#include "ini/config.h"

void s5_notify_ready(const struct s5_config *cfg);
void s5_notify_stopping(const struct s5_config *cfg);

#endif
