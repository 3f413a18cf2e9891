/* SPDX-License-Identifier: MIT */
/* Batched I/O on the associations' relay sockets (see udp_io.h for why).
 *
 * Sending: s5_udp_sock_send() copies the datagram (SOCKS5 header and
 * payload) into the worker's arena and links it to its socket's queue;
 * the flush, once per loop turn or when the arena is full, walks the
 * sockets with something queued and gives each one sendmmsg(). Runs of
 * equal-size datagrams become one message with UDP_SEGMENT: the iovec of
 * the message is the run, the kernel cuts it at the segment size, so every
 * datagram leaves as it came. A socket on which the kernel refuses GSO (a
 * route whose MTU is below the segment, a device without checksum offload)
 * sends its datagrams one by one from then on.
 *
 * Receiving: recvmmsg() into a ring of 64 KiB slots (mapped once; only
 * the pages datagrams touch become resident, and they are given back when
 * the worker goes idle: s5_udp_io_release), at most S5_UDPIO_RECV_ROUNDS
 * batches per wake-up so that one busy relay cannot starve the TUN queue
 * (the poll handle is level-triggered and comes back). After each batch
 * the owner's batch_done runs (udp.c flushes the TUN writer: it holds
 * pointers into the slots).
 *
 * Moderation: when a turn found several relay datagrams waiting, this
 * wishes the worker to wait [session] udp-coalesce µs before it polls
 * again (s5_udp_io_wait_wish), so that the next wake-up finds several too. */
#include "udp/udp_io.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/env.h"
#include "base/log.h"
#include "ctx/wctx.h"

#include "lwip/pbuf.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define S5_UDPIO_ARENA (512 * 1024) /* queued datagrams per worker, bytes */
#define S5_UDPIO_ENTS 512           /* queued datagrams per worker */
#define S5_UDPIO_GSO_SEGS 64        /* the kernel's UDP_MAX_SEGMENTS before 6.9 */
#define S5_UDPIO_GSO_BYTES 65000    /* a GSO message is one IP packet to the kernel */
#define S5_UDPIO_RECV_BATCH 32
#define S5_UDPIO_RECV_ROUNDS 4
#define S5_UDPIO_MODERATE_MIN 2     /* datagrams found waiting in one turn before a wait is wished */
#define S5_UDPIO_SLOT (65536 + 512) /* a GRO-coalesced read is at most 64 KiB */
#define S5_UDPIO_IOV 64             /* header + pbufs on the plain path */
#define S5_UDPIO_SLOTS_LEN ((size_t)S5_UDPIO_RECV_BATCH * S5_UDPIO_SLOT)
#define S5_UDPIO_BUFS_LEN (S5_UDPIO_SLOTS_LEN + S5_UDPIO_ARENA)

struct ent {
  uint32_t off, len;
  int next;
};

union cmsg_u16 {
  char buf[CMSG_SPACE(sizeof(uint16_t))];
  struct cmsghdr align;
};

union cmsg_int {
  char buf[CMSG_SPACE(sizeof(int))];
  struct cmsghdr align;
};

struct s5_udp_io {
  struct s5_wctx *w;
  void (*batch_done)(void *arg); /* after each batch of reads: the owner's */
  void *batch_arg;
  unsigned read_turn; /* datagrams read from relays since the loop last polled */
  int batch;          /* 0: S5TUND_NO_UDP_OFFLOAD, the plain path */
  struct s5_udp_sock *pend;
  size_t used;
  unsigned nents;
  struct ent ents[S5_UDPIO_ENTS];
  struct mmsghdr smsg[S5_UDPIO_ENTS];
  unsigned scount[S5_UDPIO_ENTS]; /* datagrams in each message */
  struct iovec siov[S5_UDPIO_ENTS];
  union cmsg_u16 scm[S5_UDPIO_ENTS];
  struct mmsghdr rmsg[S5_UDPIO_RECV_BATCH];
  struct iovec riov[S5_UDPIO_RECV_BATCH];
  union cmsg_int rcm[S5_UDPIO_RECV_BATCH];
  uint8_t *slots; /* mapped with the state: the receive slots, then... */
  uint8_t *arena; /* ...the send arena (S5_UDPIO_BUFS_LEN together) */
};

int s5_udp_io_batching(const struct s5_udp_io *io) { return io != NULL && io->batch; }

/* ---------------------------------------------------------------- sending */

static void sent(struct s5_udp_io *io, ssize_t bytes) { S5_STAT_ADD(io->w->stats, bytes_to_proxy, bytes); }

static void lost(struct s5_udp_io *io, const struct s5_udp_sock *s, unsigned n, int err) {
  S5_STAT_ADD(io->w->stats, drop_udp, n);
  /* EAGAIN (socket buffer full) or an ICMP error from an earlier send: the
   * datagrams are lost, as UDP allows; the reader sees ICMP errors too. */
  s5_debug("u%llu send to relay: %s (%u datagram(s) lost)", (unsigned long long)s->id, strerror(err), n);
}

/* The plain path: one sendmsg of hdr and the chain (flattened into the
 * arena when longer than the iovec: a datagram reassembled from many
 * fragments). */
static void send_now(struct s5_udp_io *io, struct s5_udp_sock *s, const uint8_t *hdr, size_t hlen,
                     const struct pbuf *p) {
  struct iovec iov[S5_UDPIO_IOV];
  unsigned n = 0;
  if (hlen > 0) iov[n++] = (struct iovec){(void *)hdr, hlen};
  const struct pbuf *q = p;
  for (; q != NULL && n < S5_UDPIO_IOV; q = q->next)
    if (q->len > 0) iov[n++] = (struct iovec){q->payload, q->len};
  if (q != NULL) {
    if (hlen > 0) memcpy(io->arena, hdr, hlen);
    pbuf_copy_partial(p, io->arena + hlen, p->tot_len, 0);
    iov[0] = (struct iovec){io->arena, hlen + p->tot_len};
    n = 1;
  }
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = n};
  ssize_t r = sendmsg(s->fd, &m, MSG_DONTWAIT);
  if (r < 0) lost(io, s, 1, errno);
  else sent(io, r);
}

void s5_udp_sock_send(struct s5_udp_sock *s, const uint8_t *hdr, size_t hlen, const struct pbuf *p) {
  struct s5_udp_io *io = s->io;
  size_t len = hlen + (p != NULL ? p->tot_len : 0);
  if (!io->batch) {
    send_now(io, s, hdr, hlen, p);
    return;
  }
  if (io->used + len > S5_UDPIO_ARENA || io->nents == S5_UDPIO_ENTS) s5_udp_io_flush(io);
  S5_ASSERT(io->used + len <= S5_UDPIO_ARENA && io->nents < S5_UDPIO_ENTS);
  uint8_t *d = io->arena + io->used;
  if (hlen > 0) memcpy(d, hdr, hlen); /* none for datagrams queued with theirs */
  if (p != NULL) pbuf_copy_partial(p, d + hlen, p->tot_len, 0);
  int i = (int)io->nents++;
  io->ents[i] = (struct ent){(uint32_t)io->used, (uint32_t)len, -1};
  io->used += len;
  if (s->tail >= 0) io->ents[s->tail].next = i;
  else s->head = i;
  s->tail = i;
  if (!s->pending) {
    s->pending = 1;
    s->pend_next = io->pend;
    io->pend = s;
  }
}

/* One message: the run of datagrams from entry *i on that GSO can carry
 * (equal sizes; a shorter one ends it), or the single datagram at *i. */
static void build_msg(struct s5_udp_io *io, const struct s5_udp_sock *s, unsigned m, unsigned *niov, int *i) {
  struct msghdr *h = &io->smsg[m].msg_hdr;
  memset(h, 0, sizeof *h);
  h->msg_iov = &io->siov[*niov];
  uint32_t seg = io->ents[*i].len;
  unsigned n = 0;
  size_t total = 0;
  int gso = !s->no_gso;
  for (;;) {
    const struct ent *e = &io->ents[*i];
    io->siov[(*niov)++] = (struct iovec){io->arena + e->off, e->len};
    n++;
    total += e->len;
    *i = e->next;
    if (!gso || e->len != seg || *i < 0 || n == S5_UDPIO_GSO_SEGS) break;
    if (io->ents[*i].len > seg || total + io->ents[*i].len > S5_UDPIO_GSO_BYTES) break;
  }
  h->msg_iovlen = n;
  io->scount[m] = n;
  if (n > 1) {
    h->msg_control = io->scm[m].buf;
    h->msg_controllen = sizeof io->scm[m].buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(h);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    uint16_t sz = (uint16_t)seg;
    memcpy(CMSG_DATA(c), &sz, sizeof sz);
  }
}

/* The kernel refused GSO for this socket: the datagrams of message m go
 * one by one, and so does everything the socket sends from now on. */
static void send_unsegmented(struct s5_udp_io *io, struct s5_udp_sock *s, unsigned m, int err) {
  if (!s->no_gso)
    s5_debug("u%llu relay socket refuses UDP_SEGMENT (%s): datagrams sent one by one",
             (unsigned long long)s->id, strerror(err));
  s->no_gso = 1;
  struct msghdr *h = &io->smsg[m].msg_hdr;
  for (size_t k = 0; k < h->msg_iovlen; k++) {
    struct msghdr one = {.msg_iov = &h->msg_iov[k], .msg_iovlen = 1};
    ssize_t r = sendmsg(s->fd, &one, MSG_DONTWAIT);
    if (r < 0) lost(io, s, 1, errno);
    else sent(io, r);
  }
}

static void send_msgs(struct s5_udp_io *io, struct s5_udp_sock *s, unsigned nmsg) {
  unsigned from = 0;
  while (from < nmsg) {
    int r = sendmmsg(s->fd, io->smsg + from, nmsg - from, MSG_DONTWAIT);
    if (r > 0) {
      for (unsigned k = from; k < from + (unsigned)r; k++) sent(io, io->smsg[k].msg_len);
      from += (unsigned)r;
      continue;
    }
    int err = r < 0 ? errno : EIO;
    if (err == EINTR) continue;
    if (io->scount[from] > 1 && (err == EINVAL || err == EIO || err == EMSGSIZE || err == ENOPROTOOPT)) {
      send_unsegmented(io, s, from++, err);
      continue;
    }
    if (err == EAGAIN || err == EWOULDBLOCK) { /* the socket buffer is full: the rest is lost */
      unsigned n = 0;
      for (unsigned k = from; k < nmsg; k++) n += io->scount[k];
      lost(io, s, n, err);
      return;
    }
    lost(io, s, io->scount[from++], err); /* one message: an ICMP error of an earlier send */
  }
}

static void sock_flush(struct s5_udp_io *io, struct s5_udp_sock *s) {
  unsigned nmsg = 0, niov = 0;
  int i = s->head;
  while (i >= 0) build_msg(io, s, nmsg++, &niov, &i);
  send_msgs(io, s, nmsg);
}

/* Sends everything queued: once per loop turn, and when the arena is full. */
void s5_udp_io_flush(struct s5_udp_io *io) {
  struct s5_udp_sock *s = io->pend;
  io->pend = NULL;
  while (s != NULL) {
    struct s5_udp_sock *next = s->pend_next;
    s->pending = 0;
    sock_flush(io, s);
    s->head = s->tail = -1;
    s = next;
  }
  io->used = 0;
  io->nents = 0;
}

/* ---------------------------------------------------------------- receiving */

/* One read: split by its GRO segment size, if the kernel coalesced it. */
static void deliver(struct s5_udp_io *io, struct s5_udp_sock *s, unsigned k) {
  struct msghdr *h = &io->rmsg[k].msg_hdr;
  size_t len = io->rmsg[k].msg_len;
  uint8_t *buf = h->msg_iov[0].iov_base;
  if (h->msg_flags & MSG_TRUNC) {
    s->on_recv(s, NULL, len);
    return;
  }
  int gso = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c))
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) memcpy(&gso, CMSG_DATA(c), sizeof gso);
  if (gso <= 0 || (size_t)gso >= len) {
    s->on_recv(s, buf, len);
    return;
  }
  for (size_t off = 0; off < len && !s->closing; off += (size_t)gso)
    s->on_recv(s, buf + off, len - off < (size_t)gso ? len - off : (size_t)gso);
}

static void sock_readable(uv_poll_t *handle, int status, int events);

/* sock_readable() gets the poll handle and casts it to its socket. */
_Static_assert(offsetof(struct s5_udp_sock, poll) == 0, "struct s5_udp_sock: poll must be its first member");

/* POLLERR (an ICMP error for an earlier send on the connected socket):
 * libuv has stopped the handle. The error is taken (SO_ERROR clears it)
 * and reported, and the socket watched again. Returns 0 to read on, -1
 * when the socket is gone. */
static int sock_error(struct s5_udp_sock *s) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err != 0) s->on_error(s, -err);
  if (s->closing) return -1;
  int r = uv_poll_start(&s->poll, UV_READABLE, sock_readable);
  if (r < 0) {
    s5_warn("u%llu relay socket: watching it again: %s; replies are lost", (unsigned long long)s->id,
            uv_strerror(r));
    return -1;
  }
  return 0;
}

static void sock_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  struct s5_udp_sock *s = (struct s5_udp_sock *)handle; /* poll is the first member (asserted below) */
  struct s5_udp_io *io = s->io;
  if (status < 0 && sock_error(s) < 0) return;
  unsigned batch = io->batch ? S5_UDPIO_RECV_BATCH : 1;
  for (int round = 0; round < S5_UDPIO_RECV_ROUNDS && !s->closing; round++) {
    for (unsigned k = 0; k < batch; k++) {
      struct msghdr *h = &io->rmsg[k].msg_hdr;
      io->riov[k] = (struct iovec){io->slots + (size_t)k * S5_UDPIO_SLOT, S5_UDPIO_SLOT};
      *h = (struct msghdr){.msg_iov = &io->riov[k], .msg_iovlen = 1};
      if (io->batch) {
        h->msg_control = io->rcm[k].buf;
        h->msg_controllen = sizeof io->rcm[k].buf;
      }
    }
    int r = recvmmsg(s->fd, io->rmsg, batch, MSG_DONTWAIT, NULL);
    if (r < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) break;
      s->on_error(s, -err);
      break;
    }
    io->read_turn += (unsigned)r;
    S5_ASSERT((unsigned)r <= batch); /* the ring holds batch slots */
    for (unsigned k = 0; k < (unsigned)r && !s->closing; k++) deliver(io, s, k);
    io->batch_done(io->batch_arg); /* the TUN writer points into the slots, which the next batch reuses */
    if ((unsigned)r < batch) break;
  }
}

/* ---------------------------------------------------------------- moderation */

/* Interrupt moderation, as a network card's rx-usecs. A relay's datagrams
 * each wake the worker: one wake-up, one recvmmsg and one write to the TUN
 * (which delivers to the client and wakes it, in this thread) per datagram
 * or two. When a turn found two or more waiting (they come faster than the
 * worker wakes), it asks the worker to wait udp-coalesce µs right before
 * it would poll again, so that the next wake-up reads several and
 * udp_tun.c writes a flow's run as one GSO packet; it keeps doing so while
 * they keep coming. One datagram at a time (a request and its answer, a
 * game, a call) never waits. The wait blocks this worker's loop after
 * everything of the turn was flushed: its other traffic waits too, at most
 * udp-coalesce (10 ms at most), and only while its relays are that busy. */
uint64_t s5_udp_io_wait_wish(struct s5_udp_io *io) {
  unsigned n = io->read_turn;
  io->read_turn = 0;
  if (n < S5_UDPIO_MODERATE_MIN) return 0;
  return io->w->cfg->session.udp_coalesce;
}

/* ---------------------------------------------------------------- sockets */

int s5_udp_sock_init(struct s5_udp_sock *s, struct s5_udp_io *io, int fd, void *data, uint64_t id) {
  memset(s, 0, sizeof *s);
  s->io = io;
  s->fd = -1;
  s->head = s->tail = -1;
  s->id = id;
  int r = uv_poll_init_socket(&io->w->loop, &s->poll, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  s->poll.data = data;
  s->fd = fd;
  /* GRO: the kernel may hand several datagrams of the relay over in one
   * read (split again in deliver()); where it cannot, nothing changes. */
  int on = 1;
  if (s->io->batch && setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) < 0)
    s5_debug("u%llu relay socket: UDP_GRO: %s (reads stay one datagram each)", (unsigned long long)id,
             strerror(errno));
  return 0;
}

int s5_udp_sock_start(struct s5_udp_sock *s, s5_udp_sock_recv_cb on_recv, s5_udp_sock_err_cb on_error) {
  s->on_recv = on_recv;
  s->on_error = on_error;
  return uv_poll_start(&s->poll, UV_READABLE, sock_readable);
}

void s5_udp_sock_close(struct s5_udp_sock *s, uv_close_cb cb) {
  struct s5_udp_io *io = s->io;
  if (s->closing) return;
  s->closing = 1;
  if (s->pending && io != NULL) { /* its queued datagrams are dropped with it */
    struct s5_udp_sock **link = &io->pend;
    while (*link != NULL && *link != s) link = &(*link)->pend_next;
    if (*link == s) *link = s->pend_next;
    s->pending = 0;
  }
  uv_close((uv_handle_t *)&s->poll, cb);
  /* libuv: the fd may be closed right after uv_close() of its poll handle. */
  if (s->fd >= 0 && close(s->fd) < 0)
    s5_debug("u%llu closing the relay socket: %s", (unsigned long long)s->id, strerror(errno));
  s->fd = -1;
}

/* ---------------------------------------------------------------- worker glue */

/* The state, then the slots and the arena, in one mapping: pages the
 * kernel hands out zeroed and untouched (calloc() in a worker's arena
 * would write every page of the state), and that can be given back. */
#define S5_UDPIO_HEAD (((sizeof(struct s5_udp_io) + 4095) / 4096) * 4096)
#define S5_UDPIO_MAP_LEN (S5_UDPIO_HEAD + S5_UDPIO_BUFS_LEN)

struct s5_udp_io *s5_udp_io_start(struct s5_wctx *w, void (*batch_done)(void *arg), void *arg) {
  void *m = mmap(NULL, S5_UDPIO_MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    s5_error("UDP: no memory for the relay buffers: %s", strerror(errno));
    return NULL;
  }
  struct s5_udp_io *io = m;
  io->w = w;
  io->batch_done = batch_done;
  io->batch_arg = arg;
  io->slots = (uint8_t *)m + S5_UDPIO_HEAD;
  io->arena = io->slots + S5_UDPIO_SLOTS_LEN;
  io->batch = !s5_env_flag("S5TUND_NO_UDP_OFFLOAD");
  if (!io->batch)
    s5_info("UDP: batching and offloads disabled by S5TUND_NO_UDP_OFFLOAD (one datagram per system call)");
  return io;
}

void s5_udp_io_release(struct s5_udp_io *io) {
  if (io == NULL) return;
  /* Between turns nothing points into the slots (the TUN writer is
   * flushed after every batch); the arena is empty unless a timer of this
   * turn queued a datagram, sent at its end: then it stays. */
  size_t len = io->nents == 0 ? S5_UDPIO_BUFS_LEN : S5_UDPIO_SLOTS_LEN;
  if (madvise(io->slots, len, MADV_DONTNEED) != 0)
    s5_warn("UDP: giving back the relay buffers' pages: %s", strerror(errno));
}

/* Every socket was closed before (their queues with them). */
void s5_udp_io_stop(struct s5_udp_io *io) {
  if (io == NULL) return;
  S5_ASSERT(io->pend == NULL);
  if (munmap(io, S5_UDPIO_MAP_LEN) != 0) s5_warn("UDP: unmapping the relay buffers: %s", strerror(errno));
}
