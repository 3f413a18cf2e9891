/* SPDX-License-Identifier: MIT */
/* src_valid_mark while auto-route is on: see srcmark.h. */
#include "tun/srcmark.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define SRCMARK_PATH "/proc/sys/net/ipv4/conf/all/src_valid_mark"

/* What enable found when it changed it ('0'..'9'); 0: nothing to put back.
 * Only the main process installs and removes routes. */
static char srcmark_found;

static int srcmark_read(char *c) {
  int fd = open(SRCMARK_PATH, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, c, 1);
  int e = n < 0 ? -errno : n == 1 ? 0 : -EIO;
  close(fd);
  return e;
}

static int srcmark_write(char c) {
  int fd = open(SRCMARK_PATH, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  char buf[2] = {c, '\n'};
  ssize_t n = write(fd, buf, sizeof buf);
  int e = n < 0 ? -errno : 0;
  if (close(fd) < 0 && e == 0) e = -errno;
  return e;
}

int s5_srcmark_enable(void) {
  char c;
  int e = srcmark_read(&c);
  if (e < 0 || c == '1') return e;
  if ((e = srcmark_write('1')) == 0 && srcmark_found == 0) srcmark_found = c;
  return e;
}

int s5_srcmark_restore(void) {
  if (srcmark_found == 0) return 0;
  int e = srcmark_write(srcmark_found);
  if (e == 0) srcmark_found = 0;
  return e;
}
