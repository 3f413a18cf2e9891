/* SPDX-License-Identifier: MIT */
/* Unit test of the Prometheus document (threads/ctl/metrics.c,
 * s5_metrics_render) for a stats area of known values: every line is a
 * HELP, a TYPE or a sample; each family has one HELP and one TYPE, before
 * its samples, and appears once; every counter of core/shared/stats.h is
 * there with the right name (s5tund_NAME_total, "_total" once; the gauges
 * tcp_active and udp_active without it), type, words and per-queue values
 * (the largest uint64 too), besides info, queues, start time, reloads and
 * readiness. The e2e case ops.metrics reads the same over HTTP with
 * Prometheus's own parser. And --stats's upstream table
 * (threads/ctl/upstream_render.c): a column name over every value. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads/ctl/metrics.h"
#include "threads/ctl/render.h"

#include "check.h"

#define QUEUES 3
#define MAX_FAMILIES 128
#define MAX_SAMPLES 512

struct family {
  char name[96], type[16], help[200];
  int samples;
};

struct sample {
  char key[160]; /* name{labels} */
  char value[32];
};

static struct family fam[MAX_FAMILIES];
static struct sample smp[MAX_SAMPLES];
static int nfam, nsmp;

static int valid_name(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_' || *s == ':')) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_' || *s == ':')) return 0;
  return 1;
}

static struct family *family_of(const char *name) {
  for (int i = 0; i < nfam; i++)
    if (strcmp(fam[i].name, name) == 0) return &fam[i];
  return NULL;
}

/* One line of the document into fam / smp, checking its form. */
static void parse_line(const char *line, struct family **cur) {
  char name[96], rest[200];

  if (strncmp(line, "# HELP ", 7) == 0) {
    CHECK(sscanf(line + 7, "%95s %199[^\n]", name, rest) == 2, "HELP without words: %s", line);
    CHECK(family_of(name) == NULL, "family %s twice", name);
    CHECK(nfam < MAX_FAMILIES, "too many families");
    if (nfam >= MAX_FAMILIES) return;
    *cur = &fam[nfam++];
    snprintf((*cur)->name, sizeof(*cur)->name, "%s", name);
    snprintf((*cur)->help, sizeof(*cur)->help, "%s", rest);
    CHECK(valid_name(name), "family name '%s'", name);
  } else if (strncmp(line, "# TYPE ", 7) == 0) {
    CHECK(sscanf(line + 7, "%95s %15s", name, rest) == 2, "TYPE: %s", line);
    CHECK(*cur != NULL && strcmp((*cur)->name, name) == 0 && (*cur)->type[0] == '\0' && (*cur)->samples == 0,
          "TYPE %s not right after its HELP", name);
    if (*cur != NULL) snprintf((*cur)->type, sizeof(*cur)->type, "%.15s", rest);
    CHECK(strcmp(rest, "counter") == 0 || strcmp(rest, "gauge") == 0, "type '%s' of %s", rest, name);
  } else {
    const char *sp = strrchr(line, ' ');
    size_t klen = sp != NULL ? (size_t)(sp - line) : 0;
    size_t nlen = strcspn(line, "{ ");
    CHECK(sp != NULL && klen < sizeof smp[0].key, "sample: %s", line);
    if (sp == NULL || klen >= sizeof smp[0].key || nsmp >= MAX_SAMPLES) return;
    CHECK(*cur != NULL && strlen((*cur)->name) == nlen && strncmp((*cur)->name, line, nlen) == 0,
          "sample outside its family: %s", line);
    if (*cur != NULL) (*cur)->samples++;
    memcpy(smp[nsmp].key, line, klen);
    smp[nsmp].key[klen] = '\0';
    snprintf(smp[nsmp].value, sizeof smp[nsmp].value, "%s", sp + 1);
    nsmp++;
  }
}

static void parse(const char *doc, size_t len) {
  struct family *cur = NULL;
  size_t at = 0;

  nfam = nsmp = 0;
  memset(fam, 0, sizeof fam);
  CHECK(len > 0 && doc[len - 1] == '\n', "the document ends with a newline");
  while (at < len) {
    const char *nl = memchr(doc + at, '\n', len - at);
    size_t l = nl != NULL ? (size_t)(nl - (doc + at)) : len - at;
    char line[512];
    CHECK(l < sizeof line && l > 0, "a line of %zu bytes", l);
    if (l >= sizeof line || l == 0) return;
    memcpy(line, doc + at, l);
    line[l] = '\0';
    parse_line(line, &cur);
    at += l + 1;
  }
  for (int i = 0; i < nfam; i++) CHECK(fam[i].type[0] != '\0', "%s has no TYPE", fam[i].name);
}

static const char *value_of(const char *key) {
  for (int i = 0; i < nsmp; i++)
    if (strcmp(smp[i].key, key) == 0) return smp[i].value;
  return NULL;
}

static void expect_sample(const char *key, unsigned long long want) {
  const char *v = value_of(key);
  char w[32];
  snprintf(w, sizeof w, "%llu", want);
  CHECK(v != NULL && strcmp(v, w) == 0, "%s = %s, want %s", key, v != NULL ? v : "(missing)", w);
}

static void expect_family(const char *name, const char *type, int samples) {
  const struct family *f = family_of(name);
  CHECK(f != NULL, "family %s missing", name);
  if (f == NULL) return;
  CHECK(strcmp(f->type, type) == 0, "%s is a %s, want %s", name, f->type, type);
  CHECK(f->samples == samples, "%s has %d samples, want %d", name, f->samples, samples);
}

/* Counter j of queue i: distinct everywhere; one at the top of uint64. */
static uint64_t value(unsigned j, unsigned i) {
  return j == 5 && i == 2 ? UINT64_MAX : (uint64_t)(j + 1) * 1000 + i * 7;
}

static void test_document(struct s5_stats_area *a, struct s5_config *cfg) {
  static const char *const names[] = {
#define S5_TEST_NAME(n, kind, help) #n,
    S5_STATS_COUNTERS(S5_TEST_NAME)
#undef S5_TEST_NAME
  };
  size_t len = 0;
  char *doc = s5_metrics_render(a, cfg, &len);
  char metric[128], key[192];

  CHECK(doc != NULL, "s5_metrics_render returned NULL");
  if (doc == NULL) return;
  parse(doc, len);
  expect_family("s5tund_info", "gauge", 1);
  snprintf(key, sizeof key, "s5tund_info{version=\"%s\",mode=\"%s\"}", S5_VERSION,
           cfg->mode == S5_MODE_THREAD ? "thread" : "process");
  expect_sample(key, 1);
  expect_family("s5tund_queues", "gauge", 1);
  expect_sample("s5tund_queues", QUEUES);
  expect_sample("s5tund_start_time_seconds", 1700000000);
  expect_family("s5tund_reloads_total", "counter", 1);
  expect_sample("s5tund_reloads_total", 3);
  expect_sample("s5tund_reload_failures_total", 1);
  expect_family("s5tund_last_reload_timestamp_seconds", "gauge", 1);
  expect_sample("s5tund_last_reload_timestamp_seconds", 1700000100);
  expect_family("s5tund_tun_tx_dropped_total", "counter", 1);
  expect_sample("s5tund_tun_tx_dropped_total", 17);
  expect_family("s5tund_queue_ready", "gauge", QUEUES);
  for (unsigned i = 0; i < QUEUES; i++) {
    snprintf(key, sizeof key, "s5tund_queue_ready{queue=\"%u\"}", i);
    expect_sample(key, i != 1);
  }
  for (unsigned j = 0; j < sizeof names / sizeof names[0]; j++) {
    int gauge = strcmp(names[j], "tcp_active") == 0 || strcmp(names[j], "udp_active") == 0;
    size_t base = strlen(names[j]);
    if (!gauge && base > 6 && strcmp(names[j] + base - 6, "_total") == 0) base -= 6;
    snprintf(metric, sizeof metric, "s5tund_%.*s%s", (int)base, names[j], gauge ? "" : "_total");
    expect_family(metric, gauge ? "gauge" : "counter", QUEUES);
    const struct family *f = family_of(metric);
    CHECK(f == NULL || (strcmp(f->help, names[j]) != 0 && f->help[strlen(f->help) - 1] == '.'),
          "%s: HELP '%s' is not a sentence of its own", metric, f != NULL ? f->help : "");
    for (unsigned i = 0; i < QUEUES; i++) {
      snprintf(key, sizeof key, "%s{queue=\"%u\"}", metric, i);
      expect_sample(key, value(j, i));
    }
  }
  /* The names said in metrics.h, spelled out once. */
  CHECK(family_of("s5tund_tcp_total") != NULL && family_of("s5tund_tcp_total_total") == NULL,
        "tcp_total is s5tund_tcp_total");
  CHECK(strcmp(family_of("s5tund_tcp_active") != NULL ? family_of("s5tund_tcp_active")->help : "",
               "TCP sessions open now.") == 0,
        "the HELP of s5tund_tcp_active");
  CHECK(nfam == 8 + (int)(sizeof names / sizeof names[0]), "%d families, want %d", nfam,
        8 + (int)(sizeof names / sizeof names[0]));
  free(doc);
}

/* Words of a line (runs of non-blanks). */
static int words(const char *line) {
  int n = 0;
  for (const char *p = line; *p != '\0';) {
    while (*p == ' ') p++;
    if (*p == '\0' || *p == '\n') break;
    n++;
    while (*p != ' ' && *p != '\0' && *p != '\n') p++;
  }
  return n;
}

/* --stats's upstream table: the header names every column a row has
 * (failed_refusing had a value and no name). */
static void test_upstream_table(void) {
  static const char json[] =
    "{\"upstreams\":[{\"name\":\"a\",\"state\":\"up\",\"since\":0,\"why\":\"\",\"open\":1,\"total\":2,"
    "\"failed_connect\":3,\"failed_handshake\":4,\"failed_auth\":5,\"failed_timeout\":6,"
    "\"failed_refusing\":7,\"refused\":8,\"retried\":9,\"bytes_up\":10,\"bytes_down\":11},"
    "{\"name\":\"b\",\"state\":\"up\",\"since\":0,\"why\":\"\",\"open\":0,\"total\":0,"
    "\"failed_connect\":0,\"failed_handshake\":0,\"failed_auth\":0,\"failed_timeout\":0,"
    "\"failed_refusing\":0,\"refused\":0,\"retried\":0,\"bytes_up\":0,\"bytes_down\":0}]}";
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  CHECK(f != NULL, "open_memstream");
  if (f == NULL) return;
  s5_upstreams_part.table(f, json);
  fclose(f);
  char *header = strstr(out, "upstream "), *row = header != NULL ? strstr(header, "\na ") : NULL;
  CHECK(header != NULL && row != NULL, "upstream table: %s", out);
  if (header != NULL && row != NULL) {
    CHECK(words(header) == words(row + 1), "upstream table: %d column names, %d values:\n%s", words(header),
          words(row + 1), out);
    CHECK(strstr(header, " f_refuse ") != NULL, "upstream table: no f_refuse column:\n%s", out);
  }
  free(out);
}

int main(void) {
  test_upstream_table();
  struct s5_stats_area *a = s5_stats_create(QUEUES);
  struct s5_config cfg;

  CHECK(a != NULL, "s5_stats_create");
  if (a == NULL) return check_done();
  a->started_unix = 1700000000;
  a->reloads = 3;
  a->reload_failures = 1;
  a->last_reload_unix = 1700000100;
  a->tun_tx_dropped = 17;
  for (unsigned i = 0; i < QUEUES; i++) {
    unsigned j = 0;
    struct s5_queue_stats *q = &a->q[i];
#define S5_TEST_SET(n, kind, help) q->n = value(j++, i);
    S5_STATS_COUNTERS(S5_TEST_SET)
#undef S5_TEST_SET
    q->ready = i != 1;
  }
  s5_config_defaults(&cfg);
  cfg.mode = S5_MODE_THREAD;
  test_document(a, &cfg);
  cfg.mode = S5_MODE_PROCESS;
  test_document(a, &cfg);
  return check_done();
}
