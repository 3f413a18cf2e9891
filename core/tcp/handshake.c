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

#include "dns/dnsmap.h"
#include "base/log.h"
#include "socks5/pool.h"
#include "tcp/handshake.h"

#include "lwip/tcp.h"

/* The address the client asked for: lwIP's "any destination" listener gave
 * the accepted pcb the SYN's destination as its local address. */
static void original_destination(const struct tcp_pcb *pcb, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (IP_IS_V6(&pcb->local_ip)) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(pcb->local_port);
    memcpy(&sin6->sin6_addr, ip_2_ip6(&pcb->local_ip)->addr, 16);
  } else {
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(pcb->local_port);
    sin->sin_addr.s_addr = ip_2_ip4(&pcb->local_ip)->addr;
  }
}

/* The CONNECT's destination: the client's, written by the client in
 * proxy.c as the upstream's type asks. */
static int hs_target(void *session, struct s5_proxy_target *t) {
  struct s5_session *s = session;
  original_destination(s->conn.pcb, &t->addr);
  /* A mapped DNS address: CONNECT by name, the proxy resolves it. */
  int mapped = s5_dnsmap_name_of((struct sockaddr *)&t->addr, t->name, sizeof t->name);
  if (mapped < 0) return -1;
  if (mapped == 0) t->name[0] = '\0';
  if (mapped > 0 && s->rec.name == NULL) s->rec.name = strdup(t->name); /* the session log, --connections */
  return 0;
}

static void hs_result(void *session, const struct s5_proxy_result *r) {
  struct s5_session *s = session;
  if (s->state == S5_SESSION_CLOSED) return;
  if (r->outcome != S5_PROXY_GRANTED) {
    s5_session_abort_at(s, r->level, r->why);
  } else {
    s5_session_established(s);
  }
}

/* [socks5] optimistic: the client's bytes that came meanwhile follow the request. */
static void hs_requested(void *session) {
  struct s5_session *s = session;
  if (s->early) s5_relay_kick(&s->conn);
}

/* The pooled connection the request went out on died before the reply,
 * with none of the client's bytes on it: they wait for the fresh one's. */
static void hs_withdrawn(void *session) {
  struct s5_session *s = session;
  if (s->early) s5_relay_unkick(&s->conn);
}

static const struct s5_proxy_ops hs_ops = {
  .cmd = S5_PROXY_CONNECT,
  .target = hs_target,
  .requested = hs_requested,
  .withdrawn = hs_withdrawn,
  .result = hs_result,
  .closed = s5_session_proxy_closed,
};

int s5_handshake_start(struct s5_session *s) {
  s5_proxy_init(&s->proxy, s->w, s->cfg, &hs_ops, s);
  s->handles_open++;
  char why[160];
  /* A warm pooled connection when there is one: its CONNECT goes out now. */
  if (s5_pool_connect(s->tab->pool, &s->proxy, why, sizeof why) == 0) return 0;
  char line[200];
  snprintf(line, sizeof line, "s%llu %s", (unsigned long long)s->id, why);
  s5_debug("%s", line);
  s5_wctx_failure(s->w, S5_LOG_WARN, line);
  return -1;
}
