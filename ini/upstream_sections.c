/* SPDX-License-Identifier: MIT */
/* The upstream list: [socks5] is upstreams[0] (when written), each
 * [upstream NAME] section one more, in file order. The keys of an
 * [upstream] section are declared once in the table (keys.c) at
 * upstreams[0]; here they are moved to the section's own upstream, so that
 * every section is read, defaulted, printed and reloaded by the same types
 * as any other key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini/internal.h"
#include "ini/keys.h"

/* The key k of upstream up: the same key, its offset moved. */
static struct s5_key moved(const struct s5_key *k, unsigned up) {
  struct s5_key m = *k;
  if (!k->upstream || up >= S5_UPSTREAMS_MAX) abort(); /* a bug here, not a user error */
  m.offset += up * sizeof(struct s5_upstream_cfg);
  return m;
}

int s5_upstream_key_set(struct s5_config *cfg, int key, unsigned up, const char *value, char *err,
                        size_t errlen) {
  struct s5_key m = moved(s5_config_key(key), up);
  return m.type->parse(&m, cfg, value, err, errlen);
}

void s5_upstream_key_print(const struct s5_config *cfg, int key, unsigned up, FILE *out) {
  struct s5_key m = moved(s5_config_key(key), up);
  m.type->print(&m, cfg, out);
}

void s5_upstream_defaults(struct s5_config *cfg, unsigned up, const char *name) {
  char err[256];
  memset(&cfg->upstreams[up], 0, sizeof cfg->upstreams[up]);
  snprintf(cfg->upstreams[up].name, sizeof cfg->upstreams[up].name, "%s", name);
  for (int i = 0; i < s5_config_key_count(); i++) {
    const struct s5_key *k = s5_config_key(i);
    if (!k->upstream) continue;
    if (s5_upstream_key_set(cfg, i, up, k->def, err, sizeof err) != 0) {
      fprintf(stderr, "s5tund: bad built-in default for [upstream] %s: %s\n", k->name, err);
      abort();
    }
  }
}

const char *s5_rules_own_outbound(const char *name) {
  if (strcmp(name, "direct") == 0) return "s5tund connects itself";
  if (strcmp(name, "block") == 0) return "refused";
  return NULL;
}

int s5_section_name_check(const char *section, const char *name, char *err, size_t errlen) {
  size_t n = strlen(name);
  const char *a = section[0] == 'u' ? "an" : "a"; /* an upstream, a group */
  if (n == 0) {
    snprintf(err, errlen, "%s %s needs a name: [%s NAME]", a, section, section);
    return -1;
  }
  if (n >= sizeof((struct s5_upstream_cfg *)0)->name ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n) {
    char shown[S5_SHOW_MAX];
    s5_show(shown, sizeof shown, name);
    snprintf(err, errlen, "%s is not %s %s name (1..31 of [A-Za-z0-9_.-])", shown, a, section);
    return -1;
  }
  if (s5_rules_own_outbound(name) != NULL) { /* a rule naming it takes [rules]' own */
    snprintf(err, errlen,
             "[%s %s]: %s is an outbound of [rules] (%s), so no rule could send a flow to this %s: give it "
             "another name",
             section, name, name, s5_rules_own_outbound(name), section);
    return -1;
  }
  return 0;
}

int s5_upstream_add(struct s5_config *cfg, const char *name, char *err, size_t errlen) {
  if (s5_section_name_check("upstream", name, err, errlen) != 0) return -1;
  for (unsigned i = 0; i < cfg->n_upstreams; i++) {
    if (strcmp(cfg->upstreams[i].name, name) == 0) {
      snprintf(err, errlen, "upstream %s is already declared%s", name,
               i == 0 && cfg->socks5_section ? " (by [socks5])" : "");
      return -1;
    }
  }
  if (cfg->n_upstreams == S5_UPSTREAMS_MAX) {
    snprintf(err, errlen, "more than %d upstreams", S5_UPSTREAMS_MAX);
    return -1;
  }
  unsigned up = cfg->n_upstreams++;
  s5_upstream_defaults(cfg, up, name);
  return (int)up;
}

void s5_upstream_print(const struct s5_config *cfg, FILE *out) {
  for (unsigned up = cfg->socks5_section ? 1 : 0; up < cfg->n_upstreams; up++) {
    fprintf(out, "\n[upstream %s]\n", cfg->upstreams[up].name);
    for (int i = 0; i < s5_config_key_count(); i++)
      if (s5_config_key(i)->upstream) s5_upstream_key_print(cfg, i, up, out);
  }
}

/* The upstream of cur that next's upstream up continues: the one of the
 * same name, else NULL (a new one). */
static int same_upstream(const struct s5_config *cur, const char *name) {
  for (unsigned i = 0; i < cur->n_upstreams; i++)
    if (strcmp(cur->upstreams[i].name, name) == 0) return (int)i;
  return -1;
}

int s5_upstream_reload_merge(struct s5_config *next, const struct s5_config *cur, int key,
                             s5_config_reload_warn *warn, void *arg) {
  const struct s5_key *k = s5_config_key(key);
  int kept = 0;
  if (k->live) return 0;
  /* A key a reload cannot apply (the mark: routing and privileges were set
   * up for it) keeps the value of the running upstream of that name, or of
   * the first one for an upstream the reload adds. */
  for (unsigned up = 0; up < next->n_upstreams; up++) {
    int was = same_upstream(cur, next->upstreams[up].name);
    unsigned from = was >= 0 ? (unsigned)was : 0;
    struct s5_key a = moved(k, up), b = moved(k, from);
    if (memcmp((const char *)next + a.offset, (const char *)cur + b.offset, k->size) == 0) continue;
    char old[320], now[320], section[64];
    s5_key_line(&b, cur, old, sizeof old);
    s5_key_line(&a, next, now, sizeof now);
    memcpy((char *)next + a.offset, (const char *)cur + b.offset, k->size);
    snprintf(section, sizeof section, "upstream %s", next->upstreams[up].name);
    if (warn != NULL) warn(arg, section, old, now);
    kept++;
  }
  return kept;
}
