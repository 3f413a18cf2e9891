/* SPDX-License-Identifier: MIT */
/* Mapped DNS over TCP: one connection's life, from the SYN (taken from the
 * session table's listener) to its close, in lwIP's callbacks. Everything
 * that can move moves in conn_step(): answers go to lwIP's send buffer,
 * and queries are read while their answers have room, so the client's
 * window stays closed while its answers are not taken. */
#include "dns/dns_tcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/assert.h"
#include "dns/dns_msg.h"
#include "base/log.h"
#include "ctx/wctx.h"

#include "lwip/pbuf.h"
#include "lwip/tcp.h"

/* Open DNS connections per worker: a stub keeps one or two. */
#define S5_DNS_TCP_CONNS 256
/* The client's bytes we hold unread (receive window) and the answers lwIP
 * holds unacknowledged (send buffer): a few hundred queries' worth. */
#define S5_DNS_TCP_BUFFER (16u * 1024)
/* Answers waiting for room in the send buffer; reading stops below one. */
#define S5_DNS_TCP_ANSWER (2 + S5_DNS_ANSWER_MAX)
#define S5_DNS_TCP_OUT (4 * S5_DNS_TCP_ANSWER)
/* RFC 7766 6.2.3: servers close idle connections after seconds. Idle is
 * no progress: no whole message in, no answer acknowledged. */
#define S5_DNS_TCP_IDLE_MS 10000u
/* A message whole within this of its first byte: a client that trickles
 * bytes holds no connection (each byte would have reset an idle timer). */
#define S5_DNS_TCP_MESSAGE_MS 5000u
/* Connections from one client address per worker: one source cannot take
 * every slot (a stub keeps one or two; a busy NAT a few dozen). At the
 * limit, a new one takes the slot of that address's connection that has
 * made no progress for longest, if for this long and it is stuck (in the
 * middle of a message, or never sent one; an idle client that was answered
 * keeps its slot): on a host every local application shares one address,
 * and one of them holding 32 slow connections must not keep the others
 * from DNS for seconds. */
#define S5_DNS_TCP_PER_SOURCE 32
#define S5_DNS_TCP_STALE_MS 1000u
/* lwIP's poll interval is counted in its slow-timer ticks (500 ms). */
#define S5_DNS_TCP_POLL_TICKS 2

/* A waiting answer's length goes out in a 2-byte prefix; what lwIP is
 * handed at once, in a u16_t. */
_Static_assert(S5_DNS_ANSWER_MAX <= 0xffff && S5_DNS_TCP_OUT <= 0xffff, "DNS over TCP: lengths in 16 bits");

struct s5_dns_conn {
  struct s5_dns_conn *prev, *next;
  struct s5_dns_tcp *tab;
  struct tcp_pcb *pcb;
  enum s5_dns_dest dest;
  uint64_t last_ms;     /* uv_now() of the last progress: a whole message in, an answer acknowledged */
  uint64_t msg_ms;      /* uv_now() of the first byte of the message being read */
  struct pbuf *in;      /* received, not read yet: its window stays closed */
  unsigned eof : 1;     /* the client's FIN: answer what came, then close */
  unsigned closing : 1; /* a malformed message: nothing more is read */
  unsigned asked : 1;   /* a whole message came: a client, not a connection held open empty */
  size_t out_len;       /* answers in out */
  uint8_t out[S5_DNS_TCP_OUT];
  struct s5_dns_frame frame; /* the message being read */
};

static uint64_t now_ms(const struct s5_dns_conn *c) { return uv_now(&c->tab->w->loop); }

static const char *conn_peer(const struct s5_dns_conn *c, char *buf, size_t len) {
  char src[S5_ADDR_STRLEN], dst[S5_ADDR_STRLEN];
  const struct tcp_pcb *pcb = c->pcb;
  snprintf(buf, len, "%s -> %s", s5_addr_port_str(&pcb->remote_ip, pcb->remote_port, src, sizeof src),
           s5_addr_port_str(&pcb->local_ip, pcb->local_port, dst, sizeof dst));
  return buf;
}

static void conn_free(struct s5_dns_conn *c) {
  struct s5_dns_tcp *t = c->tab;
  S5_ASSERT(t->count > 0 && (c->prev != NULL || t->list == c));
  if (c->prev != NULL) c->prev->next = c->next;
  else t->list = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  t->count--;
  if (c->in != NULL) pbuf_free(c->in);
  free(c);
}

/* Stops lwIP's callbacks for the pcb, which is no longer ours. */
static struct tcp_pcb *conn_detach(struct s5_dns_conn *c) {
  struct tcp_pcb *pcb = c->pcb;
  tcp_arg(pcb, NULL);
  tcp_recv(pcb, NULL);
  tcp_sent(pcb, NULL);
  tcp_err(pcb, NULL);
  tcp_poll(pcb, NULL, 0);
  c->pcb = NULL;
  return pcb;
}

/* Unread bytes are given back to the window, so that lwIP closes with a
 * FIN rather than a RST for data left unread. Returns how many. */
static size_t conn_drop_input(struct s5_dns_conn *c) {
  size_t n = c->in != NULL ? c->in->tot_len : 0;
  if (c->in != NULL) pbuf_free(c->in);
  c->in = NULL;
  return n;
}

static void conn_recved(struct s5_dns_conn *c, size_t n) {
  for (; n > 0xffff; n -= 0xffff) tcp_recved(c->pcb, 0xffff);
  if (n > 0) tcp_recved(c->pcb, (u16_t)n);
}

/* Resets the client. Returns ERR_ABRT, which an lwIP callback for this
 * pcb must then return. */
static err_t conn_abort(struct s5_dns_conn *c, const char *why) {
  if (why != NULL && s5_log_enabled(S5_LOG_DEBUG)) {
    char peer[128];
    s5_debug("dns: TCP %s reset: %s", conn_peer(c, peer, sizeof peer), why);
  }
  tcp_abort(conn_detach(c));
  conn_free(c);
  return ERR_ABRT;
}

/* A message cut short by the end of the connection (the client's FIN, or
 * idle in its middle) is a dropped query too. */
static void conn_count_cut(struct s5_dns_conn *c) {
  const struct s5_dns_frame *f = &c->frame;
  if (f->done || f->prefix_have == 0) return;
  S5_STAT_ADD(c->tab->w->stats, drop_dns, 1);
  char peer[128];
  s5_debug("dns: TCP %s: a message cut short by the end of the connection dropped",
           conn_peer(c, peer, sizeof peer));
}

/* Closes with a FIN after whatever lwIP still has to send. */
static err_t conn_close(struct s5_dns_conn *c, const char *why) {
  char peer[128];
  s5_debug("dns: TCP %s closed: %s", conn_peer(c, peer, sizeof peer), why);
  conn_recved(c, conn_drop_input(c));
  struct tcp_pcb *pcb = conn_detach(c);
  conn_free(c);
  if (tcp_close(pcb) == ERR_OK) return ERR_OK;
  tcp_abort(pcb); /* no memory for the FIN */
  return ERR_ABRT;
}

/* A message that is no query: the connection ends once the answers to
 * the ones before it are out. Counted by s5_dns_answer() (drop_dns). */
static void conn_malformed(struct s5_dns_conn *c) {
  struct s5_wctx *w = c->tab->w;
  char peer[128], line[200];
  snprintf(line, sizeof line,
           "dns: TCP %s: malformed message (%u bytes), connection closed (%llu dropped on "
           "this queue)",
           conn_peer(c, peer, sizeof peer), (unsigned)c->frame.len,
           (unsigned long long)S5_STAT_GET(w->stats, drop_dns));
  s5_debug("%s", line);
  s5_wctx_failure(w, S5_LOG_INFO, line);
  c->closing = 1;
}

/* The complete message in c->frame: its answer after its length. */
static void conn_answer(struct s5_dns_conn *c) {
  const struct s5_dns_frame *f = &c->frame;
  S5_ASSERT(sizeof c->out - c->out_len >= S5_DNS_TCP_ANSWER); /* conn_read made sure */
  uint8_t *slot = c->out + c->out_len;
  int n = s5_dns_answer(c->tab->w, f->msg, s5_dns_frame_kept(f), &c->pcb->remote_ip, c->dest, slot + 2,
                        S5_DNS_ANSWER_MAX);
  if (n < 0) {
    conn_malformed(c);
    return;
  }
  S5_ASSERT(n <= S5_DNS_ANSWER_MAX);
  slot[0] = (uint8_t)(n >> 8);
  slot[1] = (uint8_t)n;
  c->out_len += 2 + (size_t)n;
}

/* Reads messages while an answer has room; the window reopens by what
 * was read. */
static void conn_read(struct s5_dns_conn *c) {
  size_t read = 0;
  while (c->in != NULL && !c->closing && sizeof c->out - c->out_len >= S5_DNS_TCP_ANSWER) {
    struct pbuf *p = c->in;
    if (p->len == 0) { /* nothing in this one: on to the next */
      c->in = p->next;
      p->next = NULL;
      pbuf_free(p);
      continue;
    }
    int fresh = c->frame.done || c->frame.prefix_have == 0;
    size_t used = s5_dns_frame_feed(&c->frame, p->payload, p->len);
    if (fresh) c->msg_ms = now_ms(c);
    S5_ASSERT(used <= p->len);
    c->in = pbuf_free_header(p, (u16_t)used);
    read += used;
    if (c->frame.done) {
      c->last_ms = now_ms(c);
      c->asked = 1;
      conn_answer(c);
    }
  }
  if (c->closing) read += conn_drop_input(c);
  conn_recved(c, read);
}

/* Hands lwIP as much of the waiting answers as its send buffer takes.
 * Returns ERR_ABRT when it had to reset the connection. */
static err_t conn_write(struct s5_dns_conn *c) {
  size_t room = tcp_sndbuf(c->pcb);
  size_t n = c->out_len < room ? c->out_len : room;
  if (n == 0) return ERR_OK;
  err_t e = tcp_write(c->pcb, c->out, (u16_t)n, TCP_WRITE_FLAG_COPY);
  if (e == ERR_MEM) return ERR_OK; /* lwIP's queue is full: its sent callback brings us back */
  if (e != ERR_OK) return conn_abort(c, "lwIP refused the answer");
  S5_ASSERT(n <= c->out_len);
  memmove(c->out, c->out + n, c->out_len - n);
  c->out_len -= n;
  tcp_output(c->pcb);
  return ERR_OK;
}

/* Everything that can move: answers out, queries in while their answers
 * have room, and the close once the client is done and all is out. */
static err_t conn_step(struct s5_dns_conn *c) {
  for (;;) {
    if (conn_write(c) != ERR_OK) return ERR_ABRT;
    size_t before = c->out_len;
    conn_read(c);
    if (c->out_len == before) break;
  }
  if (c->out_len > 0 || (c->in != NULL && !c->closing)) return ERR_OK;
  if (c->closing) return conn_close(c, "malformed message");
  if (!c->eof) return ERR_OK;
  conn_count_cut(c);
  return conn_close(c, "the client closed");
}

static err_t conn_on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err) {
  struct s5_dns_conn *c = arg;
  (void)err;       /* always ERR_OK in lwIP 2.1 */
  if (c == NULL) { /* not ours any more (cannot happen: a detached pcb has no recv) */
    if (p != NULL) {
      tcp_recved(pcb, p->tot_len);
      pbuf_free(p);
    }
    return ERR_OK;
  }
  if (p == NULL) c->eof = 1;
  else if (c->in == NULL) c->in = p;
  else pbuf_cat(c->in, p);
  return conn_step(c);
}

static err_t conn_on_sent(void *arg, struct tcp_pcb *pcb, u16_t len) {
  struct s5_dns_conn *c = arg;
  (void)pcb;
  (void)len;
  if (c == NULL) return ERR_OK;
  c->last_ms = now_ms(c);
  return conn_step(c);
}

/* lwIP freed the pcb (the client's RST, retransmissions gave up). */
static void conn_on_error(void *arg, err_t err) {
  struct s5_dns_conn *c = arg;
  if (c == NULL) return;
  s5_debug("dns: TCP connection ended by lwIP (error %d)", (int)err);
  c->pcb = NULL;
  conn_free(c);
}

/* Every second: an idle connection ends, with a FIN when nothing is left
 * to answer, else (its client stopped reading) with a RST. */
static err_t conn_on_poll(void *arg, struct tcp_pcb *pcb) {
  struct s5_dns_conn *c = arg;
  (void)pcb;
  if (c == NULL) return ERR_OK;
  if (!c->frame.done && c->frame.prefix_have > 0 && now_ms(c) - c->msg_ms >= S5_DNS_TCP_MESSAGE_MS) {
    S5_STAT_ADD(c->tab->w->stats, dns_tcp_limited, 1);
    S5_STAT_ADD(c->tab->w->stats, drop_dns, 1);
    return conn_abort(c, "a message not whole within 5 s of its first byte");
  }
  if (now_ms(c) - c->last_ms < S5_DNS_TCP_IDLE_MS) return ERR_OK;
  if (c->out_len == 0 && c->in == NULL) {
    conn_count_cut(c);
    return conn_close(c, "idle");
  }
  return conn_abort(c, "idle with answers the client does not read");
}

int s5_dns_tcp_owns(const struct tcp_pcb *pcb) { return pcb != NULL && pcb->recv == conn_on_recv; }

void s5_dns_tcp_init(struct s5_dns_tcp *t, struct s5_wctx *w) {
  memset(t, 0, sizeof *t);
  t->w = w;
}

static err_t dns_tcp_refuse(struct s5_dns_tcp *t, struct tcp_pcb *pcb, const char *why) {
  S5_STAT_ADD(t->w->stats, drop_dns, 1);
  char src[S5_ADDR_STRLEN], line[160];
  snprintf(line, sizeof line, "dns: TCP from %s refused: %s",
           s5_addr_port_str(&pcb->remote_ip, pcb->remote_port, src, sizeof src), why);
  s5_wctx_failure(t->w, S5_LOG_WARN, line);
  return ERR_MEM;
}

/* Small windows both ways (lwIP patch 0005: before the SYN-ACK). */
static void conn_limit_buffers(struct tcp_pcb *pcb) {
  pcb->rcv_wnd_max = S5_DNS_TCP_BUFFER;
  pcb->rcv_wnd = pcb->rcv_ann_wnd = TCP_WND_MAX(pcb);
  pcb->snd_buf = S5_DNS_TCP_BUFFER;
}

/* Connections from pcb's address on this worker; *stalest: the one among
 * them with no progress for longest. */
static unsigned same_source(const struct s5_dns_tcp *t, const struct tcp_pcb *pcb,
                            struct s5_dns_conn **stalest) {
  unsigned n = 0;
  *stalest = NULL;
  for (struct s5_dns_conn *c = t->list; c != NULL; c = c->next)
    if (c->pcb != NULL && ip_addr_cmp(&c->pcb->remote_ip, &pcb->remote_ip)) {
      n++;
      int stuck = !c->asked || (!c->frame.done && c->frame.prefix_have > 0);
      if (stuck && (*stalest == NULL || c->last_ms < (*stalest)->last_ms)) *stalest = c;
    }
  return n;
}

err_t s5_dns_tcp_accept(struct s5_dns_tcp *t, struct tcp_pcb *pcb, enum s5_dns_dest dest) {
  if (t->count >= S5_DNS_TCP_CONNS) return dns_tcp_refuse(t, pcb, "too many DNS connections on this queue");
  struct s5_dns_conn *stalest;
  if (same_source(t, pcb, &stalest) >= S5_DNS_TCP_PER_SOURCE) {
    S5_STAT_ADD(t->w->stats, dns_tcp_limited, 1);
    if (stalest == NULL || now_ms(stalest) - stalest->last_ms < S5_DNS_TCP_STALE_MS)
      return dns_tcp_refuse(t, pcb, "too many DNS connections from this address on this queue");
    conn_count_cut(stalest);
    conn_abort(stalest, "its slot taken by a new connection from the same address (it was stuck)");
  }
  struct s5_dns_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return dns_tcp_refuse(t, pcb, "out of memory");
  c->tab = t;
  c->pcb = pcb;
  c->dest = dest;
  c->last_ms = now_ms(c);
  c->next = t->list;
  if (t->list != NULL) t->list->prev = c;
  t->list = c;
  t->count++;
  S5_ASSERT(t->count <= S5_DNS_TCP_CONNS);
  tcp_arg(pcb, c);
  tcp_recv(pcb, conn_on_recv);
  tcp_sent(pcb, conn_on_sent);
  tcp_err(pcb, conn_on_error);
  tcp_poll(pcb, conn_on_poll, S5_DNS_TCP_POLL_TICKS);
  conn_limit_buffers(pcb);
  tcp_nagle_disable(pcb); /* each answer at once: the client waits for it */
  char peer[128];
  s5_debug("dns: TCP %s%s", conn_peer(c, peer, sizeof peer), dest == S5_DNS_HIJACKED ? " (hijacked)" : "");
  return ERR_OK;
}

void s5_dns_tcp_stop(struct s5_dns_tcp *t) {
  while (t->list != NULL) conn_abort(t->list, NULL);
}
