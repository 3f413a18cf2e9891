/* SPDX-License-Identifier: MIT */
/* The mapped-DNS lookups over the shared table (see dnsmap.h). The table
 * pointer is set once, before any worker exists, and only read after; the
 * table guards itself (dns_table.c). */
#include "dns/dnsmap.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "base/clock.h"
#include "base/env.h"
#include "dns/dns_msg.h"
#include "dns/dns_state.h"
#include "dns/dns_table.h"
#include "base/log.h"

static struct s5_dns_table *dns_table;

static int has_pool6; /* [dns] network6 set: AAAA answered from it */

/* The state file ([dns] state): its path ("" = none), the pools it is
 * written for, the table's generation it holds and when it was written. */
static struct {
  char path[PATH_MAX];
  struct s5_prefix net4, net6;
  uint64_t generation;
  uint64_t saved_ms;  /* 0 = not written since start */
  uint64_t period_ms; /* between two writes at least */
  uint64_t failures;
} state;

/* [dns] state's file: the key, else dnsmap in systemd's first
 * StateDirectory= ($STATE_DIRECTORY, a colon-separated list), else none. */
static void state_path(const struct s5_config *cfg, char *path, size_t cap) {
  path[0] = '\0';
  if (strcmp(cfg->dns.state, "off") == 0) return;
  if (cfg->dns.state[0] != '\0') {
    snprintf(path, cap, "%s", cfg->dns.state);
    return;
  }
  const char *dir = getenv("STATE_DIRECTORY");
  if (dir == NULL || dir[0] == '\0') return;
  size_t n = strcspn(dir, ":");
  if (snprintf(path, cap, "%.*s/dnsmap", (int)n, dir) >= (int)cap) path[0] = '\0';
}

static void state_load(const struct s5_config *cfg) {
  state_path(cfg, state.path, sizeof state.path);
  state.net4 = cfg->dns.network;
  state.net6 = cfg->dns.network6;
  state.period_ms = s5_env_flag("S5TUND_DNS_STATE_SHORT") ? 1000 : S5_DNSMAP_STATE_PERIOD_MS; /* e2e */
  if (state.path[0] == '\0') return;
  char err[256];
  long skipped = 0;
  uint64_t t0 = s5_now_ms();
  long n = s5_dns_state_load(dns_table, &state.net4, &state.net6, state.path, &skipped, err, sizeof err);
  if (n == S5_DNS_STATE_NONE)
    s5_info("mapped DNS: no state file %s yet: written once names are mapped", state.path);
  else if (n < 0) s5_warn("mapped DNS: state file %s ignored: %s; starting with no names", state.path, err);
  else
    s5_info("mapped DNS: %ld names restored from %s in %llu ms (%ld beyond cache-size dropped)", n,
            state.path, (unsigned long long)(s5_now_ms() - t0), skipped);
  state.generation = s5_dns_table_generation(dns_table);
}

/* Writes the state file when the table changed since the last write. */
static void state_save(void) {
  uint64_t g = s5_dns_table_generation(dns_table);
  if (g == state.generation) return;
  char err[PATH_MAX + 128];
  long n = s5_dns_state_save(dns_table, &state.net4, &state.net6, state.path, &g, err, sizeof err);
  state.saved_ms = s5_now_ms();
  if (n < 0) {
    s5_warn("mapped DNS: state file not written (%llu times so far): %s",
            (unsigned long long)++state.failures, err);
    return;
  }
  state.generation = g;
  s5_debug("mapped DNS: %ld names written to %s", n, state.path);
}

void s5_dnsmap_state_tick(void) {
  if (dns_table == NULL || state.path[0] == '\0') return;
  if (state.saved_ms != 0 && s5_now_ms() - state.saved_ms < state.period_ms) return;
  state_save();
}

void s5_dnsmap_state_stop(void) {
  if (dns_table != NULL && state.path[0] != '\0') state_save();
}

int s5_dnsmap_setup(const struct s5_config *cfg) {
  dns_table = s5_dns_table_create(cfg->dns.network.addr, cfg->dns.network.len, cfg->dns.cache_size);
  if (dns_table == NULL) {
    s5_error("mapped DNS: cannot create the shared name table (%u names): %s", cfg->dns.cache_size,
             strerror(errno));
    return -1;
  }
  const struct s5_prefix *p6 = &cfg->dns.network6;
  if (p6->family == AF_INET6 && s5_dns_table_pool6(dns_table, p6->addr, p6->len) < 0) {
    s5_error("mapped DNS: [dns] network6 /%u is too small for %u names", p6->len, cfg->dns.cache_size);
    return -1;
  }
  has_pool6 = p6->family == AF_INET6;
  state_load(cfg);
  return 0;
}

int s5_dnsmap_on(void) { return dns_table != NULL; }

int s5_dnsmap_has_pool6(void) { return has_pool6; }

int s5_dnsmap_name_of_ip(const ip_addr_t *dst, char *name, size_t cap) {
  if (dns_table == NULL) return 0;
  int n = IP_IS_V4(dst) ? s5_dns_table_name(dns_table, (const uint8_t *)&ip_2_ip4(dst)->addr, name, cap)
                        : s5_dns_table_name6(dns_table, (const uint8_t *)ip_2_ip6(dst)->addr, name, cap);
  if (n < 0) return 0;
  char a[S5_ADDR_STRLEN];
  if (n == 0) {
    s5_info("mapped address %s stands for no name (any more): look the name up again",
            s5_addr_str(dst, a, sizeof a));
    return -1;
  }
  s5_debug("dns: %s stands for %s: sent by name", s5_addr_str(dst, a, sizeof a), name);
  return 1;
}

int s5_dnsmap_name_of(const struct sockaddr *dst, char *name, size_t cap) {
  if (dns_table == NULL) return 0;
  ip_addr_t ip;
  if (s5_addr_from_sockaddr((const struct sockaddr_storage *)dst, &ip, NULL) < 0) return 0;
  return s5_dnsmap_name_of_ip(&ip, name, cap);
}

int s5_dnsmap_address(const char *name, size_t len, int v6, uint8_t addr[16]) {
  if (dns_table == NULL) return -1;
  return v6 ? s5_dns_table_map6(dns_table, name, len, addr) : s5_dns_table_map(dns_table, name, len, addr);
}

int s5_dnsmap_address_of(const char *name, size_t len, int v6, ip_addr_t *out) {
  if (len == 0 || len > S5_DNS_NAME_MAX) return -1;
  char lower[S5_DNS_NAME_MAX + 1];
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    lower[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
  }
  uint8_t a[16];
  if (s5_dnsmap_address(lower, len, v6, a) != 0) return -1;
  s5_addr_from_bytes(out, a, v6 ? 16 : 4);
  return 0;
}
