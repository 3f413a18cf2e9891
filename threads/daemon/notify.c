/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "threads/daemon/notify.h"

/* One datagram to $NOTIFY_SOCKET; '@' at the start names an abstract socket. */
static void notify_send(const char *msg) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (path == NULL || path[0] == '\0') return;
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  if (len >= sizeof sun.sun_path || (path[0] != '/' && path[0] != '@')) {
    s5_warn("NOTIFY_SOCKET %s: not a usable socket address", path);
    return;
  }
  memcpy(sun.sun_path, path, len);
  if (path[0] == '@') sun.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    s5_warn("NOTIFY_SOCKET: socket: %s", strerror(errno));
    return;
  }
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
  if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sun, alen) < 0)
    s5_warn("NOTIFY_SOCKET %s: %s", path, strerror(errno));
  close(fd);
}

static void pid_file_write(const char *path) {
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, buf, (size_t)len) != len) s5_warn("pid file %s: %s", path, strerror(errno));
  if (fd >= 0) close(fd);
}

void s5_notify_ready(const struct s5_config *cfg) {
  if (cfg->run.pid_file[0] != '\0') pid_file_write(cfg->run.pid_file);
  char msg[64];
  snprintf(msg, sizeof msg, "READY=1\nMAINPID=%d", (int)getpid());
  notify_send(msg);
}

void s5_notify_stopping(const struct s5_config *cfg) {
  notify_send("STOPPING=1");
  if (cfg->run.pid_file[0] != '\0' && unlink(cfg->run.pid_file) < 0 && errno != ENOENT)
    s5_warn("removing pid file %s: %s", cfg->run.pid_file, strerror(errno));
}
