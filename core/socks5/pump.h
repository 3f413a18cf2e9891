/* SPDX-License-Identifier: MIT */
/* A pump: a connection to the proxy that transforms its bytes (TLS, tls.c;
 * Shadowsocks, ss.c), seen by the proxy client (proxy.c) and after it the
 * relay and the pool as a plain one. It owns the marked TCP socket to the
 * proxy and one end of a socket pair; the caller reads and writes the
 * other end: what goes in there leaves as the codec makes it, what the
 * proxy sends comes out as the codec reads it.
 *
 * The skeleton is here once (the pair, the two polls, the connect, the
 * loop that moves bytes each way with backpressure, the end of each
 * direction, the lifecycle and this thread's list of pumps); a codec says
 * only how bytes cross: its handshake after the TCP connect, a write of
 * plain bytes, a read of plain bytes, the end of the stream up.
 *
 * Lifecycle: s5_pump_start, then done() once (never inside the call)
 * unless s5_pump_detach came first. The caller owns the pump until it
 * detaches it: a pump that ended (both directions, or an error) closes
 * its sockets then, and is freed at the detach. Detached, a pump closes,
 * whatever its state: one on its pair no longer waits for the proxy's end
 * (a proxy that stalls would hold it for good).
 *
 * The bulk phase goes without the pair (s5_pump_direct, a session's
 * relay once the CONNECT was answered): the pump stops filling the pair,
 * writes what it holds for it, then half-closes it (the caller reads the
 * rest and its EOF); it reads the pair's rest to its EOF (the caller's
 * half-close) and sends it; then it closes its end of the pair, and the
 * caller's reads and writes (s5_pump_read, s5_pump_writev) go through
 * the codec: no byte lost or reordered. Detaching a direct pump closes
 * it (the caller ended). */
#ifndef S5_CORE_SOCKS5_PUMP_H
#define S5_CORE_SOCKS5_PUMP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct s5_upstream_cfg;
struct s5_pump;

/* status 0: the handshake is done; < 0: the TCP connect failed (a libuv
 * error, why says so); > 0: the codec's handshake failed (why names the
 * upstream and what went wrong). */
typedef void s5_pump_done(void *arg, int status, const char *why);

/* read: the proxy ended its stream (as -S5_PUMP_EOF: apart from -1, a
 * failure, which the client sees as a reset, not as the stream's end) */
#define S5_PUMP_EOF 3

struct s5_pump_codec {
  /* After the TCP connect, then on each readiness until it ends: 0 done,
   * 1 to wait (p->want_write: for the socket's room, else for its bytes),
   * -1 failed with why. */
  int (*handshake)(struct s5_pump *p, char *why, size_t cap);
  /* Plain bytes to the proxy: how many were taken (> 0), 0 to wait
   * (p->want_write set when for room), -1 to close. A codec that took
   * nothing is called again with the same bytes; one that took fewer
   * than len gets the rest again, topped up with the next. */
  int (*write)(struct s5_pump *p, const uint8_t *buf, size_t len);
  /* Plain bytes from the proxy into buf (cap >= S5_PUMP_UP): how many
   * (> 0), 0 to wait, -S5_PUMP_EOF at the proxy's end, -1 to close. */
  int (*read)(struct s5_pump *p, uint8_t *buf, size_t cap);
  /* The pair ended: what tells the proxy (TLS: close_notify), before the
   * pump's FIN. */
  void (*shutdown)(struct s5_pump *p);
  void (*free)(void *cx);
};

#define S5_PUMP_UP 16384   /* plain bytes from the pair per write (one TLS record) */
#define S5_PUMP_DOWN 32768 /* plain bytes to the pair: one write for two reads */

enum s5_pump_state { S5_PUMP_CONNECTING, S5_PUMP_HANDSHAKE, S5_PUMP_OPEN, S5_PUMP_CLOSING };

/* Direct: the pump can go on (its pair handed over, room to write, its
 * end or an error): the caller tries again; readable: its reads too. */
typedef void s5_pump_ready(void *arg, int readable);

struct s5_pump {
  uv_poll_t net_poll, pair_poll;
  struct s5_pump *prev, *next; /* this thread's, for s5_pump_end */
  int net, pair;               /* the TCP socket to the proxy; our end of the pair */
  const struct s5_pump_codec *codec;
  void *cx; /* the codec's, freed with the pump */
  enum s5_pump_state state;
  s5_pump_done *done; /* until the handshake ends; NULL once detached */
  void *arg;
  char up_name[32];
  unsigned slot;       /* the upstream's row in the shared table */
  int handles;         /* polls open */
  int net_ev, pair_ev; /* the events each poll watches now */
  unsigned pair_eof : 1, net_eof : 1, want_write : 1, spoke : 1,
    heard : 1;              /* the codec's data to, from the proxy */
  unsigned owned : 1;       /* not detached yet */
  unsigned direct : 1;      /* s5_pump_direct: the pair is being handed over */
  unsigned down_handed : 1; /* our half-close of the pair went: the caller reads the codec */
  unsigned pair_gone : 1;   /* our end of the pair closed */
  unsigned want_read : 1;   /* direct: the caller reads */
  unsigned shut_wanted : 1; /* direct: the caller's end (s5_pump_shut) */
  unsigned net_shut : 1;    /* our FIN to the proxy went */
  unsigned read_wrote : 1;  /* direct: the codec's read waits for the socket's room */
  s5_pump_ready *ready;     /* direct: the caller's */
  void *user;
  size_t up_len;             /* plain bytes from the pair, not yet taken by the codec */
  size_t down_off, down_len; /* plain bytes from the proxy, not yet written to the pair */
  uint8_t up[S5_PUMP_UP], down[S5_PUMP_DOWN];
};

/* Connects to up's address with its mark and starts codec's handshake
 * with cx (its state, freed with codec->free also on failure); *plain is
 * the descriptor (non-blocking, close-on-exec) the caller reads and
 * writes. Returns the pump, or NULL with why (nothing to close). */
struct s5_pump *s5_pump_start(uv_loop_t *loop, const struct s5_upstream_cfg *up,
                              const struct s5_pump_codec *codec, void *cx, s5_pump_done *done, void *arg,
                              int *plain, char *why, size_t cap);

/* The caller lets go: done() will not come; the pump closes (reset: with
 * a RST to the proxy). */
void s5_pump_detach(struct s5_pump *p, int reset);

/* The bulk phase without the pair (see above): -1 when the pump is not
 * open (it ended: the pair's EOF tells the caller). ready(arg) follows
 * each readiness until the detach. */
int s5_pump_direct(struct s5_pump *p, s5_pump_ready *ready, void *arg);
/* Direct, once the pair's EOF was read: plain bytes from the proxy into
 * buf: how many (> 0), 0 to wait (ready follows while reads are wanted),
 * -S5_PUMP_EOF at the proxy's end (or the codec's failure, as on the
 * pair), S5_PUMP_FAILED when the pump ended. */
#define S5_PUMP_FAILED (-2)
int s5_pump_read(struct s5_pump *p, uint8_t *buf, size_t cap);
/* Direct, the caller's reads wanted (1) or not (0). */
void s5_pump_want(struct s5_pump *p, int read);
/* Direct, once the caller half-closed its end of the pair: plain bytes
 * to the proxy, how many taken (0: wait, ready follows; at most
 * S5_PUMP_UP held), -1 when the connection failed. */
long s5_pump_writev(struct s5_pump *p, const uv_buf_t *bufs, int n);
/* Direct: the caller's end to the proxy, after what it wrote: 0 done, 1
 * to wait (ready follows), -1 failed. */
int s5_pump_shut(struct s5_pump *p);

/* The worker's loop has ended (its stop closed every handle, the pumps'
 * polls too): this thread's pumps freed. */
void s5_pump_end(void);

#endif
