/* SPDX-License-Identifier: MIT */
/* Bytes both ways between a client's lwIP pcb and its proxy socket
 * (relay.c says how). Two structs:
 *   struct s5_relay       per worker: the connections whose writes wait
 *                         for the end of the loop turn, and the read
 *                         buffers proxy-to-client reads land in;
 *   struct s5_relay_conn  per connection, embedded in its owner (a
 *                         session, core/tcp/session.c), which it tells
 *                         what happened through its ops: activity, both
 *                         directions done, or a failure to reset on.
 * The relay knows lwIP and libuv only: not the session, not the worker.
 * Its life: attach at the SYN (lwIP's recv and sent callbacks), start once
 * the client completed its handshake, release when the owner ends. */
#ifndef S5_CORE_RELAY_H
#define S5_CORE_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "lwip/err.h"

struct tcp_pcb;
struct pbuf;
struct s5_rbuf;
struct s5_relay;

/* Proxy-to-client reads land in a read buffer (struct s5_rbuf, relay.c):
 * a large read is handed to lwIP's send queue as it is, and the buffer stays
 * referenced by the segments until the client acknowledged them; a small one
 * is copied into lwIP's segments, and the buffer takes the next read. */
#define S5_RELAY_READ_BUF 65535 /* tcp_write() takes a u16_t length */

/* What the relay tells its owner. Each gets the owner pointer given to
 * s5_relay_attach(). failed ends the owner (a reset both ways) and returns
 * ERR_ABRT when that aborted the pcb, ERR_OK otherwise; it must release
 * the connection (s5_relay_release) before it returns. finished: both
 * directions are done, the owner closes (and releases) in order. */
struct s5_relay_ops {
  void (*touch)(void *owner); /* a byte moved, or the client acknowledged some */
  void (*finished)(void *owner);
  int (*failed)(void *owner, const char *why);
  /* A held connection (s5_relay_hold) is about to write the client's first
   * bytes to the proxy, before its reply: from here on the connection
   * carries them and cannot be replaced by another. May be NULL. */
  void (*sending)(void *owner);
  /* Held, the client sent bytes or its FIN (at the end of the loop turn):
   * the owner may look at them (out) and kick. As failed, returns ERR_ABRT
   * when it aborted the pcb. May be NULL. */
  int (*held)(void *owner);
  /* After s5_relay_direct: the socket is used no more (its EOF read, its
   * half-close sent); the owner may close it. May be NULL. */
  void (*handed)(void *owner);
};

/* The proxy connection's bytes through an io instead of the socket (an
 * encrypted upstream's codec, s5_relay_direct), cx its own. */
#define S5_RELAY_IO_EOF (-2)
struct s5_relay_io {
  /* Plain bytes from the proxy into buf: how many (> 0), 0 to wait
   * (s5_relay_ready follows while reads are wanted), S5_RELAY_IO_EOF at
   * the proxy's end, < 0 when the connection failed. */
  int (*read)(void *cx, uint8_t *buf, size_t cap);
  /* Reads wanted (1) or not (0). */
  void (*want)(void *cx, int read);
  /* Plain bytes to the proxy: how many it took (0: wait, s5_relay_ready
   * follows), < 0 when the connection failed. */
  long (*writev)(void *cx, const uv_buf_t *bufs, int n);
  /* The client's FIN, after every byte taken: 0 sent, 1 to wait
   * (s5_relay_ready follows), < 0 failed. */
  int (*shutdown)(void *cx);
};

/* [socks5] optimistic: the client's first bytes against the proxy's
 * request, one state, each change asserted (relay.c):
 *   NONE -> HELD         hold: the SYN is answered before the CONNECT went out
 *   HELD <-> KICKED      kick: the request is out, queued bytes follow it;
 *                        unkick: it died with none behind it (a retry)
 *   KICKED -> SENT       bytes went behind it (ops->sending): no retry
 *   HELD|KICKED|SENT -> GRANTED   the reply came (s5_relay_granted)
 *   any -> NONE          start: the exchange is over, bytes flow both ways */
enum s5_relay_early {
  S5_RELAY_EARLY_NONE,
  S5_RELAY_EARLY_HELD,
  S5_RELAY_EARLY_KICKED,
  S5_RELAY_EARLY_SENT,
  S5_RELAY_EARLY_GRANTED,
};

enum s5_relay_state {
  S5_RELAY_ATTACHED, /* lwIP's callbacks set; client bytes are queued, nothing moves yet */
  S5_RELAY_RUNNING,  /* bytes flow both ways */
  S5_RELAY_CLOSED,   /* released: every callback still pending is ignored */
};

struct s5_relay_conn {
  struct s5_relay *relay;
  const struct s5_relay_ops *ops;
  void *owner;
  struct tcp_pcb *pcb; /* the client's; NULL once lwIP no longer lets us use it */
  uv_stream_t *sock;   /* the proxy connection (its data is this conn once started) */
  enum s5_relay_state state;
  enum s5_relay_early early; /* [socks5] optimistic: see the enum */

  uv_write_t write_req; /* at most one write in flight */

  /* Client to proxy: pbufs lwIP handed us, not yet taken by the proxy socket.
   * Their bytes are acknowledged to lwIP (tcp_recved) only once written, so
   * the client's window is the only buffer and it is bounded. */
  struct pbuf *out, *out_tail;
  uint16_t out_off;              /* bytes of out already written */
  size_t write_len;              /* bytes in the uv_write in flight */
  uint64_t bytes_up, bytes_down; /* payload relayed: client to proxy, proxy to client */

  struct s5_relay_conn *flush_next; /* the relay's flush list */
  unsigned flush_queued : 1;        /* on it */
  unsigned writing : 1;             /* write_req in flight */
  unsigned reading : 1;             /* uv_read_start active */
  unsigned client_eof : 1;          /* FIN from the client */
  unsigned proxy_eof : 1;           /* EOF from the proxy */
  unsigned proxy_shut : 1;          /* our FIN to the proxy is out */
  unsigned proxy_reset : 1;         /* proxy reset: client gets the rest, then a RST */
  const char *reset_why;            /* for the owner when that RST goes out */
  const struct s5_relay_io *io;     /* s5_relay_direct's, else NULL */
  void *io_cx;
  unsigned io_down : 1; /* the socket's EOF was read: reads go through io */
  unsigned io_up : 1;   /* the socket was half-closed for the hand-over: writes go through io */
  unsigned io_pull : 1; /* reads resumed: io may hold bytes, read at the end of the turn */
};

struct s5_relay {
  uint64_t *to_proxy, *from_proxy;  /* the worker's byte counters (shared, relaxed atomic stores) */
  struct s5_relay_conn *flush_head; /* writes deferred to the end of the loop turn */
  size_t flush_count;               /* connections on that list */
  struct s5_rbuf *rbuf_cur;         /* takes the next read; not referenced by lwIP */
  struct s5_rbuf *rbuf_cache;       /* unused, kept for reuse (malloc would trim and refault them) */
  unsigned rbuf_cached;
  unsigned rbuf_out; /* in use: rbuf_cur, or referenced by lwIP segments */
  unsigned stopping; /* s5_relay_stop() ran: buffers lwIP frees later are not cached */
  /* Fallback read buffer when no read buffer can be allocated: copied.
   * Last, so that init need not clear it. */
  uint8_t read_buf[S5_RELAY_READ_BUF];
};

/* Prepares r (nothing to undo before it is used). The counters are the
 * worker's bytes_to_proxy and bytes_from_proxy: the relay counts into them
 * without knowing whose they are. */
void s5_relay_init(struct s5_relay *r, uint64_t *to_proxy, uint64_t *from_proxy);

/* Once lwIP let go of every pcb: frees the cached read buffers (those
 * lwIP still references are freed when it frees them). */
void s5_relay_stop(struct s5_relay *r);

/* The worker went idle after a load: the unused read buffers it kept for
 * the next burst go back to malloc (up to 1 MiB a worker). */
void s5_relay_drop_cache(struct s5_relay *r);

/* At the end of every loop turn (the worker's end-of-turn hook): the
 * deferred writes of every connection that queued some. */
void s5_relay_flush_pending(struct s5_relay *r);

/* One connection. attach takes lwIP's recv and sent callbacks of pcb and
 * makes c its arg: the owner's own callbacks for it (err, accept) get c and
 * find themselves in c->owner. The owner sets c->pcb to NULL when lwIP
 * freed the pcb or the owner let go of it. sock is where the proxy connection will be once started. start: the
 * client completed its handshake; early (len bytes) came with the proxy's
 * reply and go to the client first. Returns ERR_ABRT when it had to fail
 * the connection and that aborted the pcb. release drops what is queued
 * and ignores every later callback; the owner then closes the socket. */
void s5_relay_attach(struct s5_relay_conn *c, struct s5_relay *r, struct tcp_pcb *pcb, uv_stream_t *sock,
                     const struct s5_relay_ops *ops, void *owner);
err_t s5_relay_start(struct s5_relay_conn *c, const uint8_t *early, size_t len);
/* [socks5] optimistic: the client may send before the proxy's CONNECT
 * went out. hold (attached, not started) keeps its bytes queued; kick
 * lets them follow the request (the proxy client wrote it) at the end of
 * this loop turn, while nothing is read from the proxy until start. */
void s5_relay_hold(struct s5_relay_conn *c);
void s5_relay_kick(struct s5_relay_conn *c);
/* The request that kick followed is void (its connection died before any
 * byte went behind it): hold again until the next kick. */
void s5_relay_unkick(struct s5_relay_conn *c);
/* The CONNECT reply came: the bytes go on (GRANTED) until start. */
void s5_relay_granted(struct s5_relay_conn *c);
/* Held, kicked or sent: the SYN was answered and the reply has not come. */
int s5_relay_early(const struct s5_relay_conn *c);
void s5_relay_release(struct s5_relay_conn *c);

/* Started: the bytes go through io from the socket's end on, each way
 * (the socket's EOF read, then io's reads; what was queued on the socket
 * written, its half-close, then io's writes), ops->handed once both
 * went. s5_relay_ready: io can go on (the owner's callback from io),
 * readable: its reads too. */
void s5_relay_direct(struct s5_relay_conn *c, const struct s5_relay_io *io, void *cx);
void s5_relay_ready(struct s5_relay_conn *c, int readable);

#endif
