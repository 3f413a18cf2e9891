/* SPDX-License-Identifier: MIT */
/* mode = thread: one pthread per queue, each running a worker with its own
 * loop and lwIP instance. The main thread runs the control loop; a worker
 * thread that ends by itself (they only end when told) reports it with a
 * SIGCHLD to the main thread, which then stops the daemon: in one process
 * there is no restarting a worker whose state may be damaged. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threads/daemon/control.h"
#include "base/log.h"
#include "threads/device/device.h"
#include "threads/modes/modes.h"
#include "worker/worker.h"

struct pool_slot {
  struct s5_worker *w;
  pthread_t thread;
  int started;
  int done; /* the worker returned: its stop handle must not be used */
  int result;
};

struct pool {
  struct pool_slot *slots;
  unsigned n;
  pthread_t main_thread;
  pthread_mutex_t lock;
};

static struct pool pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *pool_thread(void *arg) {
  struct pool_slot *slot = arg;
  int result = s5_worker_run(slot->w, 0);
  pthread_mutex_lock(&pool.lock);
  slot->done = 1;
  slot->result = result;
  pthread_mutex_unlock(&pool.lock);
  pthread_kill(pool.main_thread, SIGCHLD);
  return NULL;
}

/* Calls fn for every worker that runs (under the lock: none ends meanwhile). */
static void pool_each_running(void (*fn)(struct s5_worker *w)) {
  pthread_mutex_lock(&pool.lock);
  for (unsigned i = 0; i < pool.n; i++)
    if (pool.slots[i].started && !pool.slots[i].done) fn(pool.slots[i].w);
  pthread_mutex_unlock(&pool.lock);
}

static void pool_stop_all(void) { pool_each_running(s5_worker_stop); }

static int pool_on_child(void *arg) {
  int any = 0;
  pthread_mutex_lock(&pool.lock);
  for (unsigned i = 0; i < pool.n; i++) any |= pool.slots[i].done;
  pthread_mutex_unlock(&pool.lock);
  if (!any) return 0;
  s5_error("a worker stopped unexpectedly: stopping all");
  return -1;
}

/* SIGHUP: the control loop published the new configuration; each worker
 * takes it on its own loop. */
static void pool_on_hangup(void *arg) {
  (void)arg;
  pool_each_running(s5_worker_reload);
}

/* --connections: each worker lists its sessions on its own loop. */
static void pool_on_list(void *arg) {
  (void)arg;
  pool_each_running(s5_worker_list);
}

static int pool_start(const struct s5_config *cfg, int *fds, struct s5_stats_area *stats) {
  for (unsigned i = 0; i < pool.n; i++) {
    struct pool_slot *slot = &pool.slots[i];
    slot->w = malloc(sizeof *slot->w);
    if (slot->w == NULL || s5_worker_init(slot->w, cfg, i, fds[i], &stats->q[i]) < 0) {
      free(slot->w);
      slot->w = NULL;
      return -1;
    }
    int r = pthread_create(&slot->thread, NULL, pool_thread, slot);
    if (r != 0) {
      s5_error("starting worker thread %u: %s", i, strerror(r));
      s5_worker_close(slot->w);
      free(slot->w);
      slot->w = NULL;
      return -1;
    }
    slot->started = 1;
    S5_STAT_SET(&stats->q[i], pid, getpid()); /* every queue lives in this process */
  }
  return 0;
}

static int pool_join_all(void) {
  int code = 0;
  for (unsigned i = 0; i < pool.n; i++) {
    struct pool_slot *slot = &pool.slots[i];
    if (!slot->started) continue;
    pthread_join(slot->thread, NULL);
    if (slot->result != 0) code = 1;
    s5_worker_close(slot->w);
    free(slot->w);
  }
  return code;
}

int s5_run_threads(const struct s5_config *cfg, struct s5_stats_area *stats) {
  int *fds = calloc(cfg->queues, sizeof *fds);
  pool.slots = calloc(cfg->queues, sizeof *pool.slots);
  if (fds == NULL || pool.slots == NULL) {
    s5_error("out of memory");
    return 1;
  }
  pool.n = cfg->queues;
  pool.main_thread = pthread_self();

  sigset_t old;
  s5_control_block_signals(&old); /* before any thread exists: they inherit the mask */
  int code = 1, asked = 0;
  if (s5_device_open(cfg, fds) == 0) {
    if (pool_start(cfg, fds, stats) == 0) {
      struct s5_control_mode mode = {
        .on_child = pool_on_child, .on_hangup = pool_on_hangup, .on_list = pool_on_list};
      s5_restrict_main(cfg);
      code = s5_control_run(cfg, stats, &mode);
      asked = code == 0; /* SIGTERM or SIGINT, not a failure */
    }
    pool_stop_all();
    if (pool_join_all() != 0) code = 1;
    s5_device_close(cfg, fds, asked);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(pool.slots);
  free(fds);
  return code;
}
