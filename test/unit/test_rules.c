/* SPDX-License-Identifier: MIT */
/* [rules]: the syntax (good lines and bad ones with their reasons, file
 * and line), first match in written order across the name, prefix and
 * plain lists, every matcher, rule files (bare names and prefixes, hosts
 * lines), a walk cancelled, the counters, and the cost: 100,000 names and 10,000 prefixes
 * compiled, their size and the time per match (printed, never asserted:
 * the machine is shared; test/bench/README.md has the figures). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "shared/rules.h"

static struct s5_config cfg;
static char dir[] = "/tmp/test_rules.XXXXXX";

static void setup(const char *def) {
  memset(&cfg, 0, sizeof cfg);
  cfg.n_upstreams = 3;
  snprintf(cfg.upstreams[0].name, 32, "a");
  snprintf(cfg.upstreams[1].name, 32, "b");
  snprintf(cfg.upstreams[2].name, 32, "c");
  snprintf(cfg.rules.def, sizeof cfg.rules.def, "%s", def);
  snprintf(cfg.rules.conf, sizeof cfg.rules.conf, "/etc/s5tund.ini");
}

/* Appends an item as the loader would (its key's parser, then its line). */
static int add(const char *key, const char *text, unsigned line) {
  char err[256];
  struct s5_rule r;
  if (strcmp(key, "rule") == 0 && s5_rule_parse(text, NULL, &r, err, sizeof err) != 0) return -1;
  struct s5_rules_cfg *rc = &cfg.rules;
  size_t n = strlen(text) + 1;
  rc->off[rc->n] = (uint16_t)rc->used;
  rc->kind[rc->n] = strcmp(key, "rule") == 0 ? S5_RULE_ITEM_RULE : S5_RULE_ITEM_FILE;
  rc->line[rc->n] = line;
  memcpy(rc->text + rc->used, text, n);
  rc->used += n;
  rc->n++;
  return 0;
}

static struct s5_rules *build(char *err, size_t errlen) {
  err[0] = '\0';
  size_t need = s5_rules_build(NULL, 0, &cfg, err, errlen);
  if (need == 0) return NULL;
  void *m = malloc(need);
  if (m == NULL || s5_rules_build(m, need, &cfg, err, errlen) != need) {
    free(m);
    return NULL;
  }
  return m;
}

static struct s5_flow flow4(const char *dst, uint16_t port, const char *src, uint8_t proto,
                            const char *name) {
  struct s5_flow f = {.family = AF_INET, .dport = port, .proto = proto, .name = name};
  inet_pton(AF_INET, dst, f.dst);
  inet_pton(AF_INET, src != NULL ? src : "192.168.1.2", f.src);
  return f;
}

static struct s5_flow flow6(const char *dst, uint16_t port) {
  struct s5_flow f = {.family = AF_INET6, .dport = port, .proto = IPPROTO_TCP};
  inet_pton(AF_INET6, dst, f.dst);
  inet_pton(AF_INET6, "fd00::2", f.src);
  return f;
}

static void test_syntax(void) {
  struct s5_rule r;
  char err[256];
  CHECK(s5_rule_parse("domain:Corp.Example. port:443 proto:tcp -> b", NULL, &r, err, sizeof err) == 0 &&
          r.name_kind == S5_RULE_DOMAIN && strcmp(r.name, "corp.example") == 0 && r.port_lo == 443 &&
          r.port_hi == 443 && r.proto == IPPROTO_TCP && strcmp(r.out, "b") == 0,
        "a name, a port, a protocol: %s", err);
  CHECK(s5_rule_parse("dst:2001:db8::/32 src:192.168.1.0/24 port:1000-2000 -> direct", NULL, &r, err,
                      sizeof err) == 0 &&
          r.dst.family == AF_INET6 && r.dst.len == 32 && r.src.family == AF_INET && r.port_lo == 1000 &&
          r.port_hi == 2000,
        "prefixes of both families, a port range: %s", err);
  static const struct {
    const char *line, *why;
  } bad[] = {
    {"domain:example.com", "no \"->\""},
    {"domain:example.com -> ", "one outbound"},
    {"domain:example.com -> a b", "one outbound"},
    {"-> a", "at least one matcher"},
    {"domian:example.com -> a", "unknown matcher"},
    {"domain:exa..mple -> a", "not a name"},
    {"dst:10.0.0.1/33 -> a", "10.0.0.1/33"},
    {"dst:10.0.0.1/8 -> a", "host bits"},
    {"port:70000 -> a", "port: takes"},
    {"port:20-10 -> a", "port: takes"},
    {"proto:icmp -> a", "tcp or udp"},
    {"domain:a.com domain:b.com -> a", "two matchers of one kind"},
    {"example.com -> a", "unknown matcher"}, /* bare names only in a file with its own outbound */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    int rc = s5_rule_parse(bad[i].line, NULL, &r, err, sizeof err);
    CHECK(rc != 0 && strstr(err, bad[i].why) != NULL, "\"%s\": rc %d, message [%s] lacks [%s]", bad[i].line,
          rc, err, bad[i].why);
  }
  /* A list's lines, with the file's own outbound. */
  CHECK(s5_rule_parse("ads.example", "block", &r, err, sizeof err) == 0 && r.name_kind == S5_RULE_DOMAIN &&
          strcmp(r.out, "block") == 0,
        "a bare name: %s", err);
  CHECK(s5_rule_parse("0.0.0.0 tracker.example", "block", &r, err, sizeof err) == 0 &&
          strcmp(r.name, "tracker.example") == 0,
        "a hosts-file line: %s", err);
  CHECK(
    s5_rule_parse("*.cdn.example", "block", &r, err, sizeof err) == 0 && strcmp(r.name, "cdn.example") == 0,
    "*.name: %s", err);
  CHECK(s5_rule_parse("203.0.113.0/24", "direct", &r, err, sizeof err) == 0 && r.dst.family == AF_INET &&
          r.dst.len == 24,
        "a bare prefix: %s", err);
  CHECK(s5_rule_parse("2001:db8::1", "direct", &r, err, sizeof err) == 0 && r.dst.family == AF_INET6 &&
          r.dst.len == 128,
        "a bare IPv6 address: %s", err);
}

static void test_first_match(void) {
  char err[512];
  uint32_t rule;
  setup("c");
  add("rule", "keyword:track -> block", 10);                 /* 0 */
  add("rule", "full:login.corp.example -> direct", 11);      /* 1 */
  add("rule", "domain:corp.example -> a", 12);               /* 2 */
  add("rule", "dst:10.0.0.0/8 port:443 proto:tcp -> b", 13); /* 3 */
  add("rule", "dst:10.1.0.0/16 -> a", 14);                   /* 4 */
  add("rule", "src:192.168.1.20/32 -> b", 15);               /* 5 */
  add("rule", "dst:2001:db8::/32 -> direct", 16);            /* 6 */
  add("rule", "port:53 proto:udp -> a", 17);                 /* 7 */
  add("rule", "domain:example -> b", 18);                    /* 8: the parent of corp.example, later */
  struct s5_rules *t = build(err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 9, "built 9 rules: %s", err);
  if (t == NULL) return;
  struct s5_flow f = flow4("100.64.0.9", 80, NULL, IPPROTO_TCP, "www.corp.example");
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 2, "domain: a name below: rule %u", rule);
  f.name = "Corp.Example.";
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 2, "domain: the name itself, any case, final dot");
  f.name = "xcorp.example";
  CHECK(s5_rules_match(t, &f, &rule) == 1 && rule == 8, "domain: not a suffix of a label (xcorp): rule %u",
        rule);
  f.name = "login.corp.example";
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_DIRECT && rule == 1, "full: before the domain rule");
  f.name = "a.login.corp.example";
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 2, "full: not below it");
  f.name = "tracker.corp.example";
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 0, "keyword: first");
  f.name = "other.test";
  CHECK(s5_rules_match(t, &f, &rule) == 2 && rule == S5_RULE_DEFAULT, "no rule: the default (c)");
  f = flow4("10.1.2.3", 443, NULL, IPPROTO_TCP, NULL);
  CHECK(s5_rules_match(t, &f, &rule) == 1 && rule == 3, "dst and port: the earlier of two prefixes: %u",
        rule);
  f.dport = 80;
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 4, "port differs: the longer prefix, a later rule");
  f.proto = IPPROTO_UDP, f.dport = 443;
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 4, "proto differs");
  f = flow4("10.1.2.3", 80, NULL, IPPROTO_TCP, "www.corp.example");
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 2, "a name rule before a prefix rule");
  f = flow4("198.51.100.1", 80, "192.168.1.20", IPPROTO_TCP, NULL);
  CHECK(s5_rules_match(t, &f, &rule) == 1 && rule == 5, "src: the LAN client");
  f = flow4("198.51.100.1", 53, "192.168.1.21", IPPROTO_UDP, NULL);
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 7, "port and proto alone");
  f = flow6("2001:db8:5::1", 80);
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_DIRECT && rule == 6, "an IPv6 prefix");
  f = flow6("2001:db9::1", 80);
  CHECK(s5_rules_match(t, &f, &rule) == 2 && rule == S5_RULE_DEFAULT, "outside it");
  CHECK(s5_rules_hits(t, 2) == 4 && s5_rules_hits(t, S5_RULE_DEFAULT) == 2 &&
          s5_rules_outbound_hits(t, S5_OUTBOUND_DIRECT) == 2 && s5_rules_outbound_hits(t, 2) == 2,
        "hits per rule and per outbound: %llu %llu %llu", (unsigned long long)s5_rules_hits(t, 2),
        (unsigned long long)s5_rules_hits(t, S5_RULE_DEFAULT),
        (unsigned long long)s5_rules_outbound_hits(t, S5_OUTBOUND_DIRECT));
  const char *file;
  unsigned line;
  s5_rules_where(t, 5, &file, &line);
  CHECK(strcmp(file, "/etc/s5tund.ini") == 0 && line == 15, "where: the configuration's line 15: %s:%u", file,
        line);
  free(t);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) exit(1);
}

static void test_files(void) {
  char err[512], path[256], path2[256], item[300];
  uint32_t rule;
  const char *file;
  unsigned line;
  snprintf(path, sizeof path, "%s/rules.txt", dir);
  snprintf(path2, sizeof path2, "%s/ads.txt", dir);
  write_file(path, "# company\n\ndomain:corp.example -> a  # the office\nsrc:192.168.1.0/24 port:22 -> b\n");
  write_file(path2, "0.0.0.0 ads.example\ntracker.example\n*.pixel.example\n203.0.113.0/24\n");
  setup("");
  add("rule", "full:a.corp.example -> c", 5);
  snprintf(item, sizeof item, "%s", path);
  add("rules-file", item, 6);
  snprintf(item, sizeof item, "%s -> block", path2);
  add("rules-file", item, 7);
  struct s5_rules *t = build(err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 7, "1 + 2 + 4 rules: %s", err);
  if (t == NULL) return;
  struct s5_flow f = flow4("100.64.0.1", 80, NULL, IPPROTO_TCP, "a.corp.example");
  CHECK(s5_rules_match(t, &f, &rule) == 2 && rule == 0, "the inline rule first");
  f.name = "b.corp.example";
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == 1, "then the file's");
  s5_rules_where(t, rule, &file, &line);
  CHECK(file != NULL && strcmp(file, path) == 0 && line == 3, "rules.txt:3: %s:%u", file ? file : "-", line);
  f.name = "x.pixel.example";
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 5, "the list's *.name");
  s5_rules_where(t, rule, &file, &line);
  CHECK(file != NULL && strcmp(file, path2) == 0 && line == 3, "ads.txt:3: %s:%u", file ? file : "-", line);
  f = flow4("203.0.113.7", 443, NULL, IPPROTO_TCP, NULL);
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 6, "the list's prefix");
  f = flow4("198.51.100.1", 80, NULL, IPPROTO_TCP, NULL);
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BALANCE && rule == S5_RULE_DEFAULT,
        "no default: any upstream, as [balance] chooses");
  free(t);
  /* A bad line names its file and line; an unknown outbound too. */
  write_file(path, "domain:corp.example -> a\n\nport:99999 -> a\n");
  t = build(err, sizeof err);
  snprintf(item, sizeof item, "%s:3: port:", path);
  CHECK(t == NULL && strstr(err, item) != NULL, "bad line: [%s] lacks [%s]", err, item);
  free(t);
  write_file(path, "domain:corp.example -> nowhere\n");
  snprintf(item, sizeof item, "%s:1: unknown outbound \"nowhere\"", path);
  CHECK(s5_rules_check(&cfg, err, sizeof err) < 0 && strstr(err, item) != NULL, "check: [%s] lacks [%s]", err,
        item);
  setup("nowhere");
  cfg.rules.def_line = 9;
  CHECK(s5_rules_check(&cfg, err, sizeof err) < 0 &&
          strstr(err, "/etc/s5tund.ini:9: [rules] default: unknown") != NULL,
        "default: [%s]", err);
  unlink(path);
  setup("");
  snprintf(item, sizeof item, "%s", path);
  add("rules-file", item, 4);
  CHECK(s5_rules_check(&cfg, err, sizeof err) < 0 &&
          strstr(err, "/etc/s5tund.ini:4: [rules] rules-file: cannot read") != NULL,
        "a file that is not there: [%s]", err);
  unlink(path2);
}

/* A reload abandoned as the daemon stops (threads/daemon/reload.c): the
 * flag set during a walk stops it at the file's next line; set before, the
 * walk and the build stop at once with "cancelled", never retried as a
 * file that changed; cleared, the same rules build. */
static int cancel_at_first(const struct s5_rule *r, const struct s5_rule_at *at, void *arg, char *err,
                           size_t errlen) {
  (void)r, (void)at, (void)err, (void)errlen;
  ++*(int *)arg;
  s5_rules_cancel(true);
  return 0;
}

static void test_cancel(void) {
  char err[512], path[256], item[300];
  int calls = 0;
  snprintf(path, sizeof path, "%s/cancel.txt", dir);
  write_file(path, "one.example\ntwo.example\nthree.example\n");
  setup("");
  snprintf(item, sizeof item, "%s -> block", path);
  add("rules-file", item, 3);
  snprintf(item, sizeof item, "%s:2: cancelled", path);
  CHECK(s5_rules_each(&cfg, cancel_at_first, &calls, err, sizeof err) < 0 && calls == 1 && strstr(err, item),
        "cancelled during the walk: %d rules, [%s]", calls, err);
  CHECK(s5_rules_cancelled(), "the flag reads back");
  CHECK(s5_rules_check(&cfg, err, sizeof err) < 0 && strstr(err, "cancelled") != NULL, "check: [%s]", err);
  struct s5_rules *t = build(err, sizeof err);
  CHECK(t == NULL && strstr(err, "cancelled") != NULL && strstr(err, "reads") == NULL, "build: [%s]", err);
  free(t);
  s5_rules_cancel(false);
  t = build(err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 3, "cleared: 3 rules: %s", err);
  free(t);
  unlink(path);
}

/* A hosts file as published (the shape of the big community lists, lines
 * written here): the header's lines for the machine itself and addresses
 * other than a sink are not rules (skipped, counted, the first one's line
 * kept for the log); every name of a line is a rule of that line. */
static int load_args(struct s5_config *c, char *err, size_t errlen, ...);
static void test_hosts(void) {
  char err[512], path[256], item[300], note[512];
  uint32_t rule;
  const char *file;
  unsigned line;
  snprintf(path, sizeof path, "%s/hosts", dir);
  write_file(path,
             "# Title: a blocklist in a hosts file's shape\n"  /* 1 */
             "#\n"                                             /* 2 */
             "127.0.0.1 localhost\n"                           /* 3: the first line that is no rule */
             "127.0.0.1 localhost.localdomain\n"               /* 4 */
             "127.0.0.1 local\n"                               /* 5 */
             "255.255.255.255 broadcasthost\n"                 /* 6 */
             "::1 localhost\n"                                 /* 7 */
             "::1 ip6-localhost\n"                             /* 8 */
             "::1 ip6-loopback\n"                              /* 9 */
             "fe80::1%lo0 localhost\n"                         /* 10 */
             "ff00::0 ip6-localnet\n"                          /* 11 */
             "ff02::1 ip6-allnodes\n"                          /* 12 */
             "0.0.0.0 0.0.0.0\n"                               /* 13 */
             "\r\n"                                            /* 14 */
             "# ads\r\n"                                       /* 15 */
             "0.0.0.0 ads.example\r\n"                         /* 16 */
             "0.0.0.0 tracker.example\tpixel.example  # two\n" /* 17 */
             "127.0.0.1 localhost localhost.localdomain\n"     /* 18: no rule either */
             "127.0.0.1 localhost metrics.example\n"           /* 19: one rule */
             "192.168.1.10 nas.lan\n");                        /* 20: a mapping, no rule */
  setup("a");
  snprintf(item, sizeof item, "%s -> block", path);
  add("rules-file", item, 3);
  long n = s5_rules_check(&cfg, err, sizeof err);
  CHECK(n == 4, "4 rules (ads, tracker, pixel, metrics): %ld %s", n, err);
  CHECK(cfg.rules.skipped[0] == 13 && cfg.rules.skip_line[0] == 3,
        "13 lines skipped, the first line 3: %u %u", cfg.rules.skipped[0], cfg.rules.skip_line[0]);
  snprintf(item, sizeof item, "%s:3", path);
  CHECK(s5_rules_note(&cfg, 0, note, sizeof note) == 1 && strstr(note, item) != NULL &&
          strstr(note, "13 lines") != NULL,
        "the note: [%s] names [%s] and the count", note, item);
  CHECK(s5_rules_note(&cfg, 1, note, sizeof note) == 0, "no note for an item that is not there");
  struct s5_rules *t = build(err, sizeof err);
  CHECK(t != NULL && s5_rules_count(t) == 4, "built 4 rules: %s", err);
  if (t == NULL) return;
  struct s5_flow f = flow4("100.64.0.1", 443, NULL, IPPROTO_TCP, "img.pixel.example");
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 2, "the second name of a line: %u",
        rule);
  s5_rules_where(t, rule, &file, &line);
  CHECK(file != NULL && strcmp(file, path) == 0 && line == 17, "its line is the line's: %s:%u",
        file ? file : "-", line);
  f.name = "tracker.example";
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 1, "the first name: %u", rule);
  f.name = "metrics.example";
  CHECK(s5_rules_match(t, &f, &rule) == S5_OUTBOUND_BLOCK && rule == 3, "after localhost on its line");
  f.name = "dc1.corp.local";
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == S5_RULE_DEFAULT, "the header's local blocks nothing");
  f.name = "localhost";
  CHECK(s5_rules_match(t, &f, &rule) == 0 && rule == S5_RULE_DEFAULT, "nor its localhost");
  free(t);
  /* As the daemon loads it: it runs (it exited 2 on the first header line). */
  static struct s5_config c;
  char ini[256];
  snprintf(ini, sizeof ini, "%s/hosts.ini", dir);
  FILE *fi = fopen(ini, "w");
  if (fi == NULL) exit(1);
  fprintf(fi, "[upstream a]\naddress = 127.0.0.1\n[rules]\nrules-file = %s -> block\n", path);
  fclose(fi);
  int rc = load_args(&c, err, sizeof err, "--config", ini, NULL);
  CHECK(rc == S5_ARGS_RUN && c.rules.skipped[0] == 13, "loaded: rc %d, %u skipped: %s", rc,
        c.rules.skipped[0], err);
  unlink(ini);
  /* Names that are not names: UTF-8 (punycode is the way), an address in
   * brackets; each names its file and line. */
  static const struct {
    const char *text, *why;
  } bad[] = {
    {"0.0.0.0 ads.example\n0.0.0.0 b\xc3\xbc"
     "cher.example\n",
     ":2: "},
    {"0.0.0.0 [192.0.2.1]\n", ":1: "},
    {"[192.0.2.1]\n", ":1: "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(path, bad[i].text);
    err[0] = '\0';
    n = s5_rules_check(&cfg, err, sizeof err);
    snprintf(item, sizeof item, "%s%s", path, bad[i].why);
    CHECK(n < 0 && strstr(err, item) != NULL && (i > 0 || strstr(err, "punycode (xn--") != NULL) &&
            (i == 0 || strstr(err, "brackets") != NULL),
          "bad name %zu: [%s] lacks [%s] or its hint", i, err, item);
  }
  struct s5_rule r;
  CHECK(s5_rule_parse("domain:b\xc3\xbc"
                      "cher.example -> a",
                      NULL, &r, err, sizeof err) != 0 &&
          strstr(err, "punycode (xn--") != NULL,
        "UTF-8 in a rule: [%s]", err);
  unlink(path);
}

/* The loader: [rules] keys from a file (rule and rules-file repeat, each
 * with its line), errors naming file, line and key, and the --explain
 * flags. */
static int load_args(struct s5_config *c, char *err, size_t errlen, ...) {
  char *argv[16] = {"s5tund"}, *out = NULL, *msg = NULL;
  size_t olen = 0, mlen = 0;
  int argc = 1;
  va_list ap;
  va_start(ap, errlen);
  while (argc < 15 && (argv[argc] = va_arg(ap, char *)) != NULL) argc++;
  va_end(ap);
  FILE *o = open_memstream(&out, &olen), *e = open_memstream(&msg, &mlen);
  if (o == NULL || e == NULL) exit(1);
  int rc = s5_args_load_io(c, argc, argv, o, e);
  fclose(o), fclose(e);
  snprintf(err, errlen, "%s", msg != NULL ? msg : "");
  free(out), free(msg);
  return rc;
}

static void test_config_file(void) {
  char path[256], err[1024];
  static struct s5_config c;
  snprintf(path, sizeof path, "%s/s5tund.ini", dir);
  write_file(path,
             "[upstream a]\naddress = 127.0.0.1\n[upstream b]\naddress = 127.0.0.1\n[rules]\n"
             "default = b\nrule = domain:x.example -> a\nrules-file = /dev/null -> block\n"
             "rule = port:53 -> direct\n");
  int rc = load_args(&c, err, sizeof err, "--config", path, NULL);
  CHECK(rc == S5_ARGS_RUN && c.rules.n == 3 && c.rules.line[0] == 7 && c.rules.line[1] == 8 &&
          c.rules.line[2] == 9 && c.rules.def_line == 6 && strcmp(c.rules.conf, path) == 0,
        "three items with their lines: rc %d, %u items, lines %u %u %u: %s", rc, c.rules.n, c.rules.line[0],
        c.rules.line[1], c.rules.line[2], err);
  rc = load_args(&c, err, sizeof err, "--config", path, "--explain", "127.0.0.1:53", "--proto", "udp", NULL);
  CHECK(rc == S5_ARGS_EXPLAIN && s5_args_explain()->proto == IPPROTO_UDP, "--explain: rc %d %s", rc, err);
  rc = load_args(&c, err, sizeof err, "--config", path, "--name", "x.example", NULL);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, "go with --explain") != NULL, "--name alone: [%s]", err);
  rc = load_args(&c, err, sizeof err, "--config", path, "--explain", "nowhere", NULL);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, "--explain: ") != NULL, "--explain nowhere: [%s]", err);
  write_file(path,
             "[upstream a]\naddress = 127.0.0.1\n[rules]\nrule = dst:10.0.0.0/8 -> a\n"
             "rule = keyword:x -> b\n");
  rc = load_args(&c, err, sizeof err, "--config", path, NULL);
  char want[300];
  snprintf(want, sizeof want, "%s:5: [rules] rule: unknown outbound \"b\"", path);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, want) != NULL, "unknown outbound: [%s] lacks [%s]", err, want);
  write_file(path, "[rules]\nrule = dst:10.0.0.0/8 ->\n");
  rc = load_args(&c, err, sizeof err, "--config", path, NULL);
  snprintf(want, sizeof want, "%s:2: [rules] rule: ", path);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, want) != NULL && strstr(err, "one outbound") != NULL,
        "a bad rule: [%s] lacks [%s]", err, want);
  write_file(path, "[rules]\nrules-file = relative.txt\n");
  rc = load_args(&c, err, sizeof err, "--config", path, NULL);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, "absolute path") != NULL, "a relative rules-file: [%s]", err);
  /* A device that never ends is refused, not read (the daemon would hang). */
  write_file(path, "[upstream a]\naddress = 127.0.0.1\n[rules]\nrules-file = /dev/zero -> a\n");
  rc = load_args(&c, err, sizeof err, "--config", path, NULL);
  CHECK(rc == S5_ARGS_EXIT_BAD && strstr(err, "/dev/zero: not a regular file") != NULL, "/dev/zero: [%s]",
        err);
  unlink(path);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 100,000 names and 10,000 prefixes, as published lists: build time,
 * size, time per match; every match checked against what it must be. */
static void test_cost(void) {
  char err[512], path[256], path2[256], item[300];
  snprintf(path, sizeof path, "%s/names.txt", dir);
  snprintf(path2, sizeof path2, "%s/prefixes.txt", dir);
  FILE *f = fopen(path, "w"), *g = fopen(path2, "w");
  if (f == NULL || g == NULL) exit(1);
  for (int i = 0; i < 100000; i++) fprintf(f, "%s.site%d.example\n", i % 3 ? "ads" : "www", i);
  for (int i = 0; i < 10000; i++)
    fprintf(g, "%d.%d.%d.0/%d\n", 11 + i / 4096, (i / 16) % 256, (i % 16) * 16, 20 + i % 5);
  fclose(f), fclose(g);
  setup("a");
  snprintf(item, sizeof item, "%s -> block", path);
  add("rules-file", item, 3);
  snprintf(item, sizeof item, "%s -> direct", path2);
  add("rules-file", item, 4);
  double t0 = now_s();
  struct s5_rules *t = build(err, sizeof err);
  double t1 = now_s();
  CHECK(t != NULL && s5_rules_count(t) == 110000, "110,000 rules: %s", err);
  if (t == NULL) return;
  int n = 200000, wrong = 0;
  char name[64];
  uint32_t rule;
  double m0 = now_s();
  for (int i = 0; i < n; i++) {
    int k = i % 200000;
    snprintf(name, sizeof name, "img.%s.site%d.example", k % 3 ? "ads" : "www", k);
    struct s5_flow fl = flow4(k % 2 ? "12.1.2.3" : "198.51.100.7", 443, NULL, IPPROTO_TCP, name);
    int out = s5_rules_match(t, &fl, &rule);
    int want = k < 100000 ? S5_OUTBOUND_BLOCK : (k % 2 ? S5_OUTBOUND_DIRECT : 0);
    wrong += out != want;
  }
  double m1 = now_s();
  CHECK(wrong == 0, "%d of %d matches wrong", wrong, n);
  printf(
    "cost: 100,000 names + 10,000 prefixes: built in %.0f ms (the files read twice), %.1f MiB; "
    "%.0f ns per match (names of 4 labels, half of them listed)\n",
    (t1 - t0) * 1e3, (double)s5_rules_size(t) / (1 << 20), (m1 - m0) * 1e9 / n);
  free(t);
  unlink(path), unlink(path2);
}

int main(void) {
  if (mkdtemp(dir) == NULL) return 1;
  test_syntax();
  test_first_match();
  test_files();
  test_cancel();
  test_hosts();
  test_config_file();
  test_cost();
  rmdir(dir);
  return check_done();
}
