/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/privileges.h"

int s5_privileges_restrict_main(const struct s5_config *cfg) {
  if (cfg->run.user[0] == '\0') return 0;
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  data[0].effective = data[0].permitted =
    (1u << CAP_NET_ADMIN) | (1u << CAP_KILL) | (1u << CAP_SETUID) | (1u << CAP_SETGID);
  if (syscall(SYS_capset, &hdr, data) < 0) return -errno;
  return 0;
}

/* glibc's setuid() and friends change every thread of the process; the raw
 * system calls change only the caller, which is what thread mode needs. */
int s5_privileges_drop(const struct s5_config *cfg) {
  if (cfg->run.user[0] == '\0') return 0;
  int keep = 0; /* CAP_NET_ADMIN for SO_MARK, if any upstream has a mark */
  for (unsigned i = 0; i < cfg->n_upstreams; i++) keep |= cfg->upstreams[i].mark != 0;
  gid_t gid = cfg->run.gid;
  uid_t uid = cfg->run.uid;
  /* The kernel clears the parent-death signal when credentials change; a
   * worker process must still die with its supervisor, so it is re-armed
   * below (and raised at once if the supervisor died meanwhile). */
  int deathsig = 0;
  pid_t parent = getppid();
  if (prctl(PR_GET_PDEATHSIG, &deathsig, 0, 0, 0) < 0) return -errno;
  if (keep && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) return -errno;
  if (syscall(SYS_setgroups, 1, &gid) < 0) return -errno;
  if (syscall(SYS_setresgid, gid, gid, gid) < 0) return -errno;
  if (syscall(SYS_setresuid, uid, uid, uid) < 0) return -errno;
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (keep) data[0].effective = data[0].permitted = 1u << CAP_NET_ADMIN;
  if (syscall(SYS_capset, &hdr, data) < 0) return -errno;
  if (deathsig != 0) {
    if (prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) < 0) return -errno;
    if (getppid() != parent) raise(deathsig);
  }
  return 0;
}
