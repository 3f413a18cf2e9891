/* SPDX-License-Identifier: MIT */
/* A worker's life: init (loop and stop handle), run (lwIP instance, TUN
 * netif, listener, timer; then the loop), and an orderly end. lwIP has no
 * deinit, so the end undoes by hand what run set up: every pcb aborted, the
 * netif removed. The modules it drives tell it what it must know through
 * callbacks (a drain that is over); it never lends them itself. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shared/rules.h"
#include "shared/conntab.h"
#include "shared/uptab.h"
#include "base/assert.h"
#include "base/log.h"
#include "base/privileges.h"
#include "ctx/sessionlog.h"
#include "socks5/ss_aead.h"
#include "socks5/tls.h"
#include "tcp/handshake.h"
#include "tun/tun.h"
#include "udp/udp.h"
#include "worker/worker.h"

#include "lwip/init.h"
#include "lwip/ip4_frag.h"
#include "lwip/ip6_frag.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"

/* The worker's tick: lwIP's TCP timer period while lwIP has a connection
 * (tcp_tmr()'s delayed ACKs, retransmissions, TIME_WAIT); once a second when
 * it has none, listeners aside, so an idle worker wakes once a second, not
 * four times, and still beats its heartbeat and runs its once-a-second work
 * (reassembly timers, the idle check, the session log's rate limit). */
#define S5_LWIP_TICK_MS TCP_TMR_INTERVAL
#define S5_IDLE_TICK_MS 1000
#define S5_TICKS_PER_SECOND (1000 / S5_LWIP_TICK_MS)
_Static_assert(S5_IDLE_TICK_MS == S5_TICKS_PER_SECOND * S5_LWIP_TICK_MS, "an idle tick is a whole second");
_Static_assert(S5_MEMTRIM_PERIOD_MS <= S5_IDLE_TICK_MS, "an idle worker checks once a period at least");

/* ---- live reload and --connections ---- */

/* Sessions from now on start with the config slot's newest generation, if
 * there is one; open ones keep theirs. */
static void worker_take_config(struct s5_worker *w) {
  if (!s5_wctx_cfg_take(&w->ctx)) return;
  const struct s5_config *cfg = w->ctx.cfg;
  s5_rules_taken(w->ctx.index, cfg); /* its older rules may be compiled over now */
  if (w->own_process) {
    int r = s5_log_apply(&cfg->log);
    if (r < -1) s5_error("reload: log file %s: %s", cfg->log.file, strerror(-r));
  }
  s5_tls_release(); /* TLS contexts built again from the files: a new CA or certificate is read */
  s5_pool_reload(&w->pool);
  if (w->ctx.index == 0) s5_upcheck_reload(&w->check);
  if (w->ctx.index == 0) s5_latprobe_reload(&w->lat);
  s5_debug("configuration generation %llu taken: new sessions use it", (unsigned long long)w->ctx.cfg_gen);
}

static void worker_reload_requested(uv_async_t *async) { worker_take_config(async->data); }

/* --connections: one pass over this worker's sessions and associations
 * into its queue's list (core/shared/conntab.h), when one was asked for. */
static void worker_list_connections(struct s5_worker *w) {
  struct s5_connq *q = s5_conntab_queue(w->ctx.index);
  uint64_t req = q != NULL ? s5_conntab_pending(q) : 0;
  if (req == 0) return;
  s5_conntab_begin(q);
  s5_sessions_list(&w->tcp, q);
  s5_udp_list(w->udp, q);
  s5_conntab_done(q, req);
}

static void worker_list_requested(uv_async_t *async) { worker_list_connections(async->data); }

void s5_worker_list(struct s5_worker *w) { uv_async_send(&w->list_async); }

void s5_worker_reload(struct s5_worker *w) { uv_async_send(&w->reload_async); }

/* ---- timers ---- */

/* Once a second, and on every tick while a load is on (memtrim.h): a
 * worker that went idle after a load lets go of its spare read buffers;
 * the last of the process to go idle trims the heap. */
static void worker_idle_check(struct s5_worker *w) {
  if (w->ctx.draining || !s5_memtrim_went_idle(&w->trim, w->ctx.stats, uv_now(&w->ctx.loop))) return;
  s5_relay_drop_cache(&w->relay);
  s5_udp_release(w->udp);
  if (s5_memtrim_release()) S5_STAT_ADD(w->ctx.stats, mem_trims, 1);
}

/* Whether tcp_tmr() has work: a pcb past LISTEN (handshake, open, closing
 * or TIME_WAIT). */
static int worker_tcp_busy(void) { return tcp_active_pcbs != NULL || tcp_tw_pcbs != NULL; }

static void worker_tick(uv_timer_t *timer);

/* The tick's period: the timer's own repeat. */
static uint64_t worker_tick_ms(struct s5_worker *w) { return uv_timer_get_repeat(&w->lwip_timer); }

static void worker_pace(struct s5_worker *w, unsigned ms) {
  if (ms == worker_tick_ms(w)) return;
  int r = uv_timer_start(&w->lwip_timer, worker_tick, ms, ms);
  S5_ASSERT(r == 0); /* only fails on a closing handle or a NULL callback */
}

/* Once a second, whichever the pace. */
static void worker_second(struct s5_worker *w) {
  struct s5_wctx *ctx = &w->ctx;
  ip_reass_tmr();
  ip6_reass_tmr();
  worker_idle_check(w);
  if (ctx->slog.dropped > 0 && uv_now(&ctx->loop) - ctx->slog.second_ms >= 1000) s5_session_log_tick(ctx);
}

static void worker_tick(uv_timer_t *timer) {
  struct s5_worker *w = timer->data;
  struct s5_wctx *ctx = &w->ctx;
  s5_failures_tick(&ctx->fail, uv_now(&ctx->loop));
  /* The watchdog judges a queue served, not a loop turning: no beat while
   * the TUN queue fails (core/netif/netif.c). */
  if (!s5_netif_failing(&w->tun)) S5_STAT_SET(ctx->stats, heartbeat_ms, uv_now(&ctx->loop));
  if (worker_tcp_busy()) tcp_tmr();
  w->lwip_ticks += (unsigned)(worker_tick_ms(w) / S5_LWIP_TICK_MS);
  if (w->lwip_ticks >= S5_TICKS_PER_SECOND) {
    w->lwip_ticks = 0;
    worker_second(w);
  } else if (w->trim.busy) {
    worker_idle_check(w);
  }
  /* Slows down only here, so the tick a busy worker waits for always comes
   * (worker_turn_end() only speeds it up). */
  if (!worker_tcp_busy()) worker_pace(w, S5_IDLE_TICK_MS);
}

/* ---- the loop's turn ---- */

/* After every poll phase, in this order: the TCP sessions' deferred
 * writes (their segments of one batch of TUN reads leave together), then
 * UDP's datagrams to the relays and what its TUN writer holds. */
static void worker_turn_end(uv_check_t *check) {
  struct s5_worker *w = check->data;
  s5_relay_flush_pending(&w->relay);
  if (w->udp != NULL) s5_udp_end_turn(w->udp);
  /* A segment of this turn opened a connection: lwIP's timer from now. */
  if (worker_tick_ms(w) != S5_LWIP_TICK_MS && worker_tcp_busy() && !w->ctx.stopping)
    worker_pace(w, S5_LWIP_TICK_MS);
}

/* The loop policy, right before the loop polls (everything of the turn
 * was flushed): UDP moderation. When UDP's relays are busy it wishes a
 * wait of [session] udp-coalesce (core/udp/udp_io.c says why); the worker
 * blocks its loop that long, except while it stops. Its other traffic
 * waits too, at most udp-coalesce (10 ms at most). */
static void worker_turn_wait(uv_prepare_t *prepare) {
  struct s5_worker *w = prepare->data;
  if (w->udp == NULL) return;
  uint64_t us = s5_udp_wait_wish(w->udp);
  if (us == 0 || w->ctx.stopping) return;
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
  S5_STAT_ADD(w->ctx.stats, udp_coalesce_waits, 1);
}

/* ---- the end: drain, then shutdown ---- */

static void worker_close_handle(uv_handle_t *handle, void *arg) {
  if (!uv_is_closing(handle)) uv_close(handle, NULL);
}

/* Stops everything; the loop then runs until the last close callback. */
static void worker_shutdown(struct s5_worker *w) {
  struct s5_wctx *ctx = &w->ctx;
  if (ctx->stopping) return;
  ctx->stopping = 1;
  /* Other queues may still be draining: detached, this queue's flows go to
   * them, whose closed listeners answer new SYNs with a RST, instead of
   * waiting in a queue nobody reads. */
  if (ctx->draining) s5_tun_queue_detach(w->fd);
  S5_STAT_SET(ctx->stats, ready, 0);
  if (!s5_sessions_empty(&w->tcp))
    s5_info("resetting %u open TCP sessions", (unsigned)ctx->stats->tcp_active);
  s5_sessions_stop(&w->tcp);
  s5_pool_stop(&w->pool);
  s5_upcheck_stop(&w->check);
  s5_latprobe_stop(&w->lat);
  /* pcbs lwIP kept after their sessions ended (closing, TIME_WAIT) */
  while (tcp_active_pcbs != NULL) tcp_abort(tcp_active_pcbs);
  while (tcp_tw_pcbs != NULL) tcp_abort(tcp_tw_pcbs);
  s5_udp_stop(w->udp);
  w->udp = NULL;
  s5_netif_stop(&w->tun);
  s5_relay_stop(&w->relay);
  s5_memtrim_stop(&w->trim);
  uv_walk(&ctx->loop, worker_close_handle, NULL);
}

static void worker_drain_over(uv_timer_t *timer) { worker_shutdown(timer->data); }

/* The session table's drain callback: the last session ended. Deferred
 * through the timer because this runs inside that session's close path,
 * maybe inside lwIP. */
static void worker_drained(void *arg) {
  struct s5_worker *w = arg;
  uv_timer_start(&w->drain_timer, worker_drain_over, 0, 0);
}

/* A stop request: refuse new sessions at once, let open ones finish for up
 * to drain-timeout, then reset what is left. */
static void worker_drain(struct s5_worker *w) {
  struct s5_wctx *ctx = &w->ctx;
  if (ctx->draining || ctx->stopping) return;
  ctx->draining = 1;
  s5_pool_stop(&w->pool); /* no new sessions: nothing to keep warm for */
  s5_upcheck_stop(&w->check);
  s5_latprobe_stop(&w->lat);
  unsigned timeout = ctx->cfg->run.drain_timeout;
  if (!s5_sessions_empty(&w->tcp))
    s5_info("draining %u TCP sessions for up to %u s", (unsigned)ctx->stats->tcp_active, timeout);
  uv_timer_start(&w->drain_timer, worker_drain_over, timeout * 1000u, 0);
  s5_sessions_drain(&w->tcp, worker_drained, w); /* at once when there is no session */
}

static void worker_stop_requested(uv_async_t *async) { worker_drain(async->data); }

/* Process mode: the supervisor forwards SIGHUP so each worker process
 * reopens its own log fd; SIGTERM/SIGINT start the drain. */
static void worker_signal(uv_signal_t *sig, int signum) {
  if (signum == SIGHUP) { /* the supervisor published a reload first, if any */
    s5_log_reopen();
    worker_take_config(sig->data);
    return;
  }
  if (signum == SIGUSR2) { /* the supervisor asks for --connections */
    worker_list_connections(sig->data);
    return;
  }
  s5_info("%s: stopping", strsignal(signum));
  worker_drain(sig->data);
}

/* ---- init, run, stop, close ---- */

static int worker_init_asyncs(struct s5_worker *w) {
  uv_loop_t *loop = &w->ctx.loop;
  int r = uv_async_init(loop, &w->stop_async, worker_stop_requested);
  if (r == 0) r = uv_async_init(loop, &w->reload_async, worker_reload_requested);
  if (r == 0) r = uv_async_init(loop, &w->list_async, worker_list_requested);
  w->stop_async.data = w;
  w->reload_async.data = w;
  w->list_async.data = w;
  return r;
}

int s5_worker_init(struct s5_worker *w, const struct s5_config *cfg, unsigned index, int fd,
                   struct s5_queue_stats *stats) {
  memset(w, 0, offsetof(struct s5_worker, relay)); /* the large buffers are the modules' to prepare */
  int r = s5_wctx_init(&w->ctx, cfg, index, stats);
  if (r == 0) {
    r = worker_init_asyncs(w);
    if (r < 0) uv_loop_close(&w->ctx.loop);
  }
  if (r < 0) {
    s5_error("queue %u: event loop: %s", index, uv_strerror(r));
    return -1;
  }
  w->fd = fd;
  s5_relay_init(&w->relay, &w->ctx.stats->bytes_to_proxy, &w->ctx.stats->bytes_from_proxy);
  s5_sessions_init(&w->tcp, &w->ctx, &w->relay, s5_handshake_start);
  w->ctx.sniff_skips = &w->tcp.skips; /* UDP's [sniff] failures count there too */
  s5_pool_init(&w->pool, &w->ctx);
  w->tcp.pool = &w->pool; /* the handshake's warm connections */
  s5_upcheck_init(&w->check, &w->ctx);
  s5_latprobe_init(&w->lat, &w->ctx);
  s5_netif_init(&w->tun, &w->ctx, w->fd);
  return 0;
}

void s5_worker_track_flows(struct s5_worker *w, struct s5_flowq *flows) { w->ctx.flows = flows; }

static int worker_watch_signals(struct s5_worker *w) {
  uv_signal_t *sigs[] = {&w->sigterm, &w->sigint, &w->sighup, &w->sigusr2};
  int nums[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR2};
  for (int i = 0; i < 4; i++) {
    int r = uv_signal_init(&w->ctx.loop, sigs[i]);
    if (r == 0) r = uv_signal_start(sigs[i], worker_signal, nums[i]);
    if (r < 0) {
      s5_error("watching %s: %s", strsignal(nums[i]), uv_strerror(r));
      return -1;
    }
    sigs[i]->data = w;
  }
  return 0;
}

/* The lwIP timer, the drain timer, the end of the turn and its wait. */
static int worker_start_timers(struct s5_worker *w) {
  uv_loop_t *loop = &w->ctx.loop;
  int r = uv_timer_init(loop, &w->lwip_timer);
  if (r == 0) r = uv_timer_init(loop, &w->drain_timer);
  w->turn_end.data = w;
  w->turn_wait.data = w;
  if (r == 0) r = uv_check_init(loop, &w->turn_end);
  if (r == 0) r = uv_check_start(&w->turn_end, worker_turn_end);
  if (r == 0) r = uv_prepare_init(loop, &w->turn_wait);
  if (r == 0) r = uv_prepare_start(&w->turn_wait, worker_turn_wait);
  w->drain_timer.data = w;
  if (r == 0) r = uv_timer_start(&w->lwip_timer, worker_tick, S5_LWIP_TICK_MS, S5_LWIP_TICK_MS);
  if (r < 0) {
    s5_error("lwIP timer: %s", uv_strerror(r));
    return -1;
  }
  w->lwip_timer.data = w;
  return 0;
}

static int worker_start(struct s5_worker *w, int handle_signals) {
  lwip_init(); /* this thread's own instance: lwIP's state is thread-local */
  w->own_process = handle_signals;
  worker_take_config(w); /* a worker restarted after a reload starts with it */
  s5_rules_taken(w->ctx.index, w->ctx.cfg);
  if (handle_signals && worker_watch_signals(w) < 0) return -1;
  if (s5_netif_start(&w->tun) < 0 || s5_sessions_listen(&w->tcp) < 0 ||
      (w->udp = s5_udp_start(&w->ctx, &w->tun)) == NULL)
    return -1;
  int r = s5_privileges_drop(w->ctx.cfg);
  if (r < 0) {
    s5_error("dropping privileges to %s: %s", w->ctx.cfg->run.user, strerror(-r));
    return -1;
  }
  s5_pool_start(&w->pool); /* after the privileges drop: the proxy sockets are the user's */
  if (s5_uptab() != NULL) s5_uptab_queue_reset(s5_uptab(), w->ctx.index); /* a dead predecessor's */
  if (w->ctx.index == 0) s5_upcheck_start(&w->check); /* one worker checks down upstreams for all */
  if (w->ctx.index == 0) s5_latprobe_start(&w->lat);  /* and times fastest groups' members */
  return worker_start_timers(w);
}

int s5_worker_run(struct s5_worker *w, int handle_signals) {
  struct s5_wctx *ctx = &w->ctx;
  s5_log_set_queue((int)ctx->index);
  int ok = worker_start(w, handle_signals);
  if (ok == 0) {
    S5_STAT_SET(ctx->stats, heartbeat_ms, uv_now(&ctx->loop));
    S5_STAT_SET(ctx->stats, ready, 1);
    s5_info("serving TUN queue (fd %d)", w->fd);
  } else {
    worker_shutdown(w);
  }
  uv_run(&ctx->loop, UV_RUN_DEFAULT);
  s5_tls_end(); /* TLS connections the stop's close of every handle ended, and the contexts */
  s5_ss_end();  /* Shadowsocks' ciphers and keys of this thread */
  s5_info("stopped (%llu TCP sessions on this queue since start)", (unsigned long long)ctx->stats->tcp_total);
  return ok;
}

void s5_worker_stop(struct s5_worker *w) { uv_async_send(&w->stop_async); }

void s5_worker_close(struct s5_worker *w) { s5_wctx_close(&w->ctx); }
