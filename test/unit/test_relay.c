/* SPDX-License-Identifier: MIT */
/* The TCP relay (core/tcp/relay.c) on its own: one real lwIP instance with
 * s5tund's kind of listener, fed hand-built client segments as the TUN
 * would carry them (lwIP's answers captured from the netif), and a real
 * AF_UNIX stream socketpair standing in for the proxy connection, one end
 * the relay's (a libuv stream), the other read and written here. The
 * relay's owner is this file: its ops count what the relay tells it.
 *
 * - client to proxy: the client's bytes reach the proxy end at the end of
 *   the loop turn (s5_relay_flush_pending), counted in the connection and
 *   the worker's counter, and only then given back to the client's window;
 * - proxy to client: what the proxy sent with its reply goes first, then
 *   what it sends, as segments to the client; counted likewise;
 * - half-close both ways, in either order: the client's FIN becomes a
 *   shutdown of the proxy connection, the proxy's EOF a FIN to the client,
 *   and once both are done the relay tells its owner it finished (once;
 *   after the proxy's EOF, closing the socket is the FIN: no shutdown);
 * - backpressure: a client that acknowledges nothing stops the reads from
 *   the proxy once lwIP's send queue is full; its ACK starts them again;
 * - the proxy resetting the connection with nothing owed to the client:
 *   the owner is told it failed, with the reason, and nothing else.
 * Output: one line per failed check, then "N passed, M failed". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "check.h"
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h" /* tcp_active_pcbs, tcp_tw_pcbs */
#include "lwip/tcp.h"
#include "tcp/relay.h"

#include "lwip_harness.h"

static struct netif tun;

static void feed(uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags, const char *data) {
  feed_client(&tun, sport, seq, ack, flags, data);
}

struct seg {
  uint32_t seq, ack;
  uint8_t flags;
  size_t len;
  const uint8_t *data;
};

/* Captured packet i as a segment of ours to the client's port cport. */
static int reply(int i, uint16_t cport, struct seg *s) {
  const uint8_t *d = cap[i].data, *t = d + 20;
  if (i >= cap_n || i >= CAP_MAX || cap[i].len < 40 || d[0] != 0x45 || d[9] != 6) return 0;
  if (get16(t) != DPORT || get16(t + 2) != cport) return 0;
  size_t thl = (size_t)(t[12] >> 4) * 4;
  s->seq = get32(t + 4);
  s->ack = get32(t + 8);
  s->flags = t[13];
  s->len = get16(d + 2) - 20 - thl;
  s->data = t + thl;
  return 1;
}

/* The payload of every segment captured to cport, concatenated into out. */
static size_t captured_payload(uint16_t cport, char *out, size_t cap_len, int *fin) {
  size_t n = 0;
  *fin = 0;
  for (int i = 0; i < cap_n && i < CAP_MAX; i++) {
    struct seg s;
    if (!reply(i, cport, &s)) continue;
    if (s.flags & TCP_FIN) *fin = 1;
    if (n + s.len < cap_len) {
      memcpy(out + n, s.data, s.len);
      n += s.len;
    }
  }
  out[n] = '\0';
  return n;
}

/* ---- the relay's owner: this file --------------------------------------- */

static uv_loop_t loop;
static struct s5_relay relay;
static uint64_t to_proxy, from_proxy;

struct owner {
  struct s5_relay_conn conn;
  uv_tcp_t sock;
  int peer; /* the proxy's end */
  uint16_t cport;
  uint32_t cseq, sseq; /* the client's next seq, the server's next seq */
  int touched, finished, failed, closed;
  const char *why;
  int held_calls;    /* [sniff]'s op: how often the held bytes were shown */
  size_t held_bytes; /* how many, the last time */
  size_t kick_at;    /* kicked once that many are held */
};

static struct owner owners[5];
static int nowners;

static void owner_closed(uv_handle_t *h) { ((struct owner *)h->data)->closed = 1; }

/* As the session does: let go of the pcb, release the relay, close the socket. */
static void owner_end(struct owner *o, int abort_pcb) {
  struct tcp_pcb *pcb = o->conn.pcb;
  if (pcb != NULL) {
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    o->conn.pcb = NULL;
    if (abort_pcb) tcp_abort(pcb);
    else if (tcp_close(pcb) != ERR_OK) tcp_abort(pcb);
  }
  s5_relay_release(&o->conn);
  o->sock.data = o;
  uv_close((uv_handle_t *)&o->sock, owner_closed);
}

static void op_touch(void *owner) { ((struct owner *)owner)->touched++; }
static void op_finished(void *owner) {
  struct owner *o = owner;
  o->finished++;
  owner_end(o, 0);
}
static int op_failed(void *owner, const char *why) {
  struct owner *o = owner;
  o->failed++;
  o->why = why;
  int had_pcb = o->conn.pcb != NULL;
  owner_end(o, 1);
  return had_pcb ? ERR_ABRT : ERR_OK;
}

static const struct s5_relay_ops ops = {.touch = op_touch, .finished = op_finished, .failed = op_failed};

/* [sniff]'s way: look at the held bytes; kick once there are enough. */
static int op_held(void *owner) {
  struct owner *o = owner;
  size_t n = 0;
  for (const struct pbuf *q = o->conn.out; q != NULL; q = q->next) n += q->len;
  o->held_calls++;
  o->held_bytes = n;
  if (n >= o->kick_at) s5_relay_kick(&o->conn);
  return ERR_OK;
}

static const struct s5_relay_ops held_ops = {
  .touch = op_touch, .finished = op_finished, .failed = op_failed, .held = op_held};
static int hold_next; /* the next SYN's connection is held, with held_ops */

static err_t on_syn(void *arg, struct tcp_pcb *pcb) {
  struct owner *o = &owners[nowners++];
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) return ERR_MEM;
  uv_tcp_init(&loop, &o->sock);
  if (uv_tcp_open(&o->sock, sv[0]) < 0) return ERR_MEM;
  o->peer = sv[1];
  o->cport = pcb->remote_port;
  s5_relay_attach(&o->conn, &relay, pcb, (uv_stream_t *)&o->sock, hold_next ? &held_ops : &ops, o);
  CHECK(o->conn.state == S5_RELAY_ATTACHED, "attached");
  if (hold_next) s5_relay_hold(&o->conn);
  return ERR_OK; /* SYN-ACK at once */
}

static const char early[] = "EARLY:";

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err) {
  struct s5_relay_conn *c = arg;
  if (c == NULL || err != ERR_OK) return ERR_VAL;
  if (s5_relay_early(c)) return ERR_OK; /* held: started once its owner knows where it goes */
  return s5_relay_start(c, (const uint8_t *)early, sizeof early - 1);
}

/* One loop turn as the worker runs it: poll, then the end-of-turn flush. */
static void turn(void) {
  uv_run(&loop, UV_RUN_NOWAIT);
  s5_relay_flush_pending(&relay);
}

/* A client connection from cport, accepted, the relay started. */
static struct owner *connect_client(uint16_t cport) {
  feed(cport, 1000, 0, TCP_SYN, NULL);
  struct seg s;
  CHECK(cap_n == 1 && reply(0, cport, &s) && s.flags == (TCP_SYN | TCP_ACK), "port %u: SYN-ACK", cport);
  if (cap_n != 1) return NULL;
  struct owner *o = &owners[nowners - 1];
  o->cseq = 1001;
  o->sseq = s.seq + 1;
  feed(cport, o->cseq, o->sseq, TCP_ACK, NULL);
  CHECK(o->conn.state == S5_RELAY_RUNNING, "port %u: relay running after the handshake", cport);
  return o;
}

/* Reads what the proxy end has, looping the relay's turns until it has
 * want bytes or the relay stops giving (a bounded number of turns). */
static size_t proxy_read(struct owner *o, char *buf, size_t want) {
  size_t n = 0;
  for (int i = 0; i < 50 && n < want; i++) {
    turn();
    ssize_t r = recv(o->peer, buf + n, want - n, MSG_DONTWAIT);
    if (r > 0) n += (size_t)r;
    if (r == 0) break;
  }
  buf[n] = '\0';
  return n;
}

/* ---- scenarios ---------------------------------------------------------- */

static void both_ways(void) {
  struct owner *o = connect_client(40001);
  if (o == NULL) return;
  /* The early bytes went to the client with the start. */
  char got[CAP_LEN];
  int fin;
  size_t n = captured_payload(o->cport, got, sizeof got, &fin);
  CHECK(n == sizeof early - 1 && strcmp(got, early) == 0, "early bytes to the client: '%s'", got);
  o->sseq += (uint32_t)n;

  /* Client to proxy: held by lwIP's window until written. */
  feed(o->cport, o->cseq, o->sseq, TCP_ACK | TCP_PSH, "hello proxy");
  o->cseq += 11;
  CHECK(o->conn.out != NULL && o->conn.flush_queued, "client bytes queued for the end of the turn");
  tcpwnd_size_t wnd_before = o->conn.pcb->rcv_wnd;
  char buf[256];
  n = proxy_read(o, buf, 11);
  CHECK(n == 11 && strcmp(buf, "hello proxy") == 0, "proxy got '%s' (%zu bytes)", buf, n);
  CHECK(o->conn.bytes_up == 11 && to_proxy == 11, "bytes up %llu, counter %llu",
        (unsigned long long)o->conn.bytes_up, (unsigned long long)to_proxy);
  CHECK(o->conn.pcb->rcv_wnd == wnd_before + 11, "window given back once written (%u -> %u)",
        (unsigned)wnd_before, (unsigned)o->conn.pcb->rcv_wnd);
  CHECK(o->conn.out == NULL && !o->conn.writing, "nothing left to write");
  CHECK(o->touched > 0, "owner touched");

  /* Proxy to client. */
  CHECK(send(o->peer, "hello client", 12, 0) == 12, "proxy send");
  cap_n = 0;
  for (int i = 0; i < 50 && o->conn.bytes_down < 12; i++) turn();
  n = captured_payload(o->cport, got, sizeof got, &fin);
  CHECK(n == 12 && strcmp(got, "hello client") == 0, "client got '%s'", got);
  CHECK(o->conn.bytes_down == 12 && from_proxy == 12, "bytes down %llu, counter %llu",
        (unsigned long long)o->conn.bytes_down, (unsigned long long)from_proxy);
  o->sseq += (uint32_t)n;
  feed(o->cport, o->cseq, o->sseq, TCP_ACK, NULL);

  /* The client half-closes: the proxy connection is shut down. */
  feed(o->cport, o->cseq, o->sseq, TCP_ACK | TCP_FIN, NULL);
  o->cseq++;
  n = proxy_read(o, buf, sizeof buf - 1);
  CHECK(n == 0 && o->conn.client_eof && o->conn.proxy_shut, "client FIN: proxy shut (read %zu)", n);
  CHECK(o->finished == 0 && o->conn.state == S5_RELAY_RUNNING, "still running: the proxy may still send");

  /* The proxy half-closes: a FIN to the client, and the relay finished. */
  cap_n = 0;
  shutdown(o->peer, SHUT_WR);
  for (int i = 0; i < 50 && o->finished == 0; i++) turn();
  n = captured_payload(o->cport, got, sizeof got, &fin);
  CHECK(fin, "FIN to the client after the proxy's EOF");
  CHECK(o->finished == 1 && o->failed == 0, "finished %d, failed %d", o->finished, o->failed);
  CHECK(o->conn.state == S5_RELAY_CLOSED, "released");
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK(o->closed, "socket closed");
  close(o->peer);
}

/* The proxy's EOF first: the client's FIN afterwards ends the relay in
 * the same turn, without a shutdown() (closing the socket sends the FIN). */
static void proxy_eof_first(void) {
  struct owner *o = connect_client(40003);
  if (o == NULL) return;
  o->sseq += sizeof early - 1;
  feed(o->cport, o->cseq, o->sseq, TCP_ACK, NULL);
  cap_n = 0;
  shutdown(o->peer, SHUT_WR);
  for (int i = 0; i < 50 && !o->conn.proxy_eof; i++) turn();
  char got[CAP_LEN];
  int fin;
  captured_payload(o->cport, got, sizeof got, &fin);
  CHECK(o->conn.proxy_eof && fin, "proxy EOF: FIN to the client");
  CHECK(o->finished == 0, "not finished while the client may still send");
  o->sseq++;
  feed(o->cport, o->cseq, o->sseq, TCP_ACK | TCP_FIN, NULL);
  o->cseq++;
  s5_relay_flush_pending(&relay);
  CHECK(o->finished == 1 && o->failed == 0,
        "client FIN: finished at once, no shutdown (finished %d, failed %d)", o->finished, o->failed);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK(o->closed, "socket closed");
  char buf[8];
  CHECK(recv(o->peer, buf, sizeof buf, MSG_DONTWAIT) == 0, "the proxy end sees EOF: the close sent the FIN");
  close(o->peer);
}

/* Proxy to client with a client that acknowledges nothing: the relay stops
 * reading from the proxy once lwIP's send queue is full (the proxy's bytes
 * wait in its socket, not in our memory), and reads again once the client
 * acknowledged some. */
static void backpressure_down(void) {
  struct owner *o = connect_client(40004);
  if (o == NULL) return;
  static char chunk[16384];
  memset(chunk, 'x', sizeof chunk);
  size_t sent = 0;
  for (int i = 0; i < 2000; i++) {
    ssize_t r = send(o->peer, chunk, sizeof chunk, MSG_DONTWAIT);
    if (r > 0) sent += (size_t)r;
    turn();
    if (r < 0 && !o->conn.reading) break;
  }
  uint64_t held = o->conn.bytes_down;
  CHECK(!o->conn.reading, "reading stopped with the send queue full (%llu of %zu bytes taken)",
        (unsigned long long)held, sent);
  CHECK(held < sent && held <= TCP_SND_BUF + 65536, "taken no more than lwIP queues: %llu of %zu",
        (unsigned long long)held, sent);
  for (int i = 0; i < 10; i++) turn();
  CHECK(o->conn.bytes_down == held, "nothing more taken while the client acknowledges nothing");
  /* The client acknowledges what lwIP sent, round after round (slow start
   * sends a few segments at first), until there is room for a read. */
  int acks = 0;
  for (; acks < 200 && !o->conn.reading; acks++) {
    feed(o->cport, o->cseq, o->conn.pcb->snd_nxt, TCP_ACK, NULL);
    turn();
  }
  int resumed = o->conn.reading;
  for (int i = 0; i < 10; i++) turn();
  CHECK(resumed && o->conn.bytes_down > held, "reading again after %d ACKs (%llu -> %llu)", acks,
        (unsigned long long)held, (unsigned long long)o->conn.bytes_down);
  CHECK(o->failed == 0 && o->finished == 0, "still open");
  owner_end(o, 1); /* as the session does on a reset */
  close(o->peer);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK(o->closed, "socket closed");
}

static void proxy_reset(void) {
  struct owner *o = connect_client(40002);
  if (o == NULL) return;
  o->sseq += sizeof early - 1;
  feed(o->cport, o->cseq, o->sseq, TCP_ACK, NULL); /* the early bytes acknowledged: nothing owed */
  feed(o->cport, o->cseq, o->sseq, TCP_ACK | TCP_PSH, "unread");
  o->cseq += 6;
  for (int i = 0; i < 5; i++) turn();
  CHECK(o->conn.bytes_up == 6, "written to the proxy: %llu", (unsigned long long)o->conn.bytes_up);
  close(o->peer); /* with bytes unread: a reset */
  for (int i = 0; i < 50 && o->failed == 0; i++) turn();
  CHECK(o->failed == 1 && o->finished == 0, "failed %d, finished %d", o->failed, o->finished);
  CHECK(o->why != NULL && strcmp(o->why, "proxy reset the connection") == 0, "why: %s",
        o->why ? o->why : "(none)");
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK(o->closed, "socket closed");
}

/* [sniff]: the held bytes are shown to the owner at the end of each turn
 * they grow, none reaches the proxy until the owner kicks, then they go
 * in that same turn, and the owner is not asked again. */
static void held_then_kicked(void) {
  hold_next = 1;
  feed(40005, 1000, 0, TCP_SYN, NULL);
  hold_next = 0;
  struct seg s;
  CHECK(cap_n == 1 && reply(0, 40005, &s) && s.flags == (TCP_SYN | TCP_ACK), "held: SYN-ACK at once");
  if (cap_n != 1) return;
  struct owner *o = &owners[nowners - 1];
  o->kick_at = 10;
  o->cseq = 1001;
  o->sseq = s.seq + 1;
  feed(40005, o->cseq, o->sseq, TCP_ACK, NULL);
  CHECK(o->conn.state == S5_RELAY_ATTACHED && o->conn.early == S5_RELAY_EARLY_HELD, "held: not started");
  feed(40005, o->cseq, o->sseq, TCP_ACK | TCP_PSH, "GET /");
  o->cseq += 5;
  turn();
  char buf[64];
  CHECK(o->held_calls == 1 && o->held_bytes == 5, "held: shown 5 bytes (%d calls, %zu bytes)", o->held_calls,
        o->held_bytes);
  CHECK(recv(o->peer, buf, sizeof buf, MSG_DONTWAIT) < 0 && o->conn.bytes_up == 0,
        "held: nothing to the proxy");
  feed(40005, o->cseq, o->sseq, TCP_ACK | TCP_PSH, " HTTP");
  o->cseq += 5;
  size_t n = proxy_read(o, buf, 10);
  CHECK(o->held_calls == 2 && o->held_bytes == 10, "held: shown 10 bytes (%d calls)", o->held_calls);
  CHECK(n == 10 && strcmp(buf, "GET / HTTP") == 0 && o->conn.early == S5_RELAY_EARLY_SENT,
        "kicked: the proxy got '%s' in that turn", buf);
  feed(40005, o->cseq, o->sseq, TCP_ACK | TCP_PSH, "/1.1");
  o->cseq += 4;
  n = proxy_read(o, buf, 4);
  CHECK(n == 4 && o->held_calls == 2, "sent: later bytes follow, the owner is not asked again");
  owner_end(o, 1);
  uv_run(&loop, UV_RUN_NOWAIT);
}

int main(void) {
  lwip_init();
  uv_loop_init(&loop);
  s5_relay_init(&relay, &to_proxy, &from_proxy);
  CHECK(netif_add_noaddr(&tun, NULL, netif_setup, ip_input) != NULL, "netif_add");
  netif_set_default(&tun);
  netif_set_up(&tun);
  netif_set_link_up(&tun);
  struct tcp_pcb *listener = tcp_new_any_dest_listener();
  CHECK(listener != NULL, "listener");
  if (listener == NULL) return 1;
  tcp_syn(listener, on_syn);
  tcp_accept(listener, on_accept);

  both_ways();
  proxy_eof_first();
  backpressure_down();
  to_proxy = from_proxy = 0;
  proxy_reset();
  held_then_kicked();

  tcp_close(listener);
  while (tcp_active_pcbs != NULL) tcp_abort(tcp_active_pcbs);
  while (tcp_tw_pcbs != NULL) tcp_abort(tcp_tw_pcbs);
  s5_relay_stop(&relay);
  CHECK(relay.rbuf_out == 0, "read buffers all back (%u out)", relay.rbuf_out);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0, "loop closed with no handle left");
  printf("%d passed, %d failed\n", passed, failed);
  return check_done();
}
