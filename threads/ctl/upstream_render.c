/* SPDX-License-Identifier: MIT */
/* The upstreams' health and counters as JSON, table and Prometheus text
 * (see render.h). */
#include "threads/ctl/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shared/uptls.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* The numeric fields of a slot: JSON name, Prometheus family (NULL: not
 * one), help. */
/* clang-format off */
#define S5_UP_FIELDS(X)                                                                           \
  X(open, "s5tund_upstream_open_sessions", "gauge", "Sessions open through the upstream now.")           \
  X(total, "s5tund_upstream_sessions_total", "counter", "Sessions the upstream carried.")           \
  X(failed_connect, NULL, NULL, NULL)                                                             \
  X(failed_handshake, NULL, NULL, NULL)                                                           \
  X(failed_auth, NULL, NULL, NULL)                                                                \
  X(failed_timeout, NULL, NULL, NULL)                                                             \
  X(failed_refusing, NULL, NULL, NULL)                                                            \
  X(refused, "s5tund_upstream_refused_total", "counter",                                          \
    "CONNECTs the destination refused through the upstream (not counted against its health).")    \
  X(retried, "s5tund_upstream_retried_total", "counter",                                          \
    "Set-ups that failed here and moved on to another upstream before the client's SYN-ACK.")     \
  X(stream_bad, "s5tund_upstream_stream_bad_total", "counter",                                    \
    "Sessions ended by a bad stream from the upstream (shadowsocks: wrong password or method, tampering, cut short).") \
  X(ss_bad_tag, NULL, NULL, NULL)                                                                 \
  X(ss_replay, NULL, NULL, NULL)                                                                  \
  X(ss_clock_skew, NULL, NULL, NULL)                                                              \
  X(bytes_up, "s5tund_upstream_bytes_up_total", "counter", "Payload bytes to the upstream, counted as sessions end.") \
  X(bytes_down, "s5tund_upstream_bytes_down_total", "counter", "Payload bytes from the upstream, counted as sessions end.") \
  X(tls_handshakes, "s5tund_upstream_tls_handshakes_total", "counter", "TLS handshakes done with the upstream (tls = true).") \
  X(tls_resumed, "s5tund_upstream_tls_resumed_total", "counter", "TLS handshakes with the upstream that resumed a session.")
/* clang-format on */

struct up_copy {
  const char *name;
  uint32_t state, down, why;
  uint64_t hs_le[S5_UP_HS_BUCKETS + 1], hs_sum_us;
  uint64_t since;
  uint64_t tls_failed[S5_TLS_CAUSES];
  struct s5_up_tls tls;
#define S5_UP_FIELD(f, m, ty, h) uint64_t f;
  S5_UP_FIELDS(S5_UP_FIELD)
#undef S5_UP_FIELD
};

static void up_read(const struct s5_up_slot *u, struct up_copy *c) {
  c->name = u->name;
  c->state = LOAD(&u->state);
  for (unsigned b = 0; b <= S5_UP_HS_BUCKETS; b++) c->hs_le[b] = LOAD(&u->hs_le[b]);
  c->hs_sum_us = LOAD(&u->hs_sum_us);
  c->down = LOAD(&u->down);
  c->why = LOAD(&u->why);
  c->since = LOAD(&u->since_unix);
  c->open = LOAD(&u->open);
  c->total = LOAD(&u->total);
  c->failed_connect = LOAD(&u->failed[S5_UP_CONNECT]);
  c->failed_handshake = LOAD(&u->failed[S5_UP_HANDSHAKE]);
  c->failed_auth = LOAD(&u->failed[S5_UP_AUTH]);
  c->failed_timeout = LOAD(&u->failed[S5_UP_TIMEOUT]);
  c->failed_refusing = LOAD(&u->failed[S5_UP_REFUSING]);
  c->failed_refusing = LOAD(&u->failed[S5_UP_REFUSING]);
  c->refused = LOAD(&u->refused);
  c->retried = LOAD(&u->retried);
  c->stream_bad = LOAD(&u->stream_bad);
  c->ss_bad_tag = LOAD(&u->ss_bad[S5_UP_SS_BAD_TAG]);
  c->ss_replay = LOAD(&u->ss_bad[S5_UP_SS_REPLAY]);
  c->ss_clock_skew = LOAD(&u->ss_bad[S5_UP_SS_CLOCK_SKEW]);
  c->bytes_up = LOAD(&u->bytes_up);
  c->bytes_down = LOAD(&u->bytes_down);
  c->tls_handshakes = LOAD(&u->tls_handshakes);
  c->tls_resumed = LOAD(&u->tls_resumed);
  for (unsigned k = 0; k < S5_TLS_CAUSES; k++) c->tls_failed[k] = LOAD(&u->tls_failed[k]);
  s5_uptab_tls_read(u, &c->tls);
}

/* tls = true: the last handshake's state and the refusals by cause. */
static size_t up_tls_json(const struct up_copy *c, char *buf, size_t cap, size_t at) {
  char v[8], s[8];
  at = s5_render_put(buf, cap, at, ",\"tls_version\":\"%s\",\"tls_cipher\":\"%s\",\"tls_name\":\"",
                     s5_tls_version_name(c->tls.version, v, sizeof v),
                     c->tls.version != 0 ? s5_tls_cipher_name(c->tls.cipher, s, sizeof s) : "");
  for (const char *p = c->tls.name; *p != '\0'; p++) /* a name or an address: keep it JSON */
    at =
      s5_render_put(buf, cap, at, "%c", strchr("\"\\{}", *p) != NULL || (unsigned char)*p < 0x20 ? '?' : *p);
  at = s5_render_put(buf, cap, at, "\",\"tls_verified\":%s", c->tls.verified ? "true" : "false");
  for (unsigned k = 0; k < S5_TLS_CAUSES; k++)
    at = s5_render_put(buf, cap, at, ",\"tls_failed_%s\":%" PRIu64, s5_tls_cause_name((enum s5_tls_cause)k),
                       c->tls_failed[k]);
  return at;
}

/* A slot worth showing: an upstream of the configuration, or one a reload
 * removed while sessions through it are still open. */
static int shown(const struct up_copy *c) {
  return c->state == S5_UP_ACTIVE || (c->state == S5_UP_REMOVED && c->open > 0);
}

static const char *state_name(const struct up_copy *c) {
  return c->state == S5_UP_REMOVED ? "removed" : c->down ? "down" : "up";
}

static size_t upstreams_json(char *buf, size_t cap, size_t at) {
  const struct s5_uptab *t = s5_uptab();
  if (t == NULL) return at;
  int first = 1;
  at = s5_render_put(buf, cap, at, ",\"no_upstream\":%" PRIu64 ",\"upstreams\":[", LOAD(&t->no_upstream));
  for (unsigned i = 0; i < t->n; i++) {
    struct up_copy c;
    up_read(&t->u[i], &c);
    if (!shown(&c)) continue;
    /* names are [A-Za-z0-9_.-]: nothing to escape */
    at =
      s5_render_put(buf, cap, at, "%s{\"name\":\"%s\",\"state\":\"%s\",\"since\":%" PRIu64 ",\"why\":\"%s\"",
                    first ? "" : ",", t->u[i].name, state_name(&c), c.since,
                    c.down ? s5_up_cause_name((enum s5_up_cause)c.why) : "");
    first = 0;
#define S5_UP_JSON(f, m, ty, h) at = s5_render_put(buf, cap, at, ",\"" #f "\":%" PRIu64, c.f);
    S5_UP_FIELDS(S5_UP_JSON)
#undef S5_UP_JSON
    at = up_tls_json(&c, buf, cap, at);
    at = s5_render_put(buf, cap, at, "}");
  }
  return s5_render_put(buf, cap, at, "]");
}

#define json_num s5_render_json_num
#define json_str s5_render_json_str

/* tls = true: one line per upstream with a handshake or a refusal. */
static void upstreams_tls_table(FILE *out, const char *p) {
  int head = 0;
  for (p = strchr(p, '{'); p != NULL; p = strchr(p + 1, '{')) {
    const char *end = strchr(p, '}');
    if (end == NULL) break;
    char name[32], version[16], cipher[40], tname[48], refused[160] = "";
    json_str(p, end, "name", name, sizeof name);
    json_str(p, end, "tls_version", version, sizeof version);
    json_str(p, end, "tls_cipher", cipher, sizeof cipher);
    json_str(p, end, "tls_name", tname, sizeof tname);
    size_t at = 0;
    for (unsigned k = 0; k < S5_TLS_CAUSES; k++) {
      char f[32];
      snprintf(f, sizeof f, "tls_failed_%s", s5_tls_cause_name((enum s5_tls_cause)k));
      uint64_t n = json_num(p, end, f);
      if (n != 0 && at < sizeof refused)
        at += (size_t)snprintf(refused + at, sizeof refused - at, "%s%s=%" PRIu64, at ? "," : "",
                               s5_tls_cause_name((enum s5_tls_cause)k), n);
    }
    if (version[0] != '\0' || refused[0] != '\0') {
      if (!head++)
        fprintf(out, "\n%-16s %-8s %-30s %-24s %-8s %9s %9s %s\n", "TLS_of", "version", "cipher", "name",
                "verified", "hshakes", "resumed", "refused");
      const char *ver = strstr(p, "\"tls_verified\":true");
      fprintf(out, "%-16s %-8s %-30s %-24s %-8s %9" PRIu64 " %9" PRIu64 " %s\n", name,
              version[0] ? version : "-", cipher[0] ? cipher : "-", tname[0] ? tname : "-",
              !version[0]        ? "-"
              : ver && ver < end ? "yes"
                                 : "NO",
              json_num(p, end, "tls_handshakes"), json_num(p, end, "tls_resumed"),
              refused[0] ? refused : "-");
    }
    if (end[1] == ']') break;
  }
}

static void upstreams_health_table(FILE *out, const char *json) {
  const char *p = strstr(json, "\"upstreams\":[");
  /* One upstream: the table as it always was (the queue rows say it all). */
  if (p == NULL || strstr(p, "},{") == NULL) return;
  fprintf(out, "\n%-16s %-5s %-19s %6s %9s %8s %8s %8s %8s %8s %8s %8s %14s %14s\n", "upstream", "state",
          "since", "open", "total", "f_conn", "f_hshake", "f_auth", "f_tmout", "f_refuse", "refused",
          "retried", "bytes_up", "bytes_down");
  for (p = strchr(p, '{'); p != NULL; p = strchr(p + 1, '{')) {
    const char *end = strchr(p, '}');
    if (end == NULL) break;
    char name[32], state[10], why[16], since[24] = "-";
    json_str(p, end, "name", name, sizeof name);
    json_str(p, end, "state", state, sizeof state);
    json_str(p, end, "why", why, sizeof why);
    time_t when = (time_t)json_num(p, end, "since");
    struct tm tm;
    if (when != 0 && localtime_r(&when, &tm) != NULL) strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S", &tm);
    char st[32];
    snprintf(st, sizeof st, "%s%s%s", state, why[0] ? "/" : "", why);
    fprintf(out,
            "%-16s %-5s %-19s %6" PRIu64 " %9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
            " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
            name, st, since, json_num(p, end, "open"), json_num(p, end, "total"),
            json_num(p, end, "failed_connect"), json_num(p, end, "failed_handshake"),
            json_num(p, end, "failed_auth"), json_num(p, end, "failed_timeout"),
            json_num(p, end, "failed_refusing"), json_num(p, end, "refused"), json_num(p, end, "retried"),
            json_num(p, end, "bytes_up"), json_num(p, end, "bytes_down"));
    if (end[1] == ']') break;
  }
}

static void upstreams_table(FILE *out, const char *json) {
  upstreams_health_table(out, json);
  const char *p = strstr(json, "\"upstreams\":[");
  if (p != NULL) upstreams_tls_table(out, p);
}

/* The handshake times: from the client's SYN to the upstream's grant,
 * over every upstream tried (a failover's detour counts). */
static size_t up_prom_histogram(const struct up_copy *c, unsigned n, char *buf, size_t cap, size_t at) {
  at = s5_render_put(buf, cap, at,
                     "# HELP s5tund_upstream_handshake_seconds Time from the client's SYN to the upstream's "
                     "grant of its CONNECT.\n# TYPE s5tund_upstream_handshake_seconds histogram\n");
  for (unsigned i = 0; i < n; i++) {
    if (!shown(&c[i])) continue;
    uint64_t cum = 0;
    for (unsigned b = 0; b <= S5_UP_HS_BUCKETS; b++) {
      cum += c[i].hs_le[b];
      char le[16];
      if (b < S5_UP_HS_BUCKETS) snprintf(le, sizeof le, "%g", s5_up_hs_bucket_ms[b] / 1000.0);
      else snprintf(le, sizeof le, "+Inf");
      at = s5_render_put(buf, cap, at,
                         "s5tund_upstream_handshake_seconds_bucket{upstream=\"%s\",le=\"%s\"} %" PRIu64 "\n",
                         c[i].name, le, cum);
    }
    at = s5_render_put(buf, cap, at, "s5tund_upstream_handshake_seconds_sum{upstream=\"%s\"} %.6f\n",
                       c[i].name, c[i].hs_sum_us / 1e6);
    at = s5_render_put(buf, cap, at, "s5tund_upstream_handshake_seconds_count{upstream=\"%s\"} %" PRIu64 "\n",
                       c[i].name, cum);
  }
  return at;
}

/* tls = true: refusals by cause; the last handshake's state as labels of a 1. */
static size_t up_prom_tls(const struct up_copy *c, const struct s5_uptab *t, char *buf, size_t cap,
                          size_t at) {
  at = s5_render_put(buf, cap, at,
                     "# HELP s5tund_upstream_tls_failures_total TLS connections to the upstream refused, by "
                     "cause (name, ca, expired, certificate, alert, version, reset, not_tls, other).\n"
                     "# TYPE s5tund_upstream_tls_failures_total counter\n");
  for (unsigned i = 0; i < t->n; i++) {
    uint64_t any = c[i].tls.version; /* an upstream with TLS: each cause, 0 or not */
    for (unsigned k = 0; k < S5_TLS_CAUSES; k++) any |= c[i].tls_failed[k];
    for (unsigned k = 0; shown(&c[i]) && any != 0 && k < S5_TLS_CAUSES; k++)
      at = s5_render_put(buf, cap, at,
                         "s5tund_upstream_tls_failures_total{upstream=\"%s\",cause=\"%s\"} %" PRIu64 "\n",
                         t->u[i].name, s5_tls_cause_name((enum s5_tls_cause)k), c[i].tls_failed[k]);
  }
  at = s5_render_put(buf, cap, at,
                     "# HELP s5tund_upstream_tls_info The last TLS handshake with the upstream: version, "
                     "cipher suite, the name verified (verified=\"false\": tls-verify = false).\n"
                     "# TYPE s5tund_upstream_tls_info gauge\n");
  for (unsigned i = 0; i < t->n; i++) {
    if (!shown(&c[i]) || c[i].tls.version == 0) continue;
    char v[8], s[8], name[sizeof c[i].tls.name];
    snprintf(name, sizeof name, "%s", c[i].tls.name);
    for (char *p = name; *p != '\0'; p++)
      if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) *p = '?';
    at = s5_render_put(buf, cap, at,
                       "s5tund_upstream_tls_info{upstream=\"%s\",version=\"%s\",cipher=\"%s\",name=\"%s\","
                       "verified=\"%s\"} 1\n",
                       t->u[i].name, s5_tls_version_name(c[i].tls.version, v, sizeof v),
                       s5_tls_cipher_name(c[i].tls.cipher, s, sizeof s), name,
                       c[i].tls.verified ? "true" : "false");
  }
  return at;
}

static size_t upstreams_prom(char *buf, size_t cap) {
  const struct s5_uptab *t = s5_uptab();
  size_t at = 0;
  if (t == NULL) return s5_render_put(buf, cap, 0, "%s", "");
  struct up_copy c[S5_UPTAB_SLOTS];
  for (unsigned i = 0; i < t->n; i++) up_read(&t->u[i], &c[i]);
  at = s5_render_put(
    buf, cap, at,
    "# HELP s5tund_upstream_up 1 while the upstream takes new sessions, 0 while it is down or removed.\n"
    "# TYPE s5tund_upstream_up gauge\n");
  for (unsigned i = 0; i < t->n; i++)
    if (shown(&c[i]))
      at = s5_render_put(buf, cap, at, "s5tund_upstream_up{upstream=\"%s\"} %u\n", t->u[i].name,
                         c[i].state == S5_UP_ACTIVE && !c[i].down ? 1u : 0u); /* removed: takes none */
  at = s5_render_put(
    buf, cap, at,
    "# HELP s5tund_upstream_state_since_seconds When the upstream last went down or up, seconds "
    "since the Unix epoch; 0 = never.\n# TYPE s5tund_upstream_state_since_seconds gauge\n");
  for (unsigned i = 0; i < t->n; i++)
    if (shown(&c[i]))
      at = s5_render_put(buf, cap, at, "s5tund_upstream_state_since_seconds{upstream=\"%s\"} %" PRIu64 "\n",
                         t->u[i].name, c[i].since);
  at = s5_render_put(
    buf, cap, at,
    "# HELP s5tund_upstream_failures_total Set-ups through the upstream that failed for its own "
    "reason, by cause (connect, handshake, auth, timeout, refusing).\n"
    "# TYPE s5tund_upstream_failures_total counter\n");
  for (unsigned i = 0; i < t->n; i++) {
    if (!shown(&c[i])) continue;
    const uint64_t by[S5_UP_CAUSES] = {c[i].failed_connect, c[i].failed_handshake, c[i].failed_auth,
                                       c[i].failed_timeout, c[i].failed_refusing};
    for (unsigned k = 0; k < S5_UP_CAUSES; k++)
      at = s5_render_put(buf, cap, at,
                         "s5tund_upstream_failures_total{upstream=\"%s\",cause=\"%s\"} %" PRIu64 "\n",
                         t->u[i].name, s5_up_cause_name((enum s5_up_cause)k), by[k]);
  }
  at = up_prom_tls(c, t, buf, cap, at);
  static const char *const ss_cause[S5_UP_SS_CAUSES] = {"bad_tag", "replay", "clock_skew"};
  at =
    s5_render_put(buf, cap, at,
                  "# HELP s5tund_upstream_ss_failures_total Shadowsocks streams refused, by cause (bad_tag: "
                  "a wrong password or method, or tampering; replay and clock_skew: 2022).\n"
                  "# TYPE s5tund_upstream_ss_failures_total counter\n");
  for (unsigned i = 0; i < t->n; i++) {
    if (!shown(&c[i])) continue;
    const uint64_t by[S5_UP_SS_CAUSES] = {c[i].ss_bad_tag, c[i].ss_replay, c[i].ss_clock_skew};
    for (unsigned k = 0; k < S5_UP_SS_CAUSES; k++)
      at = s5_render_put(buf, cap, at,
                         "s5tund_upstream_ss_failures_total{upstream=\"%s\",cause=\"%s\"} %" PRIu64 "\n",
                         t->u[i].name, ss_cause[k], by[k]);
  }
#define S5_UP_PROM(f, m, ty, h)                                                                              \
  if (m != NULL) {                                                                                           \
    at = s5_render_put(buf, cap, at, "# HELP %s %s\n# TYPE %s %s\n", (const char *)m, (const char *)h,       \
                       (const char *)m, (const char *)ty);                                                   \
    for (unsigned i = 0; i < t->n; i++)                                                                      \
      if (shown(&c[i]))                                                                                      \
        at = s5_render_put(buf, cap, at, "%s{upstream=\"%s\"} %" PRIu64 "\n", (const char *)m, t->u[i].name, \
                           c[i].f);                                                                          \
  }
  S5_UP_FIELDS(S5_UP_PROM)
#undef S5_UP_PROM
  return up_prom_histogram(c, t->n, buf, cap, at);
}

const struct s5_render_part s5_upstreams_part = {upstreams_json, upstreams_table, upstreams_prom};
