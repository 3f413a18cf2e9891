/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "threads/daemon/control.h"
#include "threads/ctl/fd_reserve.h"
#include "base/clock.h"
#include "base/log.h"
#include "dns/dnsmap.h"
#include "threads/ctl/metrics.h"
#include "threads/daemon/notify.h"
#include "threads/daemon/reload.h"
#include "threads/device/device.h"
#include "threads/ctl/render.h"
#include "threads/ctl/stats_render.h"
#include "threads/ctl/stats_server.h"

/* The watchdog, the device and claim checks once a second: a stall is
 * reported at 5 s and a deleted device within a second, and an idle daemon
 * wakes once a second here. Signals, restarts and the listeners' deadlines
 * wake the loop when they are due, not at a tick. */
#define S5_CONTROL_PERIOD_MS 1000
#define S5_CONTROL_START_MS 5 /* readiness checks until every queue serves (about 20 ms) */
#define S5_STALL_MS 5000      /* a loop this quiet is reported */

static const int control_signals[] = {SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1};

void s5_control_block_signals(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof control_signals / sizeof *control_signals; i++)
    sigaddset(&set, control_signals[i]);
  pthread_sigmask(SIG_BLOCK, &set, old);
}

static void log_summaries(const struct s5_stats_area *stats) {
  char line[512];
  struct s5_queue_stats st;
  for (unsigned i = 0; i <= stats->queues; i++) {
    s5_stats_read(stats, i, &st);
    s5_stats_summary(&st, line, sizeof line);
    if (i < stats->queues) s5_info("queue %u: %s", i, line);
    else s5_info("total: %s", line);
  }
}

struct control {
  const struct s5_config *cfg; /* live: replaced in place by a reload */
  struct s5_config *live;
  struct s5_stats_server *server;
  struct s5_stats_area *stats;
  const struct s5_control_mode *mode;
  int ready;
  unsigned ifindex;       /* the device's, 0 = not known */
  unsigned char *stalled; /* per queue: already reported */
  int reload_wanted;      /* a SIGHUP's reload not started yet (at most one waits) */
};

/* READY=1 once every queue serves; then the pid file. */
static void check_ready(struct control *c) {
  if (c->ready) return;
  for (unsigned i = 0; i < c->stats->queues; i++)
    if (!S5_STAT_GET(&c->stats->q[i], ready)) return;
  c->ready = 1;
  s5_notify_ready(c->cfg);
  s5_info("ready: %s, %u %s, mode %s", c->cfg->tun.name, c->cfg->queues,
          c->cfg->queues == 1 ? "queue" : "queues", c->cfg->mode == S5_MODE_THREAD ? "thread" : "process");
}

static void check_stalls(struct control *c) {
  uint64_t now = s5_now_ms();
  for (unsigned i = 0; i < c->stats->queues; i++) {
    const struct s5_queue_stats *st = &c->stats->q[i];
    uint64_t beat = S5_STAT_GET(st, heartbeat_ms);
    int stalled = S5_STAT_GET(st, ready) && beat != 0 && now > beat + S5_STALL_MS;
    int failing = S5_STAT_GET(st, tun_failing) != 0;
    if (stalled && !c->stalled[i] && failing)
      s5_warn("queue %u: TUN queue not read for %llu ms (queue error, retrying)", i,
              (unsigned long long)(now - beat));
    else if (stalled && !c->stalled[i])
      s5_warn("queue %u: worker's event loop has not turned for %llu ms", i,
              (unsigned long long)(now - beat));
    else if (!stalled && c->stalled[i]) s5_info("queue %u: worker's event loop turns again", i);
    c->stalled[i] = (unsigned char)stalled;
  }
}

/* The device deleted under us (ip link del) leaves every queue dead, and a
 * device of the same name made by someone else is not ours: either way the
 * daemon stops with a failure, for its supervisor (systemd's
 * Restart=on-failure) to start it afresh. Returns -1 then, else 0. */
static int check_device(const struct control *c) {
  if (c->ifindex == 0) return 0;
  unsigned now = s5_device_ifindex(c->cfg);
  /* 0 with EMFILE, ENOMEM...: the lookup itself failed (it needs a socket,
   * and a full fd table is a load the daemon must live through): not an
   * answer, ask again next time. Only "no such device" is one. */
  if (now == c->ifindex || (now == 0 && errno != ENODEV && errno != ENXIO)) return 0;
  s5_error("%s was deleted (ifindex %u is gone): stopping; start s5tund again to recreate it",
           c->cfg->tun.name, c->ifindex);
  return -1;
}

/* A reload's thread is done (threads/daemon/reload.c): what loaded is
 * published, then the workers hear of it; auto-route's prefix lists and a
 * new stats socket path take effect at once. */
static void control_reloaded(struct control *c) {
  if (s5_reload_finish(c->live, c->stats) != 1) return;
  s5_device_reroute(c->live);
  if (c->mode->on_hangup) c->mode->on_hangup(c->mode->arg);
  if (strcmp(c->server->path, c->live->stats.socket) == 0) return;
  s5_stats_server_close(c->server);
  if (s5_stats_server_open(c->server, c->live, c->stats) < 0)
    s5_error("reload: no stats socket until the next reload");
  c->server->poke = c->mode->on_list;
  c->server->poke_arg = c->mode->arg;
}

/* A SIGHUP's reload starts once no other runs: SIGHUPs during one make one
 * more reload after it, which reads the files as they are then. Called
 * after the mode's tick, so that a worker restart that waited for the
 * reload forks before the next one starts. */
static void control_reload_start(struct control *c) {
  if (!c->reload_wanted || s5_reload_running()) return;
  c->reload_wanted = 0;
  s5_reload_start(c->live, c->stats);
}

/* Returns 1 to stop cleanly, -1 to stop with failure, 0 to go on. */
static int handle_signal(struct control *c, int sig) {
  switch (sig) {
    case SIGTERM:
    case SIGINT: s5_info("%s: stopping", strsignal(sig)); return 1;
    case SIGHUP:
      s5_log_reopen();
      s5_info("SIGHUP: log reopened");
      if (c->mode->on_hangup) c->mode->on_hangup(c->mode->arg); /* their logs now; a reload later */
      if (s5_reload_running() && !c->reload_wanted)
        s5_info("SIGHUP: a reload is running; another follows it");
      c->reload_wanted = 1;
      return 0;
    case SIGUSR1: log_summaries(c->stats); return 0;
    case SIGCHLD: return c->mode->on_child(c->mode->arg) < 0 ? -1 : 0;
    default: return 0;
  }
}

/* The mode's next tick, the listeners' next deadline, at most the period. */
static int control_wait_ms(const struct control *c, const struct s5_stats_server *server,
                           const struct s5_metrics_server *metrics) {
  long t = c->mode->next_tick ? c->mode->next_tick(c->mode->arg) : -1;
  int period = c->ready ? S5_CONTROL_PERIOD_MS : S5_CONTROL_START_MS; /* READY=1 not a tick late */
  int w = (t < 0 || t > period) ? period : (int)t;
  int ws = s5_stats_server_wait_ms(server), wm = s5_metrics_wait_ms(metrics);
  if (ws >= 0 && ws < w) w = ws;
  if (wm >= 0 && wm < w) w = wm;
  return w;
}

int s5_control_run(const struct s5_config *cfg, struct s5_stats_area *stats,
                   const struct s5_control_mode *mode) {
  sigset_t set;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof control_signals / sizeof *control_signals; i++)
    sigaddset(&set, control_signals[i]);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    s5_error("signalfd: %s", strerror(errno));
    return 1;
  }
  unsigned char stalled[S5_QUEUES_MAX] = {0};
  struct s5_config *live = malloc(sizeof *live);
  if (live == NULL) {
    s5_error("out of memory");
    close(sfd);
    return 1;
  }
  *live = *cfg;
  struct s5_stats_server server;
  struct s5_metrics_server metrics;
  struct control c = {live, live, &server, stats, mode, 0, s5_device_ifindex(cfg), stalled, 0};
  if (c.ifindex == 0)
    s5_warn("%s: no ifindex (%s): a deleted device goes unnoticed", cfg->tun.name, strerror(errno));
  int rr = s5_fd_reserve_open();
  if (rr < 0) s5_warn("descriptor reserve for the listeners: /dev/null: %s", strerror(-rr));
  s5_render_config(live); /* the groups' part names its groups and members */
  if (s5_stats_server_open(&server, live, stats) < 0) {
    close(sfd);
    free(live);
    return 1;
  }
  server.poke = mode->on_list;
  server.poke_arg = mode->arg;
  if (s5_metrics_open(&metrics, live, stats) < 0) {
    s5_stats_server_close(&server);
    close(sfd);
    free(live);
    return 1;
  }

  int result = 0;
  while (result == 0) {
    struct pollfd pfd[2 + S5_CTL_POLLFDS + S5_METRICS_POLLFDS] = {{.fd = sfd, .events = POLLIN},
                                                                  {.fd = s5_reload_fd(), .events = POLLIN}};
    unsigned ns = s5_stats_server_pollfds(&server, pfd + 2);
    unsigned nm = s5_metrics_pollfds(&metrics, pfd + 2 + ns);
    int n = poll(pfd, 2 + ns + nm, control_wait_ms(&c, &server, &metrics));
    if (n < 0 && errno != EINTR) {
      s5_error("poll: %s", strerror(errno));
      result = -1;
      break;
    }
    struct signalfd_siginfo si;
    while (result == 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
      result = handle_signal(&c, (int)si.ssi_signo);
    if (result == 0 && n > 0 && (pfd[1].revents & POLLIN)) control_reloaded(&c);
    s5_stats_server_serve(&server, pfd + 2, n > 0 ? ns : 0);
    s5_metrics_serve(&metrics, pfd + 2 + ns, n > 0 ? nm : 0);
    if (mode->tick) mode->tick(mode->arg);
    s5_dnsmap_state_tick(); /* here, not on a worker's loop: one writer */
    if (result == 0) control_reload_start(&c);
    s5_device_tend();
    s5_device_count(cfg, stats);
    check_ready(&c);
    check_stalls(&c);
    if (result == 0) result = check_device(&c);
  }
  s5_reload_abandon(); /* a SIGTERM does not wait for a compile */
  s5_metrics_close(&metrics);
  s5_stats_server_close(&server);
  s5_notify_stopping(cfg);
  close(sfd);
  s5_render_config(NULL);
  free(live);
  return result > 0 ? 0 : 1;
}
