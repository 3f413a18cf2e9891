/* SPDX-License-Identifier: MIT */
/* A worker owns one TUN queue and everything that serves it: one libuv loop,
 * one lwIP instance (lwIP's state is thread-local, see third_party/), the
 * sessions accepted from that queue. Nothing in here is shared with another
 * worker; every field is touched only by the worker's own thread, except
 * stop_async, which exists so that other threads can ask it to stop. */
#ifndef S5_CORE_WORKER_H
#define S5_CORE_WORKER_H

#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "stats.h"
#include "lwip/netif.h"

struct tcp_pcb;
struct pbuf;
struct s5_session;
struct s5_rbuf;
struct s5_flowq;

/* Proxy-to-client reads land in a read buffer of the worker (core/relay.c):
 * a large read is handed to lwIP's send queue as it is, and the buffer stays
 * referenced by the segments until the client acknowledged them; a small one
 * is copied into lwIP's segments, and the buffer takes the next read. */
#define S5_WORKER_READ_BUF 65535   /* tcp_write() takes a u16_t length */

struct s5_cfg_snap;

struct s5_worker {
  const struct s5_config *cfg;     /* the newest configuration; sessions hold the one they started with */
  const struct s5_config *cfg0;    /* the start-up one (not a snapshot: never freed here) */
  struct s5_cfg_snap *snap;        /* cfg's snapshot after a reload, NULL before */
  uint64_t cfg_gen;                /* generation of the config slot taken (core/config_slot.h) */
  uv_async_t reload_async;         /* thread mode: s5_worker_reload() from the main thread */
  uv_async_t list_async;           /* thread mode: s5_worker_list() */
  int own_process;                 /* process mode: the log state is this process's own */
  unsigned index;              /* queue number, for logs */
  int fd;                      /* the TUN queue; owned by whoever opened it */

  uv_loop_t loop;
  uv_poll_t tun_poll;          /* readable TUN queue */
  uv_timer_t tun_retry;        /* watches the queue again after an error */
  unsigned tun_retry_ms;       /* the next retry's delay, doubling; 0 = healthy */
  uv_timer_t lwip_timer;       /* drives tcp_tmr() and reassembly timers */
  uv_async_t stop_async;       /* s5_worker_stop() from another thread */
  uv_signal_t sigterm, sigint, sighup, sigusr2; /* process mode: the worker's own signals */
  uv_timer_t drain_timer;      /* stop: ends the drain at drain-timeout */
  uv_check_t flush_check;      /* end of each loop iteration: deferred writes */
  struct s5_session *flush_head;
  unsigned lwip_ticks;
  int draining;                /* no new sessions; ends when the last one does */
  int stopping;

  struct netif netif;
  struct tcp_pcb *listener;    /* takes SYNs to every address and port */
  struct pbuf *spare;          /* allocated, not yet filled by a TUN read */

  struct s5_session *sessions; /* all live sessions, for shutdown */
  struct s5_udp *udp;          /* udp.c's association table (s5_udp_start) */
  uint64_t next_session_id;
  uint64_t loop_logged_ms;     /* last "connection to the proxy itself" warning */
  uint64_t fail_logged_ms;     /* last line about a failed session */
  uint64_t fail_unlogged;      /* failures since, not logged */
  uint64_t slog_second_ms;     /* [log] sessions: start of this second's lines */
  unsigned slog_lines;         /* written in it */
  uint64_t slog_dropped;       /* left out since the last summary */
  enum s5_log_level fail_level; /* the most severe of them */
  char fail_last[200];         /* the latest of them */

  struct s5_queue_stats *stats; /* this queue's slot in the shared area */
  struct s5_flowq *flows;      /* process mode: this queue's shared flow table (core/flowtab.h), else NULL */

  /* Proxy-to-client read buffers (core/relay.c). */
  struct s5_rbuf *rbuf_cur;    /* takes the next read; not referenced by lwIP */
  struct s5_rbuf *rbuf_cache;  /* unused, kept for reuse (malloc would trim and refault them) */
  unsigned rbuf_cached;
  unsigned rbuf_out;           /* in use: rbuf_cur, or referenced by lwIP segments */

  /* Fallback read buffer when no read buffer can be allocated: copied. */
  uint8_t read_buf[S5_WORKER_READ_BUF];
};

/* Prepares w for queue `index` on TUN fd `fd`: its loop and stop handle
 * exist afterwards, so s5_worker_stop() is safe from then on. Can run on
 * another thread than the worker's. Returns 0, or -1 (logged). */
int s5_worker_init(struct s5_worker *w, const struct s5_config *cfg, unsigned index, int fd,
                   struct s5_queue_stats *stats);

/* Runs the worker on the calling thread until it is stopped, closing every
 * handle it opened (not the TUN fd, not the loop). handle_signals is set in process
 * mode, where the worker process gets SIGTERM/SIGINT itself. Returns 0 after
 * a clean stop, -1 when it could not start. */
int s5_worker_run(struct s5_worker *w, int handle_signals);

/* Asks a worker to stop: safe from any thread from init until close. */
void s5_worker_stop(struct s5_worker *w);

/* Releases the loop after run returned (on any thread). */
void s5_worker_close(struct s5_worker *w);

/* Live reload. A session or association holds the configuration it
 * started with: hold at its start, release when it is freed. A snapshot
 * lives while something holds it. */
const struct s5_config *s5_worker_cfg_hold(struct s5_worker *w);
void s5_worker_cfg_release(struct s5_worker *w, const struct s5_config *cfg);

/* Asks the worker to take the newest configuration from the config slot
 * (thread mode: from the main thread, after publishing it). */
void s5_worker_reload(struct s5_worker *w);

/* Asks the worker to answer a --connections request (core/conntab.h; thread
 * mode: from the main thread; process mode: SIGUSR2). */
void s5_worker_list(struct s5_worker *w);

/* A session left the worker's list (core/session.c). */
void s5_worker_session_gone(struct s5_worker *w);

/* A session or association failed (what: why, and whose): logged at once,
 * then at most one line per 10 s with the count of failures meanwhile, at
 * the most severe level among them. Failures to reach the proxy itself are
 * S5_LOG_WARN (visible at level = warn); the rest, S5_LOG_INFO. */
void s5_worker_failure(struct s5_worker *w, enum s5_log_level level, const char *what);

/* lwIP glue (core/netif.c): the TUN netif and its packet pump. */
/* The TCP segment size the device's MTU allows; with offloads, lwIP may
 * send longer segments, which the kernel cuts to this size (GSO). */
unsigned s5_netif_gso_size(const struct s5_worker *w, int v6);
int s5_netif_start(struct s5_worker *w);
void s5_netif_stop(struct s5_worker *w);

/* core/relay.c: frees the cached read buffers once lwIP let go of every pcb. */
void s5_relay_worker_stop(struct s5_worker *w);

#endif
