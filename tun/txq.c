/* SPDX-License-Identifier: MIT */
/* The device's transmit queue: its length (the ring of each TUN queue the
 * kernel fills toward the workers) and the packets the kernel dropped
 * because a ring was full, read from /proc/net/dev of the device's
 * namespace. */
#include "tun/txq.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int qlen_ioctl(const char *name, unsigned long req, unsigned *qlen) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  if (strlen(name) >= sizeof ifr.ifr_name) return -ENAMETOOLONG;
  strcpy(ifr.ifr_name, name);
  ifr.ifr_qlen = (int)*qlen;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int r = ioctl(fd, req, &ifr) < 0 ? -errno : 0;
  close(fd);
  if (r == 0) *qlen = (unsigned)ifr.ifr_qlen;
  return r;
}

int s5_tun_txqlen_get(const char *name, unsigned *qlen) {
  *qlen = 0;
  return qlen_ioctl(name, SIOCGIFTXQLEN, qlen);
}

int s5_tun_txqlen_set(const char *name, unsigned qlen) { return qlen_ioctl(name, SIOCSIFTXQLEN, &qlen); }

int s5_tun_drops_open(void) {
  int fd = open("/proc/thread-self/net/dev", O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

int s5_tun_drops_read(int fd, const char *name, uint64_t *tx_dropped) {
  char buf[16384];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n < 0) return -errno;
  buf[n] = '\0';
  size_t len = strlen(name);
  for (char *line = buf; line != NULL && *line != '\0';) {
    char *next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    while (*line == ' ') line++;
    if (strncmp(line, name, len) == 0 && line[len] == ':') {
      /* receive: bytes packets errs drop fifo frame compressed multicast;
       * transmit: bytes packets errs drop ... (the 12th number). */
      uint64_t v[12];
      char *p = line + len + 1;
      for (int i = 0; i < 12; i++) {
        char *end;
        v[i] = strtoull(p, &end, 10);
        if (end == p) return -EINVAL;
        p = end;
      }
      *tx_dropped = v[11];
      return 0;
    }
    line = next;
  }
  return -ENODEV;
}
