/* SPDX-License-Identifier: MIT */
/* Bringing up the device both run modes serve, with errors that say what to do.
 *
 * One device, one daemon: before anything is touched, s5tund claims the
 * device's name (tun/owner.h) and reads what a device of that name already
 * is. Another s5tund holding the claim, or queues attached to the device by
 * anyone, stop the start-up: attaching more queues would make the kernel
 * spread the other daemon's flows over both. A device nobody serves is
 * taken only with persist = true (it is then the persistent device of an
 * earlier run). With auto-route the table and rule priority are claimed as
 * well, so rules of a live daemon are never taken for stale ones. The
 * claims are held in the main process (thread mode) or the supervisor
 * (process mode) until the device is closed; workers and hooks do not
 * inherit them. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threads/device/device_ns.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/log.h"
#include "tun/owner.h"
#include "base/privileges.h"
#include "threads/device/device.h"
#include "tun/nft.h"
#include "tun/route.h"
#include "tun/srcmark.h"
#include "tun/tun.h"
#include "tun/txq.h"
#include "shared/stats.h"

static int device_claim = -1;   /* "dev/NAME" */
static bool existed;            /* the device was there before the start: its queue length is not ours */
static int drops_fd = -1;       /* /proc/net/dev of the device's namespace */
static uint64_t drops_at_start; /* the device's transmit drops when we took it */
static uint64_t drops_read_ms;
static int route_claim = -1; /* "auto-route", with auto-route only */

static const char *tun_advice(int err) {
  switch (err) {
    case EPERM:
    case EACCES: return "run s5tund as root or with CAP_NET_ADMIN";
    case ENOENT:
    case ENODEV: return "the kernel has no TUN driver: modprobe tun";
    case EBUSY: return "another device has this name: delete it or set [tun] name";
    case E2BIG: return "the kernel allows no more queues: lower queues";
    default: return "see the error above";
  }
}

static void close_queues(int *fds, unsigned n);

static void release_claims(void) {
  if (device_claim >= 0) close(device_claim);
  if (route_claim >= 0) close(route_claim);
  device_claim = route_claim = -1;
}

static void holder_text(pid_t pid, char *buf, size_t len) {
  if (pid > 0) snprintf(buf, len, "pid %d", (int)pid);
  else snprintf(buf, len, "pid not known");
}

/* What is there under our name decides whether we may serve it. */
static int check_existing(const struct s5_config *cfg) {
  const char *name = cfg->tun.name;
  struct s5_tun_state st;
  int r = s5_tun_link_state(name, &st);
  if (r < 0) {
    s5_error("reading the state of %s over rtnetlink: %s (%s)", name, strerror(-r), tun_advice(-r));
    return -1;
  }
  if (!st.exists) return 0;
  existed = true;
  if (strcmp(st.kind, "tun") != 0 || (st.known && (st.tap || !st.multi_queue))) {
    const char *what = strcmp(st.kind, "tun") != 0 ? st.kind : st.tap ? "TAP" : "single-queue TUN";
    s5_error("TUN device %s: %s exists and is a %s device, not a multi-queue TUN: %s", name, name,
             what[0] != '\0' ? what : "non-TUN", tun_advice(EBUSY));
    return -1;
  }
  if (st.known && st.queues > 0) {
    s5_error(
      "%s already exists and is in use (another s5tund? pid not known: %u queue%s attached "
      "by a process that holds no s5tund claim on it)",
      name, st.queues, st.queues == 1 ? "" : "s");
    return -1;
  }
  if (!cfg->tun.persist) {
    s5_error(
      "%s already exists (a persistent TUN device no process serves): set [tun] persist = true "
      "to serve it, or delete it (ip link del %s)",
      name, name);
    return -1;
  }
  return 0;
}

static int claim(const char *what, int *fd, pid_t *holder) {
  *fd = s5_owner_claim(what, holder);
  return *fd >= 0 ? 0 : *fd;
}

/* The claims and the check, all before anything is changed. */
static int device_admit(const struct s5_config *cfg) {
  char what[64], who[32];
  pid_t holder;
  snprintf(what, sizeof what, "dev/%s", cfg->tun.name);
  int r = claim(what, &device_claim, &holder);
  if (r == -EADDRINUSE) {
    holder_text(holder, who, sizeof who);
    s5_error("%s already exists and is in use (another s5tund? %s)", cfg->tun.name, who);
    return -1;
  }
  if (r < 0) {
    s5_error("claiming %s (abstract unix socket @s5tund/%s): %s", cfg->tun.name, what, strerror(-r));
    return -1;
  }
  if (check_existing(cfg) < 0) return -1;
  if (!cfg->tun.auto_route) return 0;
  r = claim("auto-route", &route_claim, &holder);
  if (r == -EADDRINUSE) {
    holder_text(holder, who, sizeof who);
    s5_error(
      "auto-route: table %u and rule priority %u belong to another running s5tund (%s): only "
      "one s5tund per network namespace can use auto-route",
      S5_ROUTE_TABLE, S5_ROUTE_PREF, who);
    return -1;
  }
  if (r < 0) {
    s5_error("auto-route: claiming table %u (abstract unix socket @s5tund/auto-route): %s", S5_ROUTE_TABLE,
             strerror(-r));
    return -1;
  }
  return 0;
}

/* A persistent device keeps the program of an earlier run; without one
 * (EINVAL: a kernel without steering) there is nothing to remove. */
static void unsteer(const struct s5_config *cfg, int fd) {
  int r = s5_tun_steer_detach(fd);
  if (r < 0 && r != -EINVAL)
    s5_debug("removing the steering program from %s: %s", cfg->tun.name, strerror(-r));
}

/* Our own queue steering, so that every packet of one UDP source, IP
 * fragments included, reaches one worker (tun/steer.c). Attached before
 * the link comes up, so the first packets are steered already. Where the
 * kernel refuses, it steers by itself: s5tund still works, but one client
 * socket may then get two associations (fragments hashed apart). One queue
 * needs no steering. S5TUND_NO_STEERING=1 skips it (to test the fallback,
 * or to compare). */
static void steer(const struct s5_config *cfg, int fd) {
  char err[256];
  int r = 0;
  if (cfg->queues < 2) { /* nothing to steer */
    unsteer(cfg, fd);
    return;
  }
  if (s5_env_flag("S5TUND_NO_STEERING")) {
    snprintf(err, sizeof err, "disabled by S5TUND_NO_STEERING");
    unsteer(cfg, fd);
  } else if ((r = s5_tun_steer_attach(fd, cfg->queues, err, sizeof err)) == 0) {
    s5_info(
      "queue steering: UDP by source address and port (IP fragments with their first), "
      "TCP by 4-tuple, over %u queues",
      cfg->queues);
    return;
  }
  s5_warn(
    "queue steering: %s%s; the kernel steers by itself, so UDP fragments may reach another "
    "worker than their socket's other datagrams (one client socket, two associations)",
    err, r == -EPERM || r == -EACCES ? " (start s5tund with CAP_BPF)" : "");
}

static int queue_open(const struct s5_config *cfg, unsigned index) {
  int fd = s5_tun_open_queue(cfg->tun.name, cfg->tun.offload ? S5_TUN_OFFLOAD : 0);
  if (fd < 0)
    s5_error("opening queue %u of TUN device %s%s: %s (%s)", index, cfg->tun.name,
             cfg->tun.offload ? " with offloads" : "", strerror(-fd),
             cfg->tun.offload && fd == -EINVAL ? "set [tun] offload = false" : tun_advice(-fd));
  return fd;
}

/* A queue for a restarted worker: with [tun] netns, the device is there. */
int s5_device_open_queue(const struct s5_config *cfg, unsigned index) {
  if (s5_device_ns_enter() < 0) return -1;
  int fd = queue_open(cfg, index);
  s5_device_ns_leave();
  return fd;
}

unsigned s5_device_ifindex(const struct s5_config *cfg) {
  if (s5_device_ns_enter() < 0) return 0;
  unsigned ifindex = if_nametoindex(cfg->tun.name);
  int err = errno;
  s5_device_ns_leave();
  errno = err;
  return ifindex;
}

/* The prefixes of a list and of its file, in one array (the caller frees). */
struct prefix_vec {
  size_t n, cap;
  struct s5_prefix *p;
};

static int prefix_push(const struct s5_prefix *p, void *arg, char *err, size_t errlen) {
  struct prefix_vec *v = arg;
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 256;
    struct s5_prefix *np = realloc(v->p, cap * sizeof *np);
    if (np == NULL) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    v->p = np;
    v->cap = cap;
  }
  v->p[v->n++] = *p;
  return 0;
}

static int prefixes_gather(const struct s5_prefix_list *l, const struct s5_prefix_file *f,
                           struct prefix_vec *v, char *err, size_t errlen) {
  for (unsigned i = 0; i < l->n; i++)
    if (prefix_push(&l->p[i], v, err, errlen) != 0) return -1;
  if (f->path[0] == '\0') return 0;
  return s5_prefix_file_read(f->path, prefix_push, v, NULL, NULL, err, errlen) < 0 ? -1 : 0;
}

/* What auto-route installs, from cfg; the prefix files are read again
 * here (a reload re-reads them even when their names did not change). */
static int route_spec(const struct s5_config *cfg, struct s5_route_spec *spec, struct prefix_vec *ex,
                      struct prefix_vec *in, char *err, size_t errlen) {
  const struct s5_uid_list *exu = &cfg->tun.exclude_uid, *inu = &cfg->tun.include_uid;
  *spec = (struct s5_route_spec){
    .name = cfg->tun.name,
    .mark = cfg->socks5.mark,
    .kill_switch = cfg->tun.kill_switch,
    .exclude_local = cfg->tun.exclude_local,
    .users = {inu->n > 0, inu->n > 0 ? inu->n : exu->n, inu->n > 0 ? inu->r : exu->r},
  };
  if (prefixes_gather(&cfg->tun.route_exclude, &cfg->tun.route_exclude_file, ex, err, errlen) != 0 ||
      prefixes_gather(&cfg->tun.route_include, &cfg->tun.route_include_file, in, err, errlen) != 0)
    return -1;
  spec->exclude = (struct s5_route_prefixes){ex->n, ex->p};
  spec->include = (struct s5_route_prefixes){in->n, in->p};
  return 0;
}

/* The spec from cfg (the files read again), given to install or update;
 * spec keeps the counts for the log, not the prefixes. */
static int route_apply(const struct s5_config *cfg,
                       int (*apply)(const struct s5_route_spec *, char *, size_t), struct s5_route_spec *spec,
                       char *err, size_t errlen) {
  struct prefix_vec ex = {0}, in = {0};
  int r = route_spec(cfg, spec, &ex, &in, err, errlen);
  if (r == 0) r = apply(spec, err, errlen);
  free(ex.p);
  free(in.p);
  spec->exclude.p = spec->include.p = NULL;
  return r;
}

/* [tun] txqueuelen on a device we created; one that was there is left as
 * it is, with a note when its queue is shorter. Then the drops' source,
 * opened in the device's namespace (we are in it with [tun] netns). */
static void device_txq(const struct s5_config *cfg) {
  unsigned want = cfg->tun.txqueuelen, have = 0;
  int r = s5_tun_txqlen_get(cfg->tun.name, &have);
  if (r < 0) s5_warn("%s: reading its transmit queue length: %s", cfg->tun.name, strerror(-r));
  else if (existed && want > have)
    s5_info(
      "%s existed before the start: its transmit queue (%u packets) is left as it is, shorter than "
      "[tun] txqueuelen = %u; connection storms may drop packets there (ip link set %s txqueuelen %u)",
      cfg->tun.name, have, want, cfg->tun.name, want);
  else if (!existed && want != 0 && want != have) {
    r = s5_tun_txqlen_set(cfg->tun.name, want);
    if (r < 0) s5_warn("%s: setting txqueuelen %u: %s (stays %u)", cfg->tun.name, want, strerror(-r), have);
  }
  drops_fd = s5_tun_drops_open();
  if (drops_fd < 0) {
    s5_warn("%s: /proc/net/dev: %s: its transmit drops are not counted", cfg->tun.name, strerror(-drops_fd));
    return;
  }
  if (s5_tun_drops_read(drops_fd, cfg->tun.name, &drops_at_start) < 0) drops_at_start = 0;
}

void s5_device_count(const struct s5_config *cfg, struct s5_stats_area *stats) {
  uint64_t now = s5_now_ms(), dropped;
  if (drops_fd < 0 || now - drops_read_ms < 1000) return;
  drops_read_ms = now;
  if (s5_tun_drops_read(drops_fd, cfg->tun.name, &dropped) == 0 && dropped >= drops_at_start)
    S5_STAT_SET(stats, tun_tx_dropped, dropped - drops_at_start);
}

static int device_route(const struct s5_config *cfg) {
  char err[320];
  struct s5_route_spec spec;
  if (route_apply(cfg, s5_route_install, &spec, err, sizeof err) < 0) {
    s5_error("%s", err);
    return -1;
  }
  s5_info("auto-route: %s traffic but fwmark 0x%x into %s (table %u, rule priority %u), kill switch %s",
          spec.users.n == 0    ? "all"
          : spec.users.include ? "include-uid's users'"
                               : "all users' but exclude-uid's",
          cfg->socks5.mark, cfg->tun.name, S5_ROUTE_TABLE, S5_ROUTE_PREF,
          spec.kill_switch ? "on: blocked, never sent around the tunnel, until a clean stop"
                           : "off: sent directly while s5tund is down");
  s5_info("auto-route: %s; destinations: %s, %zu prefixes excluded",
          spec.exclude_local ? "exclude-local: connected networks and inbound connections stay out "
                               "(rule priority 5333, nftables table inet " S5_NFT_TABLE ")"
                             : "exclude-local off: connected networks go into the tunnel too",
          spec.include.n > 0 ? "only route-include's" : "all", spec.exclude.n);
  if (spec.include.n > 0) s5_info("auto-route: %zu prefixes included", spec.include.n);
  int r = s5_srcmark_enable(); /* strict rp_filter: tun/nft.h (2) */
  if (r < 0)
    s5_warn(
      "auto-route: setting net.ipv4.conf.all.src_valid_mark = 1: %s: with strict rp_filter (1), "
      "replies from a proxy that is not on a connected network are dropped",
      strerror(-r));
  return 0;
}

void s5_device_reroute(const struct s5_config *cfg) {
  if (!cfg->tun.auto_route) return;
  char err[320];
  struct s5_route_spec spec;
  if (route_apply(cfg, s5_route_update, &spec, err, sizeof err) < 0)
    s5_error("reload: %s: the routes stay as they were", err);
  else
    s5_info("reload: auto-route's prefixes replaced: %zu excluded, %s", spec.exclude.n,
            spec.include.n > 0 ? "only route-include's tunnelled" : "all else tunnelled");
}

int s5_device_open(const struct s5_config *cfg, int *fds) {
  unsigned n = 0;
  if (s5_device_ns_open(cfg) < 0) goto fail;
  if (device_admit(cfg) < 0) goto fail;
  for (; n < cfg->queues; n++) {
    fds[n] = queue_open(cfg, n);
    if (fds[n] < 0) goto fail;
  }
  if (cfg->tun.persist) {
    int r = s5_tun_set_persist(fds[0], 1);
    if (r < 0) {
      s5_error("making %s persistent: %s", cfg->tun.name, strerror(-r));
      goto fail;
    }
  }
  steer(cfg, fds[0]);
  char err[256];
  if (s5_tun_link_setup(cfg->tun.name, cfg->tun.mtu, &cfg->tun.ipv4, &cfg->tun.ipv6, err, sizeof err) < 0) {
    s5_error("%s", err);
    goto fail;
  }
  device_txq(cfg);
  if (cfg->tun.auto_route && device_route(cfg) < 0) goto fail;
  /* With [tun] netns the hooks run in the device's namespace too. */
  if (s5_hook_run(cfg, "post-up", cfg->tun.post_up) < 0) goto fail_routed;
  if (s5_device_ns_finish(cfg) < 0) goto fail;
  return 0;
fail_routed:
  /* Nothing was served yet: routing goes back to what it was. */
  if (cfg->tun.auto_route) s5_route_remove();
fail:
  close_queues(fds, n);
  release_claims();
  s5_device_ns_close(true); /* nothing was served: what we created goes */
  return -1;
}

void s5_device_tend(void) {
  s5_owner_tend(device_claim);
  s5_owner_tend(route_claim);
}

void s5_restrict_main(const struct s5_config *cfg) {
  int r = s5_privileges_restrict_main(cfg);
  if (r < 0) s5_warn("limiting the main process's capabilities: %s", strerror(-r));
}

void s5_device_close(const struct s5_config *cfg, int *fds, int clean) {
  if (s5_device_ns_enter() == 0) {
    s5_hook_run(cfg, "pre-down", cfg->tun.pre_down);
    s5_device_ns_leave();
  }
  /* Only what this daemon claimed is its to remove: a daemon that never
   * held the auto-route claim leaves another's rules, table and nft alone. */
  if (cfg->tun.auto_route && route_claim < 0) {
    s5_warn("auto-route: not removing the rules and routes: this daemon never claimed them");
  } else if (cfg->tun.auto_route && (clean || !cfg->tun.kill_switch)) {
    int r = s5_route_remove();
    if (r < 0) s5_warn("auto-route: removing the rules and routes: %s", strerror(-r));
  } else if (cfg->tun.auto_route) {
    /* Stopped by a failure, not asked to: traffic stays blocked, as after
     * kill -9, until s5tund runs again or is stopped cleanly. */
    s5_warn(
      "auto-route: stopping on a failure: the kill switch stays on, traffic that would go into "
      "%s is blocked until s5tund runs again (or: ip rule del pref %u; ip -6 rule del pref %u)",
      cfg->tun.name, S5_ROUTE_PREF, S5_ROUTE_PREF);
  }
  close_queues(fds, cfg->queues);
  release_claims();
  if (drops_fd >= 0) close(drops_fd);
  drops_fd = -1;
  s5_device_ns_close(clean);
}

static void close_queues(int *fds, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    if (fds[i] >= 0 && close(fds[i]) < 0) s5_warn("closing queue %u: %s", i, strerror(errno));
    fds[i] = -1;
  }
}
