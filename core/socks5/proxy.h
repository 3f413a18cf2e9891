/* SPDX-License-Identifier: MIT */
/* The SOCKS5 client: one TCP connection to the proxy, the greeting, RFC
 * 1929 authentication if configured, one request (CONNECT for a TCP
 * session, UDP ASSOCIATE for a UDP association) and its reply. TCP
 * sessions (handshake.c) and UDP associations (udp.c) both use it, so the
 * connection, its connect-timeout, the failure texts and counters and the
 * closing of its handles exist once.
 *
 * Lifecycle, driven by the owner (a session or an association) that embeds
 * the struct:
 *   s5_proxy_init   timer initialised; from here on it must be closed
 *   s5_proxy_start  socket, connect, connect-timeout started
 *   ops->result     called once: granted (with the bound address) or
 *                   failed (with why, log level, status and REP); for
 *                   UDP ASSOCIATE possibly again later (S5_PROXY_LOST)
 *   s5_proxy_close  handles closed; ops->closed once both have
 * After a granted CONNECT the connection is the owner's to relay over
 * (sock.data is the owner throughout; the client finds itself from the
 * handle), with whatever the proxy sent beyond the reply in in[]. After a
 * granted UDP ASSOCIATE the client keeps reading the connection, only to
 * tell the owner when it ends (RFC 1928: the association lives as long).
 *
 * Messages are tiny and each is sent only after the server answered the
 * previous one, so they always fit the fresh socket's send buffer:
 * uv_try_write() without a request suffices. */
#ifndef S5_CORE_PROXY_H
#define S5_CORE_PROXY_H

#include <stdint.h>
#include <uv.h>

#include "base/log.h"
#include "socks5/http_connect.h"
#include "socks5/socks5.h"
#include "socks5/socks5_udp.h"
#include "socks5/upstream.h"
#include "shared/uptab.h"

struct s5_wctx;
struct s5_config;
struct s5_dial_lookup;
struct s5_pump;

/* WARM: the pool's (pool.c): connect, greet, authenticate, then report
 * granted and sit idle, read only to see it end (S5_PROXY_LOST), until a
 * session's client adopts its socket (s5_proxy_adopt). */
enum s5_proxy_cmd { S5_PROXY_CONNECT, S5_PROXY_ASSOCIATE, S5_PROXY_WARM };

/* Where the exchange is: the reply awaited next. */
enum s5_proxy_step {
  S5_PROXY_CONNECTING, /* TCP connect */
  S5_PROXY_METHOD,     /* method selection */
  S5_PROXY_AUTH,       /* RFC 1929 status */
  S5_PROXY_REPLY,      /* the request's reply */
  S5_PROXY_DONE,       /* granted */
  S5_PROXY_ENDED,      /* failed, lost, or closing: no more callbacks */
};

enum s5_proxy_outcome {
  S5_PROXY_GRANTED,      /* bnd set */
  S5_PROXY_FAILED,       /* why, level, status, rep set; counted in socks5_* */
  S5_PROXY_NO_ASSOCIATE, /* UDP ASSOCIATE answered by closing the connection
                          * (no UDP support, OpenSSH's ssh -D); counted as
                          * socks5_refused, why set */
  S5_PROXY_LOST,         /* after a granted UDP ASSOCIATE: the connection ended; why set */
};

struct s5_proxy_result {
  enum s5_proxy_outcome outcome;
  enum s5_log_level level;   /* how loud a failure is (s5_wctx_failure) */
  const char *why;           /* for the log; valid during the callback */
  int status;                /* an s5_socks5_status, 0 when the connection itself failed */
  uint8_t rep;               /* the server's REP when status is S5_SOCKS5_REFUSED */
  struct s5_socks5_addr bnd; /* BND.ADDR and BND.PORT when granted */
  enum s5_proxy_step step;   /* failed: where the exchange was (CONNECTING: the TCP connect) */
  uint16_t http;             /* an HTTP upstream's status when it answered one, else 0 */
  int slow;                  /* no answer within handshake-timeout (ops->slow's report) */
  enum s5_up_cause cause;    /* failed: whose fault, as the upstream's health counts it */
  int every;                 /* cause S5_UP_REFUSING: for any destination (else only distinct ones count) */
};

struct s5_proxy_ops {
  enum s5_proxy_cmd cmd;
  /* The request into buf (cap bytes): its length, or < 0 when it cannot be
   * made (a mapped address whose name is gone). */
  int (*request)(void *owner, uint8_t *buf, size_t cap);
  /* Optional: the TCP connection is up, before the greeting. Returns 0 to
   * go on, or -1 when the owner ended itself (and closed the client). */
  int (*connected)(void *owner);
  /* Optional: the request went out (the owner's data may follow it). */
  void (*requested)(void *owner);
  /* Optional: that request went out on a pooled connection that died
   * before the reply, and a fresh one is being made: nothing may follow it
   * until requested() again. */
  void (*withdrawn)(void *owner);
  void (*result)(void *owner, const struct s5_proxy_result *r);
  /* Optional: the proxy said nothing within its upstream's handshake-timeout
   * (r: slow set, why). The exchange goes on, within connect-timeout, unless
   * the owner moves it to another upstream (s5_proxy_retry) or closes it. */
  void (*slow)(void *owner, const struct s5_proxy_result *r);
  void (*closed)(void *owner);
};

struct s5_proxy {
  uv_tcp_t sock;    /* to the proxy; data is the owner */
  uv_timer_t timer; /* connect-timeout, until the reply */
  uv_connect_t connect_req;
  struct s5_wctx *w;
  const struct s5_config *cfg;      /* the owner's (held by it) */
  const struct s5_upstream_cfg *up; /* in cfg: the proxy (upstreams[0] unless s5_proxy_use) */
  const struct s5_target *target;   /* the owner's: a CONNECT's destination, written as up's type asks
                                     * (upstream.c); UDP ASSOCIATE: [rules] direct's; NULL: the
                                     * owner's request (ops->request) */
  const struct s5_proxy_ops *ops;
  void *owner;
  enum s5_proxy_step step;
  int handles_open;       /* timer, and sock once initialised */
  unsigned sock_open : 1; /* sock initialised: must be closed */
  unsigned pipeline : 1;  /* greeting, auth and request in one flight */
  unsigned closing : 1;
  unsigned pooled : 1;    /* adopted from the pool: a failure before the reply is retried once, fresh */
  unsigned retrying : 1;  /* that retry's socket is closing, a fresh one follows */
  unsigned requested : 1; /* the request is written */
  unsigned data_sent : 1; /* s5_proxy_data_ok(): the owner's bytes went out behind it */
  unsigned heard : 1;     /* the proxy has said something on this connection */
  unsigned hs_over : 1;   /* heard, or handshake-timeout passed: connect-timeout alone from here */
  unsigned expired : 1;   /* connect-timeout ended it */
  uint64_t deadline;      /* the loop's ms when connect-timeout ends the set-up */
  uint16_t in_len;
  uint8_t in[S5_SOCKS5_MAX_MSG]; /* replies so far; after CONNECT, the target's first bytes */
  struct s5_http_reply http;     /* an HTTP upstream's response, read as it comes */
  struct s5_dial_lookup *lookup; /* [rules] direct: its destination being resolved (dial.c) */
  struct s5_pump *pump; /* tls = true, shadowsocks: its pump (pump.h), ours until the close; else NULL */
};
_Static_assert(S5_SOCKS5_MAX_MSG <= UINT16_MAX, "struct s5_proxy: in_len counts in[] in 16 bits");

/* Ready to be started or closed. owner is what every callback gets. */
void s5_proxy_init(struct s5_proxy *p, struct s5_wctx *w, const struct s5_config *cfg,
                   const struct s5_proxy_ops *ops, void *owner);

/* Before s5_proxy_start or s5_proxy_adopt: the upstream to use, one of
 * cfg's (the first by default), and the destination (held by the owner;
 * NULL: its own request, ops->request). */
void s5_proxy_use(struct s5_proxy *p, const struct s5_upstream_cfg *up, const struct s5_target *target);
/* Sends len bytes of msg (0, or -1 when not all went; len < 0 is
 * returned as it is), then clears them: they may hold credentials. */
int s5_proxy_send(struct s5_proxy *p, uint8_t *msg, int len);
/* msg's cap bytes cleared (a request written only to check it); r returned. */
int s5_proxy_cleared(int r, uint8_t *msg, size_t cap);

/* Connects to the upstream's address, with SO_MARK. Returns 0, or a negative
 * libuv error with what failed in why (then nothing was reported and the
 * owner closes the client). */
int s5_proxy_start(struct s5_proxy *p, char *why, size_t cap);

/* Instead of s5_proxy_start: the CONNECT on a duplicate of warm's socket
 * (greeted and authenticated by the pool; the caller closes warm). If that
 * connection turns out dead before the reply, a fresh one is made, once,
 * and the client sees nothing of it (Shadowsocks has no reply: see
 * s5_proxy_pump_adopted). Returns 0, or < 0 with why (the request cannot
 * be made, or the socket not taken): nothing reported then. */
int s5_proxy_adopt(struct s5_proxy *p, struct s5_proxy *warm, char *why, size_t cap);

/* From ops->result with a failure: the same exchange again on up, a fresh
 * connection once the old one closed ([balance]: the client has seen
 * nothing yet); connect-timeout restarted with ms (0: runs on). Returns 0,
 * or -1 when the client is closing (nothing reported then). */
int s5_proxy_retry(struct s5_proxy *p, const struct s5_upstream_cfg *up, uint64_t ms);

/* May the owner write its own data now, before the reply ([socks5]
 * optimistic)? Yes once the request is written (or granted); from then on
 * a pooled connection that fails is not retried (the data went on it). */
int s5_proxy_data_ok(struct s5_proxy *p);
/* [sniff]: the owner kept a copy of its data that went behind the request
 * and sends it again behind the next one: s5_proxy_retry may move it. */
static inline void s5_proxy_data_again(struct s5_proxy *p) { p->data_sent = 0; }

/* Closes the connection (with a RST when reset) and the timer; ops->closed
 * follows once both have closed. Idempotent. */
void s5_proxy_close(struct s5_proxy *p, int reset);

/* proxy_clock.c, the set-up's timer: connect-timeout over the whole set-up
 * (ms from now; 0: the deadline set before), and within it, for an owner
 * with ops->slow, the upstream's handshake-timeout for the proxy's first
 * answer on a new connection (heard: it answered already, a pooled SOCKS5
 * one). s5_proxy_clock_heard: it answered. s5_proxy_expired: connect-timeout
 * is over (proxy.c). */
void s5_proxy_clock(struct s5_proxy *p, uint64_t ms, int heard);
void s5_proxy_clock_heard(struct s5_proxy *p);
void s5_proxy_expired(uv_timer_t *timer);

/* proxy_tls.c, an upstream with tls = true or type = shadowsocks: sock
 * opens the plain end of a pump (pump.h: TLS, tls.c; Shadowsocks, ss.c)
 * to up, whose handshake ends in s5_proxy_up (proxy.c: the TCP connect's
 * outcome, status < 0 a failure with why, the pump's when tls_why is
 * set). s5_proxy_pump_detach: the pump let go (closing, retrying; pump.h
 * says what becomes of it). s5_proxy_sock_drop: the relay carries the
 * bytes through the pump itself now (s5_pump_direct): sock, the pair's
 * end, closes before the client does. s5_proxy_release (proxy.c): one of
 * a closing client's handles closed. */
int s5_proxy_pump(struct s5_proxy *p, char *why, size_t cap);
void s5_proxy_up(struct s5_proxy *p, int status, const char *tls_why);
void s5_proxy_pump_detach(struct s5_proxy *p, int reset);
void s5_proxy_sock_drop(struct s5_proxy *p);
void s5_proxy_release(struct s5_proxy *p);
/* s5_proxy_adopt of a pooled Shadowsocks connection (connected, nothing
 * sent): no reply comes, so there is nothing to retry on; s5_proxy_up
 * follows on the loop's next turn (never inside the owner's start: a
 * session's SYN is still lwIP's), which sends the target (the pump's
 * first chunk, with this connection's own salt) and grants. Returns 0 or
 * a libuv error. */
int s5_proxy_pump_adopted(struct s5_proxy *p);

#endif
