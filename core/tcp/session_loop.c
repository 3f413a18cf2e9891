/* SPDX-License-Identifier: MIT */
/* A session table's guard against a loop: a SYN to an upstream proxy
 * itself (session.h, s5_sessions_loop). */
#include <stdio.h>

#include "base/addr.h"
#include "base/failure.h"
#include "base/log.h"
#include "tcp/session.h"

#include "lwip/tcp.h"

/* A SYN to an upstream proxy itself means the proxy connections are routed
 * into the tunnel (no mark, or a rule missing): carrying it would loop
 * forever. */
static int targets_upstream(const struct sockaddr_storage *ss, const struct tcp_pcb *pcb) {
  ip_addr_t ip;
  uint16_t port;
  return s5_addr_from_sockaddr(ss, &ip, &port) == 0 && port == pcb->local_port &&
         ip_addr_cmp(&ip, &pcb->local_ip);
}

static int session_targets_proxy(const struct s5_wctx *w, const struct tcp_pcb *pcb) {
  for (unsigned i = 0; i < w->cfg->n_upstreams; i++)
    if (targets_upstream(&w->cfg->upstreams[i].addr, pcb)) return 1;
  return 0;
}

static void session_refuse_loop(struct s5_sessions *t) {
  struct s5_wctx *w = t->w;
  S5_STAT_ADD(w->stats, drop_proxy_loop, 1);
  uint64_t now = uv_now(&w->loop);
  if (t->loop_logged_ms != 0 && now - t->loop_logged_ms < S5_FAILURE_LOG_MS)
    return; /* as often as failures */
  t->loop_logged_ms = now;
  const struct s5_config *cfg = w->cfg;
  if (cfg->tun.auto_route && cfg->socks5.mark != 0) /* s5tund's own are marked: not routed here */
    s5_warn(
      "refused a connection to the SOCKS5 proxy's address (%llu so far): an application "
      "connected to the proxy, whose address is never tunneled; with auto-route its traffic "
      "enters the tunnel unless it carries [socks5] mark too",
      (unsigned long long)w->stats->drop_proxy_loop);
  else
    s5_warn(
      "refused a connection to the SOCKS5 proxy itself (%llu so far): the proxy connections "
      "are routed into the tunnel; set [socks5] mark and route marked packets outside it",
      (unsigned long long)w->stats->drop_proxy_loop);
}

int s5_sessions_loop(struct s5_sessions *t, const struct tcp_pcb *pcb) {
  if (!session_targets_proxy(t->w, pcb)) return 0;
  session_refuse_loop(t);
  return 1;
}
