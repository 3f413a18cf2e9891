/* SPDX-License-Identifier: MIT */
/* A worker's UDP associations (RFC 1928 section 7): the table that finds
 * one by its client's source address and port, and one association's life
 * from its start to its end: the SOCKS5 client (proxy.c) on its control
 * connection, the hold-down after failures at the proxy, the idle timer,
 * the record for the session log, and the freeing once every handle has
 * closed.
 *
 * The datagrams themselves are udp.c's, which sits above this: it creates
 * the table, finds or starts associations for datagrams from the TUN, and
 * gives the table the proxy client's callbacks (they open and connect the
 * relay socket, which the datagram path reads). Nothing here calls into
 * udp.c, so the two files make no circle. Private to the two. */
#ifndef S5_CORE_ASSOC_H
#define S5_CORE_ASSOC_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "base/log.h"
#include "outbound/route.h"
#include "socks5/proxy.h"
#include "ctx/sessionlog.h"
#include "socks5/socks5_udp.h"
#include "socks5/ss2022_udp.h"
#include "socks5/ss_aead.h"
#include "udp/udp_io.h"

#include "lwip/ip_addr.h"

struct pbuf;
struct s5_quic_sniff;
struct s5_wctx;

#define S5_UDP_BUCKETS 1024 /* hash buckets per worker (chained) */
#define S5_UDP_QUEUE_MAX 32 /* datagrams held while an association starts */
#define S5_UDP_SNIFF_HOLD 8 /* [sniff] quic: datagrams held for a name (<= S5_UDP_QUEUE_MAX) */

/* Life of an association:
 *   SNIFFING    [sniff] quic: its first datagrams held (up to
 *               S5_UDP_SNIFF_HOLD) and read for a name until one is found,
 *               none can be, or [sniff] timeout passes (udp_sniff.c); then
 *               the route by the name, and CONNECTING
 *   CONNECTING  the SOCKS5 client (proxy.c) connects the control
 *               connection, greets, authenticates and sends UDP ASSOCIATE
 *               naming our UDP socket (bound to the control connection's
 *               local address before the request, so the proxy knows
 *               exactly where our datagrams come from)
 *   READY       datagrams both ways; the client watches the control
 *               connection only to tell us when it closed
 *   CLOSED      handles closing; freed when the last one has closed
 * Datagrams that arrive before READY wait (up to S5_UDP_QUEUE_MAX, then
 * they are dropped, as a congested network would). */
enum s5_assoc_state { S5_ASSOC_SNIFFING, S5_ASSOC_CONNECTING, S5_ASSOC_READY, S5_ASSOC_CLOSED };

struct s5_assoc {
  struct s5_assoc *hnext;       /* hash chain */
  struct s5_assoc *prev, *next; /* every association, for shutdown */
  struct s5_udp *u;             /* freed at stop before the handles' close callbacks run */
  struct s5_wctx *w;            /* lives until after them */
  const struct s5_config *cfg;  /* held: a reload changes it for new associations only */
  struct s5_session_record rec; /* [log] sessions */
  char end_why[120];
  uint64_t id;
  ip_addr_t client; /* the client's source address and port */
  uint16_t client_port;
  enum s5_assoc_state state;

  struct s5_route route;      /* where it goes: made on its first datagram (udp_dest.c) */
  struct s5_quic_sniff *quic; /* SNIFFING: the QUIC sniffer (sniff/sniff.h); NULL after */
  char *name;                 /* [sniff]: the name learnt (rec.name), or NULL */
  uint8_t *named_hdr;         /* [sniff] override: the SOCKS5 header by that name, for rec.dest:port */
  uint16_t named_hdr_len;
  struct s5_proxy proxy;    /* the control connection (proxy.sock) */
  struct s5_udp_sock relay; /* to the proxy's relay address (core/udp/udp_io.h) */
  uv_timer_t timer;         /* idle timeout, once ready */
  int handles_open;         /* timer, proxy client, relay once open */
  unsigned relay_open : 1;
  unsigned answered : 1; /* a datagram came back through the relay */
  unsigned up_open : 1;  /* counted open at its upstream (core/shared/uptab.h) */
  unsigned direct : 1;   /* [rules] direct: the relay socket is connected to rec.dest's destination, no
                            SOCKS5 header either way, no control connection */
  unsigned ss_on : 1;    /* a Shadowsocks upstream: the relay socket to the server, each datagram
                            sealed with ss (core/udp/udp_ss.h), no control connection */
  struct s5_ss_udp ss;
  struct s5_ss2022_udp *ss22; /* a 2022 method's session instead of ss (udp_ss.c), else NULL */
  uint64_t last_active;

  struct sockaddr_storage udp_local; /* our UDP socket, as told to the proxy */

  unsigned queued;
  struct pbuf *queue[S5_UDP_QUEUE_MAX]; /* SOCKS5 header pbuf + payload each; SNIFFING: payloads */
  ip_addr_t hdr_dst;                    /* the last plain (not mapped) destination ... */
  uint16_t hdr_port;
  uint8_t hdr_len; /* ... and its SOCKS5 header (udp.c); 0: none */
  uint8_t hdr[4 + 16 + 2];
};

/* A client whose relay refused datagrams before any came back: it alone is
 * held back for a while (its retries would cost an ASSOCIATE each), the
 * others go on (assoc.c). */
#define S5_UDP_HELD_CLIENTS 8
struct s5_udp_held {
  ip_addr_t client;
  uint16_t port;
  unsigned hold_ms; /* 0: a free slot */
  uint64_t until;
};

struct s5_udp {
  struct s5_wctx *w;
  struct s5_netif *netif;               /* the worker's TUN queue (its udp_tun is ours while we run) */
  struct s5_udp_io *io;                 /* the relay sockets' batching (core/udp/udp_io.c) */
  struct s5_udp_tun *tun;               /* replies to the TUN with USO (core/netif/udp_tun.c) */
  const struct s5_proxy_ops *proxy_ops; /* the datagram side's (udp.c): every association's client */
  struct s5_assoc *all;
  unsigned active;
  uint64_t next_id;
  uint64_t hold_until;              /* loop time before which no association starts */
  unsigned hold_ms;                 /* the last hold-down; 0 once a relay answered */
  unsigned no_associate_logged : 1; /* "the proxy does not support UDP ASSOCIATE" said */
  unsigned relay_worked : 1;        /* a datagram came back through some relay */
  unsigned relay_dead_run;          /* distinct clients' relays unreachable since the last datagram back */
  unsigned held_next;               /* the slot of held[] the next new client takes */
  unsigned tun_ifindex;             /* the device's, for relay_loops() (udp.c); 0 = not looked up */
  struct s5_udp_held held[S5_UDP_HELD_CLIENTS];
  uint8_t *ss_buf; /* Shadowsocks: the packet being sealed (udp_ss.c); NULL until the first */
  struct s5_assoc *buckets[S5_UDP_BUCKETS];
};

/* The association of client:port, or NULL. */
struct s5_assoc *s5_assoc_find(struct s5_udp *u, const ip_addr_t *client, uint16_t port);

/* Starts an association for client:port, first sending to dst:dport,
 * on route (copied) through up, its first upstream (its proxy client
 * connecting; direct: to dst alone); up NULL: SNIFFING, no upstream yet.
 * Returns NULL when it cannot (counted; [session] max-sessions, memory, a
 * proxy connection that failed at once). */
struct s5_assoc *s5_assoc_new(struct s5_udp *u, const ip_addr_t *client, uint16_t port, const ip_addr_t *dst,
                              uint16_t dport, const struct s5_route *route, const struct s5_upstream_cfg *up);
/* A SNIFFING association's route is known: CONNECTING through up.
 * Returns 0, or -1 when its proxy connection failed at once (then it has
 * ended). */
int s5_assoc_go(struct s5_assoc *a, const struct s5_upstream_cfg *up);

/* Ends it once (session log, debug line, out of the table, handles
 * closing); it is freed when they have closed. */
void s5_assoc_end(struct s5_assoc *a, const char *why);

/* It failed at the proxy: hold new associations back, log why through the
 * worker's failure limiter at level (INFO for s5_assoc_fail), end it. */
void s5_assoc_fail_at(struct s5_assoc *a, enum s5_log_level level, const char *why);
void s5_assoc_fail(struct s5_assoc *a, const char *why);
/* Its upstream failed the set-up (r): the next one its route names, within
 * connect-timeout and before its relay socket is open (its datagrams wait
 * in its queue), unseen by the client.
 * 0 when the set-up goes on there; else the caller fails it. */
int s5_assoc_failover(struct s5_assoc *a, const struct s5_proxy_result *r);

/* The proxy closed the connection on UDP ASSOCIATE: it has no UDP. */
void s5_assoc_no_associate(struct s5_assoc *a, const char *why);

/* New associations refused for a while after a failure at the proxy. */
void s5_assoc_hold(struct s5_udp *u);

/* Only client:port's new associations refused for a while; the hold-down
 * doubles when the client was held before. Returns its length in ms, and
 * in *again whether the client was held before (a repeat, not another
 * client failing). */
unsigned s5_assoc_hold_client(struct s5_udp *u, const ip_addr_t *client, uint16_t port, int *again);

/* Whether client:port's new associations are refused now (either hold). */
int s5_assoc_held(struct s5_udp *u, const ip_addr_t *client, uint16_t port);

/* The relay is connected: datagrams flow, the idle timer runs. */
void s5_assoc_set_ready(struct s5_assoc *a, uint16_t relay_port);

/* A datagram either way. */
void s5_assoc_touch(struct s5_assoc *a);

/* Where datagrams for the proxy's relay go, from the ASSOCIATE reply's
 * bound address. Returns 0, or -1 when there is no usable one. */
int s5_assoc_relay_target(const struct s5_assoc *a, const struct s5_socks5_addr *bnd,
                          struct sockaddr_storage *out);

/* "198.18.0.1:5353", the client, for log lines. */
const char *s5_assoc_client(const struct s5_assoc *a, char *buf, size_t len);

/* --connections: every association of the table u (NULL: none) into q
 * (core/shared/conntab.h). */
struct s5_connq;
void s5_assoc_list(const struct s5_udp *u, struct s5_connq *q);

/* The association's lifetime: retain for its relay socket once open (its
 * timer and proxy client hold it from birth); release from a handle's
 * close callback (the proxy client's: ops->closed). The last release
 * frees it. */
void s5_assoc_retain(struct s5_assoc *a);
void s5_assoc_release(void *assoc);

#endif
