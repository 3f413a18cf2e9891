/* SPDX-License-Identifier: MIT */
/* A worker owns one TUN queue and everything that serves it: one libuv loop,
 * one lwIP instance (lwIP's state is thread-local, see third_party/), the
 * sessions accepted from that queue. Nothing in here is shared with another
 * worker; every field is touched only by the worker's own thread, except
 * stop_async, which exists so that other threads can ask it to stop.
 *
 * The worker sits on top of the modules it drives: it creates the context
 * they share (core/ctx/wctx.h), the netif (core/netif/netif.h), the session table
 * (core/tcp/session.h), the relay (core/tcp/relay.h) and the UDP associations
 * (core/udp/udp.h), runs their timers and ends them in order. None of them
 * reaches back into it: the one thing it learns from below, that a drain
 * is over, comes through a callback it hands the session table.
 *
 * The loop's turn is the worker's too: one check handle ends every turn
 * by calling the modules' end-of-turn hooks in a fixed order (the TCP
 * relay's deferred writes, then UDP's datagrams to the relays and to the
 * TUN), and one prepare handle applies the loop policy before each poll
 * (UDP moderation: the worker waits as long as UDP wishes). */
#ifndef S5_CORE_WORKER_H
#define S5_CORE_WORKER_H

#include <stdint.h>
#include <uv.h>

#include "ini/config.h"
#include "ctx/memtrim.h"
#include "netif/netif.h"
#include "socks5/pool.h"
#include "socks5/latprobe.h"
#include "socks5/upcheck.h"
#include "tcp/relay.h"
#include "tcp/session.h"
#include "shared/stats.h"
#include "ctx/wctx.h"

struct s5_worker {
  struct s5_wctx ctx;                           /* what the modules below share: loop, config, stats, netif */
  int fd;                                       /* the TUN queue; owned by whoever opened it */
  int own_process;                              /* process mode: the log state is this process's own */
  uv_async_t stop_async;                        /* s5_worker_stop() from another thread */
  uv_async_t reload_async;                      /* thread mode: s5_worker_reload() from the main thread */
  uv_async_t list_async;                        /* thread mode: s5_worker_list() */
  uv_signal_t sigterm, sigint, sighup, sigusr2; /* process mode: the worker's own signals */
  uv_timer_t lwip_timer;  /* tcp_tmr() and the once-a-second work; its repeat is the pace */
  uv_timer_t drain_timer; /* stop: ends the drain at drain-timeout */
  uv_check_t turn_end;    /* end of each loop turn: the modules' deferred writes */
  uv_prepare_t turn_wait; /* before each poll: the loop's policy (UDP moderation) */
  unsigned lwip_ticks;    /* TCP_TMR_INTERVALs since the last once-a-second work */
  struct s5_memtrim trim; /* idle after a load: free heap back to the kernel */

  struct s5_sessions tcp;  /* the listener and the live sessions */
  struct s5_pool pool;     /* warm proxy connections for new sessions */
  struct s5_upcheck check; /* queue 0: the checks of down upstreams */
  struct s5_latprobe lat;  /* queue 0: [group] fastest's latency probes */
  struct s5_udp *udp;      /* the UDP associations (core/udp/udp.c), NULL until started */
  /* Last, with their large buffers, which init leaves untouched. */
  struct s5_relay relay; /* the sessions' flush list and read buffers */
  struct s5_netif tun;   /* the TUN queue's packet pump */
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

/* Process mode, before run: sessions are entered in the queue's shared
 * flow table (core/shared/flowtab.h), so that the supervisor can reset their
 * clients if this worker dies. */
void s5_worker_track_flows(struct s5_worker *w, struct s5_flowq *flows);

/* Asks a worker to stop: safe from any thread from init until close. */
void s5_worker_stop(struct s5_worker *w);

/* Releases the loop after run returned (on any thread). */
void s5_worker_close(struct s5_worker *w);

/* Asks the worker to take the newest configuration from the config slot
 * (thread mode: from the main thread, after publishing it). */
void s5_worker_reload(struct s5_worker *w);

/* Asks the worker to answer a --connections request (core/shared/conntab.h; thread
 * mode: from the main thread; process mode: SIGUSR2). */
void s5_worker_list(struct s5_worker *w);

#endif
