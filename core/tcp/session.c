/* SPDX-License-Identifier: MIT */
/* Session lifecycle: created for a client's SYN, ended exactly once, freed
 * when its libuv handles have closed. And the table of a worker's sessions:
 * its listener, its list, and a drain that ends by calling back the one
 * who asked for it, so that nothing here knows the worker. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/assert.h"
#include "shared/conntab.h"
#include "shared/flowtab.h"
#include "shared/uptab.h"
#include "base/log.h"
#include "netif/netif.h"
#include "tcp/pcb_tune.h"
#include "tcp/relay_pump.h"
#include "tcp/session.h"

#include "lwip/tcp.h"

static void session_timer_fired(uv_timer_t *timer);

static void session_link(struct s5_session *s) {
  struct s5_sessions *t = s->tab;
  s->next = t->list;
  if (t->list != NULL) t->list->prev = s;
  t->list = s;
  S5_STAT_ADD(s->w->stats, tcp_active, 1);
  S5_STAT_ADD(s->w->stats, tcp_total, 1);
}

/* The last session of a draining table ended: the drain is over. */
static void session_unlink(struct s5_session *s) {
  struct s5_sessions *t = s->tab;
  if (s->prev != NULL) s->prev->next = s->next;
  else t->list = s->next;
  if (s->next != NULL) s->next->prev = s->prev;
  S5_STAT_SUB(s->w->stats, tcp_active, 1);
  if (s->flow_ref != 0) s5_flowtab_remove(s->w->flows, s->flow_ref);
  s->flow_ref = 0;
  if (t->list == NULL && t->drained != NULL) t->drained(t->drained_arg);
}

const char *s5_session_peer(const struct s5_session *s, char *buf, size_t len) {
  if (s->conn.pcb == NULL) return "(closed)";
  char src[S5_ADDR_STRLEN], dst[S5_ADDR_STRLEN];
  snprintf(buf, len, "%s -> %s",
           s5_addr_port_str(&s->conn.pcb->remote_ip, s->conn.pcb->remote_port, src, sizeof src),
           s5_addr_port_str(&s->conn.pcb->local_ip, s->conn.pcb->local_port, dst, sizeof dst));
  return buf;
}

void s5_session_touch(struct s5_session *s) { s->last_active = uv_now(&s->w->loop); }

void s5_session_named(struct s5_session *s, const char *name) {
  if (s->rec.name == NULL) s->rec.name = strdup(name); /* NULL without memory for it: no name shown */
}

struct s5_pool *s5_session_pool(const struct s5_session *s) {
  return s->tab->pool;
}

/* The session's lifetime has one owner, this file: every handle it holds
 * retains it, and releases it from that handle's close callback; the last release
 * frees it. */
void s5_session_retain(struct s5_session *s) {
  S5_ASSERT(s->state != S5_SESSION_CLOSED && s->handles_open > 0); /* held by its timer from birth */
  s->handles_open++;
}

void s5_session_release(void *session) {
  struct s5_session *s = session;
  S5_ASSERT(s->handles_open > 0 && s->state == S5_SESSION_CLOSED); /* closed handles of an ended one */
  if (--s->handles_open > 0) return;
  S5_ASSERT(!s->conn.flush_queued); /* the relay's flush list does not point here */
  s5_wctx_cfg_release(s->w, s->cfg);
  free((char *)s->rec.name);
  free(s->sniff);
  free(s);
}

static void session_handle_closed(uv_handle_t *handle) { s5_session_release(handle->data); }

/* How the session ended, for its line in the session log. */
static void session_ended(struct s5_session *s, const char *why) {
  if (!s5_session_log_on(s->cfg)) return;
  snprintf(s->end_why, sizeof s->end_why, "%s", why);
  s->rec.end = s->end_why;
}

/* No more lwIP callbacks for this pcb, which lwIP keeps (or freed): not ours. */
static struct tcp_pcb *session_detach_pcb(struct s5_session *s) {
  struct tcp_pcb *pcb = s->conn.pcb;
  if (pcb != NULL) {
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    tcp_err(pcb, NULL);
    s->conn.pcb = NULL;
  }
  return pcb;
}

/* The relay counts its bytes; the session record reports them. */
static void session_sync_bytes(struct s5_session *s) {
  s->rec.bytes_up = s->conn.bytes_up;
  s->rec.bytes_down = s->conn.bytes_down;
}

/* Ends the session's libuv side. reset: close the proxy connection with a
 * RST rather than a FIN, so the proxy drops the far end at once too. */
static void session_close_handles(struct s5_session *s, int reset) {
  S5_ASSERT(s->state != S5_SESSION_CLOSED); /* a session ends once */
  s->state = S5_SESSION_CLOSED;
  session_sync_bytes(s);
  if (s->up_open)
    s5_uptab_ended(s5_uptab(), s->w->index, s->proxy.up->slot, s->rec.bytes_up, s->rec.bytes_down);
  s->up_open = 0;
  s5_session_log(s->w, s->cfg, &s->rec);
  session_unlink(s);
  s5_relay_release(&s->conn);
  uv_timer_stop(&s->timer);
  uv_close((uv_handle_t *)&s->timer, session_handle_closed);
  s5_proxy_close(&s->proxy, reset);
}

/* Both directions are done: let lwIP finish the TCP close on its own. */
void s5_session_finish(struct s5_session *s) {
  if (s->state == S5_SESSION_CLOSED) return;
  struct tcp_pcb *pcb = session_detach_pcb(s);
  if (pcb != NULL && tcp_close(pcb) != ERR_OK) tcp_abort(pcb);
  s5_debug("s%llu closed", (unsigned long long)s->id);
  session_ended(s, "closed");
  session_close_handles(s, 0);
}

/* Resets both sides. Returns ERR_ABRT when it aborted the pcb, which an lwIP
 * callback for that pcb must return; ERR_OK otherwise. */
int s5_session_abort(struct s5_session *s, const char *why) {
  return s5_session_abort_at(s, S5_LOG_INFO, why);
}

int s5_session_abort_at(struct s5_session *s, enum s5_log_level level, const char *why) {
  if (s->state == S5_SESSION_CLOSED) return ERR_OK;
  char line[640]; /* the peer and the longest why (hs_result's 480) */
  if (why != NULL) {
    char peer[128];
    snprintf(line, sizeof line, "s%llu %s: %s", (unsigned long long)s->id,
             s5_session_peer(s, peer, sizeof peer), why);
    s5_debug("%s", line);
    s5_wctx_failure(s->w, level, line);
  }
  session_ended(s, why != NULL ? why : "reset: s5tund stopped");
  struct tcp_pcb *pcb = session_detach_pcb(s);
  if (pcb != NULL) tcp_abort(pcb);
  session_close_handles(s, 1);
  return pcb != NULL ? ERR_ABRT : ERR_OK;
}

void s5_sessions_list(const struct s5_sessions *t, struct s5_connq *q) {
  const struct s5_wctx *w = t->w;
  for (const struct s5_session *s = t->list; s != NULL; s = s->next) {
    struct s5_conn c;
    s5_session_record_entry(&s->rec, &c);
    c.bytes_up = s->conn.bytes_up;
    c.bytes_down = s->conn.bytes_down;
    c.last_ms = s->last_active;
    c.state = w->draining                                 ? S5_CONN_DRAINING
              : s->state != S5_SESSION_RELAY              ? S5_CONN_CONNECTING
              : (s->conn.client_eof || s->conn.proxy_eof) ? S5_CONN_HALF_CLOSED
                                                          : S5_CONN_OPEN;
    s5_conntab_put(q, &c);
  }
}

/* lwIP freed the pcb (RST from the client, or retransmissions gave up; or,
 * ERR_CLSD, the client connection closed in order on both sides before the
 * session let go of it: the last ACK of LAST_ACK, the end of its TIME_WAIT
 * (lwIP patch 0009), or a new connection from the same client port ending
 * that TIME_WAIT early (patch 0008)). */
static void session_pcb_error(void *arg, err_t err) {
  struct s5_relay_conn *c = arg;
  if (c == NULL) return;
  struct s5_session *s = c->owner;
  s->conn.pcb = NULL;
  s5_debug("s%llu client side ended (lwIP error %d)", (unsigned long long)s->id, (int)err);
  if (s->state == S5_SESSION_CLOSED) return;
  if (err == ERR_CLSD && s->conn.client_eof && s->conn.proxy_eof) {
    /* Nothing more to exchange with the client: the relay still writes
     * what the client sent to the proxy and half-closes it, then finishes
     * the session (relay_check_done) as it would have with the pcb. */
    return;
  }
  if (err == ERR_RST) {
    session_ended(s, "reset by the client");
  } else {
    char why[64];
    snprintf(why, sizeof why, "client connection lost (lwIP error %d)", (int)err);
    session_ended(s, why);
  }
  session_close_handles(s, 1);
}

/* Bytes flow both ways: first what the proxy sent along with its CONNECT
 * reply, then the proxy's reads. ERR_ABRT when the session was aborted. */
static err_t session_relay_start(struct s5_session *s) {
  err_t r = s5_relay_start(&s->conn, s->proxy.in, s->proxy.in_len);
  s->proxy.in_len = 0; /* delivered (or the session is gone) */
  if (r == ERR_OK && s->proxy.pump != NULL) s5_relay_pump(&s->conn, s->proxy.pump); /* TLS, Shadowsocks */
  return r;
}

/* The listener's accept callback: the client's ACK completed the handshake
 * we let through. lwIP passes the new pcb's arg: our session, or for a
 * connection the mapped resolver took at its SYN, that one's. */
static err_t session_on_accept(void *arg, struct tcp_pcb *pcb, err_t err) {
  struct s5_relay_conn *c = arg;
  if (err == ERR_OK && s5_dns_tcp_owns(pcb)) return ERR_OK; /* dns_tcp.c's, served since its SYN */
  if (c == NULL || err != ERR_OK) return ERR_VAL;
  struct s5_session *s = c->owner;
  S5_ASSERT(s->state == S5_SESSION_SYNACK); /* lwIP accepts only after our SYN-ACK */
  s->state = S5_SESSION_RELAY;
  s5_session_touch(s);
  int sniffing = s->sniff != NULL && s->sniff->state == S5_SNIFFING_WAIT; /* its timeout first */
  uint64_t ms = sniffing ? s->cfg->sniff.timeout : s->cfg->session.tcp_idle_timeout * 1000ull;
  uv_timer_start(&s->timer, session_timer_fired, ms, 0);
  if (s5_relay_early(&s->conn))
    return ERR_OK; /* [socks5] optimistic: the relay starts at the CONNECT reply */
  return session_relay_start(s);
}

/* Process mode: from its SYN-ACK on, the flow is in the queue's shared
 * table, so that the supervisor can reset the client if this worker dies
 * (threads/recovery/flowreset.c). Once per session, nothing per packet. */
static void session_track(struct s5_session *s) {
  const struct tcp_pcb *pcb = s->conn.pcb;
  struct s5_flow f;
  memset(&f, 0, sizeof f);
  f.v6 = IP_IS_V6(&pcb->local_ip);
  s5_addr_bytes(&pcb->remote_ip, f.client);
  s5_addr_bytes(&pcb->local_ip, f.remote);
  f.client_port = pcb->remote_port;
  f.remote_port = pcb->local_port;
  s->flow_ref = s5_flowtab_add(s->w->flows, &f);
  if (s->flow_ref == 0) S5_STAT_ADD(s->w->stats, tcp_untracked, 1);
}

/* After the SYN-ACK the client has at least this long to complete its
 * handshake: one round trip, and the loop's turn for its ACK, even when
 * the CONNECT took nearly all of connect-timeout (a busy proxy). */
#define S5_SYNACK_MIN_MS 1000

/* CONNECT succeeded (or, [socks5] optimistic, was sent): answer the
 * client's SYN now. The client has what is left of connect-timeout
 * (counted from its SYN, as the proxy client's was), at least
 * S5_SYNACK_MIN_MS, to complete its handshake. */
static void session_answer(struct s5_session *s) {
  S5_ASSERT(s->state == S5_SESSION_CONNECTING);
  s->state = S5_SESSION_SYNACK;
  uint64_t budget = s->cfg->session.connect_timeout * 1000ull;
  uint64_t spent = uv_now(&s->w->loop) - s->rec.started_ms;
  uint64_t left = spent < budget ? budget - spent : 0;
  uv_timer_start(&s->timer, session_timer_fired, left > S5_SYNACK_MIN_MS ? left : S5_SYNACK_MIN_MS, 0);
  if (s->w->flows != NULL) session_track(s);
}

void s5_session_established(struct s5_session *s) {
  if (s5_relay_early(&s->conn)) { /* [socks5] optimistic: the client had its SYN-ACK at once */
    s5_relay_granted(&s->conn);
    if (s->state == S5_SESSION_RELAY) session_relay_start(s);
    return;
  }
  session_answer(s);
  tcp_output(s->conn.pcb);
}

/* [sniff]: decided (a name, none, or the timeout): the proxy now, by the
 * route with the name; refused (block), the client is reset. */
static int session_sniffed(struct s5_session *s) {
  uv_timer_start(&s->timer, session_timer_fired, s->cfg->session.tcp_idle_timeout * 1000ull, 0);
  if (s->tab->start_proxy(s) == 0) return ERR_OK;
  S5_STAT_ADD(s->w->stats, socks5_connect_failed, 1);
  return s5_session_abort(s, s->rec.upstream != NULL && strcmp(s->rec.upstream, "block") == 0
                               ? "blocked by [rules] by its name"
                               : "no upstream for it");
}

static void session_timer_fired(uv_timer_t *timer) {
  struct s5_session *s = timer->data;
  if (s->state == S5_SESSION_RELAY && s->sniff != NULL && s->sniff->state == S5_SNIFFING_WAIT) {
    s5_sniffing_timeout(s); /* a server-first protocol, or a silent client: by address */
    session_sniffed(s);
    return;
  }
  if (s->state == S5_SESSION_SYNACK) {
    /* The proxy connected and the SYN-ACK went out, but the client never
     * completed its handshake: a half-open client (a SYN flood, a spoofed
     * source), not a proxy failure. */
    S5_STAT_ADD(s->w->stats, tcp_handshake_timeout, 1);
    s5_session_abort(s, "client did not complete the TCP handshake within connect-timeout");
    return;
  }
  /* Before the SYN-ACK the timer is not running: the proxy client's
   * connect-timeout covers that part (proxy.c). */
  uint64_t idle_ms = s->cfg->session.tcp_idle_timeout * 1000ull;
  uint64_t quiet = uv_now(&s->w->loop) - s->last_active;
  if (quiet >= idle_ms) {
    s5_session_abort(s, "idle timeout");
    return;
  }
  uv_timer_start(timer, session_timer_fired, idle_ms - quiet, 0);
}

/* What the relay tells its session (core/tcp/relay.h). */
static void session_relay_touch(void *owner) { s5_session_touch(owner); }
static void session_relay_finished(void *owner) { s5_session_finish(owner); }
static int session_relay_failed(void *owner, const char *why) { return s5_session_abort(owner, why); }
/* [socks5] optimistic: the client's first bytes go on this proxy connection;
 * a pooled one that dies before its reply is no longer retried elsewhere
 * (the bytes are gone with it): the client is reset instead. */
static void session_relay_sending(void *owner) {
  struct s5_session *s = owner;
  s5_proxy_data_ok(&s->proxy);
}

/* The relay reads and writes through the pump: the pair's end closes. */
static void session_relay_handed(void *owner) { s5_proxy_sock_drop(&((struct s5_session *)owner)->proxy); }

/* Held bytes came (or the FIN): enough for a name? */
static int session_relay_held(void *owner) {
  struct s5_session *s = owner;
  if (s->sniff == NULL || s->sniff->state != S5_SNIFFING_WAIT || !s5_sniffing_look(s)) return ERR_OK;
  return session_sniffed(s);
}

static const struct s5_relay_ops session_relay_ops = {
  .touch = session_relay_touch,
  .finished = session_relay_finished,
  .failed = session_relay_failed,
  .sending = session_relay_sending,
  .held = session_relay_held,
  .handed = session_relay_handed,
};

static struct s5_session *session_new(struct s5_sessions *t, struct tcp_pcb *pcb) {
  struct s5_wctx *w = t->w;
  struct s5_session *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->tab = t;
  s->w = w;
  s->cfg = s5_wctx_cfg_hold(w); /* what it started with, whatever a reload brings */
  s->id = ++t->next_id;
  s->rec = (struct s5_session_record){.kind = 's',
                                      .id = s->id,
                                      .client_port = pcb->remote_port,
                                      .dest_port = pcb->local_port,
                                      .started_ms = uv_now(&w->loop),
                                      .end = "?"};
  ip_addr_copy(s->rec.client, pcb->remote_ip);
  ip_addr_copy(s->rec.dest, pcb->local_ip);
  s->state = S5_SESSION_CONNECTING;
  uv_timer_init(&w->loop, &s->timer);
  s->timer.data = s;
  s->handles_open = 1; /* its timer's */
  return s;
}

/* The listener's SYN callback: a client wants a connection. The SYN-ACK
 * waits (ERR_INPROGRESS) until the proxy has connected. Returning anything
 * else makes lwIP refuse the SYN with a RST. */
static err_t session_on_syn(void *arg, struct tcp_pcb *pcb) {
  struct s5_sessions *t = arg;
  struct s5_wctx *w = t->w;
  if (w->draining || w->stopping) {
    S5_STAT_ADD(w->stats, drop_draining, 1);
    return ERR_MEM;
  }
  /* The mapped resolver's: answered here, before any proxy work. */
  enum s5_dns_dest dns = s5_dns_dest(w->cfg, &pcb->local_ip, pcb->local_port);
  if (dns != S5_DNS_PASS) return s5_dns_tcp_accept(&t->dns, pcb, dns);
  unsigned max = w->cfg->session.max_sessions;
  if (max != 0 && w->stats->tcp_active >= max) {
    S5_STAT_ADD(w->stats, drop_max_sessions, 1);
    return ERR_MEM;
  }
  if (s5_sessions_loop(t, pcb)) return ERR_MEM;
  struct s5_session *s = session_new(t, pcb);
  if (s == NULL) {
    S5_STAT_ADD(w->stats, drop_no_memory, 1);
    return ERR_MEM;
  }
  session_link(s);
  s5_session_touch(s);

  s5_relay_attach(&s->conn, t->relay, pcb, (uv_stream_t *)&s->proxy.sock, &session_relay_ops, s);
  tcp_err(pcb, session_pcb_error);
  s5_pcb_tune(w, pcb, s->cfg->session.tcp_buffer);
  tcp_nagle_disable(pcb); /* the client already coalesced; do not delay its peer's bytes */

  /* start_proxy picks the upstream (an optimistic one: s5_session_optimistic) */
  if (t->start_proxy(s) < 0) {
    /* Refused before lwIP let go of the SYN: let lwIP send the RST. */
    session_detach_pcb(s);
    S5_STAT_ADD(w->stats, socks5_connect_failed, 1);
    session_close_handles(s, 0);
    return ERR_MEM;
  }
  char peer[128];
  s5_debug("s%llu new %s", (unsigned long long)s->id, s5_session_peer(s, peer, sizeof peer));
  if (s5_relay_early(&s->conn)) {
    session_answer(s);
    return ERR_OK; /* lwIP sends the SYN-ACK */
  }
  return ERR_INPROGRESS;
}

void s5_session_optimistic(struct s5_session *s) {
  /* The SYN-ACK now; the client's bytes wait until the request is out; a
   * refused CONNECT resets the client later. Once per session: a failover
   * to another optimistic upstream finds it held already. */
  if (!s5_relay_early(&s->conn)) s5_relay_hold(&s->conn);
}

/* ---- the table ---- */

void s5_sessions_init(struct s5_sessions *t, struct s5_wctx *w, struct s5_relay *relay,
                      s5_start_proxy_fn start_proxy) {
  memset(t, 0, sizeof *t);
  t->w = w;
  t->relay = relay;
  t->start_proxy = start_proxy;
  s5_dns_tcp_init(&t->dns, w);
}

/* The one listening pcb: SYNs to every address and port end up here. */
int s5_sessions_listen(struct s5_sessions *t) {
  t->listener = tcp_new_any_dest_listener();
  if (t->listener == NULL) {
    s5_error("lwIP could not create the listener");
    return -1;
  }
  tcp_arg(t->listener, t);
  tcp_syn(t->listener, session_on_syn);
  tcp_accept(t->listener, session_on_accept);
  return 0;
}

static void sessions_close_listener(struct s5_sessions *t) {
  if (t->listener != NULL) {
    tcp_close(t->listener); /* from now on lwIP answers SYNs with a RST */
    t->listener = NULL;
  }
}

int s5_sessions_empty(const struct s5_sessions *t) { return t->list == NULL; }

void s5_sessions_drain(struct s5_sessions *t, void (*drained)(void *arg), void *arg) {
  sessions_close_listener(t);
  t->drained = drained;
  t->drained_arg = arg;
  if (t->list == NULL) drained(arg);
}

void s5_sessions_stop(struct s5_sessions *t) {
  sessions_close_listener(t);
  t->drained = NULL; /* a reset is no drain coming to its end */
  while (t->list != NULL) s5_session_abort(t->list, NULL);
  s5_dns_tcp_stop(&t->dns);
}
