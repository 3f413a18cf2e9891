/* SPDX-License-Identifier: MIT */
/* A client reusing its port while lwIP's side of the old connection is in
 * TIME_WAIT (lwIP patch 0008).
 *
 * One lwIP instance with s5tund's kind of listener (any destination, syn
 * callback), fed hand-built client segments as the TUN would carry them;
 * lwIP's answers are captured from the netif. Each scenario brings one
 * connection to TIME_WAIT the way s5tund's do when the server side closes
 * first (data, lwIP's FIN, the client's ACK and FIN), then sends a SYN on
 * the same 4-tuple:
 *
 * - seqno above the old rcv_nxt: the TIME_WAIT pcb is freed, the syn
 *   callback sees a new pcb, the SYN-ACK goes out at once (or when the syn
 *   callback's held SYN-ACK is released by tcp_output(), s5tund's path),
 *   the handshake completes, data reaches the new pcb, and the new pcb
 *   outlives the old TIME_WAIT's expiry;
 * - seqno below rcv_nxt: an ACK of the old connection, no new pcb
 *   (lwIP's behaviour); seqno equal to rcv_nxt, and a SYN with ACK above
 *   it: a RST (in the old window), no new pcb;
 * - no listener: the TIME_WAIT pcb answers as before and stays;
 * - an application that still holds the TIME_WAIT pcb (it shut down only
 *   its sending side, as s5tund does while it finishes the proxy side) is
 *   told through its err callback, with ERR_CLSD, before the pcb is freed;
 *   one that closed it gets no callback;
 * - the same application is told when the TIME_WAIT simply expires (lwIP
 *   patch 0009): ERR_CLSD once, instead of a pcb freed under it.
 *
 * Without the patch the first group fails (an ACK or RST instead of a
 * SYN-ACK). Output: one line per failed check, then "N passed, M failed". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h" /* tcp_active_pcbs, tcp_tw_pcbs, tcp_tmr() */
#include "lwip/tcp.h"

#include "lwip_harness.h"

static struct netif tun;

static void feed(uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags, const char *data) {
  feed_client(&tun, sport, seq, ack, flags, data);
}

struct seg {
  uint16_t sport, dport;
  uint32_t seq, ack;
  uint8_t flags;
};

/* Captured packet i as a segment of ours to the client on port cport; 0 if
 * it is missing or is something else. */
static int reply(int i, uint16_t cport, struct seg *s) {
  const uint8_t *d = cap[i].data, *t = d + 20;

  if (i >= cap_n || i >= CAP_MAX || cap[i].len < 40 || d[0] != 0x45 || d[9] != 6) return 0;
  if (memcmp(d + 12, dialled_addr, 4) != 0 || memcmp(d + 16, client_addr, 4) != 0) return 0;
  s->sport = get16(t);
  s->dport = get16(t + 2);
  s->seq = get32(t + 4);
  s->ack = get32(t + 8);
  s->flags = t[13];
  return s->sport == DPORT && s->dport == cport;
}

/* The only packet captured is a segment to cport with these flags and ack
 * (ack ignored for a RST without ACK). */
static void expect_one(uint16_t cport, uint8_t flags, uint32_t ack, const char *what) {
  struct seg s;

  CHECK(cap_n == 1, "%s: %d packets sent, expected one", what, cap_n);
  if (cap_n < 1) return;
  if (!reply(0, cport, &s)) {
    CHECK(0, "%s: the packet sent is not a segment to the client's port %u", what, cport);
    return;
  }
  CHECK(s.flags == flags, "%s: flags 0x%02x, expected 0x%02x", what, s.flags, flags);
  if (flags & TCP_ACK) CHECK(s.ack == ack, "%s: ack %u, expected %u", what, s.ack, ack);
}

/* ---- the listener: s5tund's kind ---------------------------------------- */

static struct tcp_pcb *listener;
static err_t verdict = ERR_OK; /* what the syn callback answers */
static int syn_calls, accepts, received, err_calls;
static struct tcp_pcb *syn_pcb, *accept_pcb;
static err_t last_err;
static void *last_err_arg;

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err) {
  if (p == NULL) return ERR_OK;
  received += p->tot_len;
  tcp_recved(pcb, p->tot_len);
  pbuf_free(p);
  return ERR_OK;
}

static void on_err(void *arg, err_t err) {
  err_calls++;
  last_err = err;
  last_err_arg = arg;
}

static err_t on_syn(void *arg, struct tcp_pcb *pcb) {
  syn_calls++;
  syn_pcb = pcb;
  tcp_arg(pcb, NULL);
  tcp_recv(pcb, on_recv);
  tcp_err(pcb, on_err);
  return verdict;
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err) {
  accepts++;
  accept_pcb = pcb;
  return ERR_OK;
}

static void listen_any(void) {
  listener = tcp_new_any_dest_listener();
  CHECK(listener != NULL, "tcp_new_any_dest_listener failed");
  if (listener == NULL) return;
  tcp_syn(listener, on_syn);
  tcp_accept(listener, on_accept);
}

/* ---- pcb lists ---------------------------------------------------------- */

static int count(struct tcp_pcb *list) {
  int n = 0;

  for (; list != NULL && n < 1000; list = list->next) n++;
  return n;
}

/* The pcb of the client's port cport in list, or NULL. */
static struct tcp_pcb *find(struct tcp_pcb *list, uint16_t cport) {
  for (; list != NULL; list = list->next)
    if (list->remote_port == cport && list->local_port == DPORT) return list;
  return NULL;
}

/* ---- steps -------------------------------------------------------------- */

/* tcp_tmr() calls covering twice a TIME_WAIT (2 * TCP_MSL) and then some. */
#define TW_TICKS ((int)(4 * TCP_MSL / TCP_TMR_INTERVAL) + 4)

/* Handshake from the client's port cport with ISN isn: accepted, the
 * server's ISN in *srv. The pcb, or NULL. */
static struct tcp_pcb *handshake(uint16_t cport, uint32_t isn, uint32_t *srv, const char *what) {
  struct seg s;
  int syns = syn_calls, acc = accepts;

  verdict = ERR_OK;
  feed(cport, isn, 0, TCP_SYN, NULL);
  CHECK(syn_calls == syns + 1, "%s: syn callback called %d times, expected once", what, syn_calls - syns);
  expect_one(cport, TCP_SYN | TCP_ACK, isn + 1, what);
  if (cap_n != 1 || !reply(0, cport, &s) || s.flags != (TCP_SYN | TCP_ACK)) return NULL;
  *srv = s.seq;
  feed(cport, isn + 1, *srv + 1, TCP_ACK, NULL);
  CHECK(accepts == acc + 1 && accept_pcb == syn_pcb, "%s: not accepted", what);
  CHECK(accept_pcb != NULL && accept_pcb->state == ESTABLISHED, "%s: not established", what);
  return accepts == acc + 1 ? accept_pcb : NULL;
}

/* A connection from cport with ISN isn: "hello" from the client, then our
 * side closes first (FIN), the client acknowledges it and sends its FIN:
 * our pcb is in TIME_WAIT. With hold, our side only shuts down its sending
 * side (tcp_shutdown) and keeps the pcb, its err callback set, arg hold;
 * else it closes it (tcp_close). Returns the pcb (NULL on failure);
 * *rcv_nxt is the sequence number after the client's FIN. */
static struct tcp_pcb *to_timewait_as(uint16_t cport, uint32_t isn, uint32_t *rcv_nxt, void *hold) {
  const char *hello = "hello";
  uint32_t srv = 0, c = isn + 1;
  struct tcp_pcb *pcb, *tw;
  int got = received;

  pcb = handshake(cport, isn, &srv, "first connection");
  if (pcb == NULL) return NULL;
  feed(cport, c, srv + 1, TCP_ACK | TCP_PSH, hello);
  c += (uint32_t)strlen(hello);
  CHECK(received == got + (int)strlen(hello), "first connection: data not received");
  cap_n = 0;
  if (hold != NULL) {
    tcp_arg(pcb, hold);
    CHECK(tcp_shutdown(pcb, 0, 1) == ERR_OK, "tcp_shutdown failed");
    CHECK(cap_n >= 1, "tcp_shutdown sent nothing, expected our FIN");
  } else {
    tcp_recv(pcb, NULL);
    CHECK(tcp_close(pcb) == ERR_OK, "tcp_close failed");
    CHECK(cap_n >= 1, "tcp_close sent nothing, expected our FIN");
  }
  feed(cport, c, srv + 2, TCP_ACK, NULL); /* the client acknowledges our FIN */
  feed(cport, c, srv + 2, TCP_FIN | TCP_ACK, NULL);
  c++;
  expect_one(cport, TCP_ACK, c, "ACK of the client's FIN");
  tw = find(tcp_tw_pcbs, cport);
  CHECK(tw != NULL && tw->state == TIME_WAIT, "no pcb in TIME_WAIT after both FINs");
  CHECK(find(tcp_active_pcbs, cport) == NULL, "the closed connection is still active");
  if (tw != NULL) CHECK(tw->rcv_nxt == c, "TIME_WAIT rcv_nxt %u, expected %u", tw->rcv_nxt, c);
  *rcv_nxt = c;
  return tw;
}

static struct tcp_pcb *to_timewait(uint16_t cport, uint32_t isn, uint32_t *rcv_nxt) {
  return to_timewait_as(cport, isn, rcv_nxt, NULL);
}

/* After a new SYN was taken on cport (SYN-ACK in *s): the old pcb is gone,
 * the new one completes its handshake, receives data, and survives the
 * time the old TIME_WAIT would have lasted. */
static void check_new_connection(uint16_t cport, uint32_t isn, const struct seg *s, const char *what) {
  struct tcp_pcb *pcb = syn_pcb;
  int acc = accepts, got = received, i;

  CHECK(find(tcp_tw_pcbs, cport) == NULL, "%s: the old pcb is still in TIME_WAIT", what);
  CHECK(find(tcp_active_pcbs, cport) == pcb, "%s: the new pcb is not the active one", what);
  CHECK(count(tcp_active_pcbs) == 1, "%s: %d active pcbs, expected 1", what, count(tcp_active_pcbs));
  feed(cport, isn + 1, s->seq + 1, TCP_ACK, NULL);
  CHECK(accepts == acc + 1 && accept_pcb == pcb, "%s: new connection not accepted", what);
  CHECK(pcb->state == ESTABLISHED, "%s: new connection in state %d", what, pcb->state);
  feed(cport, isn + 1, s->seq + 1, TCP_ACK | TCP_PSH, "again");
  CHECK(received == got + 5, "%s: data of the new connection not received", what);
  for (i = 0; i < TW_TICKS; i++) tcp_tmr();
  CHECK(find(tcp_active_pcbs, cport) == pcb && pcb->state == ESTABLISHED,
        "%s: the new connection did not outlive the old TIME_WAIT", what);
  feed(cport, isn + 6, s->seq + 1, TCP_ACK | TCP_PSH, "more");
  CHECK(received == got + 9, "%s: data after the old TIME_WAIT's expiry not received", what);
  tcp_recv(pcb, NULL);
  tcp_err(pcb, NULL);
  tcp_abort(pcb);
  CHECK(tcp_active_pcbs == NULL && tcp_tw_pcbs == NULL, "%s: pcbs left", what);
}

/* SYNs not above rcv_nxt, and a SYN with ACK: lwIP's answers, no new pcb;
 * then one above it: a new connection at once. */
static void step_reuse(void) {
  const uint16_t cport = 40000;
  uint32_t nxt = 0, isn;
  struct tcp_pcb *tw = to_timewait(cport, 0x10000000u, &nxt);
  struct seg s = {0};
  int syns = syn_calls;

  if (tw == NULL) return;
  feed(cport, nxt - 1000, 0, TCP_SYN, NULL);
  expect_one(cport, TCP_ACK, nxt, "SYN below rcv_nxt");
  CHECK(syn_calls == syns && find(tcp_tw_pcbs, cport) == tw, "SYN below rcv_nxt: new connection made");
  feed(cport, nxt, 0, TCP_SYN, NULL);
  expect_one(cport, TCP_RST | TCP_ACK, nxt + 1, "SYN at rcv_nxt");
  CHECK(syn_calls == syns && find(tcp_tw_pcbs, cport) == tw, "SYN at rcv_nxt: new connection made");
  feed(cport, nxt + 5000, 12345, TCP_SYN | TCP_ACK, NULL);
  CHECK(cap_n == 1 && reply(0, cport, &s) && (s.flags & TCP_SYN) == 0,
        "SYN|ACK above rcv_nxt: answered 0x%02x", cap_n ? s.flags : 0);
  CHECK(syn_calls == syns && find(tcp_tw_pcbs, cport) == tw, "SYN|ACK above rcv_nxt: new connection made");
  CHECK(count(tcp_active_pcbs) == 0, "a refused SYN left an active pcb");

  isn = nxt + 0x01000000u; /* beyond the old receive window */
  feed(cport, isn, 0, TCP_SYN, NULL);
  CHECK(syn_calls == syns + 1, "SYN above rcv_nxt: syn callback called %d times, expected once",
        syn_calls - syns);
  expect_one(cport, TCP_SYN | TCP_ACK, isn + 1, "SYN above rcv_nxt");
  CHECK(err_calls == 0, "SYN above rcv_nxt: err callback of the closed pcb called (%d)", (int)last_err);
  if (syn_calls != syns + 1 || !reply(0, cport, &s) || s.flags != (TCP_SYN | TCP_ACK)) return;
  check_new_connection(cport, isn, &s, "SYN above rcv_nxt");
}

/* s5tund's path: the syn callback holds the SYN-ACK until the proxy has
 * connected; the SYN is just above rcv_nxt (inside the old window, where
 * lwIP used to refuse it). */
static void step_reuse_held(void) {
  const uint16_t cport = 40001;
  uint32_t nxt = 0, isn;
  struct tcp_pcb *tw = to_timewait(cport, 0xfffffff0u, &nxt); /* sequence numbers wrap */
  struct seg s;
  int syns = syn_calls;

  if (tw == NULL) return;
  isn = nxt + 1;
  verdict = ERR_INPROGRESS;
  feed(cport, isn, 0, TCP_SYN, NULL);
  verdict = ERR_OK;
  CHECK(syn_calls == syns + 1, "held: syn callback called %d times, expected once", syn_calls - syns);
  CHECK(cap_n == 0, "held: %d packets sent while the SYN-ACK is held", cap_n);
  if (syn_calls != syns + 1) return;
  CHECK(find(tcp_tw_pcbs, cport) == NULL, "held: the old pcb is still in TIME_WAIT");
  cap_n = 0;
  tcp_output(syn_pcb);
  expect_one(cport, TCP_SYN | TCP_ACK, isn + 1, "held: released SYN-ACK");
  if (!reply(0, cport, &s) || s.flags != (TCP_SYN | TCP_ACK)) return;
  check_new_connection(cport, isn, &s, "held");
}

/* The application still holds the pcb in TIME_WAIT (it shut down only
 * its sending side): the new SYN tells it through the err callback
 * (ERR_CLSD, its arg) before the pcb goes, then the new connection starts. */
static void step_reuse_app_holds(void) {
  const uint16_t cport = 40003;
  static int holder;
  uint32_t nxt = 0, isn;
  int errs = err_calls, syns;
  struct tcp_pcb *tw = to_timewait_as(cport, 0x30000000u, &nxt, &holder);
  struct seg s;

  if (tw == NULL) return;
  CHECK(err_calls == errs, "app holds: err callback called on the way to TIME_WAIT");
  CHECK(tw->callback_arg == &holder && !(tw->flags & TF_RXCLOSED),
        "app holds: the pcb is not the app's any more");
  syns = syn_calls;
  isn = nxt + 0x00100000u;
  feed(cport, isn, 0, TCP_SYN, NULL);
  CHECK(err_calls == errs + 1, "app holds: err callback called %d times, expected once", err_calls - errs);
  CHECK(last_err == ERR_CLSD, "app holds: err callback got %d, expected ERR_CLSD", (int)last_err);
  CHECK(last_err_arg == &holder, "app holds: err callback got another arg");
  CHECK(syn_calls == syns + 1, "app holds: syn callback called %d times, expected once", syn_calls - syns);
  expect_one(cport, TCP_SYN | TCP_ACK, isn + 1, "app holds");
  if (syn_calls != syns + 1 || !reply(0, cport, &s) || s.flags != (TCP_SYN | TCP_ACK)) return;
  check_new_connection(cport, isn, &s, "app holds");
  CHECK(err_calls == errs + 1, "app holds: err callback called again");
}

/* The application still holds the pcb in TIME_WAIT and no SYN comes: when
 * the TIME_WAIT expires, the err callback says so (ERR_CLSD, once). */
static void step_expiry_app_holds(void) {
  const uint16_t cport = 40004;
  static int holder;
  uint32_t nxt = 0;
  int errs = err_calls, i;
  struct tcp_pcb *tw = to_timewait_as(cport, 0x40000000u, &nxt, &holder);

  if (tw == NULL) return;
  for (i = 0; i < TW_TICKS && err_calls == errs; i++) tcp_tmr();
  CHECK(err_calls == errs + 1, "expiry: err callback called %d times, expected once", err_calls - errs);
  CHECK(last_err == ERR_CLSD, "expiry: err callback got %d, expected ERR_CLSD", (int)last_err);
  CHECK(last_err_arg == &holder, "expiry: err callback got another arg");
  CHECK(tcp_tw_pcbs == NULL, "expiry: the pcb is still in TIME_WAIT");
  for (i = 0; i < TW_TICKS; i++) tcp_tmr();
  CHECK(err_calls == errs + 1, "expiry: err callback called again");
}

/* Without a listener the TIME_WAIT pcb answers a new SYN as before (here
 * with an ACK: beyond the old window) and stays; it expires on time. */
static void step_no_listener(void) {
  const uint16_t cport = 40002;
  uint32_t nxt = 0;
  struct tcp_pcb *tw = to_timewait(cport, 0x20000000u, &nxt);
  int i, syns = syn_calls;

  if (tw == NULL) return;
  tcp_close(listener);
  listener = NULL;
  feed(cport, nxt + 0x01000000u, 0, TCP_SYN, NULL);
  expect_one(cport, TCP_ACK, nxt, "no listener");
  CHECK(syn_calls == syns && find(tcp_tw_pcbs, cport) == tw, "no listener: the TIME_WAIT pcb is gone");
  for (i = 0; i < TW_TICKS; i++) tcp_tmr();
  CHECK(tcp_tw_pcbs == NULL, "no listener: TIME_WAIT did not expire");
  listen_any();
}

int main(void) {
  lwip_init();
  if (netif_add(&tun, NULL, NULL, NULL, NULL, netif_setup, ip_input) == NULL) {
    printf("netif_add failed\n");
    return 1;
  }
  netif_set_default(&tun);
  netif_set_up(&tun);
  netif_set_link_up(&tun);
  listen_any();

  step_reuse();
  step_reuse_held();
  step_reuse_app_holds();
  step_expiry_app_holds();
  step_no_listener();

  return check_done();
}
