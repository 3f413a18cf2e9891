/* SPDX-License-Identifier: MIT */
/* The control loop's answer to a full descriptor table (EMFILE, ENFILE):
 * one descriptor held in reserve, on /dev/null. A listener whose accept()
 * fails for want of a descriptor would otherwise stay readable, with its
 * connection queued, and wake the loop again at once, for as long as the
 * table stays full. With the reserve, the connection is taken (and served
 * or closed), and the reserve is taken back afterwards. Control loop only:
 * one reserve per process. */
#ifndef S5_THREADS_FD_RESERVE_H
#define S5_THREADS_FD_RESERVE_H

#include <stdbool.h>
#include <sys/socket.h>

/* Opens the reserve (if it is not open). Returns 0 or -errno. */
int s5_fd_reserve_open(void);

/* accept4(), and where it fails for want of a descriptor, again with the
 * reserve given up: *reserved is then true, and s5_fd_reserve_put() must
 * follow the close of what was accepted. -1 with errno as accept4 left it
 * (EMFILE still: even the reserve did not help, another thread took it). */
int s5_accept_reserved(int lfd, struct sockaddr *sa, socklen_t *len, int flags, bool *reserved);

/* After the reserved connection was closed: the reserve again. */
void s5_fd_reserve_put(void);

/* 1 for the errors of a full descriptor table (or its kernel-wide cousins). */
bool s5_fd_exhausted(int err);

#endif
