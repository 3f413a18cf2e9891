/* SPDX-License-Identifier: MIT */
/* --explain (see explain.h): the rules compiled once into reserved memory,
 * as the daemon compiles them into its shared region, and one lookup. */
#include "threads/cli/explain.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/addr.h"
#include "outbound/route.h"
#include "shared/rules.h"
#include "threads/ctl/group_select.h"
#include "threads/ctl/render.h"
#include "threads/ctl/stats_server.h"

/* Room for the set, as the daemon's half of its region: reserved, touched
 * only as far as the set goes, so the rules are compiled (and their files
 * read) once, not once to size them and once more to lay them out. */
#define EXPLAIN_ROOM (512ul << 20)

static double explain_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The group's object in a stats document: from its {"name":"G" to its
 * members' end; NULL when the daemon has no such group. */
static const char *group_in(const char *doc, const char *name, const char **end) {
  char key[64];
  snprintf(key, sizeof key, "{\"name\":\"%s\",\"strategy\":", name);
  const char *groups = strstr(doc, "\"groups\":["), *p = groups != NULL ? strstr(groups, key) : NULL;
  *end = p != NULL ? strstr(p, "]}") : NULL;
  return *end != NULL ? p : NULL;
}

/* A group: its strategy, its members in order, and the member it would
 * take now, asked of the daemon at [stats] socket when one answers there
 * (its state of each member too); without one, what the file says. */
static void explain_group(const struct s5_config *cfg, const struct s5_group_cfg *g, FILE *out) {
  const char *sock = cfg->stats.socket;
  char *doc = sock[0] != '\0' ? s5_stats_fetch(sock) : NULL;
  const char *end = NULL, *at = doc != NULL ? group_in(doc, g->name, &end) : NULL;
  fprintf(out, "group    %s, strategy %s, members in order:\n", g->name, s5_group_strategy_name(g->strategy));
  for (unsigned i = 0; i < g->n_members; i++) {
    const char *name = cfg->upstreams[g->members[i]].name;
    char key[48], state[8] = "";
    snprintf(key, sizeof key, "{\"name\":\"%s\",", name);
    const char *m = at != NULL ? strstr(at, key) : NULL;
    if (m != NULL && m < end) s5_render_json_str(m, end, "state", state, sizeof state);
    fprintf(out, "upstream %s%s%s%s\n", name, state[0] ? " (" : "", state, state[0] ? ")" : "");
  }
  char chosen[32] = "";
  if (at != NULL) s5_render_json_str(at, end, "chosen", chosen, sizeof chosen);
  if (chosen[0] != '\0') fprintf(out, "now      %s (the running daemon's, at %s)\n", chosen, sock);
  else if (at != NULL && g->strategy != S5_BALANCE_SELECT && g->strategy != S5_BALANCE_FASTEST)
    fprintf(out, "now      chosen per flow by %s among the members up (the running daemon's, at %s)\n",
            s5_group_strategy_name(g->strategy), sock);
  else if (at != NULL) fprintf(out, "now      none measured yet (the running daemon's, at %s)\n", sock);
  else
    fprintf(out, "now      not known: no running daemon with this group answered at %s; %s\n",
            sock[0] ? sock : "[stats] socket (empty)",
            g->strategy == S5_BALANCE_SELECT ? "select starts from selected (or the first member)"
                                             : "the order above is the file's");
  free(doc);
}

/* --sni: would [sniff] read the flow's first bytes, and would it use the
 * name it found? Says so; returns 1 when the rules are to run with it. */
static int explain_sniff(const struct s5_config *cfg, const struct s5_rules *t, const struct s5_explain *e,
                         FILE *out) {
  struct s5_flow f;
  uint32_t rule;
  s5_flow_init(&f, (uint8_t)e->proto, &e->dst, &e->src, NULL);
  int o = s5_rules_lookup(t, &f, &rule);
  unsigned as = s5_route_sniff_port(cfg, (uint8_t)e->proto, f.dport);
  int skipped = 0;
  for (unsigned i = 0; i < cfg->sniff.skip.pfx.n; i++)
    skipped |= s5_prefix_covers(&cfg->sniff.skip.pfx.p[i], &e->dst);
  const char *kind = as & S5_ROUTE_SNIFF_TLS ? "tls" : as & S5_ROUTE_SNIFF_HTTP ? "http" : "quic";
  if (as == 0 && e->proto == IPPROTO_UDP)
    fprintf(out, "sniff    no: UDP port %u is not in [sniff] quic: by address\n", (unsigned)f.dport);
  else if (as == 0)
    fprintf(out, "sniff    no: TCP port %u is in neither [sniff] tls nor http: by address\n",
            (unsigned)f.dport);
  else if (skipped) fprintf(out, "sniff    no: the address is in [sniff] skip: by address\n");
  else if (!s5_rules_by_name(t, &f, rule, o))
    fprintf(out, "sniff    no: no rule by name could send it elsewhere: by address%s\n",
            e->proto == IPPROTO_TCP ? " (SYN-ACK after the CONNECT)" : "");
  else if (s5_route_name_skipped(cfg, e->name))
    fprintf(out, "sniff    yes (%s), but %s is under [sniff] skip: by address\n", kind, e->name);
  else {
    fprintf(out, "sniff    yes (%s): %s, then by the name %s\n", kind,
            as & S5_ROUTE_SNIFF_QUIC ? "its first datagrams held" : "SYN-ACK at once, its first bytes held",
            e->name);
    return 1;
  }
  return 0;
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
  int named = e->sniffed ? explain_sniff(cfg, t, e, out) : e->name[0] != '\0';
  s5_flow_init(&f, (uint8_t)e->proto, &e->dst, &e->src, named ? e->name : NULL);
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
  if (o >= S5_OUTBOUND_GROUP && (unsigned)(o - S5_OUTBOUND_GROUP) < cfg->n_groups)
    explain_group(cfg, &cfg->groups[o - S5_OUTBOUND_GROUP], out);
  if (named && e->sniffed) {
    char addr[S5_ADDR_STRLEN];
    if (cfg->sniff.override)
      fprintf(out, "connect  %s:%u ([sniff] override: the proxy resolves the name)\n", e->name,
              (unsigned)f.dport);
    else
      fprintf(out, "connect  %s (the client's address; [sniff] override = false)\n",
              s5_sockaddr_str(&e->dst, addr, sizeof addr));
  }
  munmap(t, EXPLAIN_ROOM);
  return 0;
}
