/* SPDX-License-Identifier: MIT */
/* Bytes both ways between a session's client pcb and its proxy socket
 * (relay.c says how): the relay's per-worker state, which lives here, not
 * in the worker (the sessions whose writes wait for the end of the loop
 * turn, and the read buffers proxy-to-client reads land in), and what the
 * worker drives it with. What a session calls is in session.h, with the
 * rest of a session's three files: this header is the worker's view. */
#ifndef S5_CORE_RELAY_H
#define S5_CORE_RELAY_H

#include <stdint.h>

#include "ctx/wctx.h"

struct s5_session;
struct s5_rbuf;

/* Proxy-to-client reads land in a read buffer (struct s5_rbuf, relay.c):
 * a large read is handed to lwIP's send queue as it is, and the buffer stays
 * referenced by the segments until the client acknowledged them; a small one
 * is copied into lwIP's segments, and the buffer takes the next read. */
#define S5_RELAY_READ_BUF 65535 /* tcp_write() takes a u16_t length */

struct s5_relay {
  struct s5_wctx *w;
  struct s5_session *flush_head; /* writes deferred to the end of the loop turn */
  struct s5_rbuf *rbuf_cur;      /* takes the next read; not referenced by lwIP */
  struct s5_rbuf *rbuf_cache;    /* unused, kept for reuse (malloc would trim and refault them) */
  unsigned rbuf_cached;
  unsigned rbuf_out; /* in use: rbuf_cur, or referenced by lwIP segments */
  /* Fallback read buffer when no read buffer can be allocated: copied.
   * Last, so that init need not clear it. */
  uint8_t read_buf[S5_RELAY_READ_BUF];
};

/* Prepares r for worker context w (nothing to undo before it is used). */
void s5_relay_init(struct s5_relay *r, struct s5_wctx *w);

/* Once lwIP let go of every pcb: frees the cached read buffers (those
 * lwIP still references are freed when it frees them). */
void s5_relay_stop(struct s5_relay *r);

/* The worker went idle after a load: the unused read buffers it kept for
 * the next burst go back to malloc (up to 1 MiB a worker). */
void s5_relay_drop_cache(struct s5_relay *r);

/* From the worker's check handle, after every poll phase: the deferred
 * writes of every session that queued some. */
void s5_relay_flush_pending(struct s5_relay *r);

#endif
