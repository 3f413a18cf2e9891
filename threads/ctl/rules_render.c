/* SPDX-License-Identifier: MIT */
/* The [rules] counters as text (see render.h). */
#include "threads/ctl/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shared/rules.h"

/* Rules listed one by one (those hit most); the rest only in their
 * outbound's sum: a 100,000-line list must not make a 100,000-line page. */
#define RULES_SHOWN 20

static const int extra_outbounds[] = {S5_OUTBOUND_DIRECT, S5_OUTBOUND_BLOCK, S5_OUTBOUND_BALANCE};
#define EXTRA (int)(sizeof extra_outbounds / sizeof extra_outbounds[0])

/* A file name as a JSON or label string: '"', '\' and control bytes become '_'. */
static void plain(char *out, size_t cap, const char *file, unsigned line) {
  snprintf(out, cap, "%s:%u", file, line);
  for (char *p = out; *p; p++)
    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) *p = '_';
}

struct top {
  uint32_t rule;
  uint64_t hits;
};

static int by_hits(const void *a, const void *b) {
  const struct top *x = a, *y = b;
  return x->hits < y->hits ? 1 : x->hits > y->hits ? -1 : (x->rule > y->rule) - (x->rule < y->rule);
}

/* The rules hit most, most first; returns how many (at most RULES_SHOWN). */
static unsigned top_rules(const struct s5_rules *t, struct top *top) {
  unsigned n = 0;
  for (uint32_t i = 0; i < s5_rules_count(t); i++) {
    uint64_t h = s5_rules_hits(t, i);
    if (h == 0) continue;
    if (n < RULES_SHOWN) {
      top[n++] = (struct top){i, h};
      qsort(top, n, sizeof *top, by_hits);
    } else if (h > top[n - 1].hits) {
      top[n - 1] = (struct top){i, h};
      qsort(top, n, sizeof *top, by_hits);
    }
  }
  return n;
}

/* A listed rule's place ("FILE:LINE", safe in a string) and outbound. */
static const char *top_where(const struct s5_rules *t, const struct top *tp, char *where, size_t len) {
  const char *file;
  unsigned line;
  s5_rules_where(t, tp->rule, &file, &line);
  plain(where, len, file, line);
  return s5_rules_outbound_name(t, s5_rules_outbound_of(t, tp->rule));
}

/* Each outbound in use, fmt for each: the separator (sep after the
 * first), its name, its hits. */
static size_t put_outbounds(const struct s5_rules *t, char *buf, size_t cap, size_t at, const char *sep,
                            const char *fmt) {
  /* The upstreams, the groups, then direct, block and balance. */
  for (int o = 0, first = 1; o < S5_UPSTREAMS_MAX + S5_GROUPS_MAX + EXTRA; o++) {
    int out = o < S5_UPSTREAMS_MAX                   ? o
              : o < S5_UPSTREAMS_MAX + S5_GROUPS_MAX ? S5_OUTBOUND_GROUP + (o - S5_UPSTREAMS_MAX)
                                                     : extra_outbounds[o - S5_UPSTREAMS_MAX - S5_GROUPS_MAX];
    if (o < S5_UPSTREAMS_MAX + S5_GROUPS_MAX && strcmp(s5_rules_outbound_name(t, out), "?") == 0) continue;
    at = s5_render_put(buf, cap, at, fmt, first ? "" : sep, s5_rules_outbound_name(t, out),
                       s5_rules_outbound_hits(t, out));
    first = 0;
  }
  return at;
}

/* The rules hit most, most first, fmt for each: the separator (sep after
 * the first), its place, its outbound, its hits. */
static size_t put_top(const struct s5_rules *t, char *buf, size_t cap, size_t at, const char *sep,
                      const char *fmt) {
  struct top top[RULES_SHOWN];
  unsigned n = top_rules(t, top);
  for (unsigned k = 0; k < n; k++) {
    char where[320];
    const char *out = top_where(t, &top[k], where, sizeof where);
    at = s5_render_put(buf, cap, at, fmt, k ? sep : "", where, out, top[k].hits);
  }
  return at;
}

static size_t rules_json(char *buf, size_t cap, size_t at) {
  const struct s5_rules *t = s5_rules_current();
  if (!s5_rules_configured(t)) return at;
  at = s5_render_put(buf, cap, at,
                     ",\"rules\":{\"count\":%" PRIu32 ",\"default_hits\":%" PRIu64 ",\"outbounds\":{",
                     s5_rules_count(t), s5_rules_hits(t, S5_RULE_DEFAULT));
  at = put_outbounds(t, buf, cap, at, ",", "%s\"%s\":%" PRIu64);
  at = s5_render_put(buf, cap, at, "},\"top\":[");
  at = put_top(t, buf, cap, at, ",", "%s{\"rule\":\"%s\",\"outbound\":\"%s\",\"hits\":%" PRIu64 "}");
  return s5_render_put(buf, cap, at, "]}");
}

static void rules_table(FILE *out, const char *json) {
  const char *p = strstr(json, "\"rules\":{\"count\":");
  const char *o = p != NULL ? strstr(p, "\"outbounds\":{") : NULL;
  const char *end = o != NULL ? strchr(o, '}') : NULL;
  if (end == NULL) return;
  fprintf(out,
          "\nrules: %lu; new flows by outbound:", strtoul(p + strlen("\"rules\":{\"count\":"), NULL, 10));
  /* "name":N pairs; names are [A-Za-z0-9_.-] */
  for (const char *q = o + strlen("\"outbounds\":{"); q < end && *q == '"';) {
    const char *close = strchr(q + 1, '"');
    char *after;
    if (close == NULL || close > end || close[1] != ':') break;
    unsigned long long v = strtoull(close + 2, &after, 10);
    fprintf(out, " %.*s %llu", (int)(close - q - 1), q + 1, v);
    q = *after == ',' ? after + 1 : after;
  }
  fputc('\n', out);
}

static size_t rules_prom(char *buf, size_t cap) {
  const struct s5_rules *t = s5_rules_current();
  size_t at = s5_render_put(buf, cap, 0, "%s", "");
  if (!s5_rules_configured(t)) return at;
  at =
    s5_render_put(buf, cap, at,
                  "# HELP s5tund_rules_outbound_total New flows per [rules] outbound since the last start or "
                  "reload (balance: no rule matched, [balance] chose).\n"
                  "# TYPE s5tund_rules_outbound_total counter\n");
  at = put_outbounds(t, buf, cap, at, "", "%ss5tund_rules_outbound_total{outbound=\"%s\"} %" PRIu64 "\n");
  at =
    s5_render_put(buf, cap, at,
                  "# HELP s5tund_rule_hits_total New flows a rule decided (the %d rules hit most; default: "
                  "none matched) since the last start or reload.\n"
                  "# TYPE s5tund_rule_hits_total counter\n"
                  "s5tund_rule_hits_total{rule=\"default\"} %" PRIu64 "\n",
                  RULES_SHOWN, s5_rules_hits(t, S5_RULE_DEFAULT));
  return put_top(t, buf, cap, at, "", "%ss5tund_rule_hits_total{rule=\"%s\",outbound=\"%s\"} %" PRIu64 "\n");
}

const struct s5_render_part s5_rules_part = {rules_json, rules_table, rules_prom};
