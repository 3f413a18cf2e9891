/* SPDX-License-Identifier: MIT */
/* Opening and detaching the queues of a multi-queue TUN device.
 *
 * Each worker owns one queue fd: packets are spread over the queues by
 * s5tund's steering program (steer.c; the kernel's own flow hash where that
 * is refused), so one flow always reaches the same worker and workers share
 * no state. */
#include "tun/tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define TUN_CLONE_DEV "/dev/net/tun"

/* The kernel would treat a name with '%' as a template ("tun%d") and pick
 * a fresh name; every worker must reach the same device, so refuse. */
int s5_tun_name_check(const char *name) {
  size_t n;

  if (name == NULL) return -EINVAL;
  n = strnlen(name, IFNAMSIZ);
  if (n == 0 || strchr(name, '%') != NULL) return -EINVAL;
  if (n >= IFNAMSIZ) return -ENAMETOOLONG;
  return 0;
}

/* The kernel answers EINVAL both for a bad name and for "that name is a
 * device of another kind or queue mode"; only the second can be fixed by
 * the user (delete it or pick another name), so report it as EBUSY. */
static int attach_error(const char *name, int err) {
  if (err == EINVAL && if_nametoindex(name) != 0) return -EBUSY;
  return -err;
}

/* Offloads we accept from the kernel: packets whose TCP/UDP checksum is
 * left partial, and TCP segments of up to 64 KiB (GSO) instead of one per
 * MTU. lwIP does not verify checksums of what it reads (lwipopts.h), and a
 * large segment is just a large segment to it. */
static int set_offload(int fd) {
  unsigned long offloads = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
  if (ioctl(fd, TUNSETOFFLOAD, offloads) < 0) return -errno;
  return 0;
}

int s5_tun_open_queue(const char *name, unsigned flags) {
  struct ifreq ifr;
  int err;
  int fd;

  err = s5_tun_name_check(name);
  if (err < 0) return err;

  /* Non-blocking because every worker reads its queue from a libuv loop;
   * close-on-exec so a queue never leaks into a child we exec. */
  fd = open(TUN_CLONE_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -errno;

  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, name, strlen(name));
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_MULTI_QUEUE;
  if (flags & S5_TUN_OFFLOAD) ifr.ifr_flags |= IFF_VNET_HDR;
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    err = attach_error(name, errno);
    close(fd);
    return err;
  }
  if ((flags & S5_TUN_OFFLOAD) && (err = set_offload(fd)) < 0) {
    close(fd);
    return err;
  }
  return fd;
}

int s5_tun_set_persist(int fd, int persist) {
  if (ioctl(fd, TUNSETPERSIST, (unsigned long)(persist != 0)) < 0) return -errno;
  return 0;
}

static int set_queue(int fd, short flag) {
  struct ifreq ifr;

  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = flag;
  if (ioctl(fd, TUNSETQUEUE, &ifr) < 0) return -errno;
  return 0;
}

int s5_tun_queue_detach(int fd) { return set_queue(fd, IFF_DETACH_QUEUE); }
