/* SPDX-License-Identifier: MIT */
/* Named network namespaces: see netns.h. Made the way `ip netns add` makes
 * them, so that `ip netns exec NAME` and `ip netns del NAME` work on ours:
 * /run/netns a shared mount point, one empty file per namespace with the
 * namespace bind-mounted over it. */
#include "tun/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
#include <sys/stat.h>
#include <unistd.h>

/* /run/netns as a shared mount point, so that a namespace mounted there is
 * seen from every mount namespace that shares it (iproute2 does the same). */
static int netns_dir(void) {
  if (mkdir(S5_NETNS_DIR, 0755) < 0 && errno != EEXIST) return -errno;
  if (mount("", S5_NETNS_DIR, "none", MS_SHARED | MS_REC, NULL) == 0) return 0;
  if (errno != EINVAL) return -errno;
  /* Not a mount point yet: bind it onto itself first. */
  if (mount(S5_NETNS_DIR, S5_NETNS_DIR, "none", MS_BIND | MS_REC, NULL) < 0) return -errno;
  return mount("", S5_NETNS_DIR, "none", MS_SHARED | MS_REC, NULL) < 0 ? -errno : 0;
}

/* A new namespace bind-mounted on path: this thread unshares into it for
 * the mount, then goes home. */
static int netns_make(const char *path, int home) {
  int e = netns_dir();
  if (e < 0) return e;
  int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return -errno;
  close(fd);
  e = unshare(CLONE_NEWNET) < 0 ? -errno : 0;
  if (e == 0 && mount("/proc/thread-self/ns/net", path, "none", MS_BIND, NULL) < 0) e = -errno;
  if (setns(home, CLONE_NEWNET) < 0 && e == 0) e = -errno;
  if (e < 0) {
    umount2(path, MNT_DETACH);
    unlink(path);
  }
  return e;
}

int s5_netns_open(struct s5_netns *ns, const char *name, char *err, size_t errlen) {
  char path[sizeof S5_NETNS_DIR + 256];
  ns->fd = -1;
  ns->created = false;
  snprintf(ns->name, sizeof ns->name, "%s", name);
  snprintf(path, sizeof path, "%s/%s", S5_NETNS_DIR, name);
  ns->home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (ns->home < 0) {
    int e = -errno;
    snprintf(err, errlen, "[tun] netns: our own network namespace: %s", strerror(-e));
    return e;
  }
  ns->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (ns->fd < 0 && errno == ENOENT) {
    int e = netns_make(path, ns->home);
    if (e < 0) {
      snprintf(err, errlen, "[tun] netns: creating %s: %s", path, strerror(-e));
      s5_netns_close(ns, false);
      return e;
    }
    ns->created = true;
    ns->fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (ns->fd < 0) {
    int e = -errno;
    snprintf(err, errlen, "[tun] netns: %s: %s", path, strerror(-e));
    s5_netns_close(ns, true);
    return e;
  }
  /* A file there that is not a namespace (what a killed `ip netns add` or
   * a crash between create and mount leaves): setns would only say EINVAL. */
  struct statfs sf;
  if (fstatfs(ns->fd, &sf) == 0 && sf.f_type != NSFS_MAGIC) {
    snprintf(err, errlen, "[tun] netns: %s is not a network namespace (a leftover?); remove it: rm %s", path,
             path);
    s5_netns_close(ns, false);
    return -EINVAL;
  }
  return 0;
}

int s5_netns_enter(const struct s5_netns *ns) { return setns(ns->fd, CLONE_NEWNET) < 0 ? -errno : 0; }

int s5_netns_leave(const struct s5_netns *ns) { return setns(ns->home, CLONE_NEWNET) < 0 ? -errno : 0; }

int s5_netns_close(struct s5_netns *ns, bool remove) {
  int e = 0;
  if (ns->fd >= 0) close(ns->fd);
  if (ns->home >= 0) close(ns->home);
  ns->fd = ns->home = -1;
  if (remove && ns->created) {
    char path[sizeof S5_NETNS_DIR + 256];
    snprintf(path, sizeof path, "%s/%s", S5_NETNS_DIR, ns->name);
    if (umount2(path, MNT_DETACH) < 0) e = -errno;
    if (unlink(path) < 0 && e == 0) e = -errno;
    ns->created = false;
  }
  return e;
}
