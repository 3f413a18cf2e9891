/* SPDX-License-Identifier: MIT */
/* core/shared/uptab.c: the choice of an upstream under each [balance]
 * strategy (spread, weights, stickiness, what is left out), passive health
 * (down after fail-after failures in a row, one marking, up again by a
 * success or a probe), the table shared across fork, and fastest's
 * latency (the EWMA, its samples) and choice with hysteresis. */
#include <netinet/in.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "shared/uplat.h"
#include "shared/uptab.h"

static struct s5_config cfg;
static struct s5_uptab tab;

static void setup(enum s5_balance strategy, unsigned n, const unsigned *weights) {
  memset(&cfg, 0, sizeof cfg);
  memset(&tab, 0, sizeof tab);
  cfg.n_upstreams = n;
  cfg.balance.strategy = strategy;
  cfg.balance.fail_after = 3;
  for (unsigned i = 0; i < n; i++) {
    snprintf(cfg.upstreams[i].name, sizeof cfg.upstreams[i].name, "up%u", i);
    cfg.upstreams[i].weight = weights != NULL ? weights[i] : 1;
  }
  s5_uptab_init(&tab, &cfg);
}

static struct sockaddr_storage dest4(uint32_t ip, uint16_t port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *a = (struct sockaddr_in *)&ss;
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(ip);
  a->sin_port = htons(port);
  return ss;
}

static void down(unsigned i) {
  for (unsigned k = 0; k < cfg.balance.fail_after; k++) s5_uptab_failed(&tab, i, S5_UP_CONNECT, "refused");
}

static void test_failover(void) {
  setup(S5_BALANCE_FAILOVER, 3, NULL);
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == 0, "first in file order");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 1u << 0) == 1, "tried ones are skipped");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 7) == -1, "every one tried: none");
  CHECK(s5_uptab_failed(&tab, 0, S5_UP_CONNECT, "x") == 0, "one failure is not down");
  CHECK(s5_uptab_failed(&tab, 0, S5_UP_HANDSHAKE, "x") == 0, "two are not");
  CHECK(s5_uptab_failed(&tab, 0, S5_UP_TIMEOUT, "x") == 1, "the third marks it down");
  CHECK(s5_uptab_failed(&tab, 0, S5_UP_TIMEOUT, "x") == 0, "marked once");
  CHECK(tab.u[0].down == 1 && tab.u[0].why == S5_UP_TIMEOUT, "down, why timeout");
  CHECK(tab.u[0].failed[S5_UP_CONNECT] == 1 && tab.u[0].failed[S5_UP_TIMEOUT] == 2, "causes counted");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == 1, "the next healthy one");
  s5_uptab_granted(&tab, 0, 1, 3000, tab.u[1].downs);
  CHECK(tab.u[1].open == 1 && tab.u[1].total == 1, "open, total");
  s5_uptab_ended(&tab, 0, 1, 10, 20);
  CHECK(tab.u[1].open == 0 && tab.u[1].bytes_up == 10 && tab.u[1].bytes_down == 20, "ended, bytes");
  s5_uptab_probe_ok(&tab, 0);
  CHECK(tab.u[0].down == 0 && tab.u[0].fails_row == 0, "a probe brings it back");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == 0, "back in first place");
  /* Failures with successes between them are not a run. */
  s5_uptab_failed(&tab, 0, S5_UP_CONNECT, "x");
  s5_uptab_failed(&tab, 0, S5_UP_CONNECT, "x");
  s5_uptab_granted(&tab, 0, 0, 3000, tab.u[0].downs);
  s5_uptab_failed(&tab, 0, S5_UP_CONNECT, "x");
  CHECK(tab.u[0].down == 0, "a success ends the run");
  down(0), down(1), down(2);
  CHECK(tab.all_down == 1, "every one down: said once");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == -1, "every one down: none");
  /* A set-up begun before it went down (its reply was on the way when the
   * proxy died): no news of it now. */
  s5_uptab_granted(&tab, 0, 2, 3000, tab.u[2].downs - 1);
  CHECK(tab.u[2].down == 1 && tab.all_down == 1 && tab.u[2].open == 1, "counted open, still down");
  s5_uptab_granted(&tab, 0, 2, 3000, tab.u[2].downs); /* begun since */
  CHECK(tab.u[2].down == 0 && tab.all_down == 0, "a success begun since brings it back");
}

/* A down upstream's stated cause is the last failure's: each failed check
 * (and a late session's failure) updates it, not only the fall. */
static void test_why_fresh(void) {
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  down(0);
  CHECK(tab.u[0].down == 1 && tab.u[0].why == S5_UP_CONNECT, "down for connect");
  CHECK(s5_uptab_check_failed(&tab, 0, S5_UP_AUTH) == 1 && tab.u[0].why == S5_UP_AUTH,
        "a check refused for auth: the cause is auth now (%u)", tab.u[0].why);
  CHECK(s5_uptab_check_failed(&tab, 0, S5_UP_AUTH) == 0 && tab.u[0].why == S5_UP_AUTH,
        "the same cause again: no news");
  s5_uptab_failed(&tab, 0, S5_UP_TIMEOUT, "x");
  CHECK(tab.u[0].down == 1 && tab.u[0].why == S5_UP_TIMEOUT, "a late session's timeout (%u)", tab.u[0].why);
  CHECK(s5_uptab_check_failed(&tab, 1, S5_UP_AUTH) == 0 && tab.u[1].down == 0 && tab.u[1].why == 0,
        "an upstream that is up: nothing to state");
}

static void test_single(void) {
  setup(S5_BALANCE_FAILOVER, 1, NULL);
  down(0), down(0);
  CHECK(tab.u[0].down == 0 && s5_uptab_pick(&tab, &cfg, 0, 0) == 0, "one upstream alone is never down");
}

static void test_round_robin(void) {
  unsigned w[3] = {1, 2, 3}, n[3] = {0};
  setup(S5_BALANCE_ROUND_ROBIN, 3, w);
  for (int k = 0; k < 600; k++) n[s5_uptab_pick(&tab, &cfg, 0, 0)]++;
  CHECK(n[0] == 100 && n[1] == 200 && n[2] == 300, "by weight: %u %u %u", n[0], n[1], n[2]);
  down(1);
  memset(n, 0, sizeof n);
  for (int k = 0; k < 600; k++) n[s5_uptab_pick(&tab, &cfg, 0, 0)]++;
  CHECK(n[1] == 0 && n[0] + n[2] == 600, "a down one's turns go to the next: %u %u %u", n[0], n[1], n[2]);
}

static void test_least(void) {
  unsigned n[3] = {0};
  setup(S5_BALANCE_LEAST_CONN, 3, NULL);
  for (int k = 0; k < 300; k++) {
    int i = s5_uptab_pick(&tab, &cfg, 0, 0);
    n[i]++;
    s5_uptab_granted(&tab, 0, (unsigned)i, 3000, tab.u[(unsigned)i].downs);
    s5_uptab_ended(&tab, 0, (unsigned)i, 0, 0);
  }
  CHECK(n[0] == 100 && n[1] == 100 && n[2] == 100, "short sessions spread: %u %u %u", n[0], n[1], n[2]);
  s5_uptab_granted(&tab, 0, 0, 3000, tab.u[0].downs), s5_uptab_granted(&tab, 0, 0, 3000, tab.u[0].downs),
    s5_uptab_granted(&tab, 0, 1, 3000, tab.u[1].downs);
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == 2, "the fewest open");
  /* A worker of queue 3 dies with 5 sessions open on upstream 2. */
  for (int k = 0; k < 5; k++) s5_uptab_granted(&tab, 3, 2, 3000, tab.u[2].downs);
  CHECK(tab.u[2].open == 5 && s5_uptab_pick(&tab, &cfg, 0, 0) != 2, "its open sessions count");
  s5_uptab_queue_reset(&tab, 3);
  CHECK(tab.u[2].open == 0 && tab.u[0].open == 2 && s5_uptab_pick(&tab, &cfg, 0, 0) == 2,
        "its successor starts: they count no more, the other queues' still do");
}

/* Least-connections: ties go by turns, and an upstream that refuses every
 * CONNECT at once (so it never holds an open session) is not fed every
 * new one: it gets its turn until its refusals mark it down. */
static void test_least_fair(void) {
  unsigned n[2] = {0};
  setup(S5_BALANCE_LEAST_CONN, 2, NULL);
  for (int k = 0; k < 10; k++) n[s5_uptab_pick(&tab, &cfg, 0, 0)]++; /* set-ups in flight, none granted */
  CHECK(n[0] == 5 && n[1] == 5, "ties by turns, not always the first: %u %u", n[0], n[1]);
  setup(S5_BALANCE_LEAST_CONN, 2, NULL);
  n[0] = n[1] = 0;
  for (int k = 0; k < 200; k++) {
    int i = s5_uptab_pick(&tab, &cfg, 0, 0);
    n[i]++;
    if (i == 0) { /* 403 to everything: the session moves on to 1 */
      s5_uptab_refusing(&tab, 0, (uint64_t)k, 1, "403 Forbidden");
      i = s5_uptab_pick(&tab, &cfg, 0, 1u << 0);
    }
    CHECK(i == 1, "the session ends on 1");
    s5_uptab_granted(&tab, 0, 1, 3000, tab.u[1].downs);
    s5_uptab_ended(&tab, 0, 1, 0, 0);
  }
  CHECK(n[0] == cfg.balance.fail_after && tab.u[0].down == 1, "the refusing one got %u, then down", n[0]);
  CHECK(tab.u[0].why == S5_UP_REFUSING && tab.u[0].failed[S5_UP_REFUSING] == 3, "why refusing");
}

/* Refusals that mean the proxy is broken: HTTP 403 each time; a general
 * failure only from distinct destinations; a success ends the run. */
static void test_refusing(void) {
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  for (int k = 0; k < 10; k++)
    CHECK(s5_uptab_refusing(&tab, 0, 77, 0, "general failure") == 0, "one destination never marks it down");
  CHECK(tab.u[0].down == 0 && tab.u[0].failed[S5_UP_REFUSING] == 10, "counted, still up");
  CHECK(s5_uptab_refusing(&tab, 0, 78, 0, "x") == 0, "a second destination");
  CHECK(s5_uptab_refusing(&tab, 0, 77, 0, "x") == 0 && tab.u[0].fails_row == 2, "a repeat adds nothing");
  s5_uptab_granted(&tab, 0, 0, 3000, tab.u[0].downs);
  CHECK(tab.u[0].fails_row == 0, "a success ends the run");
  CHECK(s5_uptab_refusing(&tab, 0, 77, 0, "x") == 0 && s5_uptab_refusing(&tab, 0, 78, 0, "x") == 0 &&
          tab.u[0].fails_row == 2,
        "after it, the same destinations count again");
  CHECK(s5_uptab_refusing(&tab, 0, 79, 0, "x") == 1 && tab.u[0].down == 1, "three distinct: down");
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  s5_uptab_refusing(&tab, 1, 5, 1, "403"), s5_uptab_refusing(&tab, 1, 5, 1, "403");
  CHECK(s5_uptab_refusing(&tab, 1, 5, 1, "403") == 1, "403 three times, one destination: down");
  CHECK(s5_uptab_pick(&tab, &cfg, 0, 0) == 0 && s5_uptab_pick(&tab, &cfg, 0, 1u << 0) == -1,
        "failover skips it");
}

static void test_hash(void) {
  unsigned n[3] = {0};
  int first[300];
  setup(S5_BALANCE_HASH, 3, NULL);
  for (int k = 0; k < 300; k++) {
    struct sockaddr_storage d = dest4(0x0a000000u + (uint32_t)k, 443);
    first[k] = s5_uptab_pick(&tab, &cfg, s5_uptab_hash(&d, NULL), 0);
    n[first[k]]++;
    CHECK(s5_uptab_pick(&tab, &cfg, s5_uptab_hash(&d, NULL), 0) == first[k], "sticky");
  }
  CHECK(n[0] > 60 && n[1] > 60 && n[2] > 60, "spread: %u %u %u", n[0], n[1], n[2]);
  struct sockaddr_storage a = dest4(0x0a000001u, 443), b = dest4(0x0a000002u, 80);
  CHECK(s5_uptab_hash(&a, "example.org") == s5_uptab_hash(&b, "example.org"), "a mapped name: by name alone");
  CHECK(s5_uptab_hash(&a, "example.org") != s5_uptab_hash(&a, "example.net"), "names differ");
  CHECK(s5_uptab_hash(&a, NULL) != s5_uptab_hash(&a, "example.org"), "a name is not its address");
  CHECK(s5_uptab_hash(&a, NULL) != s5_uptab_hash(&b, NULL), "else by address and port");
  struct sockaddr_storage a80 = dest4(0x0a000001u, 80);
  CHECK(s5_uptab_hash(&a, NULL) != s5_uptab_hash(&a80, NULL), "the port counts");
  down(1);
  int moved = 0, wrong = 0;
  for (int k = 0; k < 300; k++) {
    struct sockaddr_storage d = dest4(0x0a000000u + (uint32_t)k, 443);
    int i = s5_uptab_pick(&tab, &cfg, s5_uptab_hash(&d, NULL), 0);
    moved += i != first[k];
    wrong += i == 1 || (first[k] != 1 && i != first[k]);
  }
  CHECK(wrong == 0 && moved == (int)n[1], "only the down one's destinations move (%d of %u)", moved, n[1]);
}

/* A reload keeps an upstream's row by name, gives a new one a free row,
 * and leaves a removed one counted until its sessions end. */
static void test_reload(void) {
  setup(S5_BALANCE_FAILOVER, 3, NULL); /* up0 up1 up2 in rows 0 1 2 */
  down(1);
  s5_uptab_granted(&tab, 0, 2, 3000, tab.u[2].downs); /* a session through up2 stays open */
  CHECK(tab.u[2].hs_le[2] == 1 && tab.u[2].hs_sum_us == 3000, "3 ms lands in the (2, 5] ms bucket");
  struct s5_config next = cfg;
  next.n_upstreams = 3;
  snprintf(next.upstreams[0].name, sizeof next.upstreams[0].name, "new");
  snprintf(next.upstreams[1].name, sizeof next.upstreams[1].name, "up1");
  snprintf(next.upstreams[2].name, sizeof next.upstreams[2].name, "up0");
  s5_uptab_assign(&tab, &next);
  CHECK(next.upstreams[2].slot == 0 && next.upstreams[1].slot == 1, "kept ones keep their rows");
  CHECK(next.upstreams[0].slot == 3 && tab.u[3].state == S5_UP_ACTIVE && tab.u[3].total == 0,
        "a new one takes a free row, fresh");
  CHECK(tab.u[2].state == S5_UP_REMOVED && tab.u[2].open == 1, "a removed one: its session still counted");
  CHECK(tab.u[1].down == 1 && s5_uptab_pick(&tab, &next, 0, 0) == 0, "health kept by name; order is next's");
  CHECK(s5_uptab_pick(&tab, &next, 0, 1u << 0) == 2, "the down one is still skipped");
  down(0);
  CHECK(tab.u[0].down == 1 && tab.all_down == 0, "a removed row does not count as up");
  s5_uptab_failed(&tab, 3, S5_UP_CONNECT, "x"), s5_uptab_failed(&tab, 3, S5_UP_CONNECT, "x");
  s5_uptab_failed(&tab, 3, S5_UP_CONNECT, "x");
  CHECK(tab.all_down == 1, "every active one down: said");
  s5_uptab_ended(&tab, 0, 2, 1, 1);
  /* Back to one upstream: up2's row, idle now, is reused for another name. */
  struct s5_config one = cfg;
  one.n_upstreams = 1;
  snprintf(one.upstreams[0].name, sizeof one.upstreams[0].name, "solo");
  for (int k = 0; k < 28; k++) { /* fill the free rows with names that come and go */
    struct s5_config tmp = cfg;
    tmp.n_upstreams = 1;
    snprintf(tmp.upstreams[0].name, sizeof tmp.upstreams[0].name, "x%d", k);
    s5_uptab_assign(&tab, &tmp);
  }
  s5_uptab_assign(&tab, &one);
  CHECK(one.upstreams[0].slot < S5_UPTAB_SLOTS && strcmp(tab.u[one.upstreams[0].slot].name, "solo") == 0 &&
          tab.active == 1,
        "a full table reuses an idle removed row");
  s5_uptab_failed(&tab, one.upstreams[0].slot, S5_UP_CONNECT, "x");
  s5_uptab_failed(&tab, one.upstreams[0].slot, S5_UP_CONNECT, "x");
  s5_uptab_failed(&tab, one.upstreams[0].slot, S5_UP_CONNECT, "x");
  CHECK(tab.u[one.upstreams[0].slot].down == 0, "one upstream alone is never down, after a reload too");
}

static void test_shared(void) {
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  CHECK(s5_uptab_setup(&cfg) == 0 && s5_uptab() != NULL, "mapped");
  pid_t pid = fork();
  if (pid == 0) {
    for (int k = 0; k < 3; k++) s5_uptab_failed(s5_uptab(), 0, S5_UP_CONNECT, "child");
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  CHECK(s5_uptab()->u[0].down == 1 && s5_uptab_pick(s5_uptab(), &cfg, 0, 0) == 1, "a child's marking seen");
}

/* The EWMA: the first sample as it is, then a quarter of each difference;
 * a lasting change shows within a few samples; samples from several
 * threads are none of them lost (the compare-and-swap loop). */
static void test_latency(void) {
  CHECK(s5_uplat_ewma(0, 40000) == 40000, "the first sample as it is");
  CHECK(s5_uplat_ewma(40000, 80000) == 50000, "a quarter of the way up");
  CHECK(s5_uplat_ewma(40000, 20000) == 35000, "a quarter of the way down");
  CHECK(s5_uplat_ewma(40000, 0) == 30001, "a 0 sample is 1 us");
  CHECK(s5_uplat_ewma(1, 1) == 1, "never 0 (none)");
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  s5_uptab_latency(&tab, 1, 10000, 10000);
  CHECK(tab.u[1].lat_last_us == 10000 && tab.u[1].lat_avg_us == 10000, "first sample");
  int n = 1;
  while (tab.u[1].lat_avg_us < 190000 && n < 50) {
    s5_uptab_latency(&tab, 1, 200000, 200000);
    n++;
  }
  CHECK(tab.u[1].lat_last_us == 200000 && n <= 12, "10 -> 200 ms seen within 11 samples (took %d)", n - 1);
  CHECK(tab.u[0].lat_avg_us == 0, "another slot untouched");
  s5_uptab_latency_lost(&tab, 1);
  CHECK(tab.u[1].lat_avg_us == 0 && tab.u[1].lat_last_us == 0, "a failed probe: unmeasured");
  s5_uptab_latency(&tab, 1, 35000, 30000);
  CHECK(tab.u[1].lat_avg_us == 30000 && tab.u[1].lat_last_us == 35000,
        "measured again: the sample, the probe");
  CHECK(s5_uplat_median3(500, 0, 0) == 500, "one probe: itself");
  CHECK(s5_uplat_median3(60, 200, 0) == 60 && s5_uplat_median3(200, 60, 0) == 60, "two: the lower");
  CHECK(s5_uplat_median3(500, 130, 140) == 140, "one slow answer among fast ones: ignored");
  CHECK(s5_uplat_median3(800, 810, 60) == 800, "a lasting change: at its second probe");
  CHECK(s5_uplat_median3(100, 120, 110) == 110 && s5_uplat_median3(120, 100, 110) == 110, "the middle one");
  /* A run of probes around 130 ms with one of 510 (seen on a loaded
   * machine): the smoothed figure moves by less than the tolerance. */
  uint64_t probes[] = {130000, 128000, 131000, 510000, 129000, 132000}, p1 = 0, p2 = 0;
  setup(S5_BALANCE_FAILOVER, 2, NULL);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (unsigned k = 0; k < 6; k++) {
    s5_uptab_latency(&tab, 0, probes[k], s5_uplat_median3(probes[k], p1, p2));
    p2 = p1;
    p1 = probes[k];
    if (tab.u[0].lat_avg_us < lo) lo = tab.u[0].lat_avg_us;
    if (tab.u[0].lat_avg_us > hi) hi = tab.u[0].lat_avg_us;
  }
  CHECK(hi - lo < 5000, "a spike: the smoothed figure within %llu us", (unsigned long long)(hi - lo));
}

/* fastest's choice: no flapping within tolerance, a switch beyond it, an
 * unusable or unmeasured current one replaced by the best. */
static void test_fastest_choose(void) {
  const uint64_t tol = 50000;
  uint64_t lat[3] = {10000, 40000, 120000};
  uint8_t ok[3] = {1, 1, 1};
  CHECK(s5_uplat_choose(lat, ok, 3, -1, tol) == 0, "none yet: the lowest");
  CHECK(s5_uplat_choose(lat, ok, 3, 0, tol) == 0, "the lowest stays");
  lat[0] = 80000;
  CHECK(s5_uplat_choose(lat, ok, 3, 0, tol) == 0, "40 ms faster: within tolerance, stays");
  lat[0] = 90000;
  CHECK(s5_uplat_choose(lat, ok, 3, 0, tol) == 0, "50 ms faster: not MORE than tolerance, stays");
  lat[0] = 90001;
  CHECK(s5_uplat_choose(lat, ok, 3, 0, tol) == 1, "beyond tolerance: the fastest");
  lat[0] = 30000;
  CHECK(s5_uplat_choose(lat, ok, 3, 1, tol) == 1, "the old one back, faster within tolerance: no swap back");
  CHECK(s5_uplat_choose(lat, ok, 3, 1, 0) == 0, "tolerance 0: any faster one");
  ok[1] = 0;
  CHECK(s5_uplat_choose(lat, ok, 3, 1, tol) == 0, "current down: the best usable");
  ok[1] = 1;
  lat[1] = 0;
  CHECK(s5_uplat_choose(lat, ok, 3, 1, tol) == 0, "current unmeasured (its probe failed): the best");
  uint64_t none[3] = {0, 0, 0};
  CHECK(s5_uplat_choose(none, ok, 3, 2, tol) == -1, "nothing measured: none");
  uint64_t tie[3] = {0, 20000, 20000};
  CHECK(s5_uplat_choose(tie, ok, 3, -1, tol) == 1, "unmeasured skipped; equals: the first");
  ok[0] = ok[1] = ok[2] = 0;
  CHECK(s5_uplat_choose(lat, ok, 3, 0, tol) == -1, "all down: none");
}

int main(void) {
  test_failover();
  test_why_fresh();
  test_single();
  test_round_robin();
  test_least();
  test_least_fair();
  test_refusing();
  test_hash();
  test_reload();
  test_shared();
  test_latency();
  test_fastest_choose();
  return check_done();
}
