/* Bringing up the device both run modes serve, with errors that say what to do. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privileges.h"
#include "run.h"
#include "route.h"
#include "tun.h"

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
  const char *off = getenv("S5TUND_NO_STEERING");
  char err[256];
  int r = 0;
  if (cfg->queues < 2) {   /* nothing to steer */
    unsteer(cfg, fd);
    return;
  }
  if (off != NULL && off[0] != '\0' && strcmp(off, "0") != 0) {
    snprintf(err, sizeof err, "disabled by S5TUND_NO_STEERING");
    unsteer(cfg, fd);
  } else if ((r = s5_tun_steer_attach(fd, err, sizeof err)) == 0) {
    s5_info("queue steering: UDP by source address and port (IP fragments with their first), "
            "TCP by 4-tuple, over %u queues", cfg->queues);
    return;
  }
  s5_warn("queue steering: %s%s; the kernel steers by itself, so UDP fragments may reach another "
          "worker than their socket's other datagrams (one client socket, two associations)", err,
          r == -EPERM || r == -EACCES ? " (start s5tund with CAP_BPF)" : "");
}

int s5_device_open_queue(const struct s5_config *cfg, unsigned index) {
  int fd = s5_tun_open_queue(cfg->tun.name, cfg->tun.offload ? S5_TUN_OFFLOAD : 0);
  if (fd < 0)
    s5_error("opening queue %u of TUN device %s%s: %s (%s)", index, cfg->tun.name,
             cfg->tun.offload ? " with offloads" : "", strerror(-fd),
             cfg->tun.offload && fd == -EINVAL ? "set [tun] offload = false" : tun_advice(-fd));
  return fd;
}

int s5_device_open(const struct s5_config *cfg, int *fds) {
  unsigned n = 0;
  for (; n < cfg->queues; n++) {
    fds[n] = s5_device_open_queue(cfg, n);
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
  if (s5_tun_link_setup(cfg->tun.name, cfg->tun.mtu, &cfg->tun.ipv4, &cfg->tun.ipv6, err,
                        sizeof err) < 0) {
    s5_error("%s", err);
    goto fail;
  }
  if (cfg->tun.auto_route) {
    if (s5_route_install(cfg->tun.name, cfg->socks5.mark, err, sizeof err) < 0) {
      s5_error("%s", err);
      goto fail;
    }
    s5_info("auto-route: all traffic but fwmark 0x%x into %s (table %u, rule priority %u)",
            cfg->socks5.mark, cfg->tun.name, S5_ROUTE_TABLE, S5_ROUTE_PREF);
  }
  if (s5_hook_run(cfg, "post-up", cfg->tun.post_up) < 0) goto fail_routed;
  return 0;
fail_routed:
  if (cfg->tun.auto_route) s5_route_remove();
fail:
  close_queues(fds, n);
  return -1;
}

void s5_restrict_main(const struct s5_config *cfg) {
  int r = s5_privileges_restrict_main(cfg);
  if (r < 0) s5_warn("limiting the main process's capabilities: %s", strerror(-r));
}

void s5_device_close(const struct s5_config *cfg, int *fds) {
  s5_hook_run(cfg, "pre-down", cfg->tun.pre_down);
  if (cfg->tun.auto_route) {
    int r = s5_route_remove();
    if (r < 0) s5_warn("auto-route: removing the rules: %s", strerror(-r));
  }
  close_queues(fds, cfg->queues);
}

static void close_queues(int *fds, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    if (fds[i] >= 0 && close(fds[i]) < 0) s5_warn("closing queue %u: %s", i, strerror(errno));
    fds[i] = -1;
  }
}
