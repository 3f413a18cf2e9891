/* mode = thread: one pthread per queue, each running a worker with its own
 * loop and lwIP instance. The main thread only waits for signals: every
 * thread is created with SIGTERM, SIGINT and SIGCHLD blocked, so they reach
 * the main thread's sigwait(), and a worker thread that ends reports it by
 * sending SIGCHLD to the main thread. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "run.h"
#include "worker.h"

struct pool_slot {
  struct s5_worker *w;
  pthread_t thread;
  int started;
  int done;       /* the worker returned: its stop handle must not be used */
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

static void pool_stop_all(void) {
  pthread_mutex_lock(&pool.lock);
  for (unsigned i = 0; i < pool.n; i++)
    if (pool.slots[i].started && !pool.slots[i].done) s5_worker_stop(pool.slots[i].w);
  pthread_mutex_unlock(&pool.lock);
}

/* Returns 1 when some worker ended by itself (a failure: they only end when told). */
static int pool_any_done(void) {
  int any = 0;
  pthread_mutex_lock(&pool.lock);
  for (unsigned i = 0; i < pool.n; i++) any |= pool.slots[i].done;
  pthread_mutex_unlock(&pool.lock);
  return any;
}

static int pool_start(const struct s5_config *cfg, int *fds) {
  for (unsigned i = 0; i < pool.n; i++) {
    struct pool_slot *slot = &pool.slots[i];
    slot->w = malloc(sizeof *slot->w);
    if (slot->w == NULL || s5_worker_init(slot->w, cfg, i, fds[i]) < 0) {
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
  }
  return 0;
}

/* Waits for SIGTERM/SIGINT, or for a worker that ended on its own. */
static int pool_wait(const sigset_t *set) {
  for (;;) {
    int sig;
    if (sigwait(set, &sig) != 0) continue;
    if (sig == SIGCHLD) {
      if (pool_any_done()) {
        s5_error("a worker stopped unexpectedly: stopping all");
        return 1;
      }
      continue;
    }
    s5_info("%s: stopping", strsignal(sig));
    return 0;
  }
}

int s5_run_threads(const struct s5_config *cfg) {
  int *fds = calloc(cfg->queues, sizeof *fds);
  pool.slots = calloc(cfg->queues, sizeof *pool.slots);
  if (fds == NULL || pool.slots == NULL) {
    s5_error("out of memory");
    return 1;
  }
  pool.n = cfg->queues;
  pool.main_thread = pthread_self();

  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, &old);

  int code = 1;
  if (s5_device_open(cfg, fds) == 0) {
    if (pool_start(cfg, fds) == 0) {
      s5_info("ready: %s, %u queues, mode thread", cfg->tun.name, cfg->queues);
      code = pool_wait(&set);
    }
    pool_stop_all();
    for (unsigned i = 0; i < pool.n; i++) {
      struct pool_slot *slot = &pool.slots[i];
      if (!slot->started) continue;
      pthread_join(slot->thread, NULL);
      if (slot->result != 0) code = 1;
      s5_worker_close(slot->w);
      free(slot->w);
    }
    s5_device_close(fds, cfg->queues);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(pool.slots);
  free(fds);
  return code;
}
