/* SPDX-License-Identifier: MIT */
/* A whole configuration walked through the key table (keys.c), with the
 * upstream and group sections in their place (upstream_sections.c,
 * group_sections.c): the defaults,
 * --check-config's print, and what a reload keeps of the running one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini/internal.h"
#include "ini/keys.h"

void s5_config_defaults(struct s5_config *cfg) {
  char err[256];
  memset(cfg, 0, sizeof *cfg);
  /* One upstream, [socks5]: the [upstream] defaults, then [socks5]'s. */
  s5_upstream_defaults(cfg, 0, "socks5");
  cfg->n_upstreams = 1;
  cfg->socks5_section = true;
  for (int i = 0; i < s5_config_key_count(); i++) {
    const struct s5_key *k = s5_config_key(i);
    if (k->upstream || k->group) continue; /* no group: set per section */
    if (s5_config_key_set(cfg, i, k->def, err, sizeof err) != 0) {
      /* A broken default is a bug in this table, not a user error. */
      fprintf(stderr, "s5tund: bad built-in default for [%s] %s: %s\n", k->section, k->name, err);
      abort();
    }
  }
}

void s5_config_print(const struct s5_config *cfg, FILE *out) {
  const char *section = "";
  fputs("; s5tund effective configuration\n", out);
  for (int i = 0; i < s5_config_key_count(); i++) {
    const struct s5_key *k = s5_config_key(i);
    if (strcmp(k->section, "socks5") == 0 && !cfg->socks5_section) continue;
    if (k->upstream) {
      if (strcmp(k->section, section) != 0) s5_upstream_print(cfg, out);
      section = k->section;
      continue;
    }
    if (k->group) {
      if (strcmp(k->section, section) != 0) s5_group_print(cfg, out);
      section = k->section;
      continue;
    }
    if (strcmp(k->section, section) != 0) {
      section = k->section;
      fprintf(out, "\n[%s]\n", section);
    }
    k->type->print(k, cfg, out);
  }
}

int s5_config_reload_merge(struct s5_config *next, const struct s5_config *cur, s5_config_reload_warn *warn,
                           void *arg) {
  int kept = 0;
  for (int i = 0; i < s5_config_key_count(); i++) {
    const struct s5_key *k = s5_config_key(i);
    if (k->upstream) {
      kept += s5_upstream_reload_merge(next, cur, i, warn, arg);
      continue;
    }
    if (k->group) continue; /* every group key is live: next's groups as they are */
    if (k->live || memcmp((const char *)next + k->offset, (const char *)cur + k->offset, k->size) == 0)
      continue;
    char was[320], now[320];
    s5_key_line(k, cur, was, sizeof was);
    s5_key_line(k, next, now, sizeof now);
    memcpy((char *)next + k->offset, (const char *)cur + k->offset, k->size);
    if (warn != NULL) warn(arg, k->section, was, now);
    kept++;
  }
  /* Derived from keys that never change live. */
  next->queues = cur->queues;
  next->run.uid = cur->run.uid;
  next->run.gid = cur->run.gid;
  return kept;
}
