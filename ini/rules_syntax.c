/* SPDX-License-Identifier: MIT */
/* [rules]: the key types of rule and rules-file, the syntax of one rule
 * (s5_rule_parse), and the walk over every rule in order, inline ones and
 * the lines of the files (s5_rules_each), which the check at load time
 * and the compiler of core/shared/rules.c share. See config.h. */
#define S5_RULE_LINE_MAX 1024
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ini/internal.h"
#include "ini/keys.h"

/* ---------------------------------------------------------------- one rule */

static const char *const name_kinds[] = {"", "domain", "full", "keyword"};

/* A name as rules compare it: lowercase, without a final dot; letters,
 * digits, '-', '_' and dots, labels not empty. */
static int rule_name(const char *text, size_t len, char *out, char *err, size_t errlen) {
  if (len > 0 && text[len - 1] == '.') len--;
  if (len == 0 || len >= S5_RULE_NAME_MAX) {
    snprintf(err, errlen, "a name is 1..%d characters", S5_RULE_NAME_MAX - 1);
    return -1;
  }
  int shown = (int)(len > 60 ? 60 : len);
  if (text[0] == '[') {
    snprintf(err, errlen, "not a name: %.*s (an address goes without brackets, and is matched by dst:)",
             shown, text);
    return -1;
  }
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c >= 0x80) {
      snprintf(err, errlen, "not a name: %.*s (letters beyond ASCII: write the name in punycode (xn--...))",
               shown, text);
      return -1;
    }
    if (!(isalnum(c) || c == '-' || c == '_' || c == '.') || (c == '.' && (i == 0 || text[i - 1] == '.'))) {
      snprintf(err, errlen, "not a name: %.*s", shown, text);
      return -1;
    }
    out[i] = (char)tolower(c);
  }
  out[len] = '\0';
  return 0;
}

static int rule_port(const char *v, struct s5_rule *r, char *err, size_t errlen) {
  char lo[8], *dash = strchr(v, '-');
  unsigned long a, b;
  size_t n = dash != NULL ? (size_t)(dash - v) : strlen(v);
  if (n == 0 || n >= sizeof lo) goto bad;
  memcpy(lo, v, n);
  lo[n] = '\0';
  if (s5_parse_uint(lo, 0, 65535, &a, err, errlen) != 0) goto bad;
  b = a;
  if (dash != NULL && s5_parse_uint(dash + 1, a, 65535, &b, err, errlen) != 0) goto bad;
  r->port_lo = (uint16_t)a;
  r->port_hi = (uint16_t)b;
  return 0;
bad:
  snprintf(err, errlen, "port: takes N or N-M (0..65535, N <= M)");
  return -1;
}

/* One matcher "kind:value", or in a rule file with an outbound of its own
 * a bare name (domain:) or address or prefix (dst:). */
static int rule_token(char *tok, struct s5_rule *r, bool bare_ok, char *err, size_t errlen) {
  char *colon = strchr(tok, ':'), *v = colon != NULL ? colon + 1 : NULL;
  size_t klen = colon != NULL ? (size_t)(colon - tok) : 0;
  struct s5_prefix p;
  for (int k = S5_RULE_DOMAIN; k <= S5_RULE_KEYWORD; k++) {
    if (colon == NULL || klen != strlen(name_kinds[k]) || strncmp(tok, name_kinds[k], klen) != 0) continue;
    if (r->name_kind != S5_RULE_NONE) goto twice;
    r->name_kind = (uint8_t)k;
    return rule_name(v, strlen(v), r->name, err, errlen);
  }
  if (colon != NULL && (klen == 3 && (strncmp(tok, "dst", 3) == 0 || strncmp(tok, "src", 3) == 0))) {
    struct s5_prefix *to = tok[0] == 'd' ? &r->dst : &r->src;
    if (to->family != 0) goto twice;
    if (s5_parse_route_prefix(v, to, err, errlen) != 0) return -1;
    return 0;
  }
  if (colon != NULL && klen == 4 && strncmp(tok, "port", 4) == 0) {
    if (r->port_lo != 0 || r->port_hi != 65535) goto twice;
    return rule_port(v, r, err, errlen);
  }
  if (colon != NULL && klen == 5 && strncmp(tok, "proto", 5) == 0) {
    if (r->proto != 0) goto twice;
    if (strcasecmp(v, "tcp") == 0) r->proto = IPPROTO_TCP;
    else if (strcasecmp(v, "udp") == 0) r->proto = IPPROTO_UDP;
    else {
      snprintf(err, errlen, "proto: takes tcp or udp");
      return -1;
    }
    return 0;
  }
  if (bare_ok) {
    if (s5_parse_route_prefix(tok, &p, err, errlen) == 0) {
      if (r->dst.family != 0) goto twice;
      r->dst = p;
      return 0;
    }
    const char *n = tok;
    if (strncmp(n, "*.", 2) == 0) n += 2;
    else if (n[0] == '.') n++;
    if (strchr(n, ':') == NULL || n[0] == '[') {
      if (r->name_kind != S5_RULE_NONE) goto twice;
      r->name_kind = S5_RULE_DOMAIN;
      return rule_name(n, strlen(n), r->name, err, errlen);
    }
  }
  snprintf(
    err, errlen,
    "unknown matcher \"%.40s\" (domain:, full:, keyword:, dst:, src:, port:, proto:; then -> OUTBOUND)", tok);
  return -1;
twice:
  snprintf(err, errlen, "two matchers of one kind in a rule (\"%.40s\"): a rule is all of its matchers", tok);
  return -1;
}

/* Hosts-file lines of blocklists: "0.0.0.0 NAME" (or 127.0.0.1, ::, ::1). */
static bool hosts_address(const char *tok) {
  return strcmp(tok, "0.0.0.0") == 0 || strcmp(tok, "127.0.0.1") == 0 || strcmp(tok, "::") == 0 ||
         strcmp(tok, "::1") == 0;
}

int s5_rule_parse(const char *text, const char *out, struct s5_rule *r, char *err, size_t errlen) {
  char buf[S5_RULE_LINE_MAX], *save = NULL, *tok;
  memset(r, 0, sizeof *r);
  r->port_hi = 65535;
  if (strlen(text) >= sizeof buf) {
    snprintf(err, errlen, "a rule is at most %d characters", S5_RULE_LINE_MAX - 1);
    return -1;
  }
  strcpy(buf, text);
  char *arrow = strstr(buf, "->");
  if (arrow != NULL) {
    *arrow = '\0';
    char *o = arrow + 2;
    while (*o == ' ' || *o == '\t') o++;
    size_t n = strcspn(o, " \t");
    if (n == 0 || n >= sizeof r->out || o[n + strspn(o + n, " \t")] != '\0') {
      snprintf(err, errlen, "after -> comes one outbound: an upstream's or group's name, direct or block");
      return -1;
    }
    memcpy(r->out, o, n);
    r->out[n] = '\0';
  } else if (out != NULL) {
    snprintf(r->out, sizeof r->out, "%s", out);
  } else {
    snprintf(err, errlen, "a rule is MATCHERS -> OUTBOUND (no \"->\")");
    return -1;
  }
  int n = 0;
  bool bare = arrow == NULL; /* a list's line: bare names and prefixes */
  for (tok = strtok_r(buf, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save), n++) {
    if (bare && n == 0 && hosts_address(tok)) continue;
    if (rule_token(tok, r, bare, err, errlen) != 0) return -1;
  }
  if (r->name_kind == S5_RULE_NONE && r->dst.family == 0 && r->src.family == 0 && r->proto == 0 &&
      r->port_lo == 0 && r->port_hi == 65535) {
    snprintf(err, errlen, "a rule needs at least one matcher (the catch-all is [rules] default)");
    return -1;
  }
  return 0;
}

int s5_rules_outbound(const struct s5_config *cfg, const char *name) {
  if (strcmp(name, "direct") == 0) return S5_OUTBOUND_DIRECT;
  if (strcmp(name, "block") == 0) return S5_OUTBOUND_BLOCK;
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (strcmp(cfg->upstreams[i].name, name) == 0) return (int)i;
  for (unsigned g = 0; g < cfg->n_groups; g++)
    if (strcmp(cfg->groups[g].name, name) == 0) return S5_OUTBOUND_GROUP + (int)g;
  return -1;
}

/* ---------------------------------------------------------------- the walk */

static bool walk_cancel;

void s5_rules_cancel(bool on) { __atomic_store_n(&walk_cancel, on, __ATOMIC_RELAXED); }
bool s5_rules_cancelled(void) { return __atomic_load_n(&walk_cancel, __ATOMIC_RELAXED); }

/* The outbound of a rules-file item: "PATH -> OUT" (the path alone: NULL). */
static const char *item_split(const char *item, char *path, size_t pathlen, char *out, size_t outlen) {
  const char *arrow = strstr(item, " -> ");
  size_t n = arrow != NULL ? (size_t)(arrow - item) : strlen(item);
  while (n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t')) n--;
  snprintf(path, pathlen, "%.*s", (int)n, item);
  if (arrow == NULL) return NULL;
  const char *o = arrow + 4;
  while (*o == ' ') o++;
  snprintf(out, outlen, "%s", o);
  return out;
}

/* A hosts line's address ("fe80::1%lo0": with a zone): 1, and *sink when
 * it is one blocklists map names to (0.0.0.0, 127.0.0.1, ::, ::1); 0 when
 * tok is no address. */
static int hosts_addr(const char *tok, bool *sink) {
  static const unsigned char zero[16];
  unsigned char b[16];
  char a[INET6_ADDRSTRLEN];
  size_t n = strcspn(tok, "%");
  if (n == 0 || n >= sizeof a) return 0;
  memcpy(a, tok, n);
  a[n] = '\0';
  if (tok[n] == '\0' && inet_pton(AF_INET, a, b) == 1) {
    *sink = memcmp(b, zero, 4) == 0 || (b[0] == 127 && b[1] == 0 && b[2] == 0 && b[3] == 1);
    return 1;
  }
  if (inet_pton(AF_INET6, a, b) == 1) {
    *sink = tok[n] == '\0' && memcmp(b, zero, 15) == 0 && b[15] <= 1;
    return 1;
  }
  return 0;
}

/* The names a hosts file gives the machine itself: not a list's rules
 * (a rule for "local" would take every name under .local). */
static bool own_name(const char *name) {
  static const char *const own[] = {"localhost",      "localhost.localdomain", "local",
                                    "broadcasthost",  "ip6-localhost",         "ip6-loopback",
                                    "ip6-localnet",   "ip6-mcastprefix",       "ip6-allnodes",
                                    "ip6-allrouters", "ip6-allhosts"};
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (strcasecmp(name, own[i]) == 0) return true;
  return false;
}

/* A hosts-file line of a list with an outbound of its own: an address,
 * then one or more names. Each name is a rule (fn once per name) when the
 * address is a sink and the name is not the machine's own nor an address.
 * Returns the number of rules, -1 with what (a bad name), or -2 when p is
 * no hosts line. */
static int hosts_line(const char *p, const char *out, const struct s5_rule_at *at, s5_rule_fn *fn, void *arg,
                      char *what, size_t wlen) {
  char buf[S5_RULE_LINE_MAX], *save = NULL, *tok;
  bool sink = false, name_sink;
  int rules = 0;
  snprintf(buf, sizeof buf, "%s", p);
  char *addr = strtok_r(buf, " \t", &save), *names = save;
  if (addr == NULL || names == NULL || names[strspn(names, " \t")] == '\0' || strchr(names, ':') != NULL ||
      !hosts_addr(addr, &sink))
    return -2; /* a bare address, or with matchers ("10.0.0.1 port:80") */
  while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
    if (!sink || own_name(tok) || hosts_addr(tok, &name_sink)) continue;
    struct s5_rule r = {.name_kind = S5_RULE_DOMAIN, .port_hi = 65535};
    snprintf(r.out, sizeof r.out, "%s", out);
    if (rule_name(tok, strlen(tok), r.name, what, wlen) != 0) return -1;
    if (fn != NULL && fn(&r, at, arg, what, wlen) != 0) return -1;
    rules++;
  }
  return rules;
}

static int each_file(const struct s5_config *cfg, unsigned item, s5_rule_fn *fn, void *arg, long *count,
                     uint32_t *skipped, uint32_t *skip_line, char *err, size_t errlen) {
  char path[PATH_MAX], outname[S5_RULE_OUT_MAX], what[200];
  const char *out =
    item_split(cfg->rules.text + cfg->rules.off[item], path, sizeof path, outname, sizeof outname);
  char opened[PATH_MAX + 64];
  FILE *f = s5_open_regular(path, opened, sizeof opened);
  if (f == NULL) {
    snprintf(err, errlen, "%s:%u: [rules] rules-file: cannot read %s", cfg->rules.conf, cfg->rules.line[item],
             opened);
    return -1;
  }
  char line[S5_RULE_LINE_MAX];
  unsigned lineno = 0;
  struct s5_rule r;
  int rc = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    if (s5_rules_cancelled()) {
      snprintf(err, errlen, "%s:%u: cancelled", path, lineno);
      rc = -1;
      break;
    }
    if (strchr(line, '\n') == NULL && !feof(f)) {
      snprintf(err, errlen, "%s:%u: longer than %d bytes", path, lineno, S5_RULE_LINE_MAX - 2);
      rc = -1;
      break;
    }
    char *hash = strchr(line, '#'), *p = line;
    if (hash != NULL) *hash = '\0';
    while (*p == ' ' || *p == '\t') p++;
    char *end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1])) *--end = '\0';
    if (*p == '\0') continue;
    struct s5_rule_at at = {.file = path, .line = lineno, .item = item};
    int hosts = out != NULL ? hosts_line(p, out, &at, fn, arg, what, sizeof what) : -2;
    if (hosts == -1) {
      snprintf(err, errlen, "%s:%u: %s", path, lineno, what);
      rc = -1;
      break;
    }
    if (hosts >= 0) {
      *count += hosts;
      if (hosts == 0 && (*skipped)++ == 0) *skip_line = lineno;
      continue;
    }
    if (s5_rule_parse(p, out, &r, what, sizeof what) != 0) {
      snprintf(err, errlen, "%s:%u: %s", path, lineno, what);
      rc = -1;
      break;
    }
    if (fn != NULL && fn(&r, &at, arg, what, sizeof what) != 0) {
      snprintf(err, errlen, "%s:%u: %s", path, lineno, what);
      rc = -1;
      break;
    }
    (*count)++;
  }
  if (rc == 0 && ferror(f)) {
    snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
    rc = -1;
  }
  fclose(f);
  return rc;
}

/* s5_rules_each, with each file's lines that are not rules counted in
 * notes (NULL: not kept). */
static long walk(const struct s5_config *cfg, s5_rule_fn *fn, void *arg, struct s5_rules_cfg *notes,
                 char *err, size_t errlen) {
  long count = 0;
  char what[200];
  struct s5_rule r;
  for (unsigned i = 0; i < cfg->rules.n; i++) {
    if (s5_rules_cancelled()) {
      snprintf(err, errlen, "[rules]: cancelled");
      return -1;
    }
    if (cfg->rules.kind[i] == S5_RULE_ITEM_FILE) {
      uint32_t skipped = 0, first = 0;
      if (each_file(cfg, i, fn, arg, &count, &skipped, &first, err, errlen) != 0) return -1;
      if (notes != NULL) notes->skipped[i] = skipped, notes->skip_line[i] = first;
      continue;
    }
    struct s5_rule_at at = {.file = NULL, .line = cfg->rules.line[i], .item = i};
    if (s5_rule_parse(cfg->rules.text + cfg->rules.off[i], NULL, &r, what, sizeof what) != 0 ||
        (fn != NULL && fn(&r, &at, arg, what, sizeof what) != 0)) {
      snprintf(err, errlen, "%s:%u: [rules] rule: %s", cfg->rules.conf, cfg->rules.line[i], what);
      return -1;
    }
    count++;
  }
  return count;
}

long s5_rules_each(const struct s5_config *cfg, s5_rule_fn *fn, void *arg, char *err, size_t errlen) {
  return walk(cfg, fn, arg, NULL, err, errlen);
}

/* Every outbound named exists; direct is only taken with a way around the
 * tunnel (see s5_rules_check in config.h). */
static int check_one(const struct s5_rule *r, const struct s5_rule_at *at, void *arg, char *err,
                     size_t errlen) {
  const struct s5_config *cfg = arg;
  (void)at;
  if (s5_rules_outbound(cfg, r->out) == -1) {
    snprintf(err, errlen, "unknown outbound \"%s\" (an [upstream] or [group] name, direct or block)", r->out);
    return -1;
  }
  return 0;
}

long s5_rules_check(struct s5_config *cfg, char *err, size_t errlen) {
  if (cfg->rules.def[0] != '\0' && s5_rules_outbound(cfg, cfg->rules.def) == -1) {
    snprintf(
      err, errlen,
      "%s:%u: [rules] default: unknown outbound \"%s\" (an [upstream] or [group] name, direct or block)",
      cfg->rules.conf, cfg->rules.def_line, cfg->rules.def);
    return -1;
  }
  memset(cfg->rules.skipped, 0, sizeof cfg->rules.skipped);
  memset(cfg->rules.skip_line, 0, sizeof cfg->rules.skip_line);
  return walk(cfg, check_one, cfg, &cfg->rules, err, errlen);
}

int s5_rules_note(const struct s5_config *cfg, unsigned item, char *buf, size_t len) {
  char path[PATH_MAX], out[S5_RULE_OUT_MAX];
  if (item >= cfg->rules.n || cfg->rules.kind[item] != S5_RULE_ITEM_FILE || cfg->rules.skipped[item] == 0)
    return 0;
  item_split(cfg->rules.text + cfg->rules.off[item], path, sizeof path, out, sizeof out);
  snprintf(
    buf, len,
    "[rules] rules-file %s: %u line%s skipped as no rules (hosts lines for this machine's own names, or "
    "for an address other than 0.0.0.0, 127.0.0.1, :: or ::1), the first at %s:%u",
    path, cfg->rules.skipped[item], cfg->rules.skipped[item] == 1 ? "" : "s", path,
    cfg->rules.skip_line[item]);
  return 1;
}

/* ---------------------------------------------------------------- the keys */

static int item_add(struct s5_config *cfg, uint8_t kind, const char *text, char *err, size_t errlen) {
  struct s5_rules_cfg *rc = &cfg->rules;
  size_t n = strlen(text) + 1;
  if (text[0] == '\0') return 0; /* an empty value adds nothing (--check-config prints one) */
  for (const char *c = text; *c != '\0'; c++)
    if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) {
      snprintf(err, errlen, "control characters are not allowed");
      return -1;
    }
  if (rc->n >= S5_RULES_ITEMS_MAX || rc->used + n > sizeof rc->text) {
    snprintf(err, errlen, "at most %d rule and rules-file lines of %zu bytes in all; more go in a rules-file",
             S5_RULES_ITEMS_MAX, sizeof rc->text);
    return -1;
  }
  rc->off[rc->n] = (uint16_t)rc->used;
  rc->kind[rc->n] = kind;
  rc->line[rc->n] = 0;
  memcpy(rc->text + rc->used, text, n);
  rc->used += n;
  rc->n++;
  return 0;
}

static int rule_store(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  struct s5_rule r;
  (void)k;
  if (text[0] != '\0' && s5_rule_parse(text, NULL, &r, err, errlen) != 0) return -1;
  return item_add(cfg, S5_RULE_ITEM_RULE, text, err, errlen);
}

static int file_store(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  char path[PATH_MAX], out[S5_RULE_OUT_MAX];
  (void)k;
  if (text[0] == '\0') return 0;
  item_split(text, path, sizeof path, out, sizeof out);
  if (path[0] != '/') {
    snprintf(err, errlen, "takes an absolute path, optionally followed by \" -> OUTBOUND\"");
    return -1;
  }
  return item_add(cfg, S5_RULE_ITEM_FILE, text, err, errlen);
}

/* The rule key prints every item in order, each under its own key, so that
 * rules and files read back interleaved as they were; rules-file prints
 * nothing then. With no items each prints its empty line. */
static void rule_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  if (cfg->rules.n == 0) {
    s5_key_print_plain(k, out, "");
    return;
  }
  for (unsigned i = 0; i < cfg->rules.n; i++)
    fprintf(out, "%s = %s\n", cfg->rules.kind[i] == S5_RULE_ITEM_FILE ? "rules-file" : "rule",
            cfg->rules.text + cfg->rules.off[i]);
}

static void file_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  if (cfg->rules.n == 0) s5_key_print_plain(k, out, "");
}

void s5_rules_note_line(struct s5_config *cfg, const char *conf, const char *name, unsigned line) {
  struct s5_rules_cfg *rc = &cfg->rules;
  if (strcmp(name, "default") == 0 && rc->def[0] != '\0') rc->def_line = line;
  else if ((strcmp(name, "rule") == 0 || strcmp(name, "rules-file") == 0) && rc->n > 0 &&
           rc->line[rc->n - 1] == 0)
    rc->line[rc->n - 1] = line;
  else return;
  snprintf(rc->conf, sizeof rc->conf, "%s", conf);
}

const struct s5_key_type s5_type_rule = {"rule", rule_store, rule_print};
const struct s5_key_type s5_type_rule_file = {"path [-> outbound]", file_store, file_print};
