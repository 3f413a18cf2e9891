/* SPDX-License-Identifier: MIT */
/* Mapped DNS: the resolver. A query in, its answer out into the caller's
 * buffer: udp.c sends it back through the worker's lwIP instance like any
 * datagram, dns_tcp.c on its connection. The names and addresses are
 * dnsmap.c's.
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
#include "dns/dns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"
#include "dns/dns_table.h"
#include "dns/dnsmap.h"
#include "base/log.h"
#include "ctx/wctx.h"

#include "lwip/pbuf.h"

/* "198.18.0.2, fc00::2", the resolver addresses for the start-up line. */
static void resolvers_text(const struct s5_config *cfg, char *buf, size_t len) {
  buf[0] = '\0';
  for (int f = 0; f < 2; f++) {
    const struct sockaddr_storage *ss = &cfg->dns.addr[f];
    char a[INET6_ADDRSTRLEN];
    if (s5_sockaddr_host(ss, a, sizeof a)[0] == '\0') continue;
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n > 0 ? ", " : "", a);
  }
}

int s5_dns_setup(const struct s5_config *cfg) {
  if (cfg->dns.addr[0].ss_family == 0 && cfg->dns.addr[1].ss_family == 0) return 0;
  if (s5_dnsmap_setup(cfg) < 0) return -1;
  char r[2 * INET6_ADDRSTRLEN + 2], n[INET_ADDRSTRLEN] = "", n6[INET6_ADDRSTRLEN + 8] = "";
  resolvers_text(cfg, r, sizeof r);
  inet_ntop(AF_INET, cfg->dns.network.addr, n, sizeof n);
  const struct s5_prefix *p6 = &cfg->dns.network6;
  if (s5_dnsmap_has_pool6()) {
    char a[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, p6->addr, a, sizeof a);
    snprintf(n6, sizeof n6, " and %s/%u", a, p6->len);
  }
  s5_info("mapped DNS: resolver %s port 53 (UDP and TCP%s), names mapped into %s/%u%s, %u kept", r,
          cfg->dns.hijack ? "; with port 53 of every other address: hijack" : "", n, cfg->dns.network.len, n6,
          cfg->dns.cache_size);
  return 0;
}

static int is_resolver_addr(const struct s5_config *cfg, const ip_addr_t *dst) {
  ip_addr_t r;
  return s5_addr_from_sockaddr(&cfg->dns.addr[IP_IS_V4(dst) ? 0 : 1], &r, NULL) == 0 && ip_addr_cmp(&r, dst);
}

enum s5_dns_dest s5_dns_dest(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port) {
  if (!s5_dnsmap_on() || port != 53) return S5_DNS_PASS;
  if (is_resolver_addr(cfg, dst)) return S5_DNS_RESOLVER;
  return cfg->dns.hijack ? S5_DNS_HIJACKED : S5_DNS_PASS;
}

static int dns_drop(struct s5_wctx *w, const ip_addr_t *src, const char *why) {
  S5_STAT_ADD(w->stats, drop_dns, 1);
  if (s5_log_enabled(S5_LOG_DEBUG)) {
    char a[S5_ADDR_STRLEN];
    s5_debug("dns: query from %s dropped: %s (%llu dropped on this queue)", s5_addr_str(src, a, sizeof a),
             why, (unsigned long long)S5_STAT_GET(w->stats, drop_dns));
  }
  return -1;
}

static void dns_log_answer(const struct s5_dns_query *q, unsigned rcode, const uint8_t *addr, size_t alen) {
  if (alen > 0 && s5_log_enabled(S5_LOG_DEBUG)) {
    char a[INET6_ADDRSTRLEN];
    inet_ntop(alen == 4 ? AF_INET : AF_INET6, addr, a, sizeof a);
    s5_debug("dns: %s -> %s", q->name, a);
  } else if (alen == 0) {
    s5_debug("dns: type %u for \"%s\": rcode %u, no answer", q->qtype, q->name, rcode);
  }
}

int s5_dns_answer(struct s5_wctx *w, const uint8_t *msg, size_t len, const ip_addr_t *src,
                  enum s5_dns_dest dest, uint8_t *out, size_t cap) {
  if (dest == S5_DNS_HIJACKED) S5_STAT_ADD(w->stats, dns_hijacked, 1);
  struct s5_dns_query q;
  enum s5_dns_parse r = s5_dns_parse_query(msg, len < S5_DNS_QUERY_READ ? len : S5_DNS_QUERY_READ, &q);
  if (r == S5_DNS_MALFORMED) return dns_drop(w, src, "malformed");
  unsigned rtype;
  unsigned rcode = s5_dns_answer_plan(r, &q, s5_dnsmap_has_pool6(), &rtype);
  uint8_t addr[16];
  size_t alen = 0;
  int m = rtype == S5_DNS_TYPE_A || rtype == S5_DNS_TYPE_AAAA
            ? s5_dnsmap_address(q.name, q.name_len, rtype == S5_DNS_TYPE_AAAA, addr)
            : -1;
  if (m == 0) alen = rtype == S5_DNS_TYPE_A ? 4 : 16;
  if (m == S5_DNS_TABLE_FULL) { /* a recent answer's address is never another name's */
    rcode = S5_DNS_RCODE_SERVFAIL;
    S5_STAT_ADD(w->stats, dns_pool_full, 1);
    char line[S5_DNS_NAME_MAX + 160];
    snprintf(line, sizeof line,
             "dns: no mapped address free for %s: every one was answered within %llu s; SERVFAIL (raise "
             "[dns] cache-size)",
             q.name, (unsigned long long)(S5_DNS_REUSE_MS / 1000));
    s5_wctx_failure(w, S5_LOG_WARN, line);
  }
  int n = s5_dns_build_response(out, cap, msg, &q, rcode, alen > 0 ? addr : NULL, alen, S5_DNS_TTL);
  if (n < 0) return dns_drop(w, src, "answer does not fit");
  dns_log_answer(&q, rcode, addr, alen);
  return n;
}

int s5_dns_answer_pbuf(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, enum s5_dns_dest dest,
                       uint8_t *out, size_t cap) {
  uint8_t in[S5_DNS_QUERY_READ];
  size_t len = pbuf_copy_partial(p, in, p->tot_len < sizeof in ? p->tot_len : sizeof in, 0);
  pbuf_free(p);
  return s5_dns_answer(w, in, len, src, dest, out, cap);
}
