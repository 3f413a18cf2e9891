/* SPDX-License-Identifier: MIT */
/* The mapped names' state file (core/dns/dns_state.c): a round trip keeps
 * every name's addresses (both families); a damaged, truncated or foreign
 * file, or one with a bad entry under a good checksum, is refused whole and
 * leaves the table empty; 10,000 names load (the time is printed, not
 * asserted). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dns/dns_state.h"
#include "dns/dns_table.h"

#include "check.h"

static char dir[] = "/tmp/s5dnsstate.XXXXXX";
static char path[64];

static struct s5_prefix prefix(const char *text, unsigned len) {
  struct s5_prefix p = {.family = strchr(text, ':') ? AF_INET6 : AF_INET, .len = len};
  inet_pton(p.family, text, p.addr);
  return p;
}

static struct s5_prefix net4, net6, none6;

static struct s5_dns_table *table(uint32_t entries, const struct s5_prefix *n6) {
  struct s5_dns_table *t = s5_dns_table_create(net4.addr, net4.len, entries);
  if (t != NULL && n6->family == AF_INET6) s5_dns_table_pool6(t, n6->addr, n6->len);
  return t;
}

static void write_text(const char *text) {
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) exit(1);
}

/* A file with a correct sum over body (the lines before "sum"). */
static void write_summed(const char *body) {
  uint64_t h = 14695981039346656037ull;
  for (const char *p = body; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  char *text = malloc(strlen(body) + 32);
  sprintf(text, "%ssum %016" PRIx64 "\n", body, h);
  write_text(text);
  free(text);
}

static char *read_text(size_t *len) {
  FILE *f = fopen(path, "r");
  static char buf[1 << 16];
  *len = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f != NULL) fclose(f);
  buf[*len] = '\0';
  return buf;
}

static int names_in(struct s5_dns_table *t, uint32_t count) {
  int n = 0;
  uint32_t first = ntohl(*(uint32_t *)net4.addr) + 1;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t a = htonl(first + i);
    char name[256];
    n += s5_dns_table_name(t, (uint8_t *)&a, name, sizeof name) > 0;
  }
  return n;
}

static void test_round_trip(void) {
  struct s5_dns_table *t = table(100, &net6);
  uint8_t a[20][4], a6[20][16];
  char name[64];
  for (int i = 0; i < 20; i++) {
    snprintf(name, sizeof name, "host%d.example.com", i);
    s5_dns_table_map(t, name, strlen(name), a[i]);
    s5_dns_table_map6(t, name, strlen(name), a6[i]);
  }
  uint8_t odd[4];
  s5_dns_table_map(t, "a b", 3, odd); /* a proxy's odd name: not written */
  char err[256] = "";
  uint64_t g = 0;
  long n = s5_dns_state_save(t, &net4, &net6, path, &g, err, sizeof err);
  CHECK(n == 20, "saved %ld names: %s", n, err);
  CHECK(g == s5_dns_table_generation(t), "generation of the copy written");
  char tmp[80];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CHECK(access(path, F_OK) == 0 && access(tmp, F_OK) != 0, "the file is there, its temporary one gone");
  s5_dns_table_destroy(t);

  t = table(100, &net6);
  long skipped = -1;
  n = s5_dns_state_load(t, &net4, &net6, path, &skipped, err, sizeof err);
  CHECK(n == 20 && skipped == 0, "loaded %ld (skipped %ld): %s", n, skipped, err);
  for (int i = 0; i < 20; i++) {
    char got[256];
    snprintf(name, sizeof name, "host%d.example.com", i);
    CHECK(s5_dns_table_name(t, a[i], got, sizeof got) > 0 && strcmp(got, name) == 0, "%s by its IPv4 address",
          name);
    CHECK(s5_dns_table_name6(t, a6[i], got, sizeof got) > 0 && strcmp(got, name) == 0,
          "%s by its IPv6 address", name);
    uint8_t again[4];
    s5_dns_table_map(t, name, strlen(name), again);
    CHECK(memcmp(again, a[i], 4) == 0, "%s keeps its address", name);
  }
  uint8_t fresh[4];
  s5_dns_table_map(t, "new.example", 11, fresh);
  int clash = 0;
  for (int i = 0; i < 20; i++) clash |= memcmp(fresh, a[i], 4) == 0;
  CHECK(!clash, "a new name takes a free address, not a restored one");
  s5_dns_table_destroy(t);

  /* cache-size lowered: the entries beyond it are skipped, the rest kept */
  t = table(10, &net6);
  n = s5_dns_state_load(t, &net4, &net6, path, &skipped, err, sizeof err);
  CHECK(n == 10 && skipped == 10, "smaller table: %ld loaded, %ld skipped: %s", n, skipped, err);
  s5_dns_table_destroy(t);
}

/* The copy's size the table keeps (used to size the writer's buffer)
 * follows names given, recycled and restored; a buffer too small for it is
 * refused, not filled with a part. */
static void test_snapshot_size(void) {
  struct s5_dns_table *t = table(3, &net6);
  s5_dns_table_reuse_ms(t, 0); /* every entry may be recycled at once */
  static const char *const names[] = {"a", "bb.example", "ccc.example.org", "d",
                                      "eeeeeeeeeeeeeeeeeeee.example"};
  static uint8_t buf[3 * S5_DNS_SNAP_ENTRY_MAX];
  uint8_t a[4];
  CHECK(s5_dns_table_snapshot_size(t) == 0 && s5_dns_table_snapshot(t, buf, sizeof buf, NULL) == 0, "empty");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    s5_dns_table_map(t, names[i], strlen(names[i]), a);
    size_t want = s5_dns_table_snapshot_size(t), got = s5_dns_table_snapshot(t, buf, sizeof buf, NULL);
    CHECK(want == got, "after %s: size %zu, copy %zu", names[i], want, got);
    CHECK(s5_dns_table_snapshot(t, buf, want - 1, NULL) == SIZE_MAX, "after %s: a short buffer refused",
          names[i]);
  }
  /* d and eeee... and ccc... are left: 5+15 + 5+1 + 5+28 */
  CHECK(s5_dns_table_snapshot_size(t) == 59, "three names left: %zu", s5_dns_table_snapshot_size(t));
  s5_dns_table_reset(t);
  CHECK(s5_dns_table_snapshot_size(t) == 0, "reset");
  CHECK(s5_dns_table_restore(t, 1, "x.example", 9) == 0 && s5_dns_table_snapshot_size(t) == 14, "restored");
  CHECK(s5_dns_table_restore(t, 2, "x.example", 9) < 0 && s5_dns_table_restore(t, 1, "y.example", 9) < 0 &&
          s5_dns_table_restore(t, 3, "z.example", 9) < 0,
        "a name or an entry twice, an entry out of range");
  s5_dns_table_destroy(t);
}

/* The file as saved by test_round_trip, altered by fn, must be refused. */
static void refused(const char *what, const struct s5_prefix *n6, const char *want) {
  struct s5_dns_table *t = table(100, n6);
  char err[256] = "";
  long n = s5_dns_state_load(t, &net4, n6, path, NULL, err, sizeof err);
  CHECK(n == -1 && strstr(err, want) != NULL, "%s: %ld, \"%s\" (want \"%s\")", what, n, err, want);
  CHECK(names_in(t, 100) == 0, "%s: the table is left empty", what);
  s5_dns_table_destroy(t);
}

static void test_refused(void) {
  struct s5_dns_table *t = table(100, &net6);
  uint8_t a[4];
  s5_dns_table_map(t, "one.example", 11, a);
  s5_dns_table_map(t, "two.example", 11, a);
  char err[256] = "";
  CHECK(s5_dns_state_save(t, &net4, &net6, path, NULL, err, sizeof err) == 2, "saved: %s", err);
  s5_dns_table_destroy(t);
  size_t len;
  char *good = strdup(read_text(&len));

  struct s5_prefix other4 = net4;
  other4.addr[1] = 65;
  t = table(100, &net6);
  CHECK(s5_dns_state_load(t, &other4, &net6, path, NULL, err, sizeof err) == -1 &&
          strstr(err, "other networks") != NULL,
        "another network: %s", err);
  s5_dns_table_destroy(t);
  refused("no IPv6 pool now", &none6, "other networks");
  struct s5_prefix other6 = prefix("fdff:5336::", 96);
  refused("another IPv6 pool", &other6, "other networks");

  char *bad = strdup(good);
  bad[strlen(bad) / 2] ^= 1;
  write_text(bad);
  refused("a flipped bit", &net6, "checksum");
  bad[strlen(bad) / 2] ^= 1;
  bad[len - 10] = '\0';
  write_text(bad);
  refused("truncated in the sum", &net6, "truncated");
  bad[len / 2] = '\0';
  write_text(bad);
  refused("truncated halfway", &net6, "truncated");
  write_text("");
  refused("empty", &net6, "truncated");
  write_summed("SSH-2.0 hello\n");
  refused("foreign", &net6, "not a state file");
  write_summed("s5tund-dnsmap 2\nnetwork 100.64.0.0/16\n");
  refused("version 2", &net6, "version");

  const char *head = "s5tund-dnsmap 1\nnetwork 100.64.0.0/16\nnetwork6 fdff:5335::/96\n";
  static const struct {
    const char *what, *entries, *want;
  } cases[] = {
    {"outside the network", "names 2\n100.64.0.1 a.example\n100.65.0.1 b.example\n", "outside"},
    {"the network's first address", "names 1\n100.64.0.0 a.example\n", "outside"},
    {"a name twice", "names 2\n100.64.0.1 a.example\n100.64.0.2 a.example\n", "twice"},
    {"an address twice", "names 2\n100.64.0.1 a.example\n100.64.0.1 b.example\n", "twice"},
    {"uppercase", "names 1\n100.64.0.1 A.example\n", "bad address or name"},
    {"an empty label", "names 1\n100.64.0.1 a..example\n", "bad address or name"},
    {"a final dot", "names 1\n100.64.0.1 example.\n", "bad address or name"},
    {"a bad address", "names 1\n100.64.0.256 a.example\n", "bad address or name"},
    {"no name", "names 1\n100.64.0.1\n", "address name"},
    {"fewer lines than names", "names 3\n100.64.0.1 a.example\n", "address name"},
    {"more lines than names", "names 1\n100.64.0.1 a.example\n100.64.0.2 b.example\n", "more lines"},
    {"no names line", "100.64.0.1 a.example\n", "names line"},
    {"names -1", "names -1\n", "names line"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char body[512];
    snprintf(body, sizeof body, "%s%s", head, cases[i].entries);
    write_summed(body);
    refused(cases[i].what, &net6, cases[i].want);
  }
  char body[512];
  snprintf(body, sizeof body, "%snames 1\n100.64.0.1 a.example\n", head);
  write_summed(body);
  t = table(100, &net6);
  CHECK(s5_dns_state_load(t, &net4, &net6, path, NULL, err, sizeof err) == 1, "the hand-made file: %s", err);
  s5_dns_table_destroy(t);

  /* bounded: larger than the table could write */
  FILE *f = fopen(path, "w");
  for (int i = 0; f != NULL && i < 100 * 300; i++) fputc('x', f);
  if (f != NULL) fclose(f);
  refused("too large", &net6, "too large");
  unlink(path);
  t = table(100, &net6);
  CHECK(s5_dns_state_load(t, &net4, &net6, path, NULL, err, sizeof err) == S5_DNS_STATE_NONE, "no file");
  s5_dns_table_destroy(t);
  free(bad);
  free(good);
}

static double ms_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void test_ten_thousand(void) {
  struct s5_dns_table *t = table(10000, &net6);
  char name[64], err[256] = "";
  uint8_t a[4];
  for (int i = 0; i < 10000; i++) {
    int n = snprintf(name, sizeof name, "host-%d.service%d.example.com", i, i % 97);
    s5_dns_table_map(t, name, (size_t)n, a);
  }
  struct timespec t0;
  static uint8_t snap[10000 * S5_DNS_SNAP_ENTRY_MAX];
  memset(snap, 0, sizeof snap); /* as s5_dns_state_save() does before it locks */
  clock_gettime(CLOCK_MONOTONIC, &t0);
  size_t slen = s5_dns_table_snapshot(t, snap, sizeof snap, NULL);
  double copy_ms = ms_since(&t0); /* what the workers may wait for */
  CHECK(slen > 10000 * 5 && slen != SIZE_MAX, "the copy holds the names (%zu bytes)", slen);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long n = s5_dns_state_save(t, &net4, &net6, path, NULL, err, sizeof err);
  double save_ms = ms_since(&t0);
  CHECK(n == 10000, "saved %ld: %s", n, err);
  s5_dns_table_destroy(t);
  t = table(10000, &net6);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  n = s5_dns_state_load(t, &net4, &net6, path, NULL, err, sizeof err);
  double load_ms = ms_since(&t0);
  CHECK(n == 10000 && names_in(t, 10000) == 10000, "loaded %ld: %s", n, err);
  printf("10,000 names: copied out under the lock in %.2f ms, saved in %.1f ms, loaded in %.1f ms\n", copy_ms,
         save_ms, load_ms);
  s5_dns_table_destroy(t);
}

int main(void) {
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(path, sizeof path, "%s/dnsmap", dir);
  net4 = prefix("100.64.0.0", 16);
  net6 = prefix("fdff:5335::", 96);
  test_round_trip();
  test_snapshot_size();
  test_refused();
  test_ten_thousand();
  unlink(path);
  rmdir(dir);
  return check_done();
}
