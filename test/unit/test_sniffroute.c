/* SPDX-License-Identifier: MIT */
/* [sniff] below the session: which flows are sniffed (s5_rules_by_name,
 * s5_route_init's sniff bits: unmapped TCP (UDP: [sniff] quic) on a listed port, rules that
 * could go elsewhere by name, not a skipped prefix), the route with the
 * name (s5_route_named: the rule counted once, override, skipped names),
 * and the worker's table of destinations that failed to sniff. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "outbound/route.h"
#include "shared/rules.h"
#include "shared/stats.h"
#include "tcp/sniffing.h"

static struct s5_config cfg;
static int mapped_once;
static unsigned last_half;

static void setup(const char *def) {
  memset(&cfg, 0, sizeof cfg);
  cfg.n_upstreams = 2;
  snprintf(cfg.upstreams[0].name, 32, "a");
  snprintf(cfg.upstreams[1].name, 32, "b");
  snprintf(cfg.rules.def, sizeof cfg.rules.def, "%s", def);
  snprintf(cfg.rules.conf, sizeof cfg.rules.conf, "/etc/s5tund.ini");
  cfg.sniff.tls = (struct s5_port_list){.n = 2, .port = {443, 8443}};
  cfg.sniff.http = (struct s5_port_list){.n = 1, .port = {80}};
  cfg.sniff.timeout = 300;
}

static void add(const char *text) {
  char err[256];
  struct s5_rule r;
  CHECK(s5_rule_parse(text, NULL, &r, err, sizeof err) == 0, "rule %s: %s", text, err);
  struct s5_rules_cfg *rc = &cfg.rules;
  size_t n = strlen(text) + 1;
  rc->off[rc->n] = (uint16_t)rc->used;
  rc->kind[rc->n] = S5_RULE_ITEM_RULE;
  rc->line[rc->n] = rc->n + 1;
  memcpy(rc->text + rc->used, text, n);
  rc->used += n;
  rc->n++;
}

/* Compiles cfg's rules into the shared region (the other half each time). */
static struct s5_rules *load(void) {
  char err[256] = "";
  int r;
  if (!mapped_once) {
    r = s5_rules_setup(&cfg, err, sizeof err);
    mapped_once = 1;
  } else {
    struct s5_config live;
    memset(&live, 0, sizeof live);
    live.rules_half = last_half;
    r = s5_rules_reload(&cfg, &live, err, sizeof err);
  }
  CHECK(r == 0, "rules compiled: %s", err);
  last_half = cfg.rules_half;
  return s5_rules_of(&cfg);
}

static struct sockaddr_storage sa4(const char *ip, uint16_t port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *a = (struct sockaddr_in *)&ss;
  a->sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a->sin_addr);
  a->sin_port = htons(port);
  return ss;
}

static unsigned sniff_of(const char *ip, uint16_t port, uint8_t proto) {
  struct s5_route r;
  struct sockaddr_storage dst = sa4(ip, port), src = sa4("192.168.1.2", 40000);
  s5_route_init(&r, &cfg, proto, &dst, &src);
  return r.sniff;
}

static void test_which(void) {
  setup("a");
  add("dst:10.9.0.0/16 -> a");
  add("domain:one.example -> b");
  add("domain:two.example port:443 -> b");
  add("domain:same.example -> a");
  load();
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) == S5_ROUTE_SNIFF_TLS,
        "a name could send it to b: sniffed as TLS");
  CHECK(sniff_of("10.1.1.1", 80, IPPROTO_TCP) == S5_ROUTE_SNIFF_HTTP, "port 80: as HTTP");
  CHECK(sniff_of("10.1.1.1", 22, IPPROTO_TCP) == 0, "a port not listed: not sniffed");
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_UDP) == 0, "UDP 443 without [sniff] quic: not sniffed");
  CHECK(sniff_of("10.9.1.1", 443, IPPROTO_TCP) == 0, "an address rule before every name rule: not sniffed");
  cfg.sniff.quic = (struct s5_port_list){.n = 1, .port = {443}};
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_UDP) == S5_ROUTE_SNIFF_QUIC, "UDP 443 in [sniff] quic: as QUIC");
  CHECK(sniff_of("10.1.1.1", 80, IPPROTO_UDP) == 0, "UDP 80: not listed in quic");
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) == S5_ROUTE_SNIFF_TLS, "TCP 443: TLS alone, never QUIC");
  CHECK(sniff_of("10.9.1.1", 443, IPPROTO_UDP) == 0, "UDP: the same rule condition as TCP");

  setup("b");
  add("domain:two.example port:443 -> a");
  add("dst:10.9.0.0/16 -> b");
  load();
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) != 0, "a port-443 name rule: 443 sniffed");
  CHECK(sniff_of("10.1.1.1", 80, IPPROTO_TCP) == 0, "its port does not take 80: not sniffed");

  setup("a");
  add("domain:same.example -> a");
  add("keyword:x -> a");
  load();
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) == 0, "every name goes where the address goes: not sniffed");

  setup("a");
  add("dst:10.0.0.0/8 -> b");
  load();
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) == 0, "no name rule at all: not sniffed");

  setup("a");
  add("domain:one.example -> b");
  cfg.sniff.skip.pfx.n = 1;
  cfg.sniff.skip.pfx.p[0] = (struct s5_prefix){.family = AF_INET, .addr = {10, 1}, .len = 16};
  load();
  CHECK(sniff_of("10.1.1.1", 443, IPPROTO_TCP) == 0, "[sniff] skip's prefix: not sniffed");
  CHECK(sniff_of("10.2.1.1", 443, IPPROTO_TCP) == S5_ROUTE_SNIFF_TLS, "outside it: sniffed");
  cfg.sniff.tls.n = 0;
  cfg.sniff.http.n = 0;
  CHECK(sniff_of("10.2.1.1", 443, IPPROTO_TCP) == 0, "no port listed: [sniff] off");
}

static void test_named(void) {
  setup("a");
  add("domain:one.example -> b");
  struct s5_rules *t = load();
  struct s5_route r;
  struct sockaddr_storage dst = sa4("10.1.1.1", 443), src = sa4("192.168.1.2", 40000);
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  CHECK(r.sniff != 0 && s5_rules_hits(t, 0) == 0 && s5_rules_hits(t, S5_RULE_DEFAULT) == 0,
        "sniffing: no rule counted yet");
  CHECK(s5_route_named(&r, "www.one.example", S5_NAME_TLS, &src) == S5_ROUTE_PROXY && r.outbound == 1 &&
          r.rule == 0 && r.named == S5_NAME_TLS && r.target.name[0] == '\0' && r.sniff == 0,
        "the name's rule: b; the CONNECT to the address (override off)");
  CHECK(s5_rules_hits(t, 0) == 1 && s5_rules_hits(t, S5_RULE_DEFAULT) == 0, "its rule counted once");

  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  s5_route_named(&r, NULL, S5_NAME_NONE, &src);
  CHECK(r.outbound == 0 && r.rule == S5_RULE_DEFAULT && r.named == S5_NAME_NONE &&
          s5_rules_hits(t, S5_RULE_DEFAULT) == 1,
        "no name: by address, the default counted");

  cfg.sniff.override = true;
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  s5_route_named(&r, "one.example", S5_NAME_HTTP, &src);
  CHECK(r.outbound == 1 && strcmp(r.target.name, "one.example") == 0 && r.named == S5_NAME_HTTP,
        "override: the CONNECT by the name");

  cfg.sniff.skip.names.n = 1;
  snprintf(cfg.sniff.skip.names.name[0], 64, "one.example");
  s5_route_init(&r, &cfg, IPPROTO_TCP, &dst, &src);
  s5_route_named(&r, "cdn.one.example", S5_NAME_TLS, &src);
  CHECK(r.outbound == 0 && r.target.name[0] == '\0' && r.named == S5_NAME_NONE,
        "a name under [sniff] skip is not used: by address");
}

static void test_skips(void) {
  struct s5_sniff_skips *t = calloc(1, sizeof *t);
  ip_addr_t a, b;
  IP_ADDR4(&a, 10, 1, 1, 1);
  IP_ADDR4(&b, 10, 1, 1, 2);
  uint64_t now = 1000;
  for (int i = 0; i < S5_SNIFF_SKIP_FAILS - 1; i++) s5_sniff_learnt(t, IPPROTO_TCP, &a, 22, now, 1);
  CHECK(!s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now), "4 failures: still sniffed");
  s5_sniff_learnt(t, IPPROTO_TCP, &a, 22, now, 0);
  for (int i = 0; i < S5_SNIFF_SKIP_FAILS - 1; i++) s5_sniff_learnt(t, IPPROTO_TCP, &a, 22, now, 1);
  CHECK(!s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now), "a name found starts the count again");
  s5_sniff_learnt(t, IPPROTO_TCP, &a, 22, now, 1);
  CHECK(s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now + 1), "the 5th in a row: skipped");
  CHECK(!s5_sniff_skipped(t, IPPROTO_UDP, &a, 22, now + 1), "the same address and port over UDP: sniffed");
  CHECK(
    !s5_sniff_skipped(t, IPPROTO_TCP, &a, 443, now + 1) && !s5_sniff_skipped(t, IPPROTO_TCP, &b, 22, now + 1),
    "another port, another address: sniffed");
  CHECK(s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now + S5_SNIFF_SKIP_MS - 1), "for 10 minutes");
  CHECK(!s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now + S5_SNIFF_SKIP_MS), "then sniffed again");
  for (int i = 0; i < S5_SNIFF_SKIP_FAILS - 1; i++) s5_sniff_learnt(t, IPPROTO_TCP, &a, 22, now, 1);
  CHECK(!s5_sniff_skipped(t, IPPROTO_TCP, &a, 22, now + S5_SNIFF_SKIP_MS), "from no failure");
  /* bounded: a thousand destinations later the table is the same size, the newest kept */
  for (int i = 0; i < 5000; i++) {
    ip_addr_t x;
    IP_ADDR4(&x, 10, 2, (uint8_t)(i >> 8), (uint8_t)i);
    for (int k = 0; k < S5_SNIFF_SKIP_FAILS; k++) s5_sniff_learnt(t, IPPROTO_TCP, &x, 25, now, 1);
  }
  ip_addr_t last;
  IP_ADDR4(&last, 10, 2, (uint8_t)(4999 >> 8), (uint8_t)4999);
  CHECK(s5_sniff_skipped(t, IPPROTO_TCP, &last, 25, now + 1), "the newest destination is remembered");
  free(t);
}

int main(void) {
  test_which();
  test_named();
  test_skips();
  return check_done();
}
