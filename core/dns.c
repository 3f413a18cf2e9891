/* Mapped DNS: the resolver (queries in, answers out through the worker's
 * lwIP instance) and the name lookups for CONNECT and UDP by name.
 *
 * Answers:
 *   A for a usable name      the name's pool address, TTL 1 s (a name's
 *                            address may be recycled once cache-size other
 *                            names have been used since: clients must not
 *                            keep it; asking again costs a local round trip)
 *   AAAA and any other type  NOERROR with no answer ("no data"): the name
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
#include "worker.h"

#include "lwip/pbuf.h"

#define S5_DNS_TTL 1
/* Queries are small; the part of a datagram beyond this is never needed
 * (header, one question of at most 259 bytes, the start of an OPT record). */
#define S5_DNS_QUERY_READ 1024

/* Set once by s5_dns_setup() before any worker exists, read-only after. */
static struct s5_dns_table *dns_table;

int s5_dns_setup(const struct s5_config *cfg) {
  if (cfg->dns.addr.ss_family == 0) return 0;
  dns_table = s5_dns_table_create(cfg->dns.network.addr, cfg->dns.network.len, cfg->dns.cache_size);
  if (dns_table == NULL) {
    s5_error("mapped DNS: cannot create the shared name table (%u names): %s", cfg->dns.cache_size,
             strerror(errno));
    return -1;
  }
  char a[INET6_ADDRSTRLEN] = "", n[INET_ADDRSTRLEN] = "";
  const struct sockaddr_storage *ss = &cfg->dns.addr;
  inet_ntop(ss->ss_family,
            ss->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
                                     : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr,
            a, sizeof a);
  inet_ntop(AF_INET, cfg->dns.network.addr, n, sizeof n);
  s5_info("mapped DNS: resolver %s port 53, names mapped into %s/%u, %u kept", a, n,
          cfg->dns.network.len, cfg->dns.cache_size);
  return 0;
}

int s5_dns_is_resolver(const struct s5_config *cfg, const ip_addr_t *dst, uint16_t port) {
  const struct sockaddr_storage *ss = &cfg->dns.addr;
  if (dns_table == NULL || port != 53) return 0;
  if (ss->ss_family == AF_INET && IP_IS_V4(dst))
    return ip_2_ip4(dst)->addr == ((const struct sockaddr_in *)ss)->sin_addr.s_addr;
  if (ss->ss_family == AF_INET6 && IP_IS_V6(dst))
    return memcmp(ip_2_ip6(dst)->addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16) == 0;
  return 0;
}

static void dns_drop(struct s5_worker *w, const ip_addr_t *src, const char *why) {
  S5_STAT_ADD(w->stats, drop_dns, 1);
  if (s5_log_level >= S5_LOG_DEBUG) {
    char a[S5_ADDR_STRLEN];
    s5_debug("dns: query from %s dropped: %s (%llu dropped on this queue)", s5_addr_str(src, a, sizeof a), why,
             (unsigned long long)S5_STAT_GET(w->stats, drop_dns));
  }
}

void s5_dns_query(struct s5_worker *w, struct pbuf *p, const ip_addr_t *src, uint16_t sport,
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
  uint8_t addr[4];
  const uint8_t *answer = NULL;
  unsigned rcode = S5_DNS_RCODE_NOERROR;
  if (r == S5_DNS_NOT_QUERY) {
    q.question_len = 0;
    q.has_opt = 0;
    rcode = S5_DNS_RCODE_NOTIMP;
  } else if (q.qclass != S5_DNS_CLASS_IN) {
    rcode = S5_DNS_RCODE_NOTIMP;
  } else if (!q.name_ok) {
    rcode = S5_DNS_RCODE_REFUSED;
  } else if (q.qtype == S5_DNS_TYPE_A && q.name_len > 0 &&
             s5_dns_table_map(dns_table, q.name, q.name_len, addr) == 0) {
    answer = addr;
  }
  int n = s5_dns_build_response(out, sizeof out, in, &q, rcode, answer, S5_DNS_TTL);
  if (n < 0) {
    dns_drop(w, src, "answer does not fit");
    return;
  }
  if (answer != NULL)
    s5_debug("dns: %s -> %u.%u.%u.%u", q.name, addr[0], addr[1], addr[2], addr[3]);
  else
    s5_debug("dns: type %u for \"%s\": rcode %u, no answer", q.qtype, q.name, rcode);
  s5_udp_output(w, dst, dport, src, sport, out, (size_t)n);
}

int s5_dns_name_of_ip(const ip_addr_t *dst, char *name, size_t cap) {
  if (dns_table == NULL || !IP_IS_V4(dst)) return 0;
  const uint8_t *a = (const uint8_t *)&ip_2_ip4(dst)->addr;
  int n = s5_dns_table_name(dns_table, a, name, cap);
  if (n < 0) return 0;
  if (n == 0) {
    s5_info("mapped address %u.%u.%u.%u stands for no name (any more): look the name up again",
            a[0], a[1], a[2], a[3]);
    return -1;
  }
  s5_debug("dns: %u.%u.%u.%u stands for %s: sent by name", a[0], a[1], a[2], a[3], name);
  return 1;
}

int s5_dns_name_of(const struct sockaddr *dst, char *name, size_t cap) {
  if (dns_table == NULL || dst->sa_family != AF_INET) return 0;
  ip_addr_t ip;
  IP_ADDR4(&ip, 0, 0, 0, 0);
  ip_2_ip4(&ip)->addr = ((const struct sockaddr_in *)dst)->sin_addr.s_addr;
  return s5_dns_name_of_ip(&ip, name, cap);
}

int s5_dns_address_of(const char *name, size_t len, ip_addr_t *out) {
  if (dns_table == NULL || len == 0 || len > S5_DNS_NAME_MAX) return -1;
  char lower[S5_DNS_NAME_MAX + 1];
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    lower[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
  }
  uint8_t a[4];
  if (s5_dns_table_map(dns_table, lower, len, a) != 0) return -1;
  IP_ADDR4(out, a[0], a[1], a[2], a[3]);
  return 0;
}
