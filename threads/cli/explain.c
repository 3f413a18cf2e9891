/* SPDX-License-Identifier: MIT */
/* --explain (see explain.h): the rules compiled once into reserved memory,
 * as the daemon compiles them into its shared region, and one lookup. */
#include "threads/cli/explain.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "shared/rules.h"

/* Room for the set, as the daemon's half of its region: reserved, touched
 * only as far as the set goes, so the rules are compiled (and their files
 * read) once, not once to size them and once more to lay them out. */
#define EXPLAIN_ROOM (512ul << 20)

static double explain_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int s5_explain(const struct s5_config *cfg, const struct s5_explain *e, FILE *out) {
  char err[512] = "";
  double t0 = explain_now();
  struct s5_rules *t =
    mmap(NULL, EXPLAIN_ROOM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  size_t need = t != MAP_FAILED ? s5_rules_build(t, EXPLAIN_ROOM, cfg, err, sizeof err) : 0;
  if (t == MAP_FAILED || need == 0 || need > EXPLAIN_ROOM) {
    if (t == MAP_FAILED) snprintf(err, sizeof err, "reserving room for the rules: %s", strerror(errno));
    else if (need > EXPLAIN_ROOM)
      snprintf(err, sizeof err, "the rules need %zu MiB, more than a set may have", need >> 20);
    fprintf(stderr, "s5tund: [rules]: %s\n", err);
    if (t != MAP_FAILED) munmap(t, EXPLAIN_ROOM);
    return 1;
  }
  /* What the answer cost: the whole set, as the daemon compiles it, so
   * that the answer is the daemon's own lookup's. */
  fprintf(out, "compiled %u rules into %zu KiB in %.1f s\n", s5_rules_count(t), (need + 1023) >> 10,
          explain_now() - t0);
  struct s5_flow f;
  uint32_t rule;
  s5_flow_init(&f, (uint8_t)e->proto, &e->dst, &e->src, e->name[0] != '\0' ? e->name : NULL);
  int o = s5_rules_lookup(t, &f, &rule);
  if (rule == S5_RULE_DEFAULT) {
    fprintf(out, "rule     default%s\n", cfg->rules.def[0] ? "" : " (empty: [balance] chooses an upstream)");
  } else {
    const char *file;
    unsigned line;
    s5_rules_where(t, rule, &file, &line);
    fprintf(out, "rule     %s:%u\n", file, line);
  }
  fprintf(out, "outbound %s\n", s5_rules_outbound_name(t, o));
  if (o == S5_OUTBOUND_BALANCE)
    for (unsigned i = 0; i < cfg->n_upstreams; i++) fprintf(out, "upstream %s\n", cfg->upstreams[i].name);
  if (o >= S5_OUTBOUND_GROUP && (unsigned)(o - S5_OUTBOUND_GROUP) < cfg->n_groups) {
    const struct s5_group_cfg *g = &cfg->groups[o - S5_OUTBOUND_GROUP];
    for (unsigned i = 0; i < g->n_members; i++)
      fprintf(out, "upstream %s\n", cfg->upstreams[g->members[i]].name);
  }
  munmap(t, EXPLAIN_ROOM);
  return 0;
}
