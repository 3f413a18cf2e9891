/* SPDX-License-Identifier: MIT */
/* Mapped DNS: the resolver (queries in, answers out through the worker's
 * lwIP instance) and the name lookups for CONNECT and UDP by name.
 *
 * Answers (s5_dns_answer_plan() in dns_msg.c decides):
 *   A for a usable name      the name's pool address, TTL 1 s (a name's
 *                            address may be recycled once cache-size other
 *                            names have been used since: clients must not
 *                            keep it; asking again costs a local round trip)
 *   AAAA, with network6      the name's IPv6 pool address: the same entry
 *                            as its A address (one per name, both families)
 *   AAAA without, any other  NOERROR with no answer ("no data"): the name
 *                            exists, just not with that type. Stub
 *                            resolvers then use the A answer they asked for
 *                            in parallel; NOTIMP or SERVFAIL would make
 *                            some of them (glibc with AAAA, browsers with
 *                            HTTPS records) give up on the name or switch
 *                            servers, although nothing is wrong with it.
 *   class other than IN      NOTIMP
 *   opcode other than QUERY  NOTIMP (header only)
 *   name with bytes other    REFUSED: it could not reach the proxy as the
 *   than [a-z0-9_-] in labels  same name (text form of a CONNECT)
 *   malformed                no answer at all; counted (drop_dns) */
#include "dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "addr.h"
#include "dns_msg.h"
#include "dns_table.h"
#include "log.h"
#include "udp.h"
#include "wctx.h"

#include "lwip/pbuf.h"

#define S5_DNS_TTL 1
/* Queries are small; the part of a datagram beyond this is never needed
 * (header, one question of at most 259 bytes, the start of an OPT record). */
#define S5_DNS_QUERY_READ 1024

/* Set once by s5_dns_setup() before any worker exists, read-only after. */
static struct s5_dns_table *dns_table;

static int has_pool6;   /* [dns] network6 set: AAAA answered from it */

/* "198.18.0.2, fc00::2", the resolver addresses for the start-up line. */
static void resolvers_text(const struct s5_config *cfg, char *buf, size_t len) {
  buf[0] = '\0';
  for (int f = 0; f < 2; f++) {
    const struct sockaddr_storage *ss = &cfg->dns.addr[f];
    char a[INET6_ADDRSTRLEN];
    const void *raw = ss->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                                               : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (ss->ss_family == 0 || inet_ntop(ss->ss_family, raw, a, sizeof a) == NULL) continue;
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n > 0 ? ", " : "", a);
  }
}

int s5_dns_setup(const struct s5_config *cfg) {
  if (cfg->dns.addr[0].ss_family == 0 && cfg->dns.addr[1].ss_family == 0) return 0;
  dns_table = s5_dns_table_create(cfg->dns.network.addr, cfg->dns.network.len, cfg->dns.cache_size);
  if (dns_table == NULL) {
    s5_error("mapped DNS: cannot create the shared name table (%u names): %s", cfg->dns.cache_size,
             strerror(errno));
    return -1;
  }
  char r[2 * INET6_ADDRSTRLEN + 2], n[INET_ADDRSTRLEN] = "", n6[INET6_ADDRSTRLEN + 8] = "";
  resolvers_text(cfg, r, sizeof r);
  inet_ntop(AF_INET, cfg->dns.network.addr, n, sizeof n);
  const struct s5_prefix *p6 = &cfg->dns.network6;
  if (p6->family == AF_INET6) {
    if (s5_dns_table_pool6(dns_table, p6->addr, p6->len) < 0) {
      s5_error("mapped DNS: [dns] network6 /%u is too small for %u names", p6->len, cfg->dns.cache_size);
      return -1;
    }
    has_pool6 = 1;
    char a[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, p6->addr, a, sizeof a);
    snprintf(n6, sizeof n6, " and %s/%u", a, p6->len);
  }
  s5_info("mapped DNS: resolver %s port 53, names mapped into %s/%u%s, %u kept", r, n,
          cfg->dns.network.len, n6, cfg->dns.cache_size);
  return 0;
}

int s5_dns_is_resolver(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port) {
  if (dns_table == NULL || port != 53) return 0;
  const struct sockaddr_storage *v4 = &cfg->dns.addr[0], *v6 = &cfg->dns.addr[1];
  if (IP_IS_V4(dst))
    return v4->ss_family == AF_INET && ip_2_ip4(dst)->addr == ((const struct sockaddr_in *)v4)->sin_addr.s_addr;
  return v6->ss_family == AF_INET6 &&
         memcmp(ip_2_ip6(dst)->addr, &((const struct sockaddr_in6 *)v6)->sin6_addr, 16) == 0;
}

static void dns_drop(struct s5_wctx *w, const ip_addr_t *src, const char *why) {
  S5_STAT_ADD(w->stats, drop_dns, 1);
  if (s5_log_enabled(S5_LOG_DEBUG)) {
    char a[S5_ADDR_STRLEN];
    s5_debug("dns: query from %s dropped: %s (%llu dropped on this queue)", s5_addr_str(src, a, sizeof a), why,
             (unsigned long long)S5_STAT_GET(w->stats, drop_dns));
  }
}

void s5_dns_query(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, uint16_t sport,
                  const ip_addr_t *dst, uint16_t dport) {
  uint8_t in[S5_DNS_QUERY_READ];
  uint8_t out[S5_DNS_ANSWER_MAX];
  size_t len = pbuf_copy_partial(p, in, p->tot_len < sizeof in ? p->tot_len : sizeof in, 0);
  pbuf_free(p);

  struct s5_dns_query q;
  enum s5_dns_parse r = s5_dns_parse_query(in, len, &q);
  if (r == S5_DNS_MALFORMED) {
    dns_drop(w, src, "malformed");
    return;
  }
  unsigned rtype;
  unsigned rcode = s5_dns_answer_plan(r, &q, has_pool6, &rtype);
  uint8_t addr[16];
  size_t alen = 0;
  if (rtype == S5_DNS_TYPE_A && s5_dns_table_map(dns_table, q.name, q.name_len, addr) == 0) alen = 4;
  if (rtype == S5_DNS_TYPE_AAAA && s5_dns_table_map6(dns_table, q.name, q.name_len, addr) == 0) alen = 16;
  int n = s5_dns_build_response(out, sizeof out, in, &q, rcode, alen > 0 ? addr : NULL, alen, S5_DNS_TTL);
  if (n < 0) {
    dns_drop(w, src, "answer does not fit");
    return;
  }
  if (alen > 0 && s5_log_enabled(S5_LOG_DEBUG)) {
    char a[INET6_ADDRSTRLEN];
    inet_ntop(alen == 4 ? AF_INET : AF_INET6, addr, a, sizeof a);
    s5_debug("dns: %s -> %s", q.name, a);
  } else if (alen == 0) {
    s5_debug("dns: type %u for \"%s\": rcode %u, no answer", q.qtype, q.name, rcode);
  }
  s5_udp_output(w, dst, dport, src, sport, out, (size_t)n);
}

int s5_dns_name_of_ip(const ip_addr_t *dst, char *name, size_t cap) {
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

int s5_dns_name_of(const struct sockaddr *dst, char *name, size_t cap) {
  if (dns_table == NULL) return 0;
  ip_addr_t ip;
  if (dst->sa_family == AF_INET) {
    IP_ADDR4(&ip, 0, 0, 0, 0);
    ip_2_ip4(&ip)->addr = ((const struct sockaddr_in *)dst)->sin_addr.s_addr;
  } else if (dst->sa_family == AF_INET6) {
    ip_addr_set_zero_ip6(&ip);
    memcpy(ip_2_ip6(&ip)->addr, &((const struct sockaddr_in6 *)dst)->sin6_addr, 16);
  } else {
    return 0;
  }
  return s5_dns_name_of_ip(&ip, name, cap);
}

int s5_dns_address_of(const char *name, size_t len, int v6, ip_addr_t *out) {
  if (dns_table == NULL || len == 0 || len > S5_DNS_NAME_MAX) return -1;
  char lower[S5_DNS_NAME_MAX + 1];
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    lower[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
  }
  if (v6) {
    ip_addr_set_zero_ip6(out);
    return s5_dns_table_map6(dns_table, lower, len, (uint8_t *)ip_2_ip6(out)->addr) == 0 ? 0 : -1;
  }
  uint8_t a[4];
  if (s5_dns_table_map(dns_table, lower, len, a) != 0) return -1;
  IP_ADDR4(out, a[0], a[1], a[2], a[3]);
  return 0;
}
