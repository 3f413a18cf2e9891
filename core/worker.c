/* SPDX-License-Identifier: MIT */
/* A worker's life: init (loop and stop handle), run (lwIP instance, TUN
 * netif, listener, timer; then the loop), and an orderly end. lwIP has no
 * deinit, so the end undoes by hand what run set up: every pcb aborted, the
 * netif removed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_slot.h"
#include "conntab.h"
#include "log.h"
#include "privileges.h"
#include "session.h"
#include "sessionlog.h"
#include "tun.h"
#include "udp.h"
#include "worker.h"

#include "lwip/init.h"
#include "lwip/ip4_frag.h"
#include "lwip/ip6_frag.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"

/* lwIP's TCP timer period; reassembly timers run every fourth tick. */
#define S5_LWIP_TICK_MS TCP_TMR_INTERVAL

#define S5_FAIL_LOG_MS 10000

static void worker_failures_flush(struct s5_worker *w, uint64_t now) {
  if (w->fail_unlogged == 0) return;
  s5_log(w->fail_level, "%llu more sessions failed in the last %llu s (latest: %s)",
         (unsigned long long)w->fail_unlogged, (unsigned long long)(now - w->fail_logged_ms) / 1000,
         w->fail_last);
  w->fail_unlogged = 0;
  w->fail_level = S5_LOG_DEBUG;
  w->fail_logged_ms = now;
}

void s5_worker_failure(struct s5_worker *w, enum s5_log_level level, const char *what) {
  uint64_t now = uv_now(&w->loop);
  int quiet = w->fail_logged_ms != 0 && now - w->fail_logged_ms < S5_FAIL_LOG_MS;
  if (quiet || w->fail_unlogged > 0) {
    snprintf(w->fail_last, sizeof w->fail_last, "%s", what);
    if (w->fail_unlogged++ == 0 || level < w->fail_level) w->fail_level = level;
    if (!quiet) worker_failures_flush(w, now);
    return;
  }
  s5_log(level, "%s (further failures: one line per %u s)", what, S5_FAIL_LOG_MS / 1000);
  w->fail_logged_ms = now;
}

/* ---- live reload: configuration snapshots ---- */

struct s5_cfg_snap {
  unsigned refs;             /* the worker's own (while current) and its sessions' */
  struct s5_config cfg;
};

static struct s5_cfg_snap *snap_of(const struct s5_config *cfg) {
  return (struct s5_cfg_snap *)((char *)cfg - offsetof(struct s5_cfg_snap, cfg));
}

const struct s5_config *s5_worker_cfg_hold(struct s5_worker *w) {
  if (w->snap != NULL) w->snap->refs++;
  return w->cfg;
}

void s5_worker_cfg_release(struct s5_worker *w, const struct s5_config *cfg) {
  if (cfg == NULL || cfg == w->cfg0) return;
  struct s5_cfg_snap *sn = snap_of(cfg);
  if (--sn->refs == 0) free(sn);
}

/* Takes the config slot's newest generation, if there is one: sessions
 * from now on start with it; open ones keep theirs. The checks and the
 * keys a reload cannot change were dealt with by the control loop. */
static void worker_take_config(struct s5_worker *w) {
  struct s5_cfg_snap *sn = malloc(sizeof *sn);
  if (sn == NULL) {
    s5_error("reload: out of memory: this queue keeps its configuration");
    return;
  }
  if (!s5_config_slot_take(&w->cfg_gen, &sn->cfg)) {
    free(sn);
    return;
  }
  sn->refs = 1;
  const struct s5_config *old = w->cfg;
  w->snap = sn;
  w->cfg = &sn->cfg;
  s5_worker_cfg_release(w, old);
  if (w->own_process) {
    int r = s5_log_apply(w->cfg);
    if (r < -1) s5_error("reload: log file %s: %s", w->cfg->log.file, strerror(-r));
  }
  s5_debug("configuration generation %llu taken: new sessions use it", (unsigned long long)w->cfg_gen);
}

static void worker_reload_requested(uv_async_t *async) { worker_take_config(async->data); }

/* --connections: one pass over this worker's sessions and associations
 * into its queue's list (core/conntab.h), when one was asked for. */
static void worker_list_connections(struct s5_worker *w) {
  struct s5_connq *q = s5_conntab_queue(w->index);
  uint64_t req = q != NULL ? s5_conntab_pending(q) : 0;
  if (req == 0) return;
  s5_conntab_begin(q);
  s5_session_list(w, q);
  s5_udp_list(w, q);
  s5_conntab_done(q, req);
}

static void worker_list_requested(uv_async_t *async) { worker_list_connections(async->data); }

void s5_worker_list(struct s5_worker *w) { uv_async_send(&w->list_async); }

void s5_worker_reload(struct s5_worker *w) { uv_async_send(&w->reload_async); }

static void worker_tick(uv_timer_t *timer) {
  struct s5_worker *w = timer->data;
  if (w->fail_unlogged > 0 && uv_now(&w->loop) - w->fail_logged_ms >= S5_FAIL_LOG_MS)
    worker_failures_flush(w, uv_now(&w->loop));
  /* The watchdog judges a queue served, not a loop turning: no beat while
   * the TUN queue fails (core/netif.c). */
  if (w->tun_retry_ms == 0) S5_STAT_SET(w->stats, heartbeat_ms, uv_now(&w->loop));
  tcp_tmr();
  if (++w->lwip_ticks % 4 == 0) {
    ip_reass_tmr();
    ip6_reass_tmr();
    if (w->slog_dropped > 0 && uv_now(&w->loop) - w->slog_second_ms >= 1000) s5_session_log_tick(w);
  }
}

static void worker_flush(uv_check_t *check) { s5_relay_flush_pending(check->data); }

static void worker_close_handle(uv_handle_t *handle, void *arg) {
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

static void worker_close_listener(struct s5_worker *w) {
  if (w->listener != NULL) {
    tcp_close(w->listener);   /* from now on lwIP answers SYNs with a RST */
    w->listener = NULL;
  }
}

/* Stops everything; the loop then runs until the last close callback. */
static void worker_shutdown(struct s5_worker *w) {
  if (w->stopping) return;
  w->stopping = 1;
  /* Other queues may still be draining: detached, this queue's flows go to
   * them, whose closed listeners answer new SYNs with a RST, instead of
   * waiting in a queue nobody reads. */
  if (w->draining) s5_tun_queue_detach(w->fd);
  S5_STAT_SET(w->stats, ready, 0);
  worker_close_listener(w);
  if (w->sessions != NULL) s5_info("resetting %u open TCP sessions", (unsigned)w->stats->tcp_active);
  s5_session_abort_all(w);
  /* pcbs lwIP kept after their sessions ended (closing, TIME_WAIT) */
  while (tcp_active_pcbs != NULL) tcp_abort(tcp_active_pcbs);
  while (tcp_tw_pcbs != NULL) tcp_abort(tcp_tw_pcbs);
  s5_udp_stop(w);
  s5_netif_stop(w);
  s5_relay_worker_stop(w);
  uv_walk(&w->loop, worker_close_handle, NULL);
}

static void worker_drain_over(uv_timer_t *timer) { worker_shutdown(timer->data); }

/* A stop request: refuse new sessions at once, let open ones finish for up
 * to drain-timeout, then reset what is left. */
static void worker_drain(struct s5_worker *w) {
  if (w->draining || w->stopping) return;
  w->draining = 1;
  worker_close_listener(w);
  unsigned ms = w->cfg->run.drain_timeout * 1000u;
  if (w->sessions == NULL) ms = 0;
  else s5_info("draining %u TCP sessions for up to %u s", (unsigned)w->stats->tcp_active, w->cfg->run.drain_timeout);
  uv_timer_start(&w->drain_timer, worker_drain_over, ms, 0);
}

/* The last session of a draining worker ended. Deferred through the timer
 * because this runs inside that session's close path, maybe inside lwIP. */
void s5_worker_session_gone(struct s5_worker *w) {
  if (w->draining && w->sessions == NULL) uv_timer_start(&w->drain_timer, worker_drain_over, 0, 0);
}

static void worker_stop_requested(uv_async_t *async) { worker_drain(async->data); }

/* Process mode: the supervisor forwards SIGHUP so each worker process
 * reopens its own log fd; SIGTERM/SIGINT start the drain. */
static void worker_signal(uv_signal_t *sig, int signum) {
  if (signum == SIGHUP) {   /* the supervisor published a reload first, if any */
    s5_log_reopen();
    worker_take_config(sig->data);
    return;
  }
  if (signum == SIGUSR2) {   /* the supervisor asks for --connections */
    worker_list_connections(sig->data);
    return;
  }
  s5_info("%s: stopping", strsignal(signum));
  worker_drain(sig->data);
}

int s5_worker_init(struct s5_worker *w, const struct s5_config *cfg, unsigned index, int fd,
                   struct s5_queue_stats *stats) {
  memset(w, 0, offsetof(struct s5_worker, read_buf));
  w->cfg = w->cfg0 = cfg;
  w->stats = stats;
  w->index = index;
  w->fd = fd;
  int r = uv_loop_init(&w->loop);
  if (r == 0) {
    r = uv_async_init(&w->loop, &w->stop_async, worker_stop_requested);
    if (r == 0) r = uv_async_init(&w->loop, &w->reload_async, worker_reload_requested);
    if (r == 0) r = uv_async_init(&w->loop, &w->list_async, worker_list_requested);
    if (r < 0) uv_loop_close(&w->loop);
  }
  if (r < 0) {
    s5_error("queue %u: event loop: %s", index, uv_strerror(r));
    return -1;
  }
  w->stop_async.data = w;
  w->reload_async.data = w;
  w->list_async.data = w;
  return 0;
}

static int worker_watch_signals(struct s5_worker *w) {
  uv_signal_t *sigs[] = {&w->sigterm, &w->sigint, &w->sighup, &w->sigusr2};
  int nums[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR2};
  for (int i = 0; i < 4; i++) {
    int r = uv_signal_init(&w->loop, sigs[i]);
    if (r == 0) r = uv_signal_start(sigs[i], worker_signal, nums[i]);
    if (r < 0) {
      s5_error("watching %s: %s", strsignal(nums[i]), uv_strerror(r));
      return -1;
    }
    sigs[i]->data = w;
  }
  return 0;
}

/* The one listening pcb: SYNs to every address and port end up here. */
static int worker_listen(struct s5_worker *w) {
  w->listener = tcp_new_any_dest_listener();
  if (w->listener == NULL) {
    s5_error("lwIP could not create the listener");
    return -1;
  }
  tcp_arg(w->listener, w);
  tcp_syn(w->listener, s5_session_on_syn);
  tcp_accept(w->listener, s5_session_on_accept);
  return 0;
}

static int worker_start(struct s5_worker *w, int handle_signals) {
  lwip_init();   /* this thread's own instance: lwIP's state is thread-local */
  w->own_process = handle_signals;
  worker_take_config(w);   /* a worker restarted after a reload starts with it */
  if (handle_signals && worker_watch_signals(w) < 0) return -1;
  if (s5_netif_start(w) < 0 || worker_listen(w) < 0 || s5_udp_start(w) < 0) return -1;
  int r = s5_privileges_drop(w->cfg);
  if (r < 0) {
    s5_error("dropping privileges to %s: %s", w->cfg->run.user, strerror(-r));
    return -1;
  }
  r = uv_timer_init(&w->loop, &w->lwip_timer);
  if (r == 0) r = uv_timer_init(&w->loop, &w->drain_timer);
  w->flush_check.data = w;
  if (r == 0) r = uv_check_init(&w->loop, &w->flush_check);
  if (r == 0) r = uv_check_start(&w->flush_check, worker_flush);
  w->drain_timer.data = w;
  if (r == 0) r = uv_timer_start(&w->lwip_timer, worker_tick, S5_LWIP_TICK_MS, S5_LWIP_TICK_MS);
  if (r < 0) {
    s5_error("lwIP timer: %s", uv_strerror(r));
    return -1;
  }
  w->lwip_timer.data = w;
  return 0;
}

int s5_worker_run(struct s5_worker *w, int handle_signals) {
  s5_log_set_queue((int)w->index);
  int ok = worker_start(w, handle_signals);
  if (ok == 0) {
    S5_STAT_SET(w->stats, heartbeat_ms, uv_now(&w->loop));
    S5_STAT_SET(w->stats, ready, 1);
    s5_info("serving TUN queue (fd %d)", w->fd);
  } else {
    worker_shutdown(w);
  }
  uv_run(&w->loop, UV_RUN_DEFAULT);
  s5_info("stopped (%llu TCP sessions on this queue since start)", (unsigned long long)w->stats->tcp_total);
  return ok;
}

void s5_worker_stop(struct s5_worker *w) { uv_async_send(&w->stop_async); }

void s5_worker_close(struct s5_worker *w) {
  s5_worker_cfg_release(w, w->cfg);
  w->cfg = w->cfg0;
  w->snap = NULL;
  int r = uv_loop_close(&w->loop);
  if (r < 0) s5_warn("queue %u: event loop closed with handles open: %s", w->index, uv_strerror(r));
}
