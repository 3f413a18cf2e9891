/* SPDX-License-Identifier: MIT */
/* --explain (see explain.h): the rules compiled into the heap, as the
 * daemon compiles them into its shared region, and one lookup. */
#include "threads/cli/explain.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "shared/rules.h"

int s5_explain(const struct s5_config *cfg, const struct s5_explain *e, FILE *out) {
  char err[512] = "";
  size_t need = s5_rules_build(NULL, 0, cfg, err, sizeof err);
  struct s5_rules *t = need != 0 ? malloc(need) : NULL;
  if (t == NULL || s5_rules_build(t, need, cfg, err, sizeof err) != need) {
    fprintf(stderr, "s5tund: [rules]: %s\n", err[0] ? err : "out of memory");
    free(t);
    return 1;
  }
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
  free(t);
  return 0;
}
