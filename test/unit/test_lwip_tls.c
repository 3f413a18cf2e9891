/* SPDX-License-Identifier: MIT */
/* Two lwIP instances in two threads, fed hand-built packets.
 *
 * Proves patch 0001 (per-thread instances): each thread runs lwip_init(),
 * adds its own NETIF_FLAG_ANY_DEST netif and its own listeners, and must
 * afterwards see only its own connections, listeners and default netif.
 * Built a second time against lwip_notls (LWIP_THREAD_LOCAL empty), where
 * the very same checks must fail: ctest expects that twin to fail.
 *
 * Proves patch 0002 (any destination, deferred SYN-ACK): connections to
 * arbitrary IPv4/IPv6 addresses and ports, SYN-ACK held by the syn callback
 * until tcp_output() (not released by a retransmitted SYN or the timers),
 * refusal by tcp_abort() or by the callback's verdict (RST acknowledging the
 * SYN), the SYN_RCVD timeout of an undecided connection, precedence of a
 * normally bound listener.
 *
 * Determinism: the checked steps run in turns (thread 0, then thread 1,
 * separated by a barrier) while both instances are alive, so a shared stack
 * shows up as failed checks, never as a data race. Only when every check
 * passed do both threads run a load phase truly concurrently.
 *
 * Output: one line per failed check, then "N passed, M failed". */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h" /* tcp_active_pcbs, tcp_listen_pcbs, tcp_tmr() */
#include "lwip/tcp.h"

#include "check.h"

#define NTHREADS 2
#define LOAD_ROUNDS 2000

/* ---- results ------------------------------------------------------------ */

static pthread_barrier_t barrier;

static __thread int my_id;
static __thread char my_name[16]; /* check_who: "thread N" */

/* ---- captured output (thread-local: whoever calls lwIP gets the packets) */

#define LH_THREAD __thread
#include "lwip_harness.h"

/* ---- packets ------------------------------------------------------------ */

struct seg {
  int v6;
  uint8_t src[16], dst[16];
  uint16_t sport, dport;
  uint32_t seq, ack;
  uint8_t flags;
  int ip_csum_ok, tcp_csum_ok;
};

static int parse(const struct captured *c, struct seg *s) {
  const uint8_t *d = c->data, *t;
  size_t iphl, tcpl;

  memset(s, 0, sizeof *s);
  if (c->len < 40) return 0;
  s->v6 = (d[0] >> 4) == 6;
  if (s->v6) {
    iphl = 40;
    tcpl = get16(d + 4);
    if (d[6] != 6 || c->len < iphl + tcpl || tcpl < 20) return 0;
    memcpy(s->src, d + 8, 16);
    memcpy(s->dst, d + 24, 16);
    s->ip_csum_ok = 1;
  } else {
    if (d[0] != 0x45 || d[9] != 6) return 0;
    iphl = 20;
    tcpl = get16(d + 2) - iphl;
    if (c->len < iphl + tcpl || tcpl < 20) return 0;
    memcpy(s->src, d + 12, 4);
    memcpy(s->dst, d + 16, 4);
    s->ip_csum_ok = fold(sum16(0, d, 20)) == 0;
  }
  t = d + iphl;
  s->sport = get16(t);
  s->dport = get16(t + 2);
  s->seq = get32(t + 4);
  s->ack = get32(t + 8);
  s->flags = t[13];
  s->tcp_csum_ok = fold(sum16(pseudo_sum(s->v6, s->src, s->dst, tcpl), t, tcpl)) == 0;
  return 1;
}

/* ---- one worker: an lwIP instance and what its callbacks saw ------------- */

struct worker;

struct conn {
  struct tcp_pcb *pcb; /* NULL once lwIP reported it gone (err callback) */
  int errs;
  err_t err;
};

struct worker {
  int id;
  struct netif netif;
  int netif_ok;
  struct tcp_pcb *any;   /* tcp_new_any_dest_listener() */
  struct tcp_pcb *bound; /* an ordinary listener on port 8080 */
  err_t verdict;         /* what the syn callback returns next */
  int syn_calls;
  void *syn_arg;
  struct tcp_pcb *syn_pcb;
  int accept_calls, bound_accepts;
  void *accept_arg;
  struct tcp_pcb *accept_pcb;
  struct conn conns[8];
  int nconns;
  struct conn load; /* reused by the load phase */
  int loading;
  struct flow fa, fb, fc, fd, fe, ff;
  uint32_t srv_isn;
};

/* The worker of the calling thread: callbacks record here, whatever arg the
 * (possibly shared) stack hands them, so the checks can compare. */
static __thread struct worker *self;

static void conn_err(void *arg, err_t err) {
  struct conn *c = arg;

  c->errs++;
  c->err = err;
  c->pcb = NULL;
}

/* Tracks a new connection (the load phase reuses one slot). NULL if full. */
static struct conn *new_conn(struct tcp_pcb *pcb) {
  const int max = (int)(sizeof self->conns / sizeof self->conns[0]);
  struct conn *c;

  if (self->loading) c = &self->load;
  else if (self->nconns < max) c = &self->conns[self->nconns++];
  else return NULL;
  memset(c, 0, sizeof *c);
  c->pcb = pcb;
  tcp_arg(pcb, c);
  tcp_err(pcb, conn_err);
  return c;
}

static err_t on_syn(void *arg, struct tcp_pcb *newpcb) {
  self->syn_calls++;
  self->syn_arg = arg;
  self->syn_pcb = newpcb;
  new_conn(newpcb);
  return self->verdict;
}

static err_t on_accept(void *arg, struct tcp_pcb *newpcb, err_t err) {
  (void)err;
  self->accept_calls++;
  self->accept_arg = arg;
  self->accept_pcb = newpcb;
  return ERR_OK;
}

static err_t on_bound_accept(void *arg, struct tcp_pcb *newpcb, err_t err) {
  (void)arg;
  (void)err;
  self->bound_accepts++;
  new_conn(newpcb);
  return ERR_OK;
}

static void feed(struct worker *w, const struct flow *f, uint32_t seq, uint32_t ack, uint8_t flags) {
  feed_flow(&w->netif, f, seq, ack, flags, NULL);
}

static int addr_is(const ip_addr_t *a, int v6, const uint8_t *bytes) {
  if (v6) return IP_IS_V6_VAL(*a) && memcmp(ip_2_ip6(a)->addr, bytes, 16) == 0;
  return IP_IS_V4_VAL(*a) && memcmp(&ip_2_ip4(a)->addr, bytes, 4) == 0;
}

/* The pcb belongs to flow f, seen from our side. */
static void check_pcb(const struct tcp_pcb *pcb, const struct flow *f, const char *what) {
  CHECK(addr_is(&pcb->local_ip, f->v6, f->dst), "%s: local address is not the SYN's destination", what);
  CHECK(pcb->local_port == f->dport, "%s: local port %u, SYN went to %u", what, pcb->local_port, f->dport);
  CHECK(addr_is(&pcb->remote_ip, f->v6, f->src), "%s: remote address is not the client", what);
  CHECK(pcb->remote_port == f->sport, "%s: remote port %u, client used %u", what, pcb->remote_port, f->sport);
}

/* Captured packet i is a reply on flow f with exactly these flags and ack. */
static void check_reply(struct worker *w, int i, const struct flow *f, uint8_t flags, uint32_t ack,
                        const char *what) {
  struct seg s;

  if (i >= cap_n || i >= CAP_MAX) {
    CHECK(0, "%s: no packet #%d captured", what, i);
    return;
  }
  CHECK(cap[i].netif == &w->netif, "%s: sent on another thread's netif", what);
  if (!parse(&cap[i], &s)) {
    CHECK(0, "%s: captured packet is not a TCP segment", what);
    return;
  }
  CHECK(s.v6 == f->v6, "%s: wrong IP version", what);
  CHECK(memcmp(s.src, f->dst, f->v6 ? 16 : 4) == 0, "%s: source address is not the dialled address", what);
  CHECK(memcmp(s.dst, f->src, f->v6 ? 16 : 4) == 0, "%s: not addressed to the client", what);
  CHECK(s.sport == f->dport && s.dport == f->sport, "%s: ports %u->%u, expected %u->%u", what, s.sport,
        s.dport, f->dport, f->sport);
  CHECK(s.flags == flags, "%s: TCP flags 0x%02x, expected 0x%02x", what, s.flags, flags);
  CHECK(s.ack == ack, "%s: ack %u, expected %u", what, s.ack, ack);
  CHECK(s.ip_csum_ok && s.tcp_csum_ok, "%s: bad checksum", what);
}

/* tcp_active_pcbs holds exactly the n pcbs given (any order). */
static void check_active(struct tcp_pcb *const *want, int n, const char *what) {
  struct tcp_pcb *p;
  int count = 0, i, found;

  for (p = tcp_active_pcbs; p != NULL && count < 1000; p = p->next) {
    count++;
    for (found = 0, i = 0; i < n; i++) found |= want[i] == p;
    CHECK(found, "%s: tcp_active_pcbs holds a pcb that is not ours (%p)", what, (void *)p);
  }
  CHECK(count == n, "%s: tcp_active_pcbs holds %d pcbs, expected %d", what, count, n);
}

static void check_listeners(struct worker *w, const char *what) {
  struct tcp_pcb_listen *l;
  int count = 0;

  for (l = tcp_listen_pcbs.listen_pcbs; l != NULL && count < 1000; l = l->next) {
    count++;
    CHECK((struct tcp_pcb *)l == w->any || (struct tcp_pcb *)l == w->bound,
          "%s: tcp_listen_pcbs holds another thread's listener", what);
  }
  CHECK(count == 2, "%s: tcp_listen_pcbs holds %d listeners, expected 2", what, count);
}

/* ---- the steps ---------------------------------------------------------- */

static void set_flow(struct flow *f, int v6, const char *src, const char *dst, uint16_t sport,
                     uint16_t dport) {
  ip_addr_t a;

  memset(f, 0, sizeof *f);
  f->v6 = v6;
  ipaddr_aton(src, &a);
  memcpy(f->src, v6 ? (void *)ip_2_ip6(&a)->addr : (void *)&ip_2_ip4(&a)->addr, v6 ? 16 : 4);
  ipaddr_aton(dst, &a);
  memcpy(f->dst, v6 ? (void *)ip_2_ip6(&a)->addr : (void *)&ip_2_ip4(&a)->addr, v6 ? 16 : 4);
  f->sport = sport;
  f->dport = dport;
}

static void step_setup(struct worker *w) {
  struct tcp_pcb *pcb;

  lwip_init();
  /* A fresh instance has no netif. Checked first: with LWIP_SINGLE_NETIF a
   * second netif_add() fails (or trips an assertion, with S5_LWIP_ASSERT). */
  CHECK(netif_default == NULL, "new instance already has a netif (another thread's)");
  if (netif_default == NULL)
    w->netif_ok = netif_add(&w->netif, NULL, NULL, NULL, w, netif_setup, ip_input) != NULL;
  CHECK(w->netif_ok || netif_default != NULL, "netif_add failed");
  if (w->netif_ok) {
    netif_set_default(&w->netif);
    netif_set_up(&w->netif);
    netif_set_link_up(&w->netif);
  }
  w->any = tcp_new_any_dest_listener();
  CHECK(w->any != NULL, "tcp_new_any_dest_listener failed");
  if (w->any != NULL) {
    tcp_arg(w->any, w);
    tcp_syn(w->any, on_syn);
    tcp_accept(w->any, on_accept);
  }
  pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
  if (pcb != NULL && tcp_bind(pcb, IP_ANY_TYPE, 8080) == ERR_OK) w->bound = tcp_listen(pcb);
  if (pcb != NULL && w->bound == NULL) tcp_close(pcb); /* port taken (shared stack) or no memory */
  CHECK(w->bound != NULL, "bound listener setup failed");
  if (w->bound != NULL) tcp_accept(w->bound, on_bound_accept);
}

/* Deferred SYN-ACK: held through a retransmitted SYN and timer ticks, sent
 * by tcp_output(), then the handshake completes and accept fires. */
static void step_deferred(struct worker *w) {
  const uint32_t isn = 1000000u * (uint32_t)(w->id + 1);
  struct conn *c;
  struct tcp_pcb *pcb;
  int i;

  cap_n = 0;
  w->verdict = ERR_INPROGRESS;
  feed(w, &w->fa, isn, 0, TCP_SYN);
  CHECK(w->syn_calls == 1, "syn callback called %d times, expected 1", w->syn_calls);
  CHECK(w->syn_arg == w, "syn callback got another listener's arg");
  if (w->syn_calls != 1 || w->nconns != 1) return;
  c = &w->conns[0];
  pcb = c->pcb;
  CHECK(pcb->state == SYN_RCVD, "new pcb in state %d, expected SYN_RCVD", pcb->state);
  check_pcb(pcb, &w->fa, "deferred");
  CHECK(cap_n == 0, "SYN-ACK sent although the syn callback held it (%d packets)", cap_n);
  check_active(&pcb, 1, "after first SYN");
  check_listeners(w, "after first SYN");

  feed(w, &w->fa, isn, 0, TCP_SYN); /* the client retransmits its SYN */
  CHECK(cap_n == 0, "retransmitted SYN released the held SYN-ACK");
  CHECK(w->syn_calls == 1, "retransmitted SYN created another connection");
  for (i = 0; i < 4; i++) tcp_tmr();
  CHECK(cap_n == 0, "tcp_tmr() released the held SYN-ACK");
  CHECK(c->pcb == pcb && c->errs == 0, "held pcb went away during timer ticks");
  if (c->pcb == NULL) return;

  tcp_output(pcb);
  CHECK(cap_n == 1, "tcp_output() sent %d packets, expected the SYN-ACK", cap_n);
  check_reply(w, 0, &w->fa, TCP_SYN | TCP_ACK, isn + 1, "released SYN-ACK");
  w->srv_isn = get32(cap[0].data + 20 + 4);

  feed(w, &w->fa, isn + 1, w->srv_isn + 1, TCP_ACK);
  CHECK(w->accept_calls == 1, "accept called %d times, expected 1", w->accept_calls);
  CHECK(w->accept_arg == c, "accept got %p, expected the arg set in the syn callback", w->accept_arg);
  CHECK(w->accept_pcb == pcb, "accept got another pcb");
  CHECK(pcb->state == ESTABLISHED, "pcb in state %d after the handshake", pcb->state);
  CHECK(cap_n == 1, "unexpected output after the handshake");
}

/* Refusals: tcp_abort() of a held connection, and a refusing verdict. Both
 * must answer with a RST that acknowledges the client's SYN. */
static void step_refuse(struct worker *w) {
  const uint32_t isn = 2000000u * (uint32_t)(w->id + 1);
  struct conn *c;

  cap_n = 0;
  w->verdict = ERR_INPROGRESS;
  feed(w, &w->fb, isn, 0, TCP_SYN);
  CHECK(w->syn_calls == 2 && w->nconns == 2, "no syn callback for the second SYN");
  if (w->nconns != 2 || w->conns[1].pcb == NULL) return;
  c = &w->conns[1];
  check_pcb(c->pcb, &w->fb, "refused by tcp_abort");
  CHECK(cap_n == 0, "SYN-ACK sent although held");
  tcp_abort(c->pcb);
  CHECK(c->pcb == NULL && c->err == ERR_ABRT, "tcp_abort() did not report ERR_ABRT");
  CHECK(cap_n == 1, "tcp_abort() sent %d packets, expected one RST", cap_n);
  check_reply(w, 0, &w->fb, TCP_RST | TCP_ACK, isn + 1, "RST after tcp_abort");

  cap_n = 0;
  w->verdict = ERR_MEM; /* e.g. too many sessions */
  feed(w, &w->fc, isn + 77, 0, TCP_SYN);
  CHECK(w->syn_calls == 3 && w->nconns == 3, "no syn callback for the third SYN");
  if (w->nconns != 3) return;
  c = &w->conns[2];
  CHECK(c->errs == 0, "err callback called for a connection the syn callback refused");
  CHECK(cap_n == 1, "refusing verdict sent %d packets, expected one RST", cap_n);
  check_reply(w, 0, &w->fc, TCP_RST | TCP_ACK, isn + 77 + 1, "RST after refusing verdict");
  c->pcb = NULL; /* lwIP freed it */
  check_active(&w->conns[0].pcb, 1, "after refusals");
}

/* ERR_OK verdict on an IPv6 SYN: SYN-ACK right away, then accept. */
static void step_ipv6(struct worker *w) {
  const uint32_t isn = 3000000u * (uint32_t)(w->id + 1);
  struct conn *c;
  uint32_t srv;

  cap_n = 0;
  w->verdict = ERR_OK;
  feed(w, &w->fd, isn, 0, TCP_SYN);
  CHECK(w->syn_calls == 4 && w->nconns == 4, "no syn callback for the IPv6 SYN");
  if (w->nconns != 4 || w->conns[3].pcb == NULL) return;
  c = &w->conns[3];
  check_pcb(c->pcb, &w->fd, "IPv6");
  CHECK(cap_n == 1, "ERR_OK verdict sent %d packets, expected the SYN-ACK", cap_n);
  check_reply(w, 0, &w->fd, TCP_SYN | TCP_ACK, isn + 1, "IPv6 SYN-ACK");
  srv = get32(cap[0].data + 40 + 4);
  feed(w, &w->fd, isn + 1, srv + 1, TCP_ACK);
  CHECK(w->accept_calls == 2 && w->accept_arg == c, "IPv6 connection not accepted");
  CHECK(c->pcb != NULL && c->pcb->state == ESTABLISHED, "IPv6 connection not established");
}

/* A listener bound to port 8080 wins over the any-destination listener. */
static void step_bound(struct worker *w) {
  const uint32_t isn = 4000000u * (uint32_t)(w->id + 1);
  uint32_t srv;

  cap_n = 0;
  feed(w, &w->fe, isn, 0, TCP_SYN);
  CHECK(w->syn_calls == 4, "the any-destination listener took a SYN for a bound port");
  CHECK(cap_n == 1, "bound listener sent %d packets, expected the SYN-ACK", cap_n);
  check_reply(w, 0, &w->fe, TCP_SYN | TCP_ACK, isn + 1, "bound listener SYN-ACK");
  srv = get32(cap[0].data + 20 + 4);
  feed(w, &w->fe, isn + 1, srv + 1, TCP_ACK);
  CHECK(w->bound_accepts == 1 && w->nconns == 5, "bound listener did not accept");
  CHECK(w->accept_calls == 2, "any-destination accept fired for the bound port");
}

/* Nobody decides: the SYN_RCVD timeout removes the pcb (err: ERR_ABRT),
 * and the SYN-ACK never goes out. */
static void step_timeout(struct worker *w) {
  const int max_ticks = 2 * (TCP_SYN_RCVD_TIMEOUT / TCP_SLOW_INTERVAL + 4);
  int i, leaked = 0;
  struct conn *c;

  cap_n = 0;
  w->verdict = ERR_INPROGRESS;
  feed(w, &w->ff, 5000000u, 0, TCP_SYN);
  CHECK(w->syn_calls == 5 && w->nconns == 6, "no syn callback for the sixth SYN");
  if (w->nconns != 6) return;
  c = &w->conns[5];
  for (i = 0; i < max_ticks && c->pcb != NULL; i++) tcp_tmr();
  CHECK(c->pcb == NULL && c->errs == 1 && c->err == ERR_ABRT,
        "undecided connection not timed out with ERR_ABRT after %d ticks", i);
  for (i = 0; i < cap_n && i < CAP_MAX; i++) {
    struct seg s;
    leaked += parse(&cap[i], &s) && s.sport == w->ff.dport;
  }
  CHECK(leaked == 0, "the held SYN-ACK went out while waiting for the timeout");
}

static void step_isolation(struct worker *w) {
  struct tcp_pcb *mine[3] = {w->conns[0].pcb, w->conns[3].pcb, w->conns[4].pcb};

  CHECK(netif_default == &w->netif, "netif_default is another thread's netif");
  check_active(mine, 3, "final");
  check_listeners(w, "final");
  CHECK(tcp_tw_pcbs == NULL, "tcp_tw_pcbs not empty");
}

/* Runs concurrently in both threads: complete and reset connections. */
static void load(struct worker *w) {
  struct flow f = w->fa;
  struct seg s;
  int i, bad = 0;
  uint32_t isn;

  w->loading = 1;
  w->verdict = ERR_OK;
  for (i = 0; i < LOAD_ROUNDS; i++) {
    f.sport = (uint16_t)(10000 + i);
    f.dport = (uint16_t)(1000 + i % 1000);
    isn = (uint32_t)i * 7919u;
    cap_n = 0;
    feed(w, &f, isn, 0, TCP_SYN);
    if (cap_n != 1 || !parse(&cap[0], &s) || s.flags != (TCP_SYN | TCP_ACK) || s.dport != f.sport ||
        s.sport != f.dport || memcmp(s.src, f.dst, 4) != 0 || cap[0].netif != &w->netif) {
      bad++;
      continue;
    }
    feed(w, &f, isn + 1, s.seq + 1, TCP_ACK);
    if (w->accept_arg != &w->load || w->load.pcb == NULL || !addr_is(&w->load.pcb->local_ip, 0, f.dst) ||
        w->load.pcb->local_port != f.dport)
      bad++;
    feed(w, &f, isn + 1, s.seq + 1, TCP_RST);
    if (w->load.pcb != NULL || w->load.err != ERR_RST) bad++;
  }
  w->loading = 0;
  CHECK(bad == 0, "concurrent load: %d of %d rounds went wrong", bad, LOAD_ROUNDS);
  CHECK(w->syn_calls == 5 + LOAD_ROUNDS, "concurrent load: %d syn callbacks, expected %d", w->syn_calls - 5,
        LOAD_ROUNDS);
}

static void step_teardown(struct worker *w) {
  int i;

  for (i = 0; i < w->nconns; i++)
    if (w->conns[i].pcb != NULL) tcp_abort(w->conns[i].pcb);
  if (w->any != NULL) tcp_close(w->any);
  if (w->bound != NULL) tcp_close(w->bound);
  if (w->netif_ok) netif_remove(&w->netif);
  CHECK(tcp_active_pcbs == NULL && tcp_listen_pcbs.listen_pcbs == NULL, "pcbs left after teardown");
  CHECK(netif_default == NULL, "netif_default left after teardown");
}

/* Runs step in thread 0, then in thread 1: both stacks stay alive, the steps
 * never overlap, so a shared stack fails checks instead of racing. */
static void in_turn(struct worker *w, void (*step)(struct worker *)) {
  int t;

  for (t = 0; t < NTHREADS; t++) {
    if (t == w->id) step(w);
    pthread_barrier_wait(&barrier);
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;

  my_id = w->id;
  snprintf(my_name, sizeof my_name, "thread %d", my_id);
  check_who = my_name;
  self = w;
  in_turn(w, step_setup); /* both instances exist before either is fed */
  in_turn(w, step_deferred);
  in_turn(w, step_refuse);
  in_turn(w, step_ipv6);
  in_turn(w, step_bound);
  in_turn(w, step_timeout);
  in_turn(w, step_isolation);
  /* Same answer in both threads: read after everybody's checks are done. */
  if (failed == 0) {
    pthread_barrier_wait(&barrier);
    load(w);
    pthread_barrier_wait(&barrier);
  } else if (w->id == 0) {
    fprintf(stderr, "skipping the concurrent load phase: the instances are not isolated\n");
  }
  in_turn(w, step_teardown);
  return NULL;
}

static void init_flows(struct worker *w) {
  if (w->id == 0) {
    set_flow(&w->fa, 0, "10.0.0.2", "192.0.2.10", 40000, 80);
    set_flow(&w->fb, 0, "10.0.0.2", "192.0.2.10", 40001, 81);
    set_flow(&w->fc, 0, "10.0.0.2", "192.0.2.10", 40002, 82);
    set_flow(&w->fd, 1, "fd00::2", "2001:db8::10", 40003, 8443);
    set_flow(&w->fe, 0, "10.0.0.2", "203.0.113.5", 40004, 8080);
    set_flow(&w->ff, 0, "10.0.0.2", "192.0.2.10", 40005, 83);
  } else {
    set_flow(&w->fa, 0, "10.1.0.2", "198.51.100.20", 50000, 443);
    set_flow(&w->fb, 0, "10.1.0.2", "198.51.100.20", 50001, 444);
    set_flow(&w->fc, 0, "10.1.0.2", "198.51.100.20", 50002, 445);
    set_flow(&w->fd, 1, "fd01::2", "2001:db8:1::20", 50003, 9443);
    set_flow(&w->fe, 0, "10.1.0.2", "203.0.113.6", 50004, 8080);
    set_flow(&w->ff, 0, "10.1.0.2", "198.51.100.20", 50005, 446);
  }
}

int main(void) {
  static struct worker workers[NTHREADS];
  pthread_t tids[NTHREADS];
  int i, rc;

  rc = pthread_barrier_init(&barrier, NULL, NTHREADS);
  if (rc != 0) {
    fprintf(stderr, "pthread_barrier_init: %s\n", strerror(rc));
    return 2;
  }
  for (i = 0; i < NTHREADS; i++) {
    workers[i].id = i;
    init_flows(&workers[i]);
  }
  for (i = 0; i < NTHREADS; i++) {
    rc = pthread_create(&tids[i], NULL, worker_main, &workers[i]);
    if (rc != 0) {
      fprintf(stderr, "pthread_create: %s\n", strerror(rc));
      return 2;
    }
  }
  for (i = 0; i < NTHREADS; i++) pthread_join(tids[i], NULL);
  pthread_barrier_destroy(&barrier);
  return check_done();
}
