/* SPDX-License-Identifier: MIT */
/* mode = process: the parent opens the device, forks one worker process per
 * queue and supervises them. The parent holds every queue fd, so the device
 * stays while a worker restarts; a restarted worker gets a freshly opened
 * queue (the old one, with whatever packets the dead worker left in it, is
 * closed only after the new one is attached). Workers that die quickly in a
 * row are restarted with a growing delay, so a crash loop cannot spin.
 * The TCP clients of a worker that died are reset (flowreset.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "threads/daemon/control.h"
#include "threads/daemon/reload.h"
#include "threads/recovery/flowreset.h"
#include "base/assert.h"
#include "base/clock.h"
#include "base/log.h"
#include "threads/device/device.h"
#include "threads/modes/modes.h"
#include "worker/worker.h"

#define S5_RESTART_DELAY_MIN_MS 100
#define S5_RESTART_DELAY_MAX_MS 30000
#define S5_RESTART_HEALTHY_MS 10000 /* a worker that lived this long resets the delay */
#define S5_STOP_GRACE_MS 5000       /* after drain-timeout: then SIGKILL */

struct supervisor {
  const struct s5_config *cfg;
  struct s5_stats_area *stats;
  struct child *kids;
  struct s5_flowreset *resets; /* the flow tables and the resets of dead workers' clients */
  sigset_t old_mask;           /* what workers run with */
};

struct child {
  pid_t pid; /* 0 while waiting to be restarted */
  int fd;    /* its TUN queue, held by the parent too */
  uint64_t started_ms;
  uint64_t restart_at_ms;
  unsigned delay_ms;
  unsigned restarts;
};

/* Closes every inherited fd but stdio, the log and the queue: the other
 * queues, the supervisor's signalfd and stats socket are not the worker's. */
static void child_close_fds(int keep1, int keep2) {
  int lo = keep1 < keep2 ? keep1 : keep2, hi = keep1 < keep2 ? keep2 : keep1;
  if (lo > 3) close_range(3, (unsigned)lo - 1, 0);
  if (hi > lo + 1) close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
  close_range((unsigned)hi + 1, ~0u, 0);
}

/* In the child: serve one queue, then exit. Never returns. */
static void child_main(struct supervisor *sv, unsigned index, pid_t parent) {
  const struct s5_config *cfg = sv->cfg;
  /* Die with the supervisor, so a killed parent never leaves queues behind;
   * one killed before this line sends no death signal: the check after it. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  int fd = sv->kids[index].fd, log_fd = s5_log_fd();
  s5_log_child_close();
  child_close_fds(fd, log_fd > 2 ? log_fd : fd);
  s5_log_child_open();
  sigprocmask(SIG_SETMASK, &sv->old_mask, NULL);

  struct s5_worker *w = malloc(sizeof *w);
  int code = 1;
  if (w != NULL && s5_worker_init(w, cfg, index, fd, &sv->stats->q[index]) == 0) {
    s5_worker_track_flows(w, s5_flowreset_table(sv->resets, index));
    code = s5_worker_run(w, 1) == 0 ? 0 : 1;
    s5_worker_close(w);
  }
  _exit(code);
}

/* No fork while a reload's thread runs (threads/daemon/reload.c). The
 * child of a process with two threads may only make async-signal-safe
 * calls (POSIX) and a worker makes many more: it starts with a copy of
 * every lock the other thread held at that moment, which nobody in the
 * child ever releases. glibc's fork resets malloc's and the stdio list's,
 * not the others, such as the time zone's (localtime_r, every log line) or
 * syslog's: a worker could hang at its first log line. So a restart that
 * falls due during a reload waits for it to end; the end wakes the control
 * loop, whose tick then forks before another reload starts. */
static int fork_allowed(void) { return !s5_reload_running(); }

static int child_spawn(struct supervisor *sv, unsigned index) {
  struct child *kids = sv->kids;
  S5_ASSERT(index < sv->cfg->queues && kids[index].pid == 0); /* one worker per queue */
  S5_ASSERT(fork_allowed());
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    s5_error("forking worker %u: %s", index, strerror(errno));
    return -1;
  }
  if (pid == 0) child_main(sv, index, parent);
  kids[index].pid = pid;
  kids[index].started_ms = s5_now_ms();
  S5_STAT_SET(&sv->stats->q[index], pid, pid);
  s5_info("worker %u started (pid %d)", index, (int)pid);
  return 0;
}

static void describe_exit(int status, char *buf, size_t len) {
  if (WIFSIGNALED(status)) snprintf(buf, len, "killed by %s", strsignal(WTERMSIG(status)));
  else snprintf(buf, len, "exit code %d", WEXITSTATUS(status));
}

/* A worker died unasked: give its queue a fresh fd and schedule a restart. */
static void child_died(struct supervisor *sv, unsigned index, int status) {
  const struct s5_config *cfg = sv->cfg;
  struct child *c = &sv->kids[index];
  struct s5_queue_stats *st = &sv->stats->q[index];
  S5_ASSERT(c->pid > 0); /* running -> waiting for its restart */
  /* The dead worker's sessions are gone with it. */
  S5_STAT_SET(st, ready, 0);
  S5_STAT_SET(st, tcp_active, 0);
  S5_STAT_SET(st, udp_active, 0);
  S5_STAT_SET(st, pid, 0);
  char why[64];
  describe_exit(status, why, sizeof why);
  uint64_t lived = s5_now_ms() - c->started_ms;
  if (lived >= S5_RESTART_HEALTHY_MS) c->delay_ms = S5_RESTART_DELAY_MIN_MS;
  else
    c->delay_ms = c->delay_ms == 0
                    ? S5_RESTART_DELAY_MIN_MS
                    : (c->delay_ms * 2 > S5_RESTART_DELAY_MAX_MS ? S5_RESTART_DELAY_MAX_MS : c->delay_ms * 2);
  S5_ASSERT(c->delay_ms >= S5_RESTART_DELAY_MIN_MS && c->delay_ms <= S5_RESTART_DELAY_MAX_MS);
  c->pid = 0;
  c->restart_at_ms = s5_now_ms() + c->delay_ms;
  s5_warn("worker %u %s after %llu ms; restarting in %u ms", index, why, (unsigned long long)lived,
          c->delay_ms);

  int fresh = s5_device_open_queue(cfg, index);
  if (fresh >= 0) {
    close(c->fd);
    c->fd = fresh;
  }
  s5_flowreset_worker_died(sv->resets, index);
  s5_reload_worker_died(index);
}

static void reap(struct supervisor *sv, int stopping) {
  const struct s5_config *cfg = sv->cfg;
  struct child *kids = sv->kids;
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (unsigned i = 0; i < cfg->queues; i++) {
      if (kids[i].pid != pid) continue;
      if (stopping) {
        kids[i].pid = 0;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          char why[64];
          describe_exit(status, why, sizeof why);
          s5_warn("worker %u %s while stopping", i, why);
        }
      } else {
        child_died(sv, i, status);
      }
    }
  }
}

/* Milliseconds until the next scheduled restart, or -1 for none. */
static long next_restart_in(void *arg) {
  struct supervisor *sv = arg;
  const struct s5_config *cfg = sv->cfg;
  const struct child *kids = sv->kids;
  long best = -1;
  if (!fork_allowed()) return -1;
  uint64_t now = s5_now_ms();
  for (unsigned i = 0; i < cfg->queues; i++) {
    if (kids[i].pid != 0) continue;
    long in = kids[i].restart_at_ms > now ? (long)(kids[i].restart_at_ms - now) : 0;
    if (best < 0 || in < best) best = in;
  }
  return best;
}

static void restart_due(void *arg) {
  struct supervisor *sv = arg;
  struct child *kids = sv->kids;
  uint64_t now = s5_now_ms();
  if (!fork_allowed()) return;
  for (unsigned i = 0; i < sv->cfg->queues; i++) {
    if (kids[i].pid != 0 || kids[i].restart_at_ms > now) continue;
    kids[i].restarts++;
    S5_STAT_ADD(&sv->stats->q[i], restarts, 1);
    if (child_spawn(sv, i) < 0) kids[i].restart_at_ms = now + S5_RESTART_DELAY_MAX_MS;
  }
}

/* SIGHUP: the supervisor reopened its log; each worker has its own fd. */
static void signal_workers(struct supervisor *sv, int sig) {
  for (unsigned i = 0; i < sv->cfg->queues; i++)
    if (sv->kids[i].pid > 0) kill(sv->kids[i].pid, sig);
}

static void on_hangup(void *arg) { signal_workers(arg, SIGHUP); }

/* --connections: each worker process lists its sessions (SIGUSR2). */
static void on_list(void *arg) { signal_workers(arg, SIGUSR2); }

/* The queue fd of a worker that serves, for the reset probes; else -1. */
static int serving_fd(void *arg, unsigned i) {
  struct supervisor *sv = arg;
  if (sv->kids[i].pid == 0 || !S5_STAT_GET(&sv->stats->q[i], ready)) return -1;
  return sv->kids[i].fd;
}

/* The control loop's tick: restarts, and rounds of reset probes. */
static long supervisor_next_tick(void *arg) {
  struct supervisor *sv = arg;
  long a = next_restart_in(arg), b = s5_flowreset_next_in(sv->resets);
  return a < 0 ? b : (b < 0 || a < b ? a : b);
}

static void supervisor_tick(void *arg) {
  struct supervisor *sv = arg;
  restart_due(arg);
  s5_flowreset_due(sv->resets);
}

static int on_child(void *arg) {
  reap(arg, 0);
  return 0;
}

static int wait_signal(const sigset_t *set, long timeout_ms) {
  if (timeout_ms < 0) {
    int sig;
    return sigwait(set, &sig) == 0 ? sig : -1;
  }
  struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000};
  int sig = sigtimedwait(set, NULL, &ts);
  return sig; /* -1 with EAGAIN on timeout */
}

static unsigned alive(const struct s5_config *cfg, const struct child *kids) {
  unsigned n = 0;
  for (unsigned i = 0; i < cfg->queues; i++) n += kids[i].pid != 0;
  return n;
}

/* SIGTERM to every worker (they drain), then wait; SIGKILL whoever is left
 * after drain-timeout and a grace. */
static void stop_all(struct supervisor *sv, const sigset_t *set) {
  const struct s5_config *cfg = sv->cfg;
  struct child *kids = sv->kids;
  for (unsigned i = 0; i < cfg->queues; i++)
    if (kids[i].pid > 0) kill(kids[i].pid, SIGTERM);
  uint64_t deadline = s5_now_ms() + cfg->run.drain_timeout * 1000ull + S5_STOP_GRACE_MS;
  while (alive(cfg, kids) > 0) {
    reap(sv, 1);
    uint64_t now = s5_now_ms();
    if (alive(cfg, kids) == 0) break;
    if (now >= deadline) {
      for (unsigned i = 0; i < cfg->queues; i++)
        if (kids[i].pid > 0) {
          s5_warn("worker %u did not stop in time: killing it", i);
          kill(kids[i].pid, SIGKILL);
        }
      deadline = now + S5_STOP_GRACE_MS;
    }
    wait_signal(set, (long)(deadline - now));
  }
}

int s5_run_processes(const struct s5_config *cfg, struct s5_stats_area *stats) {
  struct child *kids = calloc(cfg->queues, sizeof *kids);
  int *fds = calloc(cfg->queues, sizeof *fds);
  if (kids == NULL || fds == NULL) {
    s5_error("out of memory");
    return 1;
  }
  struct supervisor sv = {.cfg = cfg, .stats = stats, .kids = kids};
  s5_control_block_signals(&sv.old_mask);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);

  int code = 1;
  sv.resets = s5_flowreset_create(cfg, stats, serving_fd, &sv); /* before any fork */
  if (sv.resets == NULL || s5_device_open(cfg, fds) < 0) goto out;
  for (unsigned i = 0; i < cfg->queues; i++) kids[i].fd = fds[i];

  unsigned started = 0;
  while (started < cfg->queues && child_spawn(&sv, started) == 0) started++;
  if (started == cfg->queues) {
    struct s5_control_mode mode = {.arg = &sv,
                                   .on_child = on_child,
                                   .on_hangup = on_hangup,
                                   .on_list = on_list,
                                   .next_tick = supervisor_next_tick,
                                   .tick = supervisor_tick};
    s5_restrict_main(cfg);
    code = s5_control_run(cfg, stats, &mode);
  }
  stop_all(&sv, &chld);
  for (unsigned i = 0; i < cfg->queues; i++) fds[i] = kids[i].fd;
  s5_device_close(cfg, fds, code == 0);
out:
  sigprocmask(SIG_SETMASK, &sv.old_mask, NULL);
  s5_flowreset_free(sv.resets);
  free(kids);
  free(fds);
  return code;
}
