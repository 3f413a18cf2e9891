/* SPDX-License-Identifier: MIT */
/* Outbound groups: each [group NAME] section is one more group, in file
 * order, naming upstreams a rule can send a flow to as one. Like the
 * [upstream NAME] keys (upstream_sections.c), the keys of a [group]
 * section are declared once in the table (keys.c) at groups[0] and moved
 * here to the section's own group. Two types are a group's own: members
 * (upstream names, kept as indexes into cfg->upstreams) and probe. The
 * loader reads members once every upstream is known, then checks each
 * group as a whole (s5_group_check). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini/internal.h"
#include "ini/keys.h"

/* The key k of group g: the same key, its offset moved. */
static struct s5_key moved(const struct s5_key *k, unsigned g) {
  struct s5_key m = *k;
  if (!k->group || g >= S5_GROUPS_MAX) abort(); /* a bug here, not a user error */
  m.offset += g * sizeof(struct s5_group_cfg);
  return m;
}

/* The group a (moved) group key's field belongs to, and its index. */
static unsigned group_index(const struct s5_key *k) {
  return (unsigned)((k->offset - offsetof(struct s5_config, groups)) / sizeof(struct s5_group_cfg));
}

int s5_group_key_set(struct s5_config *cfg, int key, unsigned g, const char *value, char *err,
                     size_t errlen) {
  struct s5_key m = moved(s5_config_key(key), g);
  return m.type->parse(&m, cfg, value, err, errlen);
}

void s5_group_key_print(const struct s5_config *cfg, int key, unsigned g, FILE *out) {
  struct s5_key m = moved(s5_config_key(key), g);
  m.type->print(&m, cfg, out);
}

static void group_defaults(struct s5_config *cfg, unsigned g, const char *name) {
  char err[256];
  memset(&cfg->groups[g], 0, sizeof cfg->groups[g]);
  snprintf(cfg->groups[g].name, sizeof cfg->groups[g].name, "%s", name);
  for (int i = 0; i < s5_config_key_count(); i++) {
    const struct s5_key *k = s5_config_key(i);
    if (!k->group) continue;
    if (s5_group_key_set(cfg, i, g, k->def, err, sizeof err) != 0) {
      fprintf(stderr, "s5tund: bad built-in default for [group] %s: %s\n", k->name, err);
      abort();
    }
  }
}

int s5_group_add(struct s5_config *cfg, const char *name, char *err, size_t errlen) {
  if (s5_section_name_check("group", name, err, errlen) != 0) return -1;
  for (unsigned i = 0; i < cfg->n_groups; i++) {
    if (strcmp(cfg->groups[i].name, name) == 0) {
      snprintf(err, errlen, "group %s is already declared", name);
      return -1;
    }
  }
  if (cfg->n_groups == S5_GROUPS_MAX) {
    snprintf(err, errlen, "more than %d groups", S5_GROUPS_MAX);
    return -1;
  }
  unsigned g = cfg->n_groups++;
  group_defaults(cfg, g, name);
  return (int)g;
}

void s5_group_print(const struct s5_config *cfg, FILE *out) {
  for (unsigned g = 0; g < cfg->n_groups; g++) {
    fprintf(out, "\n[group %s]\n", cfg->groups[g].name);
    for (int i = 0; i < s5_config_key_count(); i++)
      if (s5_config_key(i)->group) s5_group_key_print(cfg, i, g, out);
  }
}

static int upstream_named(const struct s5_config *cfg, const char *name) {
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (strcmp(cfg->upstreams[i].name, name) == 0) return (int)i;
  return -1;
}

int s5_group_check(const struct s5_config *cfg, unsigned g, int *key, char *err, size_t errlen) {
  const struct s5_group_cfg *gr = &cfg->groups[g];
  /* One name, one outbound: a rule naming it must mean one thing. */
  if (upstream_named(cfg, gr->name) >= 0) {
    *key = -1;
    snprintf(err, errlen,
             "[group %s]: %s is an upstream's name too (names are unique across upstreams, groups, direct "
             "and block: a rule names one of them)",
             gr->name, gr->name);
    return -1;
  }
  if (gr->n_members == 0) {
    *key = s5_config_key_find("group", "members");
    snprintf(err, errlen, "no upstream: a group takes one at least (members = a, b)");
    return -1;
  }
  if (gr->strategy == S5_BALANCE_FASTEST && gr->probe == S5_PROBE_NONE) {
    *key = s5_config_key_find("group", "strategy");
    snprintf(err, errlen,
             "fastest needs probe = http://HOST:PORT/PATH or probe = connect HOST:PORT (how each member is "
             "timed)");
    return -1;
  }
  if (gr->selected[0] != '\0') {
    int u = upstream_named(cfg, gr->selected);
    bool member = false;
    for (unsigned i = 0; i < gr->n_members && u >= 0; i++) member |= gr->members[i] == u;
    if (!member) {
      char shown[S5_SHOW_MAX], names[200];
      size_t at = 0;
      names[0] = '\0';
      for (unsigned i = 0; i < gr->n_members && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                               cfg->upstreams[gr->members[i]].name);
      s5_show(shown, sizeof shown, gr->selected);
      *key = s5_config_key_find("group", "selected");
      snprintf(err, errlen, "%s is not a member of the group (members = %s)", shown, names);
      return -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- members */

struct members {
  const struct s5_config *cfg;
  unsigned g, n;
  uint8_t m[S5_UPSTREAMS_MAX];
};

/* The upstreams' names, "a, b, c", for a message. */
static void upstream_names(const struct s5_config *cfg, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < cfg->n_upstreams && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", cfg->upstreams[i].name);
}

static int member_item(char *item, void *arg, char *err, size_t errlen) {
  struct members *a = arg;
  const struct s5_config *cfg = a->cfg;
  char shown[S5_SHOW_MAX], known[200];
  s5_show(shown, sizeof shown, item);
  if (s5_rules_own_outbound(item) != NULL) {
    snprintf(err, errlen,
             "%s is an outbound of [rules], not an upstream: a group's members are upstreams (a rule names "
             "%s itself)",
             item, item);
    return -1;
  }
  int u = upstream_named(cfg, item); /* first: a group named as an upstream is refused as such */
  for (unsigned i = 0; i < cfg->n_groups && u < 0; i++) {
    if (strcmp(cfg->groups[i].name, item) != 0) continue;
    if (i == a->g)
      snprintf(err, errlen, "%s is this group: a group may not contain itself (members are upstreams)",
               shown);
    else snprintf(err, errlen, "%s is a group: groups cannot nest (members are upstreams)", shown);
    return -1;
  }
  if (u < 0) {
    upstream_names(cfg, known, sizeof known);
    snprintf(err, errlen, "unknown upstream %s (the upstreams: %s)", shown, known);
    return -1;
  }
  for (unsigned i = 0; i < a->n; i++) {
    if (a->m[i] == u) {
      snprintf(err, errlen, "%s is listed twice", shown);
      return -1;
    }
  }
  a->m[a->n++] = (uint8_t)u; /* at most S5_UPSTREAMS_MAX: each once */
  return 0;
}

/* Upstream names, each once, resolved against the upstreams read so far
 * (the loader reads members once they are all read). Empty: none (which
 * s5_group_check refuses). */
static int members_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                         size_t errlen) {
  struct members a = {.cfg = cfg, .g = group_index(k)};
  struct s5_group_cfg *gr = &cfg->groups[a.g];
  if (s5_list_each(text, member_item, &a, err, errlen) != 0) return -1;
  gr->n_members = a.n;
  memcpy(gr->members, a.m, sizeof gr->members);
  return 0;
}

static void members_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_group_cfg *gr = &cfg->groups[group_index(k)];
  fprintf(out, "%s =", k->name);
  for (unsigned i = 0; i < gr->n_members; i++)
    fprintf(out, "%s%s", i ? ", " : " ",
            gr->members[i] < cfg->n_upstreams ? cfg->upstreams[gr->members[i]].name : "?");
  fputc('\n', out);
}

/* ---------------------------------------------------------------- probe */

#define PROBE_WANT \
  "expected http://HOST:PORT/PATH (time to the status line) or connect HOST:PORT (time to the proxy's grant)"

/* HOST: a name ([A-Za-z0-9_.-], labels not empty) or an IPv4 address, or
 * an IPv6 address in brackets. *end: what follows it. */
static int probe_host(const char *p, char *host, size_t hostlen, const char **end, char *err, size_t errlen) {
  unsigned char bin[16];
  size_t n;
  if (p[0] == '[') {
    const char *close = strchr(p, ']');
    n = close != NULL ? (size_t)(close - p - 1) : 0;
    if (close == NULL || n == 0 || n >= hostlen) goto bad;
    memcpy(host, p + 1, n);
    host[n] = '\0';
    if (inet_pton(AF_INET6, host, bin) != 1) goto bad;
    *end = close + 1;
    return 0;
  }
  n = strcspn(p, ":/");
  if (n == 0 || n > 253 || n >= hostlen) goto bad;
  memcpy(host, p, n);
  host[n] = '\0';
  if (strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n ||
      host[0] == '.' || strstr(host, "..") != NULL)
    goto bad;
  *end = p + n;
  if (p[n] == ':' && strchr(p + n + 1, ':') != NULL && strchr(p + n + 1, ':') < p + strcspn(p, "/")) {
    snprintf(err, errlen, "an IPv6 address goes in brackets: [ADDR]:PORT");
    return -1;
  }
  return 0;
bad:
  snprintf(err, errlen, "HOST is a name, an IPv4 address or an IPv6 address in brackets; " PROBE_WANT);
  return -1;
}

static int probe_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                       size_t errlen) {
  struct s5_group_cfg *gr = &cfg->groups[group_index(k)];
  struct s5_group_cfg t = *gr;
  const char *p, *rest;
  unsigned long port = 80;
  char num[8];
  t.probe = S5_PROBE_NONE;
  t.probe_host[0] = t.probe_path[0] = '\0';
  t.probe_port = 0;
  if (text[0] == '\0') goto done;
  if (strncasecmp(text, "http://", 7) == 0) {
    t.probe = S5_PROBE_HTTP;
    p = text + 7;
  } else if (strncasecmp(text, "connect", 7) == 0 && (text[7] == ' ' || text[7] == '\t')) {
    t.probe = S5_PROBE_CONNECT;
    p = text + 7 + strspn(text + 7, " \t");
  } else {
    snprintf(err, errlen, PROBE_WANT);
    return -1;
  }
  if (probe_host(p, t.probe_host, sizeof t.probe_host, &rest, err, errlen) != 0) return -1;
  if (*rest == ':') {
    size_t n = strcspn(rest + 1, "/");
    if (n == 0 || n >= sizeof num) goto bad_port;
    memcpy(num, rest + 1, n);
    num[n] = '\0';
    if (s5_parse_uint(num, 1, 65535, &port, err, errlen) != 0) goto bad_port;
    rest += 1 + n;
  } else if (t.probe == S5_PROBE_CONNECT) {
    goto bad_port;
  }
  t.probe_port = (uint16_t)port;
  if (t.probe == S5_PROBE_CONNECT) {
    if (*rest != '\0') goto bad_port;
    goto done;
  }
  if (*rest == '\0') rest = "/";
  size_t n = strlen(rest);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)rest[i] <= 0x20 || (unsigned char)rest[i] >= 0x7f) {
      snprintf(err, errlen, "PATH takes no blanks, control characters or bytes beyond ASCII");
      return -1;
    }
  if (rest[0] != '/' || n >= sizeof t.probe_path) {
    snprintf(err, errlen, "PATH starts with / and is at most %zu bytes", sizeof t.probe_path - 1);
    return -1;
  }
  memcpy(t.probe_path, rest, n + 1);
done:
  *gr = t;
  return 0;
bad_port:
  snprintf(err, errlen, "PORT is 1..65535%s; " PROBE_WANT,
           t.probe == S5_PROBE_CONNECT ? " (connect HOST:PORT needs it)" : "");
  return -1;
}

static void probe_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_group_cfg *gr = &cfg->groups[group_index(k)];
  bool v6 = strchr(gr->probe_host, ':') != NULL;
  const char *o = v6 ? "[" : "", *c = v6 ? "]" : "";
  if (gr->probe == S5_PROBE_HTTP)
    fprintf(out, "%s = http://%s%s%s:%u%s\n", k->name, o, gr->probe_host, c, gr->probe_port, gr->probe_path);
  else if (gr->probe == S5_PROBE_CONNECT)
    fprintf(out, "%s = connect %s%s%s:%u\n", k->name, o, gr->probe_host, c, gr->probe_port);
  else s5_key_print_plain(k, out, "");
}

const struct s5_key_type s5_type_members = {"upstream names", members_parse, members_print};
const struct s5_key_type s5_type_probe = {"probe", probe_parse, probe_print};
