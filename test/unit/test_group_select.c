/* SPDX-License-Identifier: MIT */
/* Unit test of [group] strategy = select's live choice
 * (threads/ctl/group_select.c): --select checked against the live
 * configuration (an unknown group, a group of another strategy, a member
 * not in the group, a name that is not one: refused, nothing changed),
 * the choice taken at once by s5_uptab_group_member, and what a reload
 * does with it: kept when the reload leaves `selected` as it was, dropped
 * for the configuration's when it changes it, ignored when the member
 * left the group. And the groups as the operator sees them
 * (threads/ctl/group_render.c): the JSON, the --stats table read back from
 * it, the Prometheus families. Prints one line per failed check, then "N
 * passed, M failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ini/config.h"
#include "shared/uptab.h"
#include "threads/ctl/group_select.h"
#include "threads/ctl/render.h"

static char dir[64];

static int load(struct s5_config *c, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/g.ini", dir);
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) exit(1);
  char *argv[] = {"s5tund", "-c", path, NULL};
  FILE *devnull = fopen("/dev/null", "w");
  enum s5_args_result r = s5_args_load_io(c, 3, argv, devnull, devnull);
  fclose(devnull);
  return r == S5_ARGS_RUN ? 0 : -1;
}

#define UPS \
  "[upstream a]\naddress = 192.0.2.1\n[upstream b]\naddress = 192.0.2.2\n[upstream c]\naddress = 192.0.2.3\n"

static const char *member(const struct s5_uptab *t, const struct s5_config *c, unsigned g) {
  int m = s5_uptab_group_member(t, c, g);
  return m >= 0 ? c->upstreams[m].name : "-";
}

static struct s5_uptab t;
static struct s5_config live, next;

/* Reloads to text: as s5_reload_finish does. */
static void reload(const char *text) {
  CHECK(load(&next, text) == 0, "reload config loads");
  s5_uptab_assign(&t, &next);
  s5_group_reloaded(&t, &live, &next);
  live = next;
}

static char *render_json(void) {
  size_t n = s5_groups_part.json(NULL, 0, 0);
  char *doc = calloc(1, n + 8);
  s5_groups_part.json(doc, n + 1, 0);
  return doc;
}

/* The documents for a select group with b chosen live (a measured, b not)
 * and a failover group. */
static void test_render(void) {
  static struct s5_config c;
  CHECK(load(&c, UPS "[group pin]\nmembers = a, b\nstrategy = select\n[group ff]\nmembers = c, a\n") == 0,
        "render config loads");
  CHECK(s5_uptab_setup(&c) == 0, "uptab setup");
  s5_render_config(&c);
  struct s5_uptab *g = s5_uptab();
  char msg[256];
  CHECK(s5_group_select(g, &c, "pin", "b", msg, sizeof msg) == 0, "%s", msg);
  g->u[c.upstreams[0].slot].lat_last_us = 12000;
  g->u[c.upstreams[0].slot].lat_avg_us = 15500;
  g->u[c.upstreams[2].slot].down = 1;
  char *doc = render_json();
  char want[256];
  snprintf(want, sizeof want,
           ",\"groups\":[{\"name\":\"pin\",\"strategy\":\"select\",\"chosen\":\"b\",\"since\":%llu,",
           (unsigned long long)g->g[0].since_unix);
  CHECK(strncmp(doc, want, strlen(want)) == 0, "json: %s", doc);
  CHECK(strstr(doc,
               "\"members\":[{\"name\":\"a\",\"state\":\"up\",\"lat_last_us\":12000,\"lat_avg_us\":15500},"
               "{\"name\":\"b\",\"state\":\"up\",\"lat_last_us\":0,\"lat_avg_us\":0}]}") != NULL,
        "json members: %s", doc);
  CHECK(
    strstr(doc,
           "{\"name\":\"ff\",\"strategy\":\"failover\",\"chosen\":\"\",\"since\":0,\"members\":[{\"name\":"
           "\"c\",\"state\":\"down\"") != NULL,
    "json failover group: %s", doc);

  /* The table, read back from the document as --stats does. */
  char full[4096], *out = NULL;
  size_t len = 0;
  snprintf(full, sizeof full, "{\"started\":1%s}", doc);
  FILE *f = open_memstream(&out, &len);
  s5_groups_part.table(f, full);
  fclose(f);
  CHECK(strstr(out, "\npin ") != NULL && strstr(out, " a     up ") == NULL, "table: %s", out);
  int rows = 0;
  for (char *p = out; (p = strchr(p, '\n')) != NULL; p++) rows += p[1] != '\0' && p[1] != '\n';
  CHECK(rows == 5, "table: a header and 4 member rows, %d lines:\n%s", rows, out);
  char *b = strstr(out, " b ");
  CHECK(b != NULL && strncmp(b, " b                * up", 22) == 0, "table marks b chosen:\n%s", out);
  CHECK(strstr(out, "12.0") != NULL && strstr(out, "15.5") != NULL, "table latency in ms:\n%s", out);
  free(out);
  free(doc);

  size_t n = s5_groups_part.prom(NULL, 0);
  char *prom = calloc(1, n + 1);
  s5_groups_part.prom(prom, n + 1);
  CHECK(strstr(prom, "s5tund_group_info{group=\"pin\",strategy=\"select\"} 1\n") != NULL, "prom info:\n%s",
        prom);
  CHECK(strstr(prom, "s5tund_group_chosen{group=\"pin\",upstream=\"b\"} 1\n") != NULL &&
          strstr(prom, "s5tund_group_chosen{group=\"pin\",upstream=\"a\"} 0\n") != NULL &&
          strstr(prom, "s5tund_group_chosen{group=\"ff\",upstream=\"c\"} 0\n") != NULL,
        "prom chosen:\n%s", prom);
  CHECK(strstr(prom, "s5tund_group_member_up{group=\"ff\",upstream=\"c\"} 0\n") != NULL, "prom up:\n%s",
        prom);
  CHECK(
    strstr(prom, "s5tund_group_member_latency_seconds{group=\"pin\",upstream=\"a\"} 0.015500\n") != NULL &&
      strstr(prom, "s5tund_group_member_latency_last_seconds{group=\"ff\",upstream=\"a\"} 0.012000\n") !=
        NULL &&
      strstr(prom, "latency_seconds{group=\"pin\",upstream=\"b\"}") == NULL,
    "prom latency (measured ones only):\n%s", prom);
  free(prom);
  s5_render_config(NULL);
  CHECK(s5_groups_part.json(NULL, 0, 0) == 0 && s5_groups_part.prom(NULL, 0) == 0,
        "no configuration: nothing");
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/s5-gsel-XXXXXX");
  if (mkdtemp(dir) == NULL) return 1;
  const char *base = UPS
    "[group pin]\nmembers = a, b, c\nstrategy = select\n"
    "[group ff]\nmembers = b, c\n";
  CHECK(load(&live, base) == 0, "config loads");
  s5_uptab_init(&t, &live);
  CHECK(strcmp(member(&t, &live, 0), "a") == 0, "empty selected: the first member, not %s",
        member(&t, &live, 0));

  char msg[1024];
  CHECK(s5_group_select(&t, &live, "nope", "b", msg, sizeof msg) < 0 &&
          strstr(msg, "\"nope\": no such group") && strstr(msg, "pin, ff"),
        "unknown group: %s", msg);
  CHECK(s5_group_select(&t, &live, "ff", "b", msg, sizeof msg) < 0 &&
          strstr(msg, "strategy is failover, not select"),
        "not select: %s", msg);
  CHECK(s5_group_select(&t, &live, "pin", "x", msg, sizeof msg) < 0 && strstr(msg, "\"x\" is not a member") &&
          strstr(msg, "a, b, c"),
        "not a member: %s", msg);
  CHECK(s5_group_select(&t, &live, "pin", "a\"\x1b", msg, sizeof msg) < 0 && strchr(msg, 0x1b) == NULL &&
          strstr(msg, "a bad member name"),
        "a bad name is not echoed: %s", msg);
  CHECK(strcmp(member(&t, &live, 0), "a") == 0 && t.g[0].chosen == 0, "refusals change nothing");

  CHECK(s5_group_select(&t, &live, "pin", "b", msg, sizeof msg) == 0 &&
          strcmp(msg, "group pin: b selected (was a) by the operator") == 0,
        "select: %s", msg);
  CHECK(strcmp(member(&t, &live, 0), "b") == 0, "taken at once: %s", member(&t, &live, 0));
  CHECK(t.g[0].since_unix != 0, "since set");

  reload(base); /* nothing changed */
  CHECK(strcmp(member(&t, &live, 0), "b") == 0, "a reload keeps the live choice: %s", member(&t, &live, 0));
  /* The group moves to another index: its state goes by name. */
  const char *moved = UPS "[group ff]\nmembers = b, c\n[group pin]\nmembers = a, b, c\nstrategy = select\n";
  reload(moved);
  CHECK(strcmp(member(&t, &live, 1), "b") == 0, "by name over a reload: %s", member(&t, &live, 1));

  reload(UPS "[group ff]\nmembers = b, c\n[group pin]\nmembers = a, b, c\nstrategy = select\nselected = c\n");
  CHECK(strcmp(member(&t, &live, 1), "c") == 0 && t.g[1].chosen == 0,
        "a reload that changes selected takes it: %s", member(&t, &live, 1));

  CHECK(s5_group_select(&t, &live, "pin", "b", msg, sizeof msg) == 0 && strstr(msg, "(was c)"), "%s", msg);
  reload(UPS "[group ff]\nmembers = b, c\n[group pin]\nmembers = a, c\nstrategy = select\nselected = c\n");
  CHECK(strcmp(member(&t, &live, 1), "c") == 0, "a live choice no longer a member gives way: %s",
        member(&t, &live, 1));
  CHECK(s5_group_select(&t, &live, "pin", "a", msg, sizeof msg) == 0 && strstr(msg, "(was c)"), "%s", msg);
  reload(UPS
         "[group ff]\nmembers = b, c\n[group pin]\nmembers = a, c\nstrategy = fastest\nselected = c\n"
         "probe = connect 192.0.2.9:80\n");
  reload(UPS "[group ff]\nmembers = b, c\n[group pin]\nmembers = a, c\nstrategy = select\nselected = c\n");
  CHECK(strcmp(member(&t, &live, 1), "c") == 0, "a strategy that becomes select starts from selected: %s",
        member(&t, &live, 1));
  CHECK(strcmp(s5_group_strategy_name(S5_BALANCE_SELECT), "select") == 0 &&
          strcmp(s5_group_strategy_name(S5_BALANCE_LEAST_CONN), "least-connections") == 0,
        "strategy names");

  test_render();
  char path[128];
  snprintf(path, sizeof path, "%s/g.ini", dir);
  unlink(path);
  rmdir(dir);
  return check_done();
}
