/* SPDX-License-Identifier: MIT */
/* Process mode: resetting the TCP clients of a worker that died.
 *
 * A worker killed with SIGKILL says nothing to its clients: the kernel
 * closes its proxy connections, and a client waiting for data would wait
 * forever. A RST is what it must get, and a RST is accepted only with
 * exactly the sequence number the client expects next (RFC 793, RFC 5961
 * 3.2: anything else in the window draws a challenge ACK, outside it is
 * dropped), which only the dead worker's lwIP knew.
 *
 * So the client is made to say it. For each flow the dead worker had (its
 * queue's shared table, core/shared/flowtab.h) the supervisor writes into the TUN
 * a bare ACK from the remote to the client whose sequence number is outside
 * the client's window. The client's TCP answers an unacceptable segment
 * with an ACK showing its expected sequence number (RFC 793 p.69; Linux:
 * tcp_send_dupack, at most one per socket per tcp_invalid_ratelimit, 500
 * ms). That ACK comes back through the TUN to a live worker (the kernel
 * steers a flow to the queue that last wrote a packet of it: the one the
 * probe went through), whose lwIP has no pcb for it and answers as for any
 * segment of an unknown connection: a RST with seq = the ACK's ack number,
 * the number the client accepts. ECONNRESET, whether the client was idle,
 * receiving or sending.
 *
 * The kernel learns a flow's queue from the packets written into it, but
 * only after its stack has processed the packet (tun_get_user: the flow
 * update follows netif_receive_skb), so the ACK a probe draws at once would
 * still go to the dead worker's queue, answered only when the replacement
 * serves. So each probe is preceded by a segment the client drops without
 * a word, a RST outside its window (RFC 5961 3.2), which moves the flow to
 * the queue written through.
 *
 * Rounds: a probe or its answer may be lost or rate limited, and a
 * sequence number may happen to fall inside a window. Three rounds, 600 ms
 * apart (past the rate limit), the second with the sequence number moved by
 * 2^31 (a window is below 2^30: one of the two is outside it). A client
 * already reset answers a later probe with a RST of its own, which lwIP
 * ignores. Before every round, a 4-tuple that is live in any worker's table
 * (a client that reused its port for a new connection) is dropped from the
 * list, so a flow of a live worker is never probed.
 *
 * The probes go through the queue fd of a serving worker, another queue's
 * preferably (answered at once); with one queue, the replacement's once it
 * serves. The dead queue's table is emptied before its replacement starts:
 * a restart loop never resets the same flows twice, and flows opened on the
 * new worker are not in the list. */
#include "threads/recovery/flowreset.h"

#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "threads/recovery/flowprobe.h"

#define S5_RESET_ROUNDS 3
#define S5_RESET_ROUND_MS 600 /* above Linux's 500 ms per-socket limit on such ACKs */
#define S5_RESET_WAIT_MS 50   /* no worker serves yet: look again */

struct pending {
  struct s5_flow *flows; /* sorted by key; used = still to probe */
  size_t n;
  unsigned round; /* rounds sent */
  uint32_t seq;
  uint64_t due_ms; /* 0: nothing pending */
};

struct s5_flowreset {
  const struct s5_config *cfg;
  struct s5_stats_area *stats;
  struct s5_flowtab *tab;
  s5_serving_fd_fn fd_of;
  void *arg;
  uint64_t *untracked_seen; /* per queue: tcp_untracked at the last death */
  struct pending *p;        /* per queue */
};

struct s5_flowreset *s5_flowreset_create(const struct s5_config *cfg, struct s5_stats_area *stats,
                                         s5_serving_fd_fn fd_of, void *arg) {
  unsigned slots = cfg->session.max_sessions;
  if (slots == 0) slots = S5_FLOWTAB_DEFAULT;
  if (slots > S5_FLOWTAB_MAX) slots = S5_FLOWTAB_MAX;
  struct s5_flowreset *r = calloc(1, sizeof *r);
  if (r != NULL) {
    r->p = calloc(cfg->queues, sizeof *r->p);
    r->untracked_seen = calloc(cfg->queues, sizeof *r->untracked_seen);
  }
  if (r == NULL || r->p == NULL || r->untracked_seen == NULL) {
    s5_error("out of memory");
    s5_flowreset_free(r);
    return NULL;
  }
  r->tab = s5_flowtab_create(cfg->queues, slots);
  if (r->tab == NULL) {
    s5_error("mapping the flow tables (%u queues x %u flows): %s", cfg->queues, slots, strerror(errno));
    s5_flowreset_free(r);
    return NULL;
  }
  r->cfg = cfg;
  r->stats = stats;
  r->fd_of = fd_of;
  r->arg = arg;
  return r;
}

void s5_flowreset_free(struct s5_flowreset *r) {
  if (r == NULL) return;
  if (r->p != NULL)
    for (unsigned i = 0; i < r->cfg->queues; i++) free(r->p[i].flows);
  s5_flowtab_free(r->tab);
  free(r->p);
  free(r->untracked_seen);
  free(r);
}

struct s5_flowq *s5_flowreset_table(struct s5_flowreset *r, unsigned queue) {
  return r != NULL ? s5_flowtab_queue(r->tab, queue) : NULL;
}

static void pending_clear(struct pending *p) {
  free(p->flows);
  memset(p, 0, sizeof *p);
}

/* A fd to write the probes of `queue`'s flows into: another serving
 * worker's queue first, the queue's own once its replacement serves. */
static int probe_fd(const struct s5_flowreset *r, unsigned queue) {
  for (unsigned i = 0; i < r->cfg->queues; i++) {
    int fd = i != queue ? r->fd_of(r->arg, i) : -1;
    if (fd >= 0) return fd;
  }
  return r->fd_of(r->arg, queue);
}

static void unmark_live(const struct s5_flow *f, void *arg) {
  struct pending *p = arg;
  struct s5_flow *hit = bsearch(f, p->flows, p->n, sizeof *p->flows, s5_flow_cmp);
  if (hit != NULL) hit->used = 0;
}

/* The segment after the virtio header (off bytes, zero) in pkt. 0, or -1
 * with *err set. */
static int probe_write(int fd, const struct s5_flow *f, uint32_t seq, uint8_t flags, uint8_t *pkt, size_t off,
                       size_t cap, int *err) {
  size_t len = off + s5_flow_probe(f, seq, ~seq, flags, pkt + off, cap - off);
  if (write(fd, pkt, len) == (ssize_t)len) return 0;
  *err = errno;
  return -1;
}

/* Returns how many probes were written. */
static size_t send_round(struct s5_flowreset *r, unsigned queue) {
  struct pending *p = &r->p[queue];
  int fd = probe_fd(r, queue);
  if (fd < 0) {
    p->due_ms = s5_now_ms() + S5_RESET_WAIT_MS;
    return 0;
  }
  for (unsigned i = 0; i < r->cfg->queues; i++) s5_flowtab_each(s5_flowtab_queue(r->tab, i), unmark_live, p);
  uint8_t pkt[sizeof(struct virtio_net_hdr) + 60];
  size_t off = r->cfg->tun.offload ? sizeof(struct virtio_net_hdr) : 0;
  memset(pkt, 0, off); /* no offload asked for: the checksums are filled */
  uint32_t seq = p->seq + p->round * 0x80000000u;
  size_t sent = 0, failed = 0, todo = 0;
  int err = 0;
  for (size_t i = 0; i < p->n; i++) {
    if (!p->flows[i].used) continue;
    todo++;
    if (probe_write(fd, &p->flows[i], seq, S5_TCP_RST, pkt, off, sizeof pkt, &err) == 0 &&
        probe_write(fd, &p->flows[i], seq, S5_TCP_ACK, pkt, off, sizeof pkt, &err) == 0)
      sent++;
    else failed++;
  }
  if (failed > 0)
    s5_warn("worker %u: %zu of %zu reset probes could not be written to the TUN device: %s", queue, failed,
            todo, strerror(err));
  if (++p->round >= S5_RESET_ROUNDS || todo == 0) pending_clear(p);
  else p->due_ms = s5_now_ms() + S5_RESET_ROUND_MS;
  return sent;
}

/* Appends the dead worker's flows to what is pending for its queue (an
 * earlier death's rounds may still run). Returns how many it took. */
static size_t take_flows(struct s5_flowreset *r, unsigned queue) {
  struct s5_flowq *q = s5_flowtab_queue(r->tab, queue);
  struct pending *p = &r->p[queue];
  size_t top = s5_flowtab_top(q), got = 0;
  if (top == 0) return 0;
  struct s5_flow *more = realloc(p->flows, (p->n + top) * sizeof *more);
  if (more == NULL) {
    s5_error("worker %u: out of memory for the %zu flows to reset", queue, top);
    s5_flowtab_take(q, NULL, 0); /* still emptied for the replacement */
    return 0;
  }
  p->flows = more;
  got = s5_flowtab_take(q, p->flows + p->n, top);
  if (got > top) got = top;
  for (size_t i = p->n; i < p->n + got; i++) p->flows[i].used = 1;
  p->n += got;
  qsort(p->flows, p->n, sizeof *p->flows, s5_flow_cmp);
  return got;
}

void s5_flowreset_worker_died(struct s5_flowreset *r, unsigned queue) {
  if (r == NULL) return;
  struct s5_queue_stats *st = &r->stats->q[queue];
  size_t n = take_flows(r, queue);
  uint64_t untracked = S5_STAT_GET(st, tcp_untracked) - r->untracked_seen[queue];
  r->untracked_seen[queue] = S5_STAT_GET(st, tcp_untracked);
  S5_STAT_ADD(st, tcp_reset_dead_worker, n);
  if (untracked > 0)
    s5_warn(
      "worker %u: resetting %zu TCP clients of the dead worker; %llu more were not "
      "tracked (its flow table was full) and are not told",
      queue, n, (unsigned long long)untracked);
  else s5_info("worker %u: resetting %zu TCP clients of the dead worker", queue, n);
  struct pending *p = &r->p[queue];
  if (n == 0) return; /* rounds for an earlier death may still be due: they go on */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  p->seq = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)ts.tv_sec; /* any number will do */
  p->round = 0;
  send_round(r, queue);
}

long s5_flowreset_next_in(const struct s5_flowreset *r) {
  if (r == NULL) return -1;
  long best = -1;
  uint64_t now = s5_now_ms();
  for (unsigned i = 0; i < r->cfg->queues; i++) {
    if (r->p[i].due_ms == 0) continue;
    long in = r->p[i].due_ms > now ? (long)(r->p[i].due_ms - now) : 0;
    if (best < 0 || in < best) best = in;
  }
  return best;
}

void s5_flowreset_due(struct s5_flowreset *r) {
  if (r == NULL) return;
  uint64_t now = s5_now_ms();
  for (unsigned i = 0; i < r->cfg->queues; i++)
    if (r->p[i].due_ms != 0 && r->p[i].due_ms <= now) send_round(r, i);
}
