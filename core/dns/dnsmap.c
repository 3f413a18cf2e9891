/* SPDX-License-Identifier: MIT */
/* The mapped-DNS lookups over the shared table (see dnsmap.h). The table
 * pointer is set once, before any worker exists, and only read after; the
 * table guards itself (dns_table.c). */
#include "dns/dnsmap.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "base/addr.h"
#include "dns/dns_msg.h"
#include "dns/dns_table.h"
#include "base/log.h"

static struct s5_dns_table *dns_table;

static int has_pool6; /* [dns] network6 set: AAAA answered from it */

int s5_dnsmap_setup(const struct s5_config *cfg) {
  dns_table = s5_dns_table_create(cfg->dns.network.addr, cfg->dns.network.len, cfg->dns.cache_size);
  if (dns_table == NULL) {
    s5_error("mapped DNS: cannot create the shared name table (%u names): %s", cfg->dns.cache_size,
             strerror(errno));
    return -1;
  }
  const struct s5_prefix *p6 = &cfg->dns.network6;
  if (p6->family != AF_INET6) return 0;
  if (s5_dns_table_pool6(dns_table, p6->addr, p6->len) < 0) {
    s5_error("mapped DNS: [dns] network6 /%u is too small for %u names", p6->len, cfg->dns.cache_size);
    return -1;
  }
  has_pool6 = 1;
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
