/* SPDX-License-Identifier: MIT */
/* The relay's read buffers (relay.h says what they are): where a
 * proxy-to-client read lands, and how it goes to lwIP: a large read in
 * its buffer, referenced by the segments (tcp_write_ref(), lwIP patch
 * 0006), the buffer back in the worker's cache once lwIP freed the last
 * piece; a small one copied. Used by relay.c alone (relay_buf.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tcp/relay_buf.h"

#include "base/assert.h"
#include "base/log.h"

#include "lwip/tcp.h"

/* Reads of at least this size go to lwIP in their buffer, without a copy. */
#define S5_RELAY_REF_MIN (S5_RELAY_READ_BUF / 2)
/* Unused read buffers a worker keeps (64 KiB each): freeing them to malloc
 * would have it return the pages to the kernel and fault them in again. */
#define S5_RELAY_RBUF_CACHE 16

struct s5_rbuf {
  struct pbuf_custom pc; /* lwIP's free callback gets &pc.pbuf: relay_rbuf_free finds b from it */
  struct s5_relay *r;
  struct s5_rbuf *next; /* in r->rbuf_cache */
  uint8_t data[S5_RELAY_READ_BUF];
};

/* lwIP's pbuf_free() hands a custom pbuf's free function the struct pbuf
 * that starts its struct pbuf_custom; relay_rbuf_free() finds b from it. */
_Static_assert(offsetof(struct pbuf_custom, pbuf) == 0, "lwIP casts a custom pbuf to its pbuf_custom");

/* How many bytes lwIP can queue for the client right now. */
size_t s5_relay_room(const struct s5_relay_conn *s) {
  const struct tcp_pcb *pcb = s->pcb;
  if (pcb == NULL) return 0;
  size_t room = tcp_sndbuf(pcb);
  /* A segment of referenced data takes two pbufs (headers, data), and a
   * write may add one more piece to the last unsent segment. */
  int segs = ((int)TCP_SND_QUEUELEN - (int)tcp_sndqueuelen(pcb) - 2) / 2;
  size_t by_segs = segs > 0 ? (size_t)segs * tcp_mss(pcb) : 0;
  if (room > by_segs) room = by_segs;
  if (room > S5_RELAY_READ_BUF) room = S5_RELAY_READ_BUF;
  return room;
}

/* lwIP freed the last piece of a read buffer (or the relay dropped its own
 * reference to one lwIP did not take): back to the relay's cache. */
static void relay_rbuf_free(struct pbuf *p) {
  struct s5_rbuf *b = (struct s5_rbuf *)(void *)((char *)p - offsetof(struct s5_rbuf, pc.pbuf));
  struct s5_relay *r = b->r;
  S5_ASSERT(r->rbuf_out > 0);
  r->rbuf_out--;
  if (r->rbuf_cached < S5_RELAY_RBUF_CACHE && !r->stopping) {
    b->next = r->rbuf_cache;
    r->rbuf_cache = b;
    r->rbuf_cached++;
  } else {
    free(b);
  }
}

/* The buffer for the next read: NULL when none can be allocated. */
static struct s5_rbuf *relay_rbuf_current(struct s5_relay *r) {
  struct s5_rbuf *b = r->rbuf_cur;
  if (b != NULL) return b;
  if (r->rbuf_cache != NULL) {
    b = r->rbuf_cache;
    r->rbuf_cache = b->next;
    r->rbuf_cached--;
  } else if ((b = malloc(sizeof *b)) == NULL) {
    return NULL;
  }
  b->r = r;
  b->next = NULL;
  r->rbuf_out++;
  r->rbuf_cur = b;
  return b;
}

void s5_relay_init(struct s5_relay *r, uint64_t *to_proxy, uint64_t *from_proxy) {
  memset(r, 0, offsetof(struct s5_relay, read_buf));
  r->to_proxy = to_proxy;
  r->from_proxy = from_proxy;
}

void s5_relay_drop_cache(struct s5_relay *r) {
  /* Between turns the current buffer holds no data (a read is copied into
   * lwIP's segments or handed over whole): it only waits for the next read,
   * and would keep 64 KiB and the top of the thread's arena while idle. */
  if (r->rbuf_cur != NULL) {
    free(r->rbuf_cur);
    r->rbuf_cur = NULL;
    r->rbuf_out--;
  }
  while (r->rbuf_cache != NULL) {
    struct s5_rbuf *b = r->rbuf_cache;
    r->rbuf_cache = b->next;
    free(b);
  }
  r->rbuf_cached = 0;
}

void s5_relay_stop(struct s5_relay *r) {
  r->stopping = 1;
  s5_relay_drop_cache(r);
  /* Buffers lwIP still references are freed when it frees them. */
  if (r->rbuf_out != 0) s5_warn("%u read buffers still held by lwIP at stop", r->rbuf_out);
}

err_t s5_relay_queue(struct s5_relay_conn *s, const uint8_t *buf, u16_t n) {
  struct s5_relay *r = s->relay;
  struct s5_rbuf *b = r->rbuf_cur;
  if (b == NULL || buf != b->data || n < S5_RELAY_REF_MIN)
    return tcp_write(s->pcb, buf, n, TCP_WRITE_FLAG_COPY);
  /* The buffer becomes a pbuf of the n bytes; our reference is dropped
   * right away, so that lwIP's pieces (if any) keep it alive alone. */
  r->rbuf_cur = NULL;
  b->pc.custom_free_function = relay_rbuf_free;
  struct pbuf *p = pbuf_alloced_custom(PBUF_RAW, n, PBUF_REF, &b->pc, b->data, sizeof b->data);
  err_t err = tcp_write_ref(s->pcb, b->data, n, 0, p);
  pbuf_free(p);
  return err;
}

uint8_t *s5_relay_rbuf(struct s5_relay *r) {
  struct s5_rbuf *b = relay_rbuf_current(r);
  return b != NULL ? b->data : r->read_buf;
}
