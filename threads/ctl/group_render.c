/* SPDX-License-Identifier: MIT */
/* The [group NAME]s as JSON, table and Prometheus text (see render.h):
 * each group's strategy, the member it takes now (select: the operator's
 * or the configuration's; fastest: the one chosen by latency; the others
 * choose per flow: none) and since when, and each member's state and
 * latency (last probe, smoothed; 0 = not measured). From the live
 * configuration (s5_render_cfg) and the shared health table. */
#include "threads/ctl/render.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "shared/uptab.h"
#include "threads/ctl/group_select.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)

/* One member as the documents show it. */
struct member_view {
  const char *name;
  const char *state; /* "up", "down" */
  int chosen;
  uint64_t lat_last_us, lat_avg_us;
};

/* Group g's member j (now: the index in cfg->upstreams of the one taken now). */
static void member_read(const struct s5_uptab *t, const struct s5_config *cfg, unsigned g, unsigned j,
                        int now, struct member_view *v) {
  int i = cfg->groups[g].members[j];
  const struct s5_up_slot *u = &t->u[cfg->upstreams[i].slot];
  v->name = cfg->upstreams[i].name;
  v->state = LOAD(&u->down) ? "down" : "up";
  v->chosen = i == now;
  v->lat_last_us = LOAD(&u->lat_last_us);
  v->lat_avg_us = LOAD(&u->lat_avg_us);
}

/* The member group g takes now, -1: none (a per-flow strategy, or fastest unmeasured). */
static int group_now(const struct s5_uptab *t, const struct s5_config *cfg, unsigned g) {
  enum s5_balance s = cfg->groups[g].strategy;
  if (s != S5_BALANCE_SELECT && s != S5_BALANCE_FASTEST) return -1;
  return s5_uptab_group_member(t, cfg, g);
}

static size_t groups_json(char *buf, size_t cap, size_t at) {
  const struct s5_uptab *t = s5_uptab();
  const struct s5_config *cfg = s5_render_cfg();
  if (t == NULL || cfg == NULL || cfg->n_groups == 0) return at;
  at = s5_render_put(buf, cap, at, ",\"groups\":[");
  for (unsigned g = 0; g < cfg->n_groups; g++) {
    const struct s5_group_cfg *gc = &cfg->groups[g];
    int now = group_now(t, cfg, g);
    /* names are [A-Za-z0-9_.-]: nothing to escape */
    at = s5_render_put(buf, cap, at,
                       "%s{\"name\":\"%s\",\"strategy\":\"%s\",\"chosen\":\"%s\",\"since\":%" PRIu64
                       ",\"members\":[",
                       g ? "," : "", gc->name, s5_group_strategy_name(gc->strategy),
                       now >= 0 ? cfg->upstreams[now].name : "", LOAD(&t->g[g].since_unix));
    for (unsigned j = 0; j < gc->n_members; j++) {
      struct member_view v;
      member_read(t, cfg, g, j, now, &v);
      at = s5_render_put(buf, cap, at,
                         "%s{\"name\":\"%s\",\"state\":\"%s\",\"lat_last_us\":%" PRIu64
                         ",\"lat_avg_us\":%" PRIu64 "}",
                         j ? "," : "", v.name, v.state, v.lat_last_us, v.lat_avg_us);
    }
    at = s5_render_put(buf, cap, at, "]}");
  }
  return s5_render_put(buf, cap, at, "]");
}

/* Microseconds as milliseconds for the table; "-" when not measured. */
static void ms_text(uint64_t us, char *out, size_t cap) {
  if (us == 0) snprintf(out, cap, "-");
  else snprintf(out, cap, "%.1f", (double)us / 1000.0);
}

/* A row per member: the group's columns, then the member's; '*' marks the
 * member the group takes now. */
static void groups_table(FILE *out, const char *json) {
  const char *p = strstr(json, "\"groups\":[");
  if (p == NULL) return;
  fprintf(out, "\n%-16s %-17s %-19s %-16s %1s %-5s %10s %10s\n", "group", "strategy", "since", "member", "",
          "state", "last_ms", "avg_ms");
  p += strlen("\"groups\":[");
  while (*p == '{') {
    const char *members = strstr(p, "\"members\":[");
    if (members == NULL) break;
    char name[32], strategy[24], chosen[32], since[24] = "-";
    s5_render_json_str(p, members, "name", name, sizeof name);
    s5_render_json_str(p, members, "strategy", strategy, sizeof strategy);
    s5_render_json_str(p, members, "chosen", chosen, sizeof chosen);
    time_t when = (time_t)s5_render_json_num(p, members, "since");
    struct tm tm;
    if (when != 0 && localtime_r(&when, &tm) != NULL) strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S", &tm);
    const char *m = members + strlen("\"members\":[");
    while (*m == '{') {
      const char *end = strchr(m, '}');
      if (end == NULL) return;
      char member[32], state[8], last[24], avg[24];
      s5_render_json_str(m, end, "name", member, sizeof member);
      s5_render_json_str(m, end, "state", state, sizeof state);
      ms_text(s5_render_json_num(m, end, "lat_last_us"), last, sizeof last);
      ms_text(s5_render_json_num(m, end, "lat_avg_us"), avg, sizeof avg);
      fprintf(out, "%-16s %-17s %-19s %-16s %1s %-5s %10s %10s\n", name, strategy, since, member,
              strcmp(member, chosen) == 0 ? "*" : "", state, last, avg);
      m = end + 1;
      if (*m == ',') m++;
    }
    p = m + 2; /* "]}" */
    if (*p == ',') p++;
  }
}

/* A family's HELP and TYPE. */
static size_t family(char *buf, size_t cap, size_t at, const char *name, const char *help) {
  return s5_render_put(buf, cap, at, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static size_t groups_prom(char *buf, size_t cap) {
  const struct s5_uptab *t = s5_uptab();
  const struct s5_config *cfg = s5_render_cfg();
  size_t at = s5_render_put(buf, cap, 0, "%s", "");
  if (t == NULL || cfg == NULL || cfg->n_groups == 0) return at;
  at = family(buf, cap, at, "s5tund_group_info", "A [group]: its strategy, always 1.");
  for (unsigned g = 0; g < cfg->n_groups; g++)
    at = s5_render_put(buf, cap, at, "s5tund_group_info{group=\"%s\",strategy=\"%s\"} 1\n",
                       cfg->groups[g].name, s5_group_strategy_name(cfg->groups[g].strategy));
  at = family(buf, cap, at, "s5tund_group_chosen",
              "1 for the member the group takes now (select, fastest), 0 for the others.");
  for (unsigned g = 0; g < cfg->n_groups; g++)
    for (unsigned j = 0, now = (unsigned)group_now(t, cfg, g); j < cfg->groups[g].n_members; j++)
      at = s5_render_put(buf, cap, at, "s5tund_group_chosen{group=\"%s\",upstream=\"%s\"} %u\n",
                         cfg->groups[g].name, cfg->upstreams[cfg->groups[g].members[j]].name,
                         cfg->groups[g].members[j] == now ? 1u : 0u);
  at = family(buf, cap, at, "s5tund_group_chosen_since_seconds",
              "When the group's chosen member last changed, seconds since the Unix epoch; 0 = never.");
  for (unsigned g = 0; g < cfg->n_groups; g++)
    at = s5_render_put(buf, cap, at, "s5tund_group_chosen_since_seconds{group=\"%s\"} %" PRIu64 "\n",
                       cfg->groups[g].name, LOAD(&t->g[g].since_unix));
  at = family(buf, cap, at, "s5tund_group_member_up", "1 while the member takes new sessions, 0 while down.");
  for (unsigned g = 0; g < cfg->n_groups; g++)
    for (unsigned j = 0; j < cfg->groups[g].n_members; j++) {
      struct member_view v;
      member_read(t, cfg, g, j, -1, &v);
      at = s5_render_put(buf, cap, at, "s5tund_group_member_up{group=\"%s\",upstream=\"%s\"} %u\n",
                         cfg->groups[g].name, v.name, strcmp(v.state, "up") == 0 ? 1u : 0u);
    }
  static const char *const lat[2][2] = {
    {"s5tund_group_member_latency_seconds",
     "The member's smoothed latency (probes and set-ups); measured ones only."},
    {"s5tund_group_member_latency_last_seconds", "The member's last probe's latency; measured ones only."}};
  for (unsigned k = 0; k < 2; k++) {
    at = family(buf, cap, at, lat[k][0], lat[k][1]);
    for (unsigned g = 0; g < cfg->n_groups; g++)
      for (unsigned j = 0; j < cfg->groups[g].n_members; j++) {
        struct member_view v;
        member_read(t, cfg, g, j, -1, &v);
        uint64_t us = k == 0 ? v.lat_avg_us : v.lat_last_us;
        if (us != 0)
          at = s5_render_put(buf, cap, at, "%s{group=\"%s\",upstream=\"%s\"} %.6f\n", lat[k][0],
                             cfg->groups[g].name, v.name, (double)us / 1e6);
      }
  }
  return at;
}

const struct s5_render_part s5_groups_part = {groups_json, groups_table, groups_prom};
