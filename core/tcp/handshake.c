/* SPDX-License-Identifier: MIT */
/* The proxy side of a new session: what it asks of the SOCKS5 client
 * (proxy.c), a CONNECT to the client's original destination (by name for a
 * mapped DNS address, so the proxy resolves it), and what the answer means
 * for the session: the SYN-ACK for the client, or a reset. The session
 * table reaches it through its start_proxy pointer, which the worker sets
 * (the packet fuzzer sets its own scripted proxy, test/fuzz/fuzz_packet.c). */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "base/log.h"
#include "outbound/route.h"
#include "shared/uptab.h"
#include "socks5/pool.h"
#include "sniff/sniff.h"
#include "tcp/handshake.h"

#include "lwip/tcp.h"

/* Why a failure lets the session move on: not once the client's own
 * bytes may have gone to the failed upstream (optimistic, after the
 * request), nor once connect-timeout (from the SYN, over every upstream
 * tried) is spent. Returns the time left, 0 for none. */
static uint64_t hs_time_left(const struct s5_session *s, int again) {
  uint64_t end = s->rec.started_ms + s->cfg->session.connect_timeout * 1000ull, now = uv_now(&s->w->loop);
  if (!again && (s->conn.early == S5_RELAY_EARLY_KICKED || s->conn.early == S5_RELAY_EARLY_SENT)) return 0;
  return now < end ? end - now : 0;
}

/* [sniff]: the client's bytes that went behind the request are all in the
 * copy sniffing kept: they can go again, to the next upstream. */
static int hs_again(const struct s5_session *s) {
  return s->sniff != NULL && s->conn.early != S5_RELAY_EARLY_GRANTED && s->conn.bytes_up <= s->sniff->len;
}

/* An upstream failed the set-up: counted by the route, which names the
 * next one, unseen by the client. 0 when the set-up goes on there. */
static int hs_failover(struct s5_session *s, const struct s5_proxy_result *r) {
  if (s->proxy.up->type == S5_UPSTREAM_DIRECT) return -1; /* direct: the destination's answer */
  int again = hs_again(s);
  uint64_t left = hs_time_left(s, again);
  unsigned from = (unsigned)s->route.up;
  const struct s5_upstream_cfg *next = s5_route_next(&s->route, r->cause, r->every, r->why, left != 0);
  if (next == NULL) return -1;
  if (again) { /* the copy goes first on the next one (hs_requested) */
    s->sniff->again = (uint16_t)s->conn.bytes_up;
    s5_proxy_data_again(&s->proxy);
  }
  if (s5_proxy_retry(&s->proxy, next, left) < 0) return -1;
  s->rec.upstream = next->name;
  char line[300]; /* silence is a warning (through the limiter); the rest, debug */
  snprintf(line, sizeof line, "s%llu upstream %s failed (%s): trying %s", (unsigned long long)s->id,
           s->cfg->upstreams[from].name, r->why, next->name);
  s5_debug("%s", line);
  if (r->slow) s5_wctx_failure(s->w, S5_LOG_WARN, line);
  return 0;
}

/* A failure's text with the rule that chose the outbound, when there are rules. */
static const char *hs_why(const struct s5_session *s, const char *why, char *buf, size_t len) {
  if (s->rec.rule[0] == '\0') return why;
  snprintf(buf, len, "%s (rule %s)", why, s->rec.rule);
  return buf;
}

/* No answer within the upstream's handshake-timeout: the next upstream
 * (counted toward down), or, with none to move to, on waiting. */
static void hs_slow(void *session, const struct s5_proxy_result *r) {
  struct s5_session *s = session;
  if (s->state == S5_SESSION_CLOSED || hs_failover(s, r) == 0) return;
  s5_debug("s%llu upstream %s: %s; no other upstream to try, waiting on", (unsigned long long)s->id,
           s->proxy.up->name, r->why);
}

/* Queue 0: what the checks of down upstreams CONNECT to without [balance]
 * check-target: the last destination reached through a proxy. */
static void hs_reached(struct s5_session *s) {
  if (s->w->index != 0 || s->cfg->n_upstreams < 2 || s->proxy.up->type == S5_UPSTREAM_DIRECT) return;
  s->w->reached.addr = s->route.target.addr;
  snprintf(s->w->reached.name, sizeof s->w->reached.name, "%s", s->route.target.name);
}

static void hs_result(void *session, const struct s5_proxy_result *r) {
  struct s5_session *s = session;
  char why[480];
  if (s->state == S5_SESSION_CLOSED) return;
  if (r->outcome != S5_PROXY_GRANTED) {
    if (hs_failover(s, r) == 0) return;
    char tried[400]; /* the outbound tried, by name (direct's texts say direct) */
    if (s->proxy.up->type == S5_UPSTREAM_DIRECT)
      snprintf(tried, sizeof tried, "%s", r->why != NULL ? r->why : "direct");
    else
      snprintf(tried, sizeof tried, "upstream %s%s%s", s->proxy.up->name, r->why != NULL ? ": " : "",
               r->why != NULL ? r->why : "");
    s5_session_abort_at(s, r->level, hs_why(s, tried, why, sizeof why));
  } else {
    s->rec.upstream = s->proxy.up->name;
    hs_reached(s);
    if (s->proxy.up->type != S5_UPSTREAM_DIRECT && s5_uptab() != NULL) {
      s5_route_granted(&s->route, s->w->index, (uv_now(&s->w->loop) - s->rec.started_ms) * 1000);
      s->up_open = 1;
    }
    if (s->sniff != NULL) s5_sniffing_granted(s); /* the copy is not needed any more */
    s5_session_established(s);
  }
}

static void hs_again_written(uv_write_t *req, int status) {
  struct s5_session *s = req->data; /* a failure fails the relay's next write, or the reply */
  (void)status;
  s->sniff->writing = 0;
  if (s->sniff->state == S5_SNIFFING_GRANTED) s5_sniffing_free(s);
}

/* [socks5] optimistic: the client's bytes that came meanwhile follow the
 * request; [sniff] after a failover, first those the last upstream took.
 * A sniffed session's bytes follow the request only to an upstream with
 * optimistic (it reads its connection as a stream; microsocks drops what
 * comes with the CONNECT): to the others after the reply. */
static void hs_requested(void *session) {
  struct s5_session *s = session;
  struct s5_sniffing *h = s->sniff;
  if (!s5_relay_early(&s->conn) || (h != NULL && !s->proxy.up->optimistic)) return;
  if (h != NULL && h->again > 0) {
    uv_buf_t b = uv_buf_init((char *)h->buf, h->again);
    h->again = 0;
    s5_proxy_data_ok(&s->proxy);
    h->write_req.data = s;
    if (uv_write(&h->write_req, (uv_stream_t *)&s->proxy.sock, &b, 1, hs_again_written) < 0)
      s5_debug("s%llu: the held bytes could not be written again", (unsigned long long)s->id);
    else h->writing = 1;
  }
  s5_relay_kick(&s->conn);
}

/* The pooled connection the request went out on died before the reply,
 * with none of the client's bytes on it: they wait for the fresh one's. */
static void hs_withdrawn(void *session) {
  struct s5_session *s = session;
  if (s5_relay_early(&s->conn)) s5_relay_unkick(&s->conn);
}

static const struct s5_proxy_ops hs_ops = {
  .cmd = S5_PROXY_CONNECT,
  .requested = hs_requested,
  .withdrawn = hs_withdrawn,
  .result = hs_result,
  .slow = hs_slow,
  .closed = s5_session_release,
};

/* [rules] direct: s5tund connects to the destination itself; refused at
 * once when the destination would come back into the device (a loop). */
static int hs_direct(struct s5_session *s) {
  char why[400], ruled[480], line[640], peer[128];
  s5_proxy_use(&s->proxy, &s->cfg->direct, &s->route.target);
  s->rec.upstream = s->cfg->direct.name;
  int r = s5_proxy_start(&s->proxy, why, sizeof why);
  if (r == 0) return 0;
  s5_debug("s%llu direct: %s", (unsigned long long)s->id, why);
  if (r == UV_ELOOP) {
    S5_STAT_ADD(s->w->stats, drop_proxy_loop, 1);
    snprintf(line, sizeof line, "s%llu %s: %s", (unsigned long long)s->id,
             s5_session_peer(s, peer, sizeof peer), hs_why(s, why, ruled, sizeof ruled));
    s5_wctx_failure(s->w, S5_LOG_WARN, line);
  }
  return -1;
}

/* The route's rule, group and name for the session log. */
static void hs_record(struct s5_session *s) {
  memcpy(s->rec.rule, s->route.label, sizeof s->rec.rule);
  s->rec.group = s5_route_group_name(&s->route); /* in s->cfg, held as long as s */
  s->rec.named_by = s->route.named > S5_NAME_MAPPED ? s5_name_src_str(s->route.named) : NULL;
}

/* The session's route, from the SYN's addresses: lwIP's "any destination"
 * listener gave the accepted pcb the client's destination as its local
 * address. */
static enum s5_route_kind hs_route(struct s5_session *s) {
  struct sockaddr_storage dst, src;
  s5_addr_to_sockaddr(&s->conn.pcb->local_ip, s->conn.pcb->local_port, &dst);
  s5_addr_to_sockaddr(&s->conn.pcb->remote_ip, s->conn.pcb->remote_port, &src);
  enum s5_route_kind k = s5_route_init(&s->route, s->cfg, IPPROTO_TCP, &dst, &src);
  if (s->route.target.name[0] != '\0') s5_session_named(s, s->route.target.name); /* the session log */
  hs_record(s);
  return k;
}

static int hs_go(struct s5_session *s, enum s5_route_kind kind);

/* [sniff]: a name (or none) was learnt; the route with it. */
static int hs_named(struct s5_session *s) {
  struct sockaddr_storage src;
  const struct s5_sniffing *h = s->sniff;
  s5_addr_to_sockaddr(&s->rec.client, s->rec.client_port, &src);
  enum s5_route_kind k = s5_route_named(&s->route, h->src != S5_NAME_NONE ? h->name : NULL, h->src, &src);
  if (s->route.named != S5_NAME_NONE) s5_session_named(s, h->name);
  hs_record(s);
  s5_debug("s%llu sniffed %s%s%s: rule %s", (unsigned long long)s->id,
           h->src != S5_NAME_NONE ? s5_name_src_str(h->src) : "no name", h->src != S5_NAME_NONE ? " " : "",
           h->name, s->rec.rule);
  return hs_go(s, k);
}

/* [sniff]: the route could go elsewhere by name: the first bytes first,
 * unless the destination failed too often. 1 when sniffing. */
static int hs_sniff(struct s5_session *s) {
  struct sockaddr_storage src;
  if (s5_sniff_skipped(&s->tab->skips, IPPROTO_TCP, &s->rec.dest, s->rec.dest_port, uv_now(&s->w->loop)))
    S5_STAT_ADD(s->w->stats, sniff_skipped, 1);
  else if (s5_sniffing_begin(s, s->route.sniff) == 0) return 1;
  s5_addr_to_sockaddr(&s->rec.client, s->rec.client_port, &src);
  s5_route_named(&s->route, NULL, S5_NAME_NONE, &src); /* by address: its rule counted */
  hs_record(s);
  return 0;
}

/* Start the proxy on the route; each failure asks the route for the next
 * upstream (hs_failover). Called again for a sniffing session once it
 * knows (tcp/session.h). */
int s5_handshake_start(struct s5_session *s) {
  if (s->sniff != NULL) return hs_named(s);
  s5_proxy_init(&s->proxy, s->w, s->cfg, &hs_ops, s);
  s5_session_retain(s);
  enum s5_route_kind kind = hs_route(s);
  if (s->route.sniff != 0 && hs_sniff(s)) return 0; /* s5_session_optimistic's way: SYN-ACK now */
  return hs_go(s, kind);
}

static int hs_go(struct s5_session *s, enum s5_route_kind kind) {
  char why[200];
  switch (kind) {
    case S5_ROUTE_GONE:
      s5_debug("s%llu refused: its mapped address stands for no name any more", (unsigned long long)s->id);
      return -1;
    case S5_ROUTE_BLOCK:
      s->rec.upstream = "block";
      s5_debug("s%llu blocked by [rules] (rule %s)", (unsigned long long)s->id, s->rec.rule);
      return -1;
    case S5_ROUTE_DIRECT: return hs_direct(s);
    case S5_ROUTE_PROXY: break;
  }
  const struct s5_upstream_cfg *up = s5_route_first(&s->route, why, sizeof why);
  if (up == NULL) {
    s->rec.upstream =
      s->route.outbound < S5_OUTBOUND_DIRECT ? s->cfg->upstreams[s->route.outbound].name : "none";
    s5_debug("s%llu refused: %s", (unsigned long long)s->id, why);
    return -1;
  }
  for (; up != NULL; up = s5_route_skip(&s->route)) {
    s5_proxy_use(&s->proxy, up, &s->route.target);
    s->rec.upstream = up->name;
    if (up->optimistic) s5_session_optimistic(s);
    /* A warm pooled connection when there is one: its CONNECT goes out now. */
    if (s5_pool_connect(s5_session_pool(s), &s->proxy, why, sizeof why) == 0) return 0;
    if (s->proxy.sock_open) break; /* a socket is in play: the session closes it */
  }
  char line[260];
  snprintf(line, sizeof line, "s%llu %s", (unsigned long long)s->id, why);
  s5_debug("%s", line);
  s5_wctx_failure(s->w, S5_LOG_WARN, line);
  return -1;
}
