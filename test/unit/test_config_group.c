/* SPDX-License-Identifier: MIT */
/* Unit test of outbound groups: [group NAME] sections read into
 * cfg->groups (members as upstream indexes in the order written, even
 * before their upstreams' sections; strategies; probe texts), each error
 * naming file, line and key, [rules] and its compiled set naming a group
 * (S5_OUTBOUND_GROUP + index, its name, its hits), --check-config's round
 * trip, and a reload taking the new groups whole. Prints one line per
 * failed check, then "N passed, M failed". */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ini/config.h"
#include "ini/internal.h"
#include "shared/rules.h"

static char tmpdir[64];

static const char *write_ini(const char *name, const char *text) {
  static char path[8][256];
  static unsigned next;
  char *p = path[next++ % 8];
  snprintf(p, 256, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
    printf("FAIL cannot write %s\n", p);
    exit(1);
  }
  return p;
}

/* Runs the command line argv (NULL-terminated); what it printed into *out
 * (may be NULL), its error message into err. */
static enum s5_args_result run(struct s5_config *c, char **argv, char **out, char *err, size_t errlen) {
  int argc = 0;
  while (argv[argc] != NULL) argc++;
  char *o = NULL, *msg = NULL;
  size_t olen = 0, mlen = 0;
  FILE *of = open_memstream(&o, &olen), *m = open_memstream(&msg, &mlen);
  enum s5_args_result r = s5_args_load_io(c, argc, argv, of, m);
  fclose(of);
  fclose(m);
  snprintf(err, errlen, "%s", msg);
  free(msg);
  if (out != NULL) *out = o;
  else free(o);
  return r;
}

static enum s5_args_result load(struct s5_config *c, const char *text, char *err, size_t errlen) {
  char *argv[] = {"s5tund", "-c", (char *)write_ini("g.ini", text), NULL};
  return run(c, argv, NULL, err, errlen);
}

/* Two groups written before their upstreams: each member resolved, in
 * the order written. */
static const char *const two_groups =
  "[group fast]\n"
  "members  = c, a\n"
  "strategy = fastest\n"
  "probe    = http://h:8080/x\n"
  "probe-interval = 30\n"
  "probe-timeout = 2\n"
  "tolerance = 0\n"
  "\n"
  "[group pick]\n"
  "members = b,a , c\n"
  "strategy = select\n"
  "selected = c\n"
  "probe = connect [::1]:443\n"
  "\n"
  "[upstream a]\naddress = 192.0.2.1\n[upstream b]\naddress = 192.0.2.2\n[upstream c]\naddress = ::1\n"
  "\n"
  "[group rr]\nmembers = a\nstrategy = round-robin\nprobe = connect host.example:80\n"
  "[group plain]\nmembers = b\nprobe = HTTP://Probe.example\n"
  "\n"
  "[rules]\ndefault = pick\nrule = domain:example.com -> fast\nrule = port:25 -> a\n";

static void test_parse(void) {
  static struct s5_config c;
  char err[1024];
  CHECK(load(&c, two_groups, err, sizeof err) == S5_ARGS_RUN, "two groups load: %s", err);
  CHECK(c.n_groups == 4 && c.n_upstreams == 3, "4 groups, 3 upstreams: %u %u", c.n_groups, c.n_upstreams);
  const struct s5_group_cfg *f = &c.groups[0], *p = &c.groups[1], *r = &c.groups[2], *d = &c.groups[3];
  CHECK(strcmp(f->name, "fast") == 0 && f->strategy == S5_BALANCE_FASTEST && f->n_members == 2 &&
          f->members[0] == 2 && f->members[1] == 0,
        "fast: c, a = 2, 0: %u members, %u %u", f->n_members, f->members[0], f->members[1]);
  CHECK(f->probe == S5_PROBE_HTTP && strcmp(f->probe_host, "h") == 0 && f->probe_port == 8080 &&
          strcmp(f->probe_path, "/x") == 0,
        "fast: probe http h 8080 /x: %d %s %u %s", f->probe, f->probe_host, f->probe_port, f->probe_path);
  CHECK(f->probe_interval == 30 && f->probe_timeout == 2 && f->tolerance == 0,
        "fast: interval, timeout, 0 ms");
  CHECK(strcmp(p->name, "pick") == 0 && p->strategy == S5_BALANCE_SELECT && p->n_members == 3 &&
          p->members[0] == 1 && p->members[1] == 0 && p->members[2] == 2 && strcmp(p->selected, "c") == 0,
        "pick: b, a, c selected c");
  CHECK(p->probe == S5_PROBE_CONNECT && strcmp(p->probe_host, "::1") == 0 && p->probe_port == 443 &&
          p->probe_path[0] == '\0',
        "pick: connect [::1]:443: %d %s %u", p->probe, p->probe_host, p->probe_port);
  CHECK(p->probe_interval == 10 && p->probe_timeout == 5 && p->tolerance == 50,
        "defaults: 10 s, 5 s, 50 ms: %u %u %u", p->probe_interval, p->probe_timeout, p->tolerance);
  CHECK(r->strategy == S5_BALANCE_ROUND_ROBIN && r->n_members == 1 && r->members[0] == 0 &&
          r->probe == S5_PROBE_CONNECT && strcmp(r->probe_host, "host.example") == 0 && r->probe_port == 80,
        "rr: connect host.example:80");
  CHECK(d->strategy == S5_BALANCE_FAILOVER && d->selected[0] == '\0' && d->probe == S5_PROBE_HTTP &&
          strcmp(d->probe_host, "Probe.example") == 0 && d->probe_port == 80 &&
          strcmp(d->probe_path, "/") == 0,
        "plain: failover, http://Probe.example -> port 80, path /: %s %u %s", d->probe_host, d->probe_port,
        d->probe_path);
  /* [rules] names groups: their numbers. */
  CHECK(s5_rules_outbound(&c, "fast") == S5_OUTBOUND_GROUP &&
          s5_rules_outbound(&c, "pick") == S5_OUTBOUND_GROUP + 1 &&
          s5_rules_outbound(&c, "plain") == S5_OUTBOUND_GROUP + 3 && s5_rules_outbound(&c, "b") == 1 &&
          s5_rules_outbound(&c, "nowhere") == -1,
        "s5_rules_outbound: groups are S5_OUTBOUND_GROUP + index");

  /* Without [group]: as before, no group, [balance] the default. */
  CHECK(
    load(&c, "[upstream a]\n[upstream b]\n[balance]\nstrategy = hash\n", err, sizeof err) == S5_ARGS_RUN &&
      c.n_groups == 0 && c.balance.strategy == S5_BALANCE_HASH,
    "no [group]: %s", err);
  static struct s5_config zero;
  CHECK(memcmp(c.groups, zero.groups, sizeof c.groups) == 0, "no [group]: the group table is empty");
}

/* A file that must fail with exit 2: the message holds want. */
static void bad(const char *text, const char *want) {
  static struct s5_config c;
  char err[1024];
  enum s5_args_result r = load(&c, text, err, sizeof err);
  CHECK(r == S5_ARGS_EXIT_BAD && strstr(err, want) != NULL, "%s\n  want an error with [%s], got [%s]", text,
        want, r == S5_ARGS_EXIT_BAD ? err : "(loaded)");
}

#define UPS "[upstream a]\n[upstream b]\n" /* lines 1 and 2 */

static void test_errors(void) {
  /* members */
  bad(UPS "[group g]\nmembers = a, x\n",
      "g.ini:4: [group g] members: unknown upstream \"x\" (the upstreams: a, b)");
  bad(UPS "[group g]\nmembers = a, h\n[group h]\nmembers = b\n",
      "g.ini:4: [group g] members: \"h\" is a group: groups cannot nest");
  bad(UPS "[group g]\nmembers = a, g\n",
      "g.ini:4: [group g] members: \"g\" is this group: a group may not contain itself");
  bad(UPS "[group g]\nmembers = direct\n",
      "g.ini:4: [group g] members: direct is an outbound of [rules], not an upstream");
  bad(UPS "[group g]\nmembers = a, block\n", "g.ini:4: [group g] members: block is an outbound of [rules]");
  bad(UPS "[group g]\nmembers = a, b, a\n", "g.ini:4: [group g] members: \"a\" is listed twice");
  bad(UPS "[group g]\nmembers =\n", "g.ini:4: [group g] members: no upstream: a group takes one at least");
  bad(UPS "[group g]\nmembers = a, ,b\n", "g.ini:4: [group g] members: an empty item in the list");
  bad(UPS "[group g]\nstrategy = hash\n",
      "g.ini:3: [group g] members: no upstream"); /* left out: the header */
  /* a group as a whole */
  bad(UPS "[group g]\nmembers = a, b\nselected = c\n",
      "g.ini:5: [group g] selected: \"c\" is not a member of the group (members = a, b)");
  bad(UPS "[group g]\nmembers = a\nselected = b\n", "g.ini:5: [group g] selected: \"b\" is not a member");
  bad(
    UPS "[group g]\nmembers = a, b\nstrategy = fastest\n",
    "g.ini:5: [group g] strategy: fastest needs probe = http://HOST:PORT/PATH or probe = connect HOST:PORT");
  bad(UPS "[group g]\nmembers = a\nstrategy = random\n", "g.ini:5: [group g] strategy: ");
  bad(UPS "[group g]\nmembers = a\nmembers = b\n", "g.ini:5: [group g] members: set twice, first at line 4");
  bad(UPS "[group g]\nmembers = a\ncolour = red\n", "g.ini:5: [group g] colour: unknown key");
  bad(UPS "[group g]\nmembers = a\nprobe-interval = 0\n", "g.ini:5: [group g] probe-interval: ");
  bad(UPS "[group g]\nmembers = a\nprobe-timeout = 3601\n", "g.ini:5: [group g] probe-timeout: ");
  bad(UPS "[group g]\nmembers = a\ntolerance = 60001\n", "g.ini:5: [group g] tolerance: ");
  /* [balance] keeps its four strategies: fastest and select are a group's */
  bad(UPS "[balance]\nstrategy = fastest\n", "g.ini:4: [balance] strategy: ");
  /* probe texts */
  static const char *const probes[] = {
    "https://h:443/",  "http://",       "connect h",          "connect h:",      "connect :80",
    "http://h:0/",     "http://h:80x",  "http://fd00::1:80/", "connect [zz]:1",  "connect [::1]",
    "http://h:80/a b", "ping h",        "connecth:80",        "http://h..x:80/", "connect h:80/x",
    "http://h:99999/", "http://a_b:80", /* the last one is good: a name may hold '_' */
  };
  for (size_t i = 0; i + 1 < sizeof probes / sizeof probes[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, UPS "[group g]\nmembers = a\nstrategy = fastest\nprobe = %s\n", probes[i]);
    bad(text, "g.ini:6: [group g] probe: ");
  }
  /* names: unique across upstreams, groups, direct and block */
  bad(UPS "[group a]\nmembers = b\n", "g.ini:3: [group a]: a is an upstream's name too");
  bad("[group a]\nmembers = b\n" UPS, "g.ini:1: [group a]: a is an upstream's name too");
  bad("[socks5]\n[group socks5]\nmembers = socks5\n",
      "g.ini:2: [group socks5]: socks5 is an upstream's name too");
  bad("[group socks5]\nmembers = socks5\n", "g.ini:1: [group socks5]: socks5 is an upstream's name too");
  bad(UPS "[group g]\nmembers = a\n[group g]\nmembers = b\n", "g.ini:5: group g is already declared");
  bad(UPS "[group direct]\nmembers = a\n", "g.ini:3: [group direct]: direct is an outbound of [rules]");
  bad(UPS "[group block]\nmembers = a\n", "g.ini:3: [group block]: block is an outbound of [rules]");
  bad(UPS "[group]\nmembers = a\n", "g.ini:3: a group needs a name: [group NAME]");
  bad(UPS "[group a b]\n", "g.ini:3: \"a b\" is not a group name");
  char many[4096] = UPS;
  for (int i = 0; i <= S5_GROUPS_MAX; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "[group g%d]\nmembers = a\n", i);
  bad(many, "g.ini:35: more than 16 groups");
  /* [rules] names an outbound that is neither */
  bad(UPS "[group g]\nmembers = a\n[rules]\nrule = port:80 -> h\n",
      "g.ini:6: [rules] rule: unknown outbound \"h\" (an [upstream] or [group] name, direct or block)");

  /* --proxy replaces the upstreams that the groups' members index. */
  static struct s5_config c;
  char err[1024];
  char *argv[] = {"s5tund",
                  "-c",
                  (char *)write_ini("p.ini", UPS "[group g]\nmembers = b\n"),
                  "--proxy",
                  "socks5://192.0.2.9:1080",
                  NULL};
  CHECK(run(&c, argv, NULL, err, sizeof err) == S5_ARGS_EXIT_BAD &&
          strstr(err, "--proxy: the configuration file has [group NAME] sections") != NULL,
        "--proxy over groups: [%s]", err);
}

/* The compiled set: a rule and the default naming groups. */
static void test_rules(void) {
  static struct s5_config c;
  char err[1024];
  if (load(&c, two_groups, err, sizeof err) != S5_ARGS_RUN) {
    CHECK(false, "two groups: %s", err);
    return;
  }
  size_t need = s5_rules_build(NULL, 0, &c, err, sizeof err);
  struct s5_rules *t = need > 0 ? malloc(need) : NULL;
  if (t == NULL || s5_rules_build(t, need, &c, err, sizeof err) != need) {
    CHECK(false, "build: %s", err);
    free(t);
    return;
  }
  struct sockaddr_storage dst;
  char e2[256];
  socklen_t len;
  CHECK(s5_parse_ip("192.0.2.50", 443, &dst, &len, e2, sizeof e2) == 0, "address: %s", e2);
  struct s5_flow f;
  uint32_t rule;
  s5_flow_init(&f, IPPROTO_TCP, &dst, NULL, "www.example.com");
  int o = s5_rules_match(t, &f, &rule);
  CHECK(o == S5_OUTBOUND_GROUP && rule == 0 && strcmp(s5_rules_outbound_name(t, o), "fast") == 0,
        "a rule naming group fast: %d (%s), rule %u", o, s5_rules_outbound_name(t, o), rule);
  s5_flow_init(&f, IPPROTO_TCP, &dst, NULL, "www.example.org");
  o = s5_rules_match(t, &f, &rule);
  CHECK(o == S5_OUTBOUND_GROUP + 1 && rule == S5_RULE_DEFAULT &&
          strcmp(s5_rules_outbound_name(t, o), "pick") == 0,
        "default = pick: %d", o);
  o = s5_rules_match(t, &f, &rule);
  CHECK(s5_rules_outbound_hits(t, S5_OUTBOUND_GROUP + 1) == 2 &&
          s5_rules_outbound_hits(t, S5_OUTBOUND_GROUP) == 1 &&
          s5_rules_outbound_hits(t, S5_OUTBOUND_BALANCE) == 0 &&
          s5_rules_outbound_hits(t, S5_OUTBOUND_BLOCK) == 0,
        "hits per group: pick %llu, fast %llu",
        (unsigned long long)s5_rules_outbound_hits(t, S5_OUTBOUND_GROUP + 1),
        (unsigned long long)s5_rules_outbound_hits(t, S5_OUTBOUND_GROUP));
  CHECK(strcmp(s5_rules_outbound_name(t, S5_OUTBOUND_GROUP + 3), "plain") == 0 &&
          strcmp(s5_rules_outbound_name(t, S5_OUTBOUND_GROUP + 4), "?") == 0 &&
          strcmp(s5_rules_outbound_name(t, 2), "c") == 0,
        "names: the last group, none after it, an upstream");
  free(t);
}

/* --check-config prints the groups; that output loads back to the same
 * configuration and prints the same. */
static void test_round_trip(void) {
  static struct s5_config c, back;
  char *first = NULL, *second = NULL, err[1024];
  char *argv[] = {"s5tund", "-c", (char *)write_ini("rt.ini", two_groups), "--check-config", NULL};
  CHECK(run(&c, argv, &first, err, sizeof err) == S5_ARGS_EXIT_OK, "--check-config: %s", err);
  CHECK(strstr(first,
               "\n[group fast]\nmembers = c, a\nstrategy = fastest\nselected =\n"
               "probe = http://h:8080/x\nprobe-interval = 30\nprobe-timeout = 2\ntolerance = 0\n") != NULL &&
          strstr(first,
                 "\n[group pick]\nmembers = b, a, c\nstrategy = select\nselected = c\n"
                 "probe = connect [::1]:443\n") != NULL &&
          strstr(first, "\nprobe = connect host.example:80\n") != NULL &&
          strstr(first, "\nprobe = http://Probe.example:80/\n") != NULL &&
          strstr(first, "\ndefault = pick\n") != NULL,
        "the groups as printed:\n%s", first);
  /* After the upstreams, before [balance]. */
  const char *up = strstr(first, "[upstream c]"), *gr = strstr(first, "[group fast]"),
             *ba = strstr(first, "[balance]");
  CHECK(up != NULL && gr != NULL && ba != NULL && up < gr && gr < ba, "order: upstreams, groups, [balance]");
  char *argv2[] = {"s5tund", "-c", (char *)write_ini("printed.ini", first), "--check-config", NULL};
  CHECK(run(&back, argv2, &second, err, sizeof err) == S5_ARGS_EXIT_OK, "printed loads: %s", err);
  CHECK(second != NULL && strcmp(first, second) == 0, "printed twice differs:\n%s---\n%s", first, second);
  CHECK(back.n_groups == c.n_groups && memcmp(back.groups, c.groups, sizeof c.groups) == 0,
        "the groups differ after the round trip");
  free(first);
  free(second);
}

/* A reload applies group edits: every group key is live; next's groups
 * stay as read, nothing is kept from the running ones. */
static int warned;
static void on_warn(void *arg, const char *section, const char *was, const char *now) {
  (void)arg;
  warned++;
  printf("note: kept [%s] %s (was %s)\n", section, now, was);
}

static void test_reload(void) {
  static struct s5_config cur, next, want;
  char err[1024];
  const char *before = UPS
    "[group g]\nmembers = a, b\nstrategy = fastest\nprobe = connect 192.0.2.7:80\n"
    "[group h]\nmembers = b\n[rules]\ndefault = g\n";
  const char *after = UPS
    "[upstream c]\n[group h]\nmembers = c, a\nstrategy = select\nselected = a\n"
    "tolerance = 9\n[rules]\ndefault = h\n";
  if (load(&cur, before, err, sizeof err) != S5_ARGS_RUN ||
      load(&next, after, err, sizeof err) != S5_ARGS_RUN) {
    CHECK(false, "reload files: %s", err);
    return;
  }
  want = next;
  warned = 0;
  int kept = s5_config_reload_merge(&next, &cur, on_warn, NULL);
  CHECK(kept == 0 && warned == 0, "nothing kept: %d", kept);
  CHECK(next.n_groups == 1 && memcmp(next.groups, want.groups, sizeof want.groups) == 0 &&
          strcmp(next.groups[0].name, "h") == 0 && next.groups[0].strategy == S5_BALANCE_SELECT &&
          next.groups[0].n_members == 2 && next.groups[0].members[0] == 2 && next.groups[0].tolerance == 9,
        "the new groups whole: %u groups", next.n_groups);
  /* And back to none. */
  if (load(&next, UPS, err, sizeof err) != S5_ARGS_RUN) return;
  CHECK(s5_config_reload_merge(&next, &cur, on_warn, NULL) == 0 && next.n_groups == 0, "groups removed");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_config_group.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) {
    printf("FAIL mkdtemp\n");
    return 1;
  }
  test_parse();
  test_errors();
  test_rules();
  test_round_trip();
  test_reload();
  static const char *const files[] = {"g.ini", "p.ini", "rt.ini", "printed.ini"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
    unlink(p);
  }
  rmdir(tmpdir);
  return check_done();
}
