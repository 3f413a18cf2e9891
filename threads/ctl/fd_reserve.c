/* SPDX-License-Identifier: MIT */
/* A descriptor in reserve for listeners at the descriptor limit: see
 * fd_reserve.h. */
#include "threads/ctl/fd_reserve.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static int reserve = -1;

int s5_fd_reserve_open(void) {
  if (reserve >= 0) return 0;
  reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return reserve < 0 ? -errno : 0;
}

bool s5_fd_exhausted(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

int s5_accept_reserved(int lfd, struct sockaddr *sa, socklen_t *len, int flags, bool *reserved) {
  socklen_t want = len != NULL ? *len : 0;
  *reserved = false;
  int fd = accept4(lfd, sa, len, flags);
  if (fd >= 0 || errno != EMFILE || reserve < 0) return fd;
  close(reserve);
  reserve = -1;
  if (len != NULL) *len = want;
  fd = accept4(lfd, sa, len, flags);
  int err = errno;
  if (fd >= 0) {
    *reserved = true;
    return fd;
  }
  s5_fd_reserve_put(); /* a worker thread took the slot first */
  errno = err;
  return -1;
}

void s5_fd_reserve_put(void) {
  int r = s5_fd_reserve_open();
  /* Not fatal: the listeners fall back to resting while the table is full. */
  if (r < 0) s5_debug("descriptor reserve: /dev/null: %s", strerror(-r));
}
