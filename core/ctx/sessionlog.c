/* SPDX-License-Identifier: MIT */
/* [log] sessions (sessionlog.h): the line, its budget per second, and a
 * record's --connections entry. */
#include "ctx/sessionlog.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "base/assert.h"
#include "shared/conntab.h"
#include "base/log.h"
#include "ctx/wctx.h"

void s5_session_record_entry(const struct s5_session_record *r, struct s5_conn *c) {
  S5_ASSERT(r->kind == 's' || r->kind == 'u');
  memset(c, 0, sizeof *c);
  c->udp = r->kind == 'u';
  c->v6 = IP_IS_V6(&r->client);
  c->id = r->id;
  s5_addr_bytes(&r->client, c->client);
  c->has_dest = r->dest_port != 0;
  if (c->has_dest) s5_addr_bytes(&r->dest, c->dest);
  c->client_port = r->client_port;
  c->dest_port = r->dest_port;
  c->bytes_up = r->bytes_up;
  c->bytes_down = r->bytes_down;
  c->started_ms = r->started_ms;
  if (r->name != NULL) snprintf(c->name, sizeof c->name, "%s", r->name);
  if (r->name != NULL) snprintf(c->named_by, sizeof c->named_by, "%s", r->named_by ? r->named_by : "mapped");
  if (r->upstream != NULL) snprintf(c->upstream, sizeof c->upstream, "%s", r->upstream);
  if (r->group != NULL) snprintf(c->group, sizeof c->group, "%s", r->group);
  memcpy(c->rule, r->rule, sizeof c->rule);
}

int s5_session_log_on(const struct s5_config *cfg) {
  return cfg->log.sessions && s5_log_enabled(S5_LOG_INFO);
}

/* The outbound it took or tried: an upstream's ADDR:PORT, and (NAME) when
 * there are several, (GROUP/NAME) through a group; direct, block, or none
 * (every upstream down). */
static void proxy_text(const struct s5_config *cfg, const char *group, const char *upstream, char *buf,
                       size_t len) {
  const struct s5_upstream_cfg *up = upstream == NULL ? &cfg->upstreams[0] : NULL;
  for (unsigned i = 0; upstream != NULL && i < cfg->n_upstreams; i++)
    if (strcmp(cfg->upstreams[i].name, upstream) == 0) up = &cfg->upstreams[i];
  if (up == NULL) { /* [rules] direct or block, or none */
    snprintf(buf, len, "%s", upstream);
    return;
  }
  const struct sockaddr_storage *ss = &up->addr;
  s5_sockaddr_str(ss, buf, len);
  size_t at = strlen(buf);
  if (group != NULL) snprintf(buf + at, len - at, " (%s/%s)", group, up->name);
  else if (cfg->n_upstreams > 1) snprintf(buf + at, len - at, " (%s)", up->name);
}

/* A token bucket refilled each second of the worker's loop clock. */
static int session_log_allowed(struct s5_wctx *w, const struct s5_config *cfg) {
  uint64_t now = uv_now(&w->loop);
  if (now - w->slog.second_ms >= 1000) {
    s5_session_log_tick(w);
    w->slog.second_ms = now;
    w->slog.lines = 0;
  }
  if (w->slog.lines < cfg->log.sessions_max_per_second) {
    w->slog.lines++;
    return 1;
  }
  w->slog.dropped++;
  S5_STAT_ADD(w->stats, session_log_dropped, 1);
  return 0;
}

void s5_session_log(struct s5_wctx *w, const struct s5_config *cfg, const struct s5_session_record *r) {
  if (!s5_session_log_on(cfg) || !session_log_allowed(w, cfg)) return;
  char client[S5_ADDR_STRLEN], dest[S5_ADDR_STRLEN], proxy[S5_ADDR_STRLEN + 72];
  s5_addr_port_str(&r->client, r->client_port, client, sizeof client);
  s5_addr_port_str(&r->dest, r->dest_port, dest, sizeof dest);
  proxy_text(cfg, r->group, r->upstream, proxy, sizeof proxy);
  S5_ASSERT(uv_now(&w->loop) >= r->started_ms); /* both on this loop's clock */
  uint64_t ms = uv_now(&w->loop) - r->started_ms;
  s5_info("session %c%llu %s %s -> %s%s%s%s%s%s via %s%s%s: %llu bytes up, %llu down, %llu.%03llu s, %s",
          r->kind, (unsigned long long)r->id, r->kind == 's' ? "tcp" : "udp", client, dest,
          r->name ? " (" : "", r->name ? r->name : "", r->name && r->named_by ? ", " : "",
          r->name && r->named_by ? r->named_by : "", r->name ? ")" : "", proxy, r->rule[0] ? " by rule " : "",
          r->rule, (unsigned long long)r->bytes_up, (unsigned long long)r->bytes_down,
          (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000), r->end);
}

void s5_session_log_tick(struct s5_wctx *w) {
  if (w->slog.dropped == 0) return;
  s5_info(
    "session log: %llu lines over [log] sessions-max-per-second left out (counted in session_log_dropped)",
    (unsigned long long)w->slog.dropped);
  w->slog.dropped = 0;
}
