/* SPDX-License-Identifier: MIT */
/* The UDP socket of an association to the proxy's relay, batched.
 *
 * Why not libuv's uv_udp: it sends and receives one datagram per system
 * call and has no way to pass UDP_SEGMENT. At 1400-byte datagrams that is
 * a syscall (and a SOCKS5 header parse) per 1.4 KB each way, ten times
 * what the TCP path spends per byte. Here the socket is watched with a
 * uv_poll_t, as the TUN queue is, and:
 *   - datagrams to the relay are copied into a per-worker arena (bounded:
 *     when it is full it is sent at once) and sent once per loop turn (the
 *     worker's end-of-turn hook calls s5_udp_io_flush()), with one
 *     sendmmsg() per socket; a run of equal-size
 *     datagrams (the last may be shorter) goes as one UDP_SEGMENT (GSO)
 *     message, which the kernel cuts back into the same datagrams;
 *   - datagrams from the relay are read with recvmmsg() in bounded
 *     batches until EAGAIN, into a per-worker ring of buffers; with UDP_GRO
 *     a coalesced read is split again by its segment size. After each
 *     batch the owner's batch_done callback runs (udp.c: the TUN writer's
 *     flush, which points into the ring).
 * No allocation per datagram. S5TUND_NO_UDP_OFFLOAD=1 in the environment
 * forces the plain path (one datagram per system call each way, no GSO or
 * GRO), to test it and to rule the batching out when something goes wrong.
 * One instance per worker thread, like lwIP's state. */
#ifndef S5_CORE_UDP_IO_H
#define S5_CORE_UDP_IO_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct s5_wctx;
struct pbuf;
struct s5_udp_sock;

/* A datagram read from the socket; buf is valid until the callback
 * returns; it may be changed in place (Shadowsocks opens there). buf NULL: the datagram was larger than the buffer (len bytes). */
typedef void (*s5_udp_sock_recv_cb)(struct s5_udp_sock *s, uint8_t *buf, size_t len);
/* A read failed (on a connected socket: an ICMP error for an earlier
 * send); err is a negative errno (= a libuv error code). */
typedef void (*s5_udp_sock_err_cb)(struct s5_udp_sock *s, int err);

struct s5_udp_sock {
  uv_poll_t poll;       /* poll.data: the owner's (udp.c: the association) */
  struct s5_udp_io *io; /* the worker's (s5_udp_io_start) */
  int fd;
  uint64_t id; /* the owner's id, for logs */
  s5_udp_sock_recv_cb on_recv;
  s5_udp_sock_err_cb on_error;
  struct s5_udp_sock *pend_next; /* in the worker's list of sockets with queued datagrams */
  int head, tail;                /* queued datagrams (arena entries), -1: none */
  unsigned pending : 1, closing : 1, no_gso : 1;
};

/* Per worker: call from s5_udp_start / s5_udp_stop. batch_done(arg) runs
 * after every batch of reads (before the ring is reused). Returns the
 * worker's instance, or NULL (logged). stop frees it (NULL: none). */
struct s5_udp_io *s5_udp_io_start(struct s5_wctx *w, void (*batch_done)(void *arg), void *arg);
void s5_udp_io_stop(struct s5_udp_io *io);
/* The worker went idle: the receive slots' and send arena's pages back to
 * the kernel (they come back, zeroed, with the next datagrams). */
void s5_udp_io_release(struct s5_udp_io *io);

/* 1 when batching and offloads are on (S5TUND_NO_UDP_OFFLOAD not set). */
int s5_udp_io_batching(const struct s5_udp_io *io);

/* Sends everything queued (once per loop turn, from the worker's
 * end-of-turn hook, through s5_udp_end_turn). */
void s5_udp_io_flush(struct s5_udp_io *io);

/* Interrupt moderation, as a network card's rx-usecs: how long (µs) the
 * loop should wait before it polls again, 0 for not at all; the worker
 * decides (core/worker/worker.c). Ends the turn's count of datagrams read. */
uint64_t s5_udp_io_wait_wish(struct s5_udp_io *io);

/* Takes over fd (a UDP socket, non-blocking) for s; data goes to
 * s->poll.data. Returns 0 or a negative libuv error (fd then closed). */
int s5_udp_sock_init(struct s5_udp_sock *s, struct s5_udp_io *io, int fd, void *data, uint64_t id);

/* Starts reading (after connect()). Returns 0 or a negative libuv error. */
int s5_udp_sock_start(struct s5_udp_sock *s, s5_udp_sock_recv_cb on_recv, s5_udp_sock_err_cb on_error);

/* Drops what is queued for s, closes the handle (cb as for uv_close) and the fd. */
void s5_udp_sock_close(struct s5_udp_sock *s, uv_close_cb cb);

/* Queues hdr (hlen bytes) followed by the chain p (NULL: none) as one
 * datagram (sent now on the plain path). Counted in bytes_to_proxy when sent, drop_udp
 * when lost (full socket buffer, an ICMP error). */
void s5_udp_sock_send(struct s5_udp_sock *s, const uint8_t *hdr, size_t hlen, const struct pbuf *p);

#endif
