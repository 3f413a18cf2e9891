/* SPDX-License-Identifier: MIT */
/* Claims on a device or the auto-route table: see owner.h. */
#include "tun/owner.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define OWNER_PREFIX "s5tund/"
#define OWNER_BACKLOG 16 /* askers waiting for s5_owner_tend */

static socklen_t owner_addr(const char *what, struct sockaddr_un *sa) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  /* sun_path[0] stays 0: the abstract namespace. No trailing NUL: the
   * length given to bind/connect is the name. */
  int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, OWNER_PREFIX "%s", what);
  if (n < 0 || (size_t)n >= sizeof sa->sun_path - 1) return 0;
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* The pid of whoever listens on sa, or 0 when that cannot be told (its
 * queue is full, or it went away just now). */
static pid_t owner_pid(const struct sockaddr_un *sa, socklen_t len) {
  struct ucred cred;
  socklen_t clen = sizeof cred;
  pid_t pid = 0;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return 0;
  if (connect(fd, (const struct sockaddr *)sa, len) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
    pid = cred.pid;
  close(fd);
  return pid;
}

int s5_owner_claim(const char *what, pid_t *holder) {
  struct sockaddr_un sa;
  socklen_t len = owner_addr(what, &sa);
  *holder = 0;
  if (len == 0) return -ENAMETOOLONG;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
    int err = errno;
    close(fd);
    if (err == EADDRINUSE) *holder = owner_pid(&sa, len);
    return -err;
  }
  if (listen(fd, OWNER_BACKLOG) < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  return fd;
}

void s5_owner_tend(int fd) {
  if (fd < 0) return;
  for (int i = 0; i < OWNER_BACKLOG; i++) { /* bounded: the queue holds no more */
    int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) return;
    close(c);
  }
}
