/* SPDX-License-Identifier: MIT */
/* `s5tund exec [--config FILE] [FLAGS] -- COMMAND [ARGS...]`: runs COMMAND
 * in a network namespace of its own whose only route is the tunnel (the
 * daemon with [tun] netns = s5exec-PID), as the user who ran sudo, waits
 * for it, stops the tunnel (which removes the namespace) and returns the
 * command's exit status, or 128 + the signal that ended it. Needs root (or
 * CAP_NET_ADMIN and CAP_SYS_ADMIN). */
#ifndef S5_THREADS_EXEC_H
#define S5_THREADS_EXEC_H

/* The namespace of exec's tunnel is S5_EXEC_NETNS_PREFIX followed by exec's pid. */
#define S5_EXEC_NETNS_PREFIX "s5exec-"

int s5_exec_command(int argc, char **argv);

#endif
