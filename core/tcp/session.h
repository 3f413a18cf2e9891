/* SPDX-License-Identifier: MIT */
/* A session is one TCP connection from the TUN carried to the SOCKS5 proxy.
 * Its life, in three files, none of which calls back into another:
 *   session.c    birth from a SYN, timers, the end (graceful or reset);
 *   handshake.c  the CONNECT it asks of the SOCKS5 client (proxy.c),
 *                started through the table's start_proxy (handshake.h);
 *                it owns s->proxy and the up_* fields, and tells the
 *                session what it must know through the functions below
 *                (retain, established, optimistic, abort, named, pool);
 *   relay.c      bytes both ways with backpressure, and half-close
 *                (relay.h: its own struct, told back through its ops).
 * The client's SYN is answered only once the proxy's CONNECT succeeded, so a
 * refused CONNECT looks to the client like a refused connection; with
 * [socks5] optimistic it is answered at once (conn.early, relay.h, tells
 * where the client's first bytes stand until the reply) and
 * a refused CONNECT resets the client instead.
 * A worker's sessions are a table (struct s5_sessions, session.c): the
 * listener that takes every SYN and the list of live sessions. The worker
 * drives the table; the table tells it when a drain is over. A SYN to
 * the mapped resolver's port 53 never becomes a session: the table hands
 * it to core/dns/dns_tcp.c, which answers it in s5tund. */
#ifndef S5_CORE_SESSION_H
#define S5_CORE_SESSION_H

#include <stdint.h>
#include <uv.h>

#include "dns/dns_tcp.h"
#include "lwip/err.h"
#include "outbound/route.h"
#include "socks5/proxy.h"
#include "ctx/sessionlog.h"
#include "ctx/wctx.h"
#include "tcp/relay.h"
#include "tcp/sniffing.h"

struct tcp_pcb;
struct s5_connq;
struct s5_pool;
struct s5_session;

/* Starts the session's proxy client (s->proxy); it ends in
 * s5_session_established() or an abort. Returns 0, or -1 (logged): then
 * the client is to be refused. The real one is s5_handshake_start()
 * (tcp/handshake.h); the packet fuzzer plays the proxy with its own. */
typedef int (*s5_start_proxy_fn)(struct s5_session *s);
/* A sniffing session (s->sniff, begun by start_proxy) is called again once
 * its sniff is DONE: start_proxy then goes on from the route by name. */

enum s5_session_state {
  S5_SESSION_CONNECTING, /* the SOCKS5 client connects, greets, authenticates, CONNECTs */
  S5_SESSION_SYNACK,     /* CONNECT succeeded, SYN-ACK sent, waiting for the client's ACK */
  S5_SESSION_RELAY,      /* bytes flow */
  S5_SESSION_CLOSED,     /* handles closing, freed when they are */
};

struct s5_session {
  struct s5_session *prev, *next; /* its table's list */
  struct s5_sessions *tab;
  struct s5_wctx *w;
  const struct s5_config *cfg; /* held (s5_wctx_cfg_hold): a reload changes it for new sessions only */
  uint64_t id;
  enum s5_session_state state;

  /* The relay of the client's pcb (conn.pcb: NULL once lwIP no longer
   * lets us use it) and the proxy socket; tcp_arg of the pcb is &conn. */
  struct s5_relay_conn conn;
  /* The connection to the proxy (proxy.sock, data = the session until the
   * relay starts, then &conn) and,
   * after the CONNECT reply, whatever the proxy sent beyond it (the
   * target's first bytes, proxy.in) waiting for the client. */
  struct s5_proxy proxy;
  uv_timer_t timer;     /* the client's handshake (rest of connect-timeout), then idle */
  int handles_open;     /* the timer and the proxy client: freed when both closed */
  uint64_t last_active; /* uv_now() of the last byte either way */

  uint32_t flow_ref;         /* its slot in the worker's flow table, 0 for none */
  unsigned up_open : 1;      /* counted open at its upstream (core/shared/uptab.h) */
  struct s5_route route;     /* where it goes (core/outbound/route.h): made at the SYN */
  struct s5_sniffing *sniff; /* [sniff]: its first bytes awaited for a name (tcp/sniffing.h); NULL: not */

  struct s5_session_record rec; /* [log] sessions: who, where, bytes, how it ended */
  char end_why[120];            /* rec.end's text when it is not a constant */
};

/* A worker's sessions. */
struct s5_sessions {
  struct s5_wctx *w;
  struct s5_relay *relay;        /* what its sessions relay with */
  s5_start_proxy_fn start_proxy; /* how a session reaches the proxy (set at init) */
  struct s5_pool *pool;          /* warm proxy connections it takes (socks5/pool.h); NULL: none */
  struct tcp_pcb *listener;      /* takes SYNs to every address and port */
  struct s5_session *list;       /* all live sessions */
  struct s5_dns_tcp dns;         /* connections the mapped resolver takes instead (core/dns/dns_tcp.c) */
  struct s5_sniff_skips skips;   /* [sniff]: destinations that failed to sniff (UDP's too: wctx) */
  uint64_t next_id;
  uint64_t loop_logged_ms;    /* last "connection to the proxy itself" warning */
  void (*drained)(void *arg); /* s5_sessions_drain() */
  void *drained_arg;
};

/* session.c: the table's life. init prepares it; listen opens the
 * listener (-1, logged, when lwIP cannot); drain closes the listener and
 * calls drained(arg) once no session is left (at once when there is none);
 * stop closes the listener and resets every session. */
void s5_sessions_init(struct s5_sessions *t, struct s5_wctx *w, struct s5_relay *relay,
                      s5_start_proxy_fn start_proxy);
int s5_sessions_listen(struct s5_sessions *t);
void s5_sessions_drain(struct s5_sessions *t, void (*drained)(void *arg), void *arg);
void s5_sessions_stop(struct s5_sessions *t);
int s5_sessions_empty(const struct s5_sessions *t);
/* A SYN to an upstream proxy itself (the proxy connections are routed
 * into the tunnel: carrying it would loop forever): 1, counted and warned
 * about (as often as failures), and the SYN is to be refused; else 0. */
int s5_sessions_loop(struct s5_sessions *t, const struct tcp_pcb *pcb);
/* --connections: puts every live session into q (core/shared/conntab.h). */
void s5_sessions_list(const struct s5_sessions *t, struct s5_connq *q);

/* session.c: one session. established: CONNECT succeeded, the SYN-ACK
 * goes out; answer: the same without sending (from the SYN callback, whose
 * ERR_OK sends it: [socks5] optimistic). */
void s5_session_established(struct s5_session *s);
void s5_session_answer(struct s5_session *s);
/* The upstream chosen has optimistic = true (called by start_proxy, from
 * the SYN callback): the SYN-ACK goes out at once, the client's bytes are
 * held until the CONNECT is out. */
void s5_session_optimistic(struct s5_session *s);
/* The session's lifetime: retain for each handle it owns besides its timer
 * (its proxy client: the handshake, once the client is initialised);
 * release from that handle's close callback (the proxy client's
 * ops->closed). The last release frees the session. */
void s5_session_retain(struct s5_session *s);
void s5_session_release(void *session);
void s5_session_finish(struct s5_session *s);
int s5_session_abort(struct s5_session *s, const char *why);
/* The same, why logged at level (s5_wctx_failure). */
int s5_session_abort_at(struct s5_session *s, enum s5_log_level level, const char *why);
void s5_session_touch(struct s5_session *s);
/* The destination's mapped DNS name, for the session log and --connections
 * (the first one given). */
void s5_session_named(struct s5_session *s, const char *name);
/* The warm proxy connections its table takes (NULL: none). */
struct s5_pool *s5_session_pool(const struct s5_session *s);
const char *s5_session_peer(const struct s5_session *s, char *buf, size_t len);

#endif
