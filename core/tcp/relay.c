/* SPDX-License-Identifier: MIT */
/* Bytes both ways between the client's lwIP pcb and the proxy socket.
 *
 * Client to proxy: lwIP's pbufs are written to the socket as they are
 * (iovecs over the chain, no copy) and acknowledged to lwIP with tcp_recved()
 * only once the kernel took them, so a slow proxy closes the client's
 * window instead of filling our memory.
 *
 * Proxy to client: reads are sized to the room in lwIP's send queue and land
 * in the relay's current read buffer (struct s5_rbuf); with no room the read
 * stops and lwIP's sent callback restarts it once the client acknowledged
 * data. A read of at least S5_RELAY_REF_MIN bytes is handed to lwIP without
 * copying (tcp_write_ref(), lwIP patch 0006): the buffer is a custom pbuf,
 * every piece of it in a segment holds a reference, and the last piece lwIP
 * frees (acknowledged, or its pcb aborted or purged, whether or not a
 * connection still owns the pcb) gives the buffer back to the relay. A smaller
 * read is copied into segments (tcp_write() with TCP_WRITE_FLAG_COPY) and
 * the buffer takes the next read, so that a small read never pins a whole
 * buffer: what a connection pins stays within twice what it has queued. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp/relay.h"
#include "tcp/relay_buf.h"

#include "base/assert.h"
#include "base/log.h"

#include "lwip/tcp.h"

/* iovecs per try_write; a client window of pbufs is rarely longer. */
#define S5_RELAY_IOV 64

static void relay_read_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);
static void relay_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static err_t relay_flush(struct s5_relay_conn *s);
static int relay_client_owed(const struct s5_relay_conn *s);

/* The worker's counters, shared with the readers of the stats area: a
 * relaxed store, as S5_STAT_ADD does (one writer, this thread). */
static void relay_count(uint64_t *counter, uint64_t n) {
  if (counter != NULL) __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/* Writes are deferred to the end of the loop iteration (the worker's
 * end-of-turn hook runs s5_relay_flush_pending()): the segments of one
 * batch of TUN reads leave in one writev, and a proxy that sends in small
 * pieces still gets full segments to the client without Nagle's delay. */
static void relay_defer(struct s5_relay_conn *s) {
  if (s->flush_queued) return;
  s->flush_queued = 1;
  s->flush_next = s->relay->flush_head;
  s->relay->flush_head = s;
  s->relay->flush_count++;
}

static void relay_check_done(struct s5_relay_conn *s) {
  if (s->client_eof && s->proxy_eof && s->proxy_shut) s->ops->finished(s->owner);
}

/* n more bytes of out reached the proxy: give them back to the client's window. */
static void relay_consume(struct s5_relay_conn *s, size_t n) {
  s->ops->touch(s->owner);
  relay_count(s->relay->to_proxy, n);
  s->bytes_up += n;
  for (size_t left = n; s->pcb != NULL && left > 0;) {
    u16_t chunk = left > 0xffff ? 0xffff : (u16_t)left;
    tcp_recved(s->pcb, chunk);
    left -= chunk;
  }
  while (n > 0) {
    struct pbuf *head = s->out;
    S5_ASSERT(head != NULL); /* the socket took no byte that was not queued */
    size_t avail = (size_t)head->len - s->out_off;
    if (n < avail) {
      s->out_off += (uint16_t)n;
      return;
    }
    n -= avail;
    s->out = head->next;
    s->out_off = 0;
    head->next = NULL; /* the chain's reference to the rest is now ours */
    pbuf_free(head);
  }
  if (s->out == NULL) s->out_tail = NULL;
}

static int relay_bufs(const struct s5_relay_conn *s, uv_buf_t *bufs, int max, size_t *total) {
  int n = 0;
  *total = 0;
  for (struct pbuf *q = s->out; q != NULL && n < max; q = q->next) {
    size_t off = q == s->out ? s->out_off : 0;
    if (q->len == off) continue;
    bufs[n++] = uv_buf_init((char *)q->payload + off, q->len - off);
    *total += q->len - off;
  }
  return n;
}

/* The write to the proxy came back. Nothing more when the relay closed
 * meanwhile; a failure is told to the owner. */
static void relay_written(uv_write_t *req, int status) {
  struct s5_relay_conn *s = req->data;
  S5_ASSERT(s->writing);
  s->writing = 0;
  if (status == UV_ECANCELED || s->state == S5_RELAY_CLOSED) return;
  if (status < 0) {
    s->ops->failed(s->owner, "writing to proxy failed");
    return;
  }
  relay_consume(s, s->write_len);
  if (relay_flush(s) == ERR_OK && s->state != S5_RELAY_CLOSED) relay_check_done(s);
}

/* The client's FIN, passed on once every byte before it reached the proxy.
 * Nothing is queued in libuv then, so the socket is half-closed at once,
 * not through uv_shutdown (a POLLOUT registration and a loop turn). When
 * the proxy has ended its side too, nothing is called here: closing the
 * socket sends the FIN, one system call fewer per connection. */
static err_t relay_half_close(struct s5_relay_conn *s) {
  S5_ASSERT(s->out == NULL && !s->writing);
  uv_os_fd_t fd;
  int r = s->io_up ? s->io->shutdown(s->io_cx) : 0; /* io: after what it holds; 1: ready follows */
  if (s->io != NULL && !s->io_up) return ERR_OK;    /* the hand-over first (relay_io_up) */
  if (r < 0 || (!s->io_up && !s->proxy_eof &&
                (uv_fileno((const uv_handle_t *)s->sock, &fd) < 0 || shutdown(fd, SHUT_WR) < 0)))
    return s->ops->failed(s->owner, "half-closing the proxy connection failed");
  s->proxy_shut = r == 0;
  return ERR_OK;
}

/* The hand-over to the io, writes: once nothing is queued on the socket,
 * its half-close tells the io that the socket's bytes end there. */
static err_t relay_io_up(struct s5_relay_conn *s) {
  uv_os_fd_t fd;
  if (s->writing || uv_stream_get_write_queue_size(s->sock) > 0) return ERR_OK;
  if (!s->proxy_shut && (uv_fileno((const uv_handle_t *)s->sock, &fd) < 0 || shutdown(fd, SHUT_WR) < 0))
    return s->ops->failed(s->owner, "handing the proxy connection over failed");
  s->io_up = 1;
  if (s->io_down && s->ops->handed != NULL) s->ops->handed(s->owner);
  return ERR_OK;
}

/* Writes what it can now; the rest goes into one uv_write (at most four
 * buffers, which libuv keeps inside the request without allocating). Returns
 * what the owner's failed op returned when the connection failed. */
static err_t relay_flush(struct s5_relay_conn *s) {
  if (s->early == S5_RELAY_EARLY_HELD && s->ops->held != NULL && (s->out != NULL || s->client_eof)) {
    err_t r = (err_t)s->ops->held(s->owner); /* [sniff]: may decide and kick at once (a pooled connection) */
    if (r != ERR_OK || s->state == S5_RELAY_CLOSED) return r != ERR_OK ? r : ERR_ABRT;
  }
  if (s->early == S5_RELAY_EARLY_HELD) return ERR_OK; /* s5_relay_kick() once the proxy may take bytes */
  if (s->early == S5_RELAY_EARLY_KICKED && s->state == S5_RELAY_ATTACHED && s->out != NULL) {
    s->early = S5_RELAY_EARLY_SENT;
    if (s->ops->sending != NULL) s->ops->sending(s->owner);
  }
  if (s->io != NULL && !s->io_up && s->state == S5_RELAY_RUNNING) {
    err_t r = relay_io_up(s);
    if (r != ERR_OK || s->state == S5_RELAY_CLOSED) return r != ERR_OK ? r : ERR_ABRT;
  }
  while (s->out != NULL && !s->writing) {
    uv_buf_t bufs[S5_RELAY_IOV];
    size_t total;
    int n = relay_bufs(s, bufs, S5_RELAY_IOV, &total);
    if (s->io_up) { /* the io takes what it can; ready follows when it takes more */
      long took = s->io->writev(s->io_cx, bufs, n);
      if (took < 0) return s->ops->failed(s->owner, "writing to proxy failed");
      if (took == 0) break;
      relay_consume(s, (size_t)took);
      continue;
    }
    int r = uv_try_write(s->sock, bufs, (unsigned)n);
    if (r > 0) {
      relay_consume(s, (size_t)r);
      if ((size_t)r == total) continue;
      n = relay_bufs(s, bufs, 4, &total);
    } else if (r == UV_EAGAIN) {
      n = n > 4 ? 4 : n;
      total = 0;
      for (int i = 0; i < n; i++) total += bufs[i].len;
    } else {
      return s->ops->failed(s->owner, "writing to proxy failed");
    }
    s->write_len = total;
    s->write_req.data = s;
    r = uv_write(&s->write_req, s->sock, bufs, (unsigned)n, relay_written);
    if (r < 0) return s->ops->failed(s->owner, "writing to proxy failed");
    s->writing = 1;
  }
  if (s->out == NULL && s->client_eof && !s->writing && !s->proxy_shut) return relay_half_close(s);
  return ERR_OK;
}

/* lwIP: data (or, with p == NULL, the FIN) from the client. */
static err_t relay_client_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err) {
  struct s5_relay_conn *s = arg;
  if (s == NULL || err != ERR_OK) {
    if (p != NULL) pbuf_free(p);
    return ERR_OK;
  }
  if (p == NULL) {
    s->client_eof = 1;
  } else {
    /* Linked by hand rather than pbuf_cat(), which would walk the whole
     * queue to fix up tot_len fields that nothing here reads. */
    if (s->out == NULL) s->out = p;
    else s->out_tail->next = p;
    while (p->next != NULL) p = p->next;
    s->out_tail = p;
  }
  relay_defer(s);
  return ERR_OK;
}

/* lwIP: the client acknowledged len bytes, so there is room again. */
static err_t relay_client_sent(void *arg, struct tcp_pcb *pcb, u16_t len) {
  struct s5_relay_conn *s = arg;
  if (s == NULL) return ERR_OK;
  s->ops->touch(s->owner);
  /* Not aborted here: lwIP 2.1.3 drops (leaks) the data of a segment whose
   * ACK made the sent callback abort. The flush at the end of the loop turn
   * sends the RST (found by fuzz_packet). */
  if (s->proxy_reset) {
    if (!relay_client_owed(s)) relay_defer(s);
    return ERR_OK;
  }
  if (!s->reading && !s->proxy_eof && s->state == S5_RELAY_RUNNING && s5_relay_room(s) >= S5_RELAY_MIN_ROOM) {
    if (s->io_down) { /* it may hold bytes already: read at the end of the turn */
      s->reading = 1;
      s->io->want(s->io_cx, 1);
      s->io_pull = 1;
      relay_defer(s);
    } else if (uv_read_start(s->sock, relay_read_alloc, relay_read) == 0) s->reading = 1;
  }
  return ERR_OK;
}

/* libuv's alloc callback for proxy reads: the current read buffer, sized
 * to the room in lwIP's send queue. */
static void relay_read_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  struct s5_relay_conn *s = handle->data;
  *buf = uv_buf_init((char *)s5_relay_rbuf(s->relay), (unsigned)s5_relay_room(s));
}

static void relay_stop_reading(struct s5_relay_conn *s) {
  if (s->io_down) s->io->want(s->io_cx, 0);
  else uv_read_stop(s->sock);
  s->reading = 0;
}

/* True while lwIP still holds bytes for the client, sent or not. */
static int relay_client_owed(const struct s5_relay_conn *s) {
  return s->pcb != NULL && (s->pcb->unsent != NULL || s->pcb->unacked != NULL);
}

/* The proxy reset its connection. What it sent before the reset may still
 * sit in lwIP's queue: the client gets those bytes first, then the reset
 * (from the sent callback, once they are acknowledged; an idle client is
 * reset by the idle timeout). A truncated transfer so still ends in a RST,
 * never in a FIN that would make it look complete. */
static void relay_proxy_reset(struct s5_relay_conn *s, const char *why) {
  if (!relay_client_owed(s)) {
    s->ops->failed(s->owner, why);
    return;
  }
  s->proxy_reset = 1;
  s->reset_why = why;
  relay_stop_reading(s);
  tcp_output(s->pcb);
}

static void relay_proxy_eof(struct s5_relay_conn *s) {
  s->proxy_eof = 1;
  relay_stop_reading(s);
  tcp_shutdown(s->pcb, 0, 1); /* FIN to the client after the queued data */
  tcp_output(s->pcb);
  relay_check_done(s);
}

/* n bytes from the proxy in buf (s5_relay_rbuf's) to the client: 0, or
 * -1 when the connection failed. */
static int relay_got(struct s5_relay_conn *s, const uint8_t *buf, size_t n) {
  s->ops->touch(s->owner);
  relay_count(s->relay->from_proxy, (uint64_t)n);
  s->bytes_down += (uint64_t)n;
  if (s5_relay_queue(s, buf, (u16_t)n) != ERR_OK) {
    s->ops->failed(s->owner, "lwIP send queue refused data");
    return -1;
  }
  relay_defer(s);
  if (s5_relay_room(s) < S5_RELAY_MIN_ROOM) relay_stop_reading(s);
  return 0;
}

static void relay_io_down(struct s5_relay_conn *s);

static void relay_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  struct s5_relay_conn *s = stream->data;
  if (s->state == S5_RELAY_CLOSED || nread == 0) return;
  if (nread == UV_ENOBUFS) { /* relay_read_alloc found no room: wait for acks */
    relay_stop_reading(s);
    return;
  }
  if (nread == UV_EOF) {
    /* A read that returned 0 is the proxy's FIN (buf is the read's buffer).
     * libuv also reports EOF, without a buffer, after a short read when the
     * poll said POLLHUP, which a reset does too: the socket's error says
     * which. Only then is it asked (one system call per connection less). */
    int err = 0;
    socklen_t len = sizeof err;
    uv_os_fd_t fd;
    if (buf->base == NULL && uv_fileno((uv_handle_t *)stream, &fd) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
      relay_proxy_reset(s, err == ECONNRESET ? "proxy reset the connection" : "proxy connection failed");
      return;
    }
    if (s->io != NULL) relay_io_down(s); /* the socket's bytes end here: the io's follow */
    else relay_proxy_eof(s);
    return;
  }
  if (nread < 0) {
    relay_proxy_reset(s, nread == UV_ECONNRESET ? "proxy reset the connection" : "proxy connection failed");
    return;
  }
  relay_got(s, (const uint8_t *)buf->base, (size_t)nread);
}

/* The io's reads, while room lasts, until it has no more. */
static void relay_io_pull(struct s5_relay_conn *s) {
  while (s->reading && s->state == S5_RELAY_RUNNING) {
    uint8_t *buf = s5_relay_rbuf(s->relay);
    size_t room = s5_relay_room(s);
    int n = room >= S5_RELAY_MIN_ROOM ? s->io->read(s->io_cx, buf, room) : 0;
    if (room < S5_RELAY_MIN_ROOM) relay_stop_reading(s);
    else if (n == S5_RELAY_IO_EOF) relay_proxy_eof(s);
    else if (n < 0) relay_proxy_reset(s, "proxy connection failed");
    else if (n > 0 && relay_got(s, buf, (size_t)n) == 0) continue;
    return;
  }
}

/* The hand-over to the io, reads: the socket's EOF was its last byte. */
static void relay_io_down(struct s5_relay_conn *s) {
  uv_read_stop(s->sock);
  s->io_down = 1;
  s->io->want(s->io_cx, 1);
  if (s->io_up && s->ops->handed != NULL) s->ops->handed(s->owner);
  relay_io_pull(s);
}

void s5_relay_direct(struct s5_relay_conn *c, const struct s5_relay_io *io, void *cx) {
  S5_ASSERT(c->state == S5_RELAY_RUNNING && c->io == NULL);
  c->io = io;
  c->io_cx = cx;
  relay_defer(c); /* the writes' hand-over (relay_io_up) */
}

void s5_relay_ready(struct s5_relay_conn *c, int readable) {
  if (c->state != S5_RELAY_RUNNING) return;
  if (readable && c->io_down && c->reading) relay_io_pull(c);
  if (c->state == S5_RELAY_RUNNING && (c->out != NULL || (c->client_eof && !c->proxy_shut) || !c->io_up))
    relay_defer(c);
}

void s5_relay_attach(struct s5_relay_conn *c, struct s5_relay *r, struct tcp_pcb *pcb, uv_stream_t *sock,
                     const struct s5_relay_ops *ops, void *owner) {
  memset(c, 0, sizeof *c);
  c->relay = r;
  c->ops = ops;
  c->owner = owner;
  c->pcb = pcb;
  c->sock = sock;
  c->state = S5_RELAY_ATTACHED;
  tcp_arg(pcb, c);
  tcp_recv(pcb, relay_client_recv);
  tcp_sent(pcb, relay_client_sent);
}

/* The client completed its handshake: deliver what the proxy sent along
 * with its CONNECT reply, then read from the proxy. Returns ERR_ABRT when
 * it had to fail the connection. */
err_t s5_relay_start(struct s5_relay_conn *s, const uint8_t *early, size_t len) {
  S5_ASSERT(s->state == S5_RELAY_ATTACHED);
  s->state = S5_RELAY_RUNNING;
  S5_ASSERT(s->early == S5_RELAY_EARLY_NONE || s->early == S5_RELAY_EARLY_GRANTED);
  s->early = S5_RELAY_EARLY_NONE;
  s->sock->data = s; /* the proxy client's until now */
  if (len > 0) {
    if (tcp_write(s->pcb, early, (u16_t)len, TCP_WRITE_FLAG_COPY) != ERR_OK)
      return s->ops->failed(s->owner, "lwIP send queue refused data");
    tcp_output(s->pcb);
  }
  if (uv_read_start(s->sock, relay_read_alloc, relay_read) < 0)
    return s->ops->failed(s->owner, "reading from proxy failed");
  s->reading = 1;
  return ERR_OK;
}

/* Runs at the end of every loop turn. Connections released meanwhile are
 * still in memory: their owners' close callbacks run after this. */
void s5_relay_flush_pending(struct s5_relay *r) {
  while (r->flush_head != NULL) {
    struct s5_relay_conn *s = r->flush_head;
    S5_ASSERT(s->flush_queued && r->flush_count > 0);
    r->flush_head = s->flush_next;
    r->flush_count--;
    s->flush_queued = 0;
    if (s->state == S5_RELAY_CLOSED) continue;
    if (s->proxy_reset && !relay_client_owed(s)) {
      s->ops->failed(s->owner, s->reset_why);
      continue;
    }
    if (s->io_pull && s->reading) relay_io_pull(s); /* resumed: what the io holds */
    s->io_pull = 0;
    if (s->state == S5_RELAY_CLOSED || relay_flush(s) != ERR_OK || s->state == S5_RELAY_CLOSED) continue;
    if (s->pcb != NULL) tcp_output(s->pcb);
    relay_check_done(s);
  }
  S5_ASSERT(r->flush_count == 0);
}

void s5_relay_hold(struct s5_relay_conn *c) {
  S5_ASSERT(c->state == S5_RELAY_ATTACHED && c->early == S5_RELAY_EARLY_NONE);
  c->early = S5_RELAY_EARLY_HELD;
}

void s5_relay_kick(struct s5_relay_conn *c) {
  S5_ASSERT(c->early == S5_RELAY_EARLY_HELD);
  c->early = S5_RELAY_EARLY_KICKED;
  if (c->state != S5_RELAY_CLOSED) relay_defer(c);
}

void s5_relay_unkick(struct s5_relay_conn *c) {
  /* the proxy retries only a connection none of our bytes went on, or
   * whose owner sends them again ([sniff]: s5_proxy_data_again) */
  S5_ASSERT(c->early == S5_RELAY_EARLY_HELD || c->early == S5_RELAY_EARLY_KICKED ||
            c->early == S5_RELAY_EARLY_SENT);
  c->early = S5_RELAY_EARLY_HELD;
}

void s5_relay_granted(struct s5_relay_conn *c) {
  S5_ASSERT(s5_relay_early(c));
  c->early = S5_RELAY_EARLY_GRANTED;
  if (c->state != S5_RELAY_CLOSED) relay_defer(c); /* what waited while held goes now */
}

int s5_relay_early(const struct s5_relay_conn *c) {
  return c->early == S5_RELAY_EARLY_HELD || c->early == S5_RELAY_EARLY_KICKED ||
         c->early == S5_RELAY_EARLY_SENT;
}

void s5_relay_release(struct s5_relay_conn *c) {
  S5_ASSERT(c->state != S5_RELAY_CLOSED); /* released once */
  c->state = S5_RELAY_CLOSED;
  if (c->out != NULL) pbuf_free(c->out);
  c->out = c->out_tail = NULL;
  S5_ASSERT(c->pcb == NULL); /* the owner let go of the pcb first: no callback of lwIP's comes here */
}
