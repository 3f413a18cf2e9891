/* SPDX-License-Identifier: MIT */
/* core/outbound/route.c: a new flow's route over the shared health table:
 * the first upstream by each strategy, every failure cause (counted or
 * not, moving on or not), a skip that blames nobody, a rule that names
 * one upstream, UDP among the upstreams that carry it, and the reasons
 * given when there is none. */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "outbound/route.h"
#include "shared/rules.h"

static struct s5_config cfg;

static struct sockaddr_storage dest4(uint32_t ip, uint16_t port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *a = (struct sockaddr_in *)&ss;
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(ip);
  a->sin_port = htons(port);
  return ss;
}

/* n upstreams up0.. of type SOCKS5 with UDP, under strategy, a fresh table. */
static struct s5_uptab *setup(enum s5_balance strategy, unsigned n) {
  memset(&cfg, 0, sizeof cfg);
  cfg.n_upstreams = n;
  cfg.balance.strategy = strategy;
  cfg.balance.fail_after = 2;
  for (unsigned i = 0; i < n; i++) {
    snprintf(cfg.upstreams[i].name, sizeof cfg.upstreams[i].name, "up%u", i);
    cfg.upstreams[i].weight = 1;
    cfg.upstreams[i].type = S5_UPSTREAM_SOCKS5;
    cfg.upstreams[i].udp = true;
  }
  CHECK(s5_uptab_setup(&cfg) == 0 && s5_uptab() != NULL, "table mapped");
  return s5_uptab();
}

static int route(struct s5_route *r, uint8_t proto, uint32_t ip, uint16_t port) {
  struct sockaddr_storage dst = dest4(ip, port), src = dest4(0x0a000001, 40000);
  char why[160];
  CHECK(s5_route_init(r, &cfg, proto, &dst, &src) == S5_ROUTE_PROXY, "a proxy route");
  CHECK(r->rule == S5_RULE_DEFAULT && r->label[0] == '\0' && r->outbound == S5_OUTBOUND_BALANCE,
        "no rules: [balance]");
  const struct s5_upstream_cfg *up = s5_route_first(r, why, sizeof why);
  return up != NULL ? (int)(up - cfg.upstreams) : -1;
}

static int index_of(const struct s5_upstream_cfg *up) { return up != NULL ? (int)(up - cfg.upstreams) : -1; }

static void test_causes(void) {
  struct s5_uptab *t = setup(S5_BALANCE_FAILOVER, 3);
  struct s5_route r;
  CHECK(route(&r, IPPROTO_TCP, 0x0a010101, 80) == 0, "failover: the first");
  CHECK(index_of(s5_route_next(&r, S5_UP_CONNECT, 0, "refused", 1)) == 1, "connect failure: the next");
  CHECK(t->u[0].failed[S5_UP_CONNECT] == 1 && t->u[0].retried == 1, "counted at up0 (failed, retried)");
  CHECK(index_of(s5_route_next(&r, S5_UP_TIMEOUT, 0, "silent", 1)) == 2, "timeout: the next");
  CHECK(t->u[1].failed[S5_UP_TIMEOUT] == 1, "timeout counted at up1");
  CHECK(s5_route_next(&r, S5_UP_AUTH, 0, "407", 1) == NULL && t->u[2].failed[S5_UP_AUTH] == 1,
        "the last one fails: none left, counted");

  route(&r, IPPROTO_TCP, 0x0a010102, 80);
  CHECK(s5_route_next(&r, S5_UP_DESTINATION, 0, "refused", 1) == NULL, "the destination refused: no other");
  CHECK(t->u[0].refused == 1 && t->u[0].fails_row == 1, "counted as refused, not as a failure");
  route(&r, IPPROTO_TCP, 0x0a010103, 80);
  CHECK(s5_route_next(&r, S5_UP_HANDSHAKE, 0, "cut", 0) == NULL, "cannot move (bytes sent): no other");
  CHECK(t->u[0].down == 1 && t->u[0].failed[S5_UP_HANDSHAKE] == 1, "still counted: up0 down (fail-after 2)");
  CHECK(route(&r, IPPROTO_TCP, 0x0a010104, 80) == 1, "a new flow: up1, up0 is down");
  CHECK(s5_route_next(&r, S5_UP_NONE, 0, "closing", 1) == NULL && t->u[1].fails_row == 1,
        "the owner gave up: nothing counted");

  /* Refusals that say the proxy is broken: every one, or distinct destinations. */
  t = setup(S5_BALANCE_FAILOVER, 2);
  route(&r, IPPROTO_TCP, 0x0a010101, 80);
  CHECK(index_of(s5_route_next(&r, S5_UP_REFUSING, 0, "general failure", 1)) == 1, "refusing: the next");
  route(&r, IPPROTO_TCP, 0x0a010101, 80);
  s5_route_next(&r, S5_UP_REFUSING, 0, "general failure", 1);
  CHECK(t->u[0].down == 0 && t->u[0].fails_row == 1 && t->u[0].failed[S5_UP_REFUSING] == 2,
        "the same destination again: in the run once (counted twice)");
  route(&r, IPPROTO_TCP, 0x0a010109, 80);
  s5_route_next(&r, S5_UP_REFUSING, 0, "general failure", 1);
  CHECK(t->u[0].down == 1, "a second destination: down");
  t = setup(S5_BALANCE_FAILOVER, 2);
  for (int k = 0; k < 2; k++) {
    route(&r, IPPROTO_TCP, 0x0a010101, 80);
    s5_route_next(&r, S5_UP_REFUSING, 1, "403", 1);
  }
  CHECK(t->u[0].down == 1, "HTTP 403 (every): the same destination twice marks it down");
}

static void test_skip_and_none(void) {
  struct s5_uptab *t = setup(S5_BALANCE_FAILOVER, 2);
  struct s5_route r;
  char why[160];
  route(&r, IPPROTO_TCP, 0x0a010101, 80);
  CHECK(index_of(s5_route_skip(&r)) == 1 && t->u[0].fails_row == 0 && t->u[0].retried == 0,
        "skip: the next, nobody blamed");
  CHECK(s5_route_skip(&r) == NULL, "skip past the last: none");
  for (int k = 0; k < 2; k++)
    s5_uptab_failed(t, 0, S5_UP_CONNECT, "x"), s5_uptab_failed(t, 1, S5_UP_CONNECT, "x");
  struct sockaddr_storage dst = dest4(0x0a010101, 80), src = dest4(0x0a000001, 40000);
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  uint64_t none0 = t->no_upstream;
  CHECK(s5_route_first(&r, why, sizeof why) == NULL && strcmp(why, "no upstream is up") == 0, "all down: %s",
        why);
  CHECK(t->no_upstream == none0 + 1, "counted as no_upstream");
  CHECK(!s5_route_up(&r) || r.up < 0, "no upstream to be up");

  /* A rule named up1: it alone, and no failover from it. */
  t = setup(S5_BALANCE_FAILOVER, 3);
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  r.outbound = 1;
  CHECK(index_of(s5_route_first(&r, why, sizeof why)) == 1, "the rule's upstream");
  CHECK(s5_route_next(&r, S5_UP_CONNECT, 0, "x", 1) == NULL && t->u[1].fails_row == 1, "no other; counted");
  s5_uptab_failed(t, 1, S5_UP_CONNECT, "x");
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  r.outbound = 1;
  CHECK(s5_route_first(&r, why, sizeof why) == NULL &&
          strcmp(why, "upstream up1, which its rule names, is down") == 0,
        "the rule's upstream down: %s", why);
}

static void test_udp(void) {
  struct s5_uptab *t = setup(S5_BALANCE_FAILOVER, 3);
  struct s5_route r;
  char why[160];
  cfg.upstreams[0].type = S5_UPSTREAM_HTTP;
  cfg.upstreams[1].udp = false;
  CHECK(route(&r, IPPROTO_UDP, 0x0a010101, 53) == 2, "UDP: the first that carries it (up2)");
  CHECK(route(&r, IPPROTO_TCP, 0x0a010101, 53) == 0, "TCP: the first (up0)");
  CHECK(route(&r, IPPROTO_UDP, 0x0a010101, 53) == 2 && s5_route_up(&r), "up2 is up");
  for (int k = 0; k < 2; k++) s5_uptab_failed(t, 2, S5_UP_CONNECT, "x");
  CHECK(!s5_route_up(&r), "its upstream went down: the association ends");
  struct sockaddr_storage dst = dest4(0x0a010101, 53), src = dest4(0x0a000001, 40000);
  s5_route_init(&r, &cfg, IPPROTO_UDP, &dst, &src);
  CHECK(s5_route_first(&r, why, sizeof why) == NULL && strcmp(why, "no upstream is up") == 0, "UDP, down: %s",
        why);
  cfg.upstreams[2].udp = false;
  uint64_t none0 = t->no_upstream;
  s5_route_init(&r, &cfg, IPPROTO_UDP, &dst, &src);
  CHECK(s5_route_first(&r, why, sizeof why) == NULL && strcmp(why, "no upstream carries UDP") == 0 &&
          t->no_upstream == none0,
        "no UDP anywhere: %s, not counted as no_upstream", why);
}

static void test_strategies(void) {
  struct s5_route r;
  setup(S5_BALANCE_ROUND_ROBIN, 3);
  int seen[3] = {0};
  for (int k = 0; k < 30; k++) seen[route(&r, IPPROTO_TCP, 0x0a010101, 80)]++;
  CHECK(seen[0] == 10 && seen[1] == 10 && seen[2] == 10, "round-robin: %d/%d/%d", seen[0], seen[1], seen[2]);

  setup(S5_BALANCE_HASH, 3);
  int a = route(&r, IPPROTO_TCP, 0x0a010101, 80), same = 1, spread = 0;
  for (uint32_t k = 0; k < 40; k++) {
    same &= route(&r, IPPROTO_TCP, 0x0a010101, 80) == a;
    spread |= 1 << route(&r, IPPROTO_TCP, 0x0a020000 + k, 443);
  }
  CHECK(same && spread == 7, "hash: one destination one upstream (%d), many spread over all (%x)", same,
        spread);
  int was = r.up, next = index_of(s5_route_next(&r, S5_UP_CONNECT, 0, "x", 1));
  CHECK(next >= 0 && next != was, "hash: a failure moves to another (%d after %d)", next, was);

  struct s5_uptab *t = setup(S5_BALANCE_LEAST_CONN, 2);
  CHECK(route(&r, IPPROTO_TCP, 0x0a010101, 80) >= 0, "least-connections: one");
  s5_route_granted(&r, 0, 1000);
  int other = r.up == 0 ? 1 : 0;
  CHECK(route(&r, IPPROTO_TCP, 0x0a010101, 80) == other, "least-connections: the other, with none open");
  CHECK(t->u[other == 0 ? 1 : 0].open == 1, "granted: counted open");
}

int main(void) {
  test_causes();
  test_skip_and_none();
  test_udp();
  test_strategies();
  return check_done();
}
