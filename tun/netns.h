/* SPDX-License-Identifier: MIT */
/* [tun] netns: the named network namespace the device lives in, as
 * `ip netns` names them (a bind mount under /run/netns). s5tund itself,
 * its workers and their proxy sockets stay in the namespace it was started
 * in; the device, its addresses and routes are made inside the named one by
 * the main thread stepping in and out (setns acts on the calling thread
 * only). */
#ifndef S5_TUN_NETNS_H
#define S5_TUN_NETNS_H

#include <stdbool.h>
#include <stddef.h>

#define S5_NETNS_DIR "/run/netns"

struct s5_netns {
  int fd;       /* the named namespace; -1 = none (no [tun] netns) */
  int home;     /* the namespace s5tund started in */
  bool created; /* made by us: removed at a clean stop */
  char name[256];
};

/* Opens NAME, creating it (and /run/netns as iproute2 does) if missing.
 * Returns 0 or -errno with what failed in err. */
int s5_netns_open(struct s5_netns *ns, const char *name, char *err, size_t errlen);

/* The calling thread into the named namespace, and back home. 0 or -errno. */
int s5_netns_enter(const struct s5_netns *ns);
int s5_netns_leave(const struct s5_netns *ns);

/* Closes the descriptors; with remove, also removes the namespace if we
 * created it. Returns 0 or -errno of the removal. */
int s5_netns_close(struct s5_netns *ns, bool remove);

#endif
