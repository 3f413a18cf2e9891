/* SPDX-License-Identifier: MIT */
/* Unit test of the relay sockets' send batching (core/udp/udp_io.c): the
 * real code with a real event loop and real UDP sockets on 127.0.0.1.
 * Datagrams queued with s5_udp_sock_send() leave at the loop's turn as
 * sendmmsg() messages: a run of equal sizes (a shorter one ends it) is one
 * message with UDP_SEGMENT, at most 64 datagrams and 65,000 bytes, any
 * other datagram a message of its own.
 *
 * What the messages were is read at the receiver: with UDP_GRO on, the
 * kernel hands a GSO message over whole (its length, and its segment size
 * in a UDP_GRO control message), and a plain datagram as itself. Then the
 * same queue again to a receiver without UDP_GRO: every datagram as it was
 * queued (size, bytes, order). Then with S5TUND_NO_UDP_OFFLOAD=1: no GSO
 * message at all. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx/wctx.h"
#include "shared/stats.h"
#include "udp/udp_io.h"

#include "lwip/init.h"
#include "lwip/pbuf.h"

#include "check.h"

/* UDP_SEGMENT and UDP_GRO come from <netinet/udp.h> (glibc 2.31 and later),
 * the kernel's numbers as the system states them, not the product's copy. */

#define HDR 10     /* a SOCKS5 UDP header's worth, queued before each payload */
#define MAXD 256   /* datagrams per round */
#define MAXMSG 256 /* messages per round */

struct got {
  size_t len;
  unsigned gso; /* UDP_GRO's segment size; 0: a plain datagram */
};

static struct s5_wctx w;
static struct s5_udp_io *io; /* the worker's relay sockets */

/* After a batch of reads udp.c flushes its TUN writer; nothing is read here. */
static void batch_done(void *arg) { (void)arg; }
static struct s5_stats_area *area;
static int rx = -1; /* the receiver: the relay's place */

/* The byte j of datagram k (its header included). */
static uint8_t byte_of(unsigned k, size_t j) { return (uint8_t)(k * 31 + j * 7 + 1); }

/* Queues datagrams of the given sizes (header included) on s, then lets
 * the loop turn, which sends them. */
static void send_round(struct s5_udp_sock *s, const size_t *sizes, unsigned n) {
  for (unsigned k = 0; k < n; k++) {
    uint8_t hdr[HDR];
    struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)(sizes[k] - HDR), PBUF_RAM);
    CHECK(p != NULL, "pbuf_alloc(%zu)", sizes[k] - HDR);
    if (p == NULL) return;
    for (size_t j = 0; j < HDR; j++) hdr[j] = byte_of(k, j);
    for (size_t j = HDR; j < sizes[k]; j++) ((uint8_t *)p->payload)[j - HDR] = byte_of(k, j);
    s5_udp_sock_send(s, hdr, HDR, p);
    pbuf_free(p);
  }
  s5_udp_io_flush(io); /* what the worker's end of the loop turn does */
  uv_run(&w.loop, UV_RUN_NOWAIT);
}

/* Reads what arrived: up to max reads, waiting (bounded) for the first and
 * for each until want bytes came. bufs: the datagrams' bytes, in order. */
static unsigned receive(struct got *got, unsigned max, size_t want, uint8_t *bytes, size_t cap) {
  unsigned n = 0;
  size_t total = 0;
  static uint8_t buf[70000];

  while (n < max && total < want) {
    struct pollfd pfd = {rx, POLLIN, 0};
    if (poll(&pfd, 1, 5000) != 1) break; /* only a bound: nothing more came */
    char ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t r = recvmsg(rx, &h, MSG_DONTWAIT);
    if (r < 0) {
      CHECK(errno == EAGAIN, "recvmsg: %s", strerror(errno));
      continue;
    }
    got[n].len = (size_t)r;
    got[n].gso = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c != NULL; c = CMSG_NXTHDR(&h, c))
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int sz;
        memcpy(&sz, CMSG_DATA(c), sizeof sz);
        got[n].gso = (unsigned)sz;
      }
    if (bytes != NULL && total + (size_t)r <= cap) memcpy(bytes + total, buf, (size_t)r);
    total += (size_t)r;
    n++;
  }
  return n;
}

static void set_gro(int on) {
  CHECK(setsockopt(rx, SOL_UDP, UDP_GRO, &on, sizeof on) == 0, "UDP_GRO %d on the receiver: %s", on,
        strerror(errno));
}

/* A relay socket connected to the receiver, on the worker's batching. */
static int open_sock(struct s5_udp_sock *s) {
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || getsockname(rx, (struct sockaddr *)&a, &alen) < 0 ||
      connect(fd, (struct sockaddr *)&a, alen) < 0) {
    CHECK(0, "relay socket: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  int r = s5_udp_sock_init(s, io, fd, NULL, 1);
  CHECK(r == 0, "s5_udp_sock_init: %s", r == 0 ? "" : uv_strerror(r)); /* uv_strerror(0) allocates */
  return r;
}

/* Closed, and the loop lets go of its handle (s lives on the caller's stack). */
static void close_sock(struct s5_udp_sock *s) {
  s5_udp_sock_close(s, NULL);
  uv_run(&w.loop, UV_RUN_NOWAIT);
}

struct msg {
  unsigned segs;
  size_t seg, total;
};

/* The messages the queue must become, from the rules in udp_io.c's comment. */
static unsigned expected(const size_t *sizes, unsigned n, struct msg *m) {
  unsigned nm = 0;
  for (unsigned k = 0; k < n;) {
    struct msg x = {0, sizes[k], 0};
    while (k < n) {
      if (x.segs > 0 && (sizes[k] > x.seg || x.segs == 64 || x.total + sizes[k] > 65000)) break;
      x.segs++;
      x.total += sizes[k];
      k++;
      if (sizes[k - 1] < x.seg) break;
    }
    m[nm++] = x;
  }
  return nm;
}

/* One queue, three ways: the messages seen with GRO, the datagrams seen
 * without, and the counter. */
static void check_queue(const char *what, const size_t *sizes, unsigned n) {
  struct s5_udp_sock s;
  struct msg want[MAXMSG];
  static struct got got[MAXMSG];
  static uint8_t bytes[MAXD * 1500];
  unsigned nw = expected(sizes, n, want), ng;
  size_t total = 0;
  uint64_t before = area->q[0].bytes_to_proxy;

  for (unsigned k = 0; k < n; k++) total += sizes[k];
  if (open_sock(&s) < 0) return;
  set_gro(1);
  send_round(&s, sizes, n);
  ng = receive(got, MAXMSG, total, NULL, 0);
  CHECK(ng == nw, "%s: %u messages, want %u", what, ng, nw);
  for (unsigned i = 0; i < ng && i < nw; i++) {
    unsigned gso = want[i].segs > 1 ? (unsigned)want[i].seg : 0;
    CHECK(got[i].len == want[i].total && got[i].gso == gso,
          "%s: message %u: %zu bytes in segments of %u, want %zu in segments of %u (%u datagrams)", what, i,
          got[i].len, got[i].gso, want[i].total, gso, want[i].segs);
  }
  CHECK(area->q[0].bytes_to_proxy - before == total, "%s: bytes_to_proxy moved by %llu, want %zu", what,
        (unsigned long long)(area->q[0].bytes_to_proxy - before), total);
  set_gro(0);
  send_round(&s, sizes, n);
  ng = receive(got, MAXMSG, total, bytes, sizeof bytes);
  CHECK(ng == n, "%s, without GRO: %u datagrams, want %u", what, ng, n);
  size_t off = 0;
  for (unsigned k = 0; k < ng && k < n; k++) {
    CHECK(got[k].len == sizes[k], "%s: datagram %u is %zu bytes, want %zu", what, k, got[k].len, sizes[k]);
    int same = got[k].len == sizes[k];
    for (size_t j = 0; same && j < sizes[k]; j++) same = bytes[off + j] == byte_of(k, j);
    CHECK(same, "%s: datagram %u: wrong bytes (or order)", what, k);
    off += got[k].len;
  }
  close_sock(&s);
}

static void test_batching(void) {
  static size_t sizes[MAXD];
  unsigned n = 0;

  /* A run ended by a shorter one; a run ended by a longer one, which goes alone. */
  for (int i = 0; i < 5; i++) sizes[n++] = 1010;
  sizes[n++] = 610;
  for (int i = 0; i < 3; i++) sizes[n++] = 1010;
  sizes[n++] = 1210;
  sizes[n++] = 500;
  sizes[n++] = 500;
  sizes[n++] = 300;
  sizes[n++] = 500;
  check_queue("mixed runs", sizes, n);
  /* 64 datagrams at most per message. */
  n = 0;
  for (int i = 0; i < 70; i++) sizes[n++] = 110;
  check_queue("70 small", sizes, n);
  /* 65,000 bytes at most per message. */
  n = 0;
  for (int i = 0; i < 50; i++) sizes[n++] = 1410;
  check_queue("50 of 1410 bytes", sizes, n);
  /* One datagram: no UDP_SEGMENT. */
  sizes[0] = 1400;
  check_queue("one", sizes, 1);
}

/* S5TUND_NO_UDP_OFFLOAD=1: every datagram sent on its own, no GSO. */
static void test_plain(void) {
  struct s5_udp_sock s;
  size_t sizes[8];
  static struct got got[16];

  s5_udp_io_stop(io);
  uv_run(&w.loop, UV_RUN_DEFAULT); /* its handles close */
  setenv("S5TUND_NO_UDP_OFFLOAD", "1", 1);
  io = s5_udp_io_start(&w, batch_done, NULL);
  CHECK(io != NULL, "s5_udp_io_start without offloads");
  if (io == NULL) return;
  CHECK(!s5_udp_io_batching(io), "batching off with S5TUND_NO_UDP_OFFLOAD=1");
  if (open_sock(&s) < 0) return;
  set_gro(1);
  for (int i = 0; i < 8; i++) sizes[i] = 1010;
  send_round(&s, sizes, 8);
  unsigned ng = receive(got, 16, 8 * 1010, NULL, 0);
  CHECK(ng == 8, "plain path: %u reads, want 8", ng);
  for (unsigned i = 0; i < ng; i++)
    CHECK(got[i].len == 1010 && got[i].gso == 0, "plain path: read %u: %zu bytes, segments of %u", i,
          got[i].len, got[i].gso);
  close_sock(&s);
  unsetenv("S5TUND_NO_UDP_OFFLOAD");
}

int main(void) {
  struct s5_config cfg;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int big = 4 << 20;

  lwip_init();
  s5_config_defaults(&cfg);
  area = s5_stats_create(1);
  rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (area == NULL || rx < 0 || bind(rx, (struct sockaddr *)&a, sizeof a) < 0 ||
      setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big) < 0) {
    CHECK(0, "set-up: %s", strerror(errno));
    return check_done();
  }
  CHECK(s5_wctx_init(&w, &cfg, 0, &area->q[0]) == 0, "s5_wctx_init");
  unsetenv("S5TUND_NO_UDP_OFFLOAD");
  io = s5_udp_io_start(&w, batch_done, NULL);
  CHECK(io != NULL, "s5_udp_io_start");
  if (io == NULL) return check_done();
  CHECK(s5_udp_io_batching(io), "batching on");
  test_batching();
  test_plain();
  s5_udp_io_stop(io);
  uv_run(&w.loop, UV_RUN_DEFAULT);
  s5_wctx_close(&w);
  close(rx);
  return check_done();
}
