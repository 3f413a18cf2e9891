/* SPDX-License-Identifier: MIT */
/* The operator's choice of a select group's member (group_select.h). */
#include "threads/ctl/group_select.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

const char *s5_group_strategy_name(enum s5_balance s) {
  static const char *const names[] = {"failover", "round-robin", "least-connections",
                                      "hash",     "fastest",     "select"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* A name as the configuration allows it (1..31 of A-Z a-z 0-9 _ . -):
 * anything else is not echoed back. */
static int plain_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 31) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || s[i] == '.' || s[i] == '-'))
      return 0;
  return 1;
}

static int group_index(const struct s5_config *cfg, const char *name) {
  for (unsigned g = 0; g < cfg->n_groups; g++)
    if (strcmp(cfg->groups[g].name, name) == 0) return (int)g;
  return -1;
}

/* "a, b, c": the group's members, for a message. */
static void members_text(const struct s5_config *cfg, const struct s5_group_cfg *gc, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (unsigned j = 0; j < gc->n_members && at < len; j++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s", j ? ", " : "", cfg->upstreams[gc->members[j]].name);
}

int s5_group_select(struct s5_uptab *t, const struct s5_config *cfg, const char *group, const char *member,
                    char *msg, size_t len) {
  int g = plain_name(group) ? group_index(cfg, group) : -1;
  if (g < 0) {
    char names[S5_GROUPS_MAX * 34] = "";
    size_t at = 0;
    for (unsigned k = 0; k < cfg->n_groups && at < sizeof names; k++)
      at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", k ? ", " : "", cfg->groups[k].name);
    snprintf(msg, len, "%s%s%s: no such group (the groups: %s)", plain_name(group) ? "\"" : "",
             plain_name(group) ? group : "a bad group name", plain_name(group) ? "\"" : "",
             cfg->n_groups ? names : "none");
    return -1;
  }
  const struct s5_group_cfg *gc = &cfg->groups[g];
  char list[S5_UPSTREAMS_MAX * 34];
  members_text(cfg, gc, list, sizeof list);
  if (gc->strategy != S5_BALANCE_SELECT) {
    snprintf(msg, len, "group %s: strategy is %s, not select: its member is not chosen by the operator",
             gc->name, s5_group_strategy_name(gc->strategy));
    return -1;
  }
  int m = -1;
  for (unsigned j = 0; plain_name(member) && j < gc->n_members; j++)
    if (strcmp(cfg->upstreams[gc->members[j]].name, member) == 0) m = gc->members[j];
  if (m < 0) {
    snprintf(msg, len, "group %s: %s%s%s is not a member (the members: %s)", gc->name,
             plain_name(member) ? "\"" : "", plain_name(member) ? member : "a bad member name",
             plain_name(member) ? "\"" : "", list);
    return -1;
  }
  int was = s5_uptab_group_member(t, cfg, (unsigned)g);
  s5_uptab_group_choose(t, (unsigned)g, cfg->upstreams[m].slot);
  snprintf(msg, len, "group %s: %s selected (was %s) by the operator", gc->name, cfg->upstreams[m].name,
           was >= 0 ? cfg->upstreams[was].name : "none");
  s5_info("%s", msg);
  return 0;
}

void s5_group_reloaded(struct s5_uptab *t, const struct s5_config *live, const struct s5_config *next) {
  for (unsigned g = 0; g < next->n_groups; g++) {
    const struct s5_group_cfg *gc = &next->groups[g];
    int o = group_index(live, gc->name);
    if (gc->strategy != S5_BALANCE_SELECT || o < 0 || LOAD(&t->g[g].chosen) == 0) continue;
    const struct s5_group_cfg *old = &live->groups[o];
    if (old->strategy == S5_BALANCE_SELECT && strcmp(old->selected, gc->selected) == 0) continue;
    int was = s5_uptab_group_member(t, next, g);
    STORE(&t->g[g].chosen, 0); /* the configuration's selected from now on */
    STORE(&t->g[g].since_unix, (uint64_t)time(NULL));
    int now = s5_uptab_group_member(t, next, g);
    s5_info("group %s: %s selected (was %s) by the configuration's new selected", gc->name,
            next->upstreams[now].name, was >= 0 ? next->upstreams[was].name : "none");
  }
}
