/* SPDX-License-Identifier: MIT */
/* threads/recovery/flowreset.c with a datagram socket pair standing in for a TUN
 * queue: a dead worker's flows are taken and its table emptied, each flow
 * gets a RST then an ACK per round (three rounds, the second's sequence
 * number 2^31 away), a 4-tuple live on another worker or on the replacement
 * is never probed, nothing is written while no worker serves, and with
 * offloads every segment follows a zero virtio header. */
#include <linux/virtio_net.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "threads/recovery/flowreset.h"
#include "threads/recovery/flowprobe.h"

static int serving[2]; /* per queue: its fd, or -1 */

static int fd_of(void *arg, unsigned queue) {
  (void)arg;
  return serving[queue];
}

static struct s5_flow flow(uint16_t port) {
  struct s5_flow f;
  memset(&f, 0, sizeof f);
  memcpy(f.client, "\x0a\xc8\x00\x01", 4);
  memcpy(f.remote, "\x0a\xc9\x00\x01", 4);
  f.client_port = port;
  f.remote_port = 7000;
  return f;
}

struct seg {
  uint16_t port;
  uint32_t seq;
  uint8_t flags;
};

/* Reads what was written, without waiting: the segments in order. */
static int drain(int fd, size_t off, struct seg *out, int max) {
  int n = 0;
  uint8_t buf[256];
  ssize_t len;
  while ((len = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
    CHECK((size_t)len == off + 40, "segment length %zd", len);
    for (size_t i = 0; i < off; i++) CHECK(buf[i] == 0, "virtio header byte %zu", i);
    const uint8_t *tcp = buf + off + 20;
    if (n < max)
      out[n] = (struct seg){(uint16_t)(tcp[2] << 8 | tcp[3]),
                            (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7],
                            tcp[13]};
    n++;
  }
  return n;
}

static void wait_due(struct s5_flowreset *r) {
  long ms = s5_flowreset_next_in(r);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  s5_flowreset_due(r);
}

static void run(int offload) {
  static struct s5_config cfg;
  cfg.queues = 2;
  cfg.tun.offload = offload;
  size_t off = offload ? sizeof(struct virtio_net_hdr) : 0;
  struct s5_stats_area *stats = s5_stats_create(2);
  int sp[2];
  CHECK(stats != NULL && socketpair(AF_UNIX, SOCK_DGRAM, 0, sp) == 0, "set-up");
  serving[0] = serving[1] = -1;
  struct s5_flowreset *r = s5_flowreset_create(&cfg, stats, fd_of, NULL);
  CHECK(r != NULL, "create");
  struct s5_flowq *q0 = s5_flowreset_table(r, 0), *q1 = s5_flowreset_table(r, 1);
  struct s5_flow a = flow(1), b = flow(2), c = flow(3);
  s5_flowtab_add(q0, &a);
  uint32_t bref = s5_flowtab_add(q0, &b);
  s5_flowtab_add(q0, &c);
  s5_flowtab_remove(q0, bref); /* ended: not to be reset */
  s5_flowtab_add(q0, &b);
  s5_flowtab_add(q1, &c); /* the same 4-tuple, live on queue 1 */

  /* Queue 0 dies while no worker serves: nothing yet. */
  s5_flowreset_worker_died(r, 0);
  CHECK(s5_flowtab_top(q0) == 0, "the dead worker's table is emptied");
  CHECK(stats->q[0].tcp_reset_dead_worker == 3, "counted %llu",
        (unsigned long long)stats->q[0].tcp_reset_dead_worker);
  struct seg s[16];
  CHECK(drain(sp[1], off, s, 16) == 0, "nothing written while no worker serves");
  long in = s5_flowreset_next_in(r);
  CHECK(in >= 0 && in <= 50, "looks again soon: %ld ms", in);

  /* Queue 1 serves: round 1 through it; c is live there, so a and b only. */
  serving[1] = sp[0];
  wait_due(r);
  int n = drain(sp[1], off, s, 16);
  CHECK(n == 4, "round 1: %d segments", n);
  uint32_t seq = s[0].seq;
  for (int i = 0; i < n && i < 4; i++) {
    CHECK(s[i].flags == (i % 2 == 0 ? S5_TCP_RST : S5_TCP_ACK), "segment %d flags %02x", i, s[i].flags);
    CHECK(s[i].port == (i < 2 ? 1 : 2), "segment %d to port %u", i, s[i].port);
    CHECK(s[i].seq == seq, "segment %d seq", i);
  }

  /* The replacement took a's 4-tuple for a new connection: never probed. */
  s5_flowtab_add(q0, &a);
  wait_due(r);
  n = drain(sp[1], off, s, 16);
  CHECK(n == 2 && s[0].port == 2 && s[1].port == 2, "round 2: %d segments, b only", n);
  CHECK(n < 1 || s[0].seq == seq + 0x80000000u, "round 2: seq moved by 2^31");
  wait_due(r);
  n = drain(sp[1], off, s, 16);
  CHECK(n == 2 && s[0].port == 2 && s[0].seq == seq, "round 3: %d segments, b, the first seq", n);
  CHECK(s5_flowreset_next_in(r) == -1, "three rounds, then nothing pending");

  /* The replacement dies with no flows but a: one more death, a alone. */
  s5_flowreset_worker_died(r, 0);
  n = drain(sp[1], off, s, 16);
  CHECK(n == 2 && s[0].port == 1, "the next death: its own flow only (%d segments)", n);
  CHECK(stats->q[0].tcp_reset_dead_worker == 4, "counted %llu",
        (unsigned long long)stats->q[0].tcp_reset_dead_worker);
  s5_flowreset_free(r);
  close(sp[0]);
  close(sp[1]);
}

int main(void) {
  run(0);
  run(1);
  return check_done();
}
