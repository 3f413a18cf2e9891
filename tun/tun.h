/* SPDX-License-Identifier: MIT */
/* Linux multi-queue TUN device: opening queues (queue.c), steering packets
 * to queues (steer.c) and configuring the link with rtnetlink (link.c).
 *
 * Every function returns 0 (or an fd) on success and -errno on failure, so
 * that the caller (threads/device/device.c) can turn the errno into advice ("run as
 * root", "delete the existing device", ...). Nothing here logs. */
#ifndef S5_TUN_TUN_H
#define S5_TUN_TUN_H

#include <stddef.h>
#include <stdint.h>

struct s5_prefix; /* ini/config.h */

/* Opens one queue of the multi-queue TUN device `name` (IFF_TUN | IFF_NO_PI |
 * IFF_MULTI_QUEUE), creating the device if it does not exist. Returns a
 * non-blocking, close-on-exec fd, or -errno. The first queue opened creates
 * the device; the device disappears when its last queue is closed unless
 * persist is set.
 *
 * Errors worth telling apart:
 *   -EINVAL        name empty or a "%d" template
 *   -ENAMETOOLONG  name does not fit IFNAMSIZ
 *   -ENOENT, -ENODEV  no /dev/net/tun or no tun driver (modprobe tun)
 *   -EACCES, -EPERM   not allowed to open /dev/net/tun or to create the
 *                     device (needs CAP_NET_ADMIN), or the existing device
 *                     belongs to another user/group
 *   -EBUSY         the name is taken by a device that is not a multi-queue
 *                  TUN (a single-queue TUN, a TAP, a bridge, ...)
 *   -E2BIG         the device already has the most queues the kernel allows */
int s5_tun_open_queue(const char *name, unsigned flags);

/* 0 when name can name the device: -EINVAL for NULL, "" or a "%d"
 * template, -ENAMETOOLONG when it does not fit IFNAMSIZ. Every function
 * here that takes a name checks it so. */
int s5_tun_name_check(const char *name);

/* flags for s5_tun_open_queue: IFF_VNET_HDR with checksum and TSO offloads.
 * Every packet read or written then starts with a struct virtio_net_hdr,
 * and reads may return TCP segments of up to 64 KiB. All queues of a
 * device must be opened with the same flags. */
#define S5_TUN_OFFLOAD 1u

/* TUNSETPERSIST on any queue fd of the device. Returns 0 or -errno. */
int s5_tun_set_persist(int fd, int persist);

/* Detaches a queue (TUNSETQUEUE with IFF_DETACH_QUEUE): it keeps its fd but
 * receives no packets. Returns 0 or -errno. */
int s5_tun_queue_detach(int fd);

/* Attaches s5tund's steering program to the device of queue fd (any queue;
 * it serves every queue, also ones opened later): UDP by (source address,
 * source port), IP fragments with their first fragment, TCP by 4-tuple,
 * anything else by source address (steer.c says why). Needs CAP_BPF or
 * CAP_SYS_ADMIN. Returns 0, or -errno and writes the failed step into err
 * ("creating the steering map: Operation not permitted", "TUNSETSTEERINGEBPF:
 * Invalid argument" on a kernel without it, ...). */
int s5_tun_steer_attach(int fd, unsigned queues, char *err, size_t errlen);

/* Removes any steering program from the device (the kernel's own steering
 * again): for a persistent device that kept one from an earlier run.
 * Returns 0 or -errno. */
int s5_tun_steer_detach(int fd);

/* For tests: loads the program with this hash seed without attaching it.
 * Returns the program fd (and, if map_fd is not NULL, the fragment map's
 * fd in *map_fd) or -errno with err written as above. */
int s5_tun_steer_load(uint32_t seed, unsigned queues, int *map_fd, char *err, size_t errlen);

/* With rtnetlink: sets the MTU, adds the IPv4 and/or IPv6 address (a prefix
 * whose family is 0 is skipped; NULL is the same), and brings the link up,
 * in that order. IPv6 addresses get IFA_F_NODAD so they are usable at once.
 * Adding an address the device already has is not an error (a persistent
 * device being set up again). Returns 0 or -errno, and on failure writes
 * what failed into err, e.g. "setting MTU 8500 on tun0: Invalid argument". */
int s5_tun_link_setup(const char *name, unsigned mtu, const struct s5_prefix *ipv4,
                      const struct s5_prefix *ipv6, char *err, size_t errlen);

/* What a device named `name` is, read with rtnetlink before s5tund touches
 * it. kind is the link kind ("tun", "dummy", "" for none); the rest is
 * filled only for a TUN/TAP device on a kernel that reports it (known). */
/* [tun] netns: inside the device's namespace, lo up and a default route
 * via the device for each family it has an address of (nothing else is
 * routed there: the namespace fails closed without the device). */
int s5_tun_netns_setup(const char *name, int ipv4, int ipv6, char *err, size_t errlen);

struct s5_tun_state {
  int exists;
  int ifindex;
  char kind[16];
  int known; /* the tun driver reported type and queues */
  int tap;   /* IFF_TAP rather than IFF_TUN */
  int multi_queue;
  int persist;
  unsigned queues; /* queues open in some process, attached or detached */
};

/* Fills *st (exists = 0 when there is no such device). Returns 0 or -errno. */
int s5_tun_link_state(const char *name, struct s5_tun_state *st);

#endif
