/* SPDX-License-Identifier: MIT */
/* The shared counters as text, for their readers only: the stats socket's
 * JSON document and its parse by --stats, the --stats table, and the line
 * SIGUSR1 logs. Workers only count (core/shared/stats.h). */
#include "threads/ctl/stats_render.h"
#include "threads/ctl/render.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static size_t json_object(char *buf, size_t cap, size_t at, const struct s5_queue_stats *st, int queue) {
  at = s5_render_put(buf, cap, at, "{");
  if (queue >= 0)
    at = s5_render_put(buf, cap, at, "\"queue\":%d,\"pid\":%d,\"ready\":%u,", queue, st->pid, st->ready);
#define S5_STATS_JSON(name, kind, help) \
  at = s5_render_put(buf, cap, at, "\"" #name "\":%" PRIu64 ",", st->name);
  S5_STATS_COUNTERS(S5_STATS_JSON)
#undef S5_STATS_JSON
  at--; /* the last comma */
  return s5_render_put(buf, cap, at, "}");
}

const struct s5_render_part *const s5_render_parts[] = {&s5_upstreams_part, &s5_groups_part, &s5_rules_part};
const size_t s5_render_part_count = sizeof s5_render_parts / sizeof s5_render_parts[0];

size_t s5_stats_json(const struct s5_stats_area *a, char *buf, size_t cap) {
  struct s5_queue_stats st;
  s5_stats_read(a, a->queues, &st);
  size_t at = s5_render_put(
    buf, cap, 0,
    "{\"started\":%" PRIu64 ",\"queue_count\":%u,\"reloads\":%" PRIu64 ",\"reload_failures\":%" PRIu64
    ",\"last_reload\":%" PRIu64 ",\"tun_tx_dropped\":%" PRIu64 ",\"totals\":",
    a->started_unix, a->queues, S5_STAT_GET(a, reloads), S5_STAT_GET(a, reload_failures),
    S5_STAT_GET(a, last_reload_unix), S5_STAT_GET(a, tun_tx_dropped));
  at = json_object(buf, cap, at, &st, -1);
  at = s5_render_put(buf, cap, at, ",\"queues\":[");
  for (unsigned i = 0; i < a->queues; i++) {
    s5_stats_read(a, i, &st);
    if (i > 0) at = s5_render_put(buf, cap, at, ",");
    at = json_object(buf, cap, at, &st, (int)i);
  }
  at = s5_render_put(buf, cap, at, "]");
  for (size_t i = 0; i < s5_render_part_count; i++) at = s5_render_parts[i]->json(buf, cap, at);
  return s5_render_put(buf, cap, at, "}\n");
}

/* Reads "name":number pairs of one flat object starting at p ('{'). Returns
 * the position after its '}', or NULL. */
static const char *parse_object(const char *p, struct s5_queue_stats *st) {
  memset(st, 0, sizeof *st);
  if (*p != '{') return NULL;
  for (p++; *p != '}';) {
    if (*p == ',') p++;
    char name[64];
    const char *q = p[0] == '"' ? strchr(p + 1, '"') : NULL;
    if (q == NULL || (size_t)(q - p - 1) >= sizeof name || q[1] != ':') return NULL;
    memcpy(name, p + 1, (size_t)(q - p - 1));
    name[q - p - 1] = '\0';
    char *end;
    uint64_t v = strtoull(q + 2, &end, 10);
    if (end == q + 2) return NULL;
    p = end;
#define S5_STATS_PARSE(field, ...) \
  if (strcmp(name, #field) == 0) st->field = v;
    S5_STATS_COUNTERS(S5_STATS_PARSE)
    S5_STATS_PARSE(ready, COUNT, "")
#undef S5_STATS_PARSE
    if (strcmp(name, "pid") == 0) st->pid = (int32_t)v;
    if (*p != ',' && *p != '}') return NULL;
  }
  return p + 1;
}

int s5_stats_parse(const char *json, struct s5_queue_stats *totals, struct s5_queue_stats *queues,
                   unsigned max) {
  const char *p = strstr(json, "\"totals\":");
  if (p == NULL || (p = parse_object(p + 9, totals)) == NULL) return -1;
  if (strncmp(p, ",\"queues\":[", 11) != 0) return -1;
  p += 11;
  unsigned n = 0;
  while (*p == '{' || *p == ',') {
    if (*p == ',') p++;
    struct s5_queue_stats st;
    if ((p = parse_object(p, &st)) == NULL) return -1;
    if (n < max) queues[n] = st;
    n++;
  }
  return *p == ']' ? (int)(n < max ? n : max) : -1;
}

static void table_row(FILE *out, const char *label, const struct s5_queue_stats *st) {
  fprintf(out,
          "%-6s %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64 " %7" PRIu64 " %9" PRIu64 " %7" PRIu64
          " %9" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
          label, st->tun_rx_packets, st->tun_rx_bytes, st->tun_tx_packets, st->tun_tx_bytes, st->tcp_active,
          st->tcp_total, st->udp_active, st->udp_total,
          st->socks5_connect_failed + st->socks5_auth_failed + st->socks5_refused + st->socks5_bad_reply +
            st->socks5_timeout,
          st->drop_tun_write + st->drop_max_sessions + st->drop_draining + st->drop_no_memory + st->drop_udp +
            st->drop_dns + st->drop_icmp + st->drop_proxy_loop);
}

void s5_stats_table(FILE *out, const struct s5_queue_stats *totals, const struct s5_queue_stats *queues,
                    unsigned n) {
  fprintf(out, "%-6s %12s %14s %12s %14s %7s %9s %7s %9s %8s %8s\n", "queue", "rx_packets", "rx_bytes",
          "tx_packets", "tx_bytes", "tcp", "tcp_total", "udp", "udp_total", "s5_fail", "drops");
  for (unsigned i = 0; i < n; i++) {
    char label[16];
    snprintf(label, sizeof label, "%u", i);
    table_row(out, label, &queues[i]);
  }
  table_row(out, "total", totals);
}

void s5_stats_summary(const struct s5_queue_stats *st, char *buf, size_t len) {
  snprintf(buf, len,
           "tun rx %" PRIu64 " pkts/%" PRIu64 " B, tx %" PRIu64 " pkts/%" PRIu64 " B; tcp %" PRIu64
           " active/%" PRIu64 " total; udp %" PRIu64 " active/%" PRIu64 " total; to proxy %" PRIu64
           " B, from proxy %" PRIu64 " B; socks5 failures %" PRIu64 "; restarts %" PRIu64,
           st->tun_rx_packets, st->tun_rx_bytes, st->tun_tx_packets, st->tun_tx_bytes, st->tcp_active,
           st->tcp_total, st->udp_active, st->udp_total, st->bytes_to_proxy, st->bytes_from_proxy,
           st->socks5_connect_failed + st->socks5_auth_failed + st->socks5_refused + st->socks5_bad_reply +
             st->socks5_timeout,
           st->restarts);
}
