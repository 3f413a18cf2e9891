/* SPDX-License-Identifier: MIT */
/* The differences between upstream types (see upstream.h). */
#include "socks5/upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"

#include "socks5/socks4.h"
#include "socks5/socks5.h"
#include "ini/sockaddr.h"

int s5_upstream_write_connect(const struct s5_upstream_cfg *up, const struct s5_target *t, uint8_t *buf,
                              size_t cap, const char **why) {
  const struct sockaddr *dst = (const struct sockaddr *)&t->addr;
  const char *name = t->name[0] != '\0' ? t->name : NULL;
  int n;
  *why = "the destination does not fit a request";
  switch (up->type) {
    case S5_UPSTREAM_SOCKS4:
      if (name == NULL && dst->sa_family != AF_INET) {
        *why = "a SOCKS4 upstream cannot carry an IPv6 destination";
        return S5_SOCKS5_BAD_MESSAGE;
      }
      n = name != NULL
            ? s5_socks4_write_connect_name(buf, cap, name, s5_sockaddr_port(&t->addr), up->username)
            : s5_socks4_write_connect(buf, cap, dst, up->username);
      break;
    case S5_UPSTREAM_HTTP:
      n = s5_http_write_connect(buf, cap, name, dst, s5_sockaddr_port(&t->addr), up->username, up->password);
      break;
    default:
      n = name != NULL ? s5_socks5_write_connect_name(buf, cap, name, s5_sockaddr_port(&t->addr))
                       : s5_socks5_write_connect(buf, cap, dst);
  }
  if (up->type == S5_UPSTREAM_SHADOWSOCKS && n > 3) { /* its target: SOCKS5's ATYP, address, port */
    memmove(buf, buf + 3, (size_t)n - 3);
    n -= 3;
  }
  return n;
}

int s5_upstream_parse_reply(const struct s5_upstream_cfg *up, struct s5_http_reply *http, const uint8_t *in,
                            uint16_t *len, uint8_t *rep, struct s5_socks5_addr *bnd) {
  if (up->type == S5_UPSTREAM_SOCKS4) return s5_socks4_parse_reply(in, *len, rep);
  if (up->type == S5_UPSTREAM_HTTP) {
    size_t used = 0;
    int r = s5_http_reply_feed(http, in, *len, &used);
    if (r == S5_SOCKS5_NEED_MORE) *len = 0;
    return r > 0 ? (int)used : r;
  }
  if (bnd == NULL) return s5_socks5_parse_reply(in, *len, rep);
  return s5_socks5_parse_reply_addr(in, *len, rep, bnd);
}

int s5_upstream_broken(const struct s5_upstream_cfg *up, int status, uint8_t rep, uint16_t http) {
  if (status != S5_SOCKS5_REFUSED) return 0;
  if (up->type == S5_UPSTREAM_HTTP && http == 403) return S5_BROKEN_EACH;
  if (up->type == S5_UPSTREAM_HTTP) return http >= 500 && http != 502 && http != 504 ? S5_BROKEN_DISTINCT : 0;
  return up->type == S5_UPSTREAM_SOCKS5 && rep == 1 ? S5_BROKEN_DISTINCT : 0;
}

enum s5_up_cause s5_upstream_cause(const struct s5_upstream_cfg *up, int status, uint8_t rep, uint16_t http,
                                   int connecting, int *every) {
  int broken = s5_upstream_broken(up, status, rep, http);
  *every = broken == S5_BROKEN_EACH;
  if (broken != 0) return S5_UP_REFUSING;
  if (status == S5_SOCKS5_REFUSED) return S5_UP_DESTINATION;
  if (status == S5_SOCKS5_AUTH_FAILED || status == S5_SOCKS5_NO_METHOD) return S5_UP_AUTH;
  return connecting ? S5_UP_CONNECT : S5_UP_HANDSHAKE;
}

const struct s5_upstream_cfg *s5_upstream_for_udp(const struct s5_config *cfg) {
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (s5_upstream_udp(&cfg->upstreams[i])) return &cfg->upstreams[i];
  return NULL;
}

int s5_upstream_udp(const struct s5_upstream_cfg *up) {
  if (up->type == S5_UPSTREAM_SHADOWSOCKS) return up->udp;      /* each datagram sealed (core/udp/udp_ss.h) */
  return up->type == S5_UPSTREAM_SOCKS5 && up->udp && !up->tls; /* datagrams would go in clear */
}

/* The address is this machine's own (loopback): nothing crosses a network. */
static int upstream_local(const struct sockaddr_storage *a) {
  if (a->ss_family == AF_INET) return ((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] == 127;
  return a->ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

void s5_upstreams_log(const struct s5_config *cfg) {
  for (unsigned i = 0; i < cfg->n_upstreams; i++) {
    const struct s5_upstream_cfg *up = &cfg->upstreams[i];
    char a[S5_SOCKADDR_STRLEN];
    int creds = up->username[0] != '\0';
    s5_info("upstream %s: %s %s%s%s%s", up->name, s5_upstream_proto(up),
            s5_sockaddr_str(&up->addr, a, sizeof a), up->tls ? " over TLS" : "",
            creds ? " with credentials" : "", up->type == S5_UPSTREAM_SHADOWSOCKS ? " (AEAD)" : "");
    if (up->tls && !up->tls_verify)
      s5_warn(
        "upstream %s: tls-verify = false: the proxy's certificate and name are not checked, so anyone on "
        "the path can pose as it",
        up->name);
    if (!up->tls && creds && !upstream_local(&up->addr) && up->type != S5_UPSTREAM_DIRECT)
      s5_warn("upstream %s: its credentials cross the network in clear to %s%s", up->name, a,
              up->type == S5_UPSTREAM_SOCKS4 ? "" : "; tls = true (with a TLS proxy) fixes it");
  }
  const struct s5_upstream_cfg *udp = s5_upstream_for_udp(cfg);
  if (udp == NULL)
    s5_info(
      "UDP: no upstream carries it (only SOCKS5 and Shadowsocks ones with udp = associate): datagrams are answered with "
      "ICMP port unreachable");
  else if (cfg->n_upstreams > 1) {
    char names[S5_UPSTREAMS_MAX * 34] = "";
    unsigned n = 0;
    for (unsigned i = 0; i < cfg->n_upstreams; i++)
      if (s5_upstream_udp(&cfg->upstreams[i]))
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n++ ? ", " : "",
                 cfg->upstreams[i].name);
    s5_info("UDP: through upstream%s %s%s", n > 1 ? "s" : "", names,
            n > 1 ? " (the healthy one [balance] or a rule chooses)" : "");
  }
}

const char *s5_upstream_proto(const struct s5_upstream_cfg *up) {
  switch (up->type) {
    case S5_UPSTREAM_SOCKS4: return "SOCKS4";
    case S5_UPSTREAM_HTTP: return "HTTP CONNECT";
    case S5_UPSTREAM_DIRECT: return "direct";
    case S5_UPSTREAM_SHADOWSOCKS: return "Shadowsocks";
    default: return "SOCKS5";
  }
}

/* What a 407 asks for: s5tund speaks Basic alone. */
static const char *why_407(const struct s5_upstream_cfg *up, const struct s5_http_reply *http, char *buf,
                           size_t cap) {
  bool creds = up->username[0] != '\0', basic = false;
  for (const char *p = http->schemes; *p != '\0'; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 2 : 0))
    basic = basic || (strncasecmp(p, "Basic", 5) == 0 && (p[5] == ',' || p[5] == '\0'));
  if (http->schemes[0] == '\0')
    snprintf(buf, cap, " (it offered no scheme in Proxy-Authenticate; s5tund sends Basic: %s)",
             creds ? "check username and password" : "set username and password");
  else if (!basic)
    snprintf(buf, cap, " (it offers %s: not supported, s5tund speaks Basic authentication only)",
             http->schemes);
  else
    snprintf(buf, cap, " (%s)",
             creds ? "check username and password" : "it asks for Basic: set username and password");
  return buf;
}

static void why_http(const struct s5_upstream_cfg *up, const char *req, int status,
                     const struct s5_http_reply *http, char *why, size_t cap) {
  char auth[160];
  if (status == S5_SOCKS5_REFUSED || status == S5_SOCKS5_AUTH_FAILED)
    snprintf(why, cap, "proxy answered %s with \"%s\"%s", req, http->line,
             status == S5_SOCKS5_AUTH_FAILED ? why_407(up, http, auth, sizeof auth) : "");
  else if (status == S5_SOCKS5_TOO_LONG)
    snprintf(why, cap, "HTTP CONNECT failed: response header longer than %u bytes", S5_HTTP_HEADER_MAX);
  else if (http->status == 0)
    snprintf(why, cap, "HTTP CONNECT failed: not an HTTP status line (\"%s\")", http->line);
  else snprintf(why, cap, "HTTP CONNECT failed: malformed response header after \"%s\"", http->line);
}

void s5_upstream_why(const struct s5_upstream_cfg *up, const char *req, const char *hs, int status,
                     uint8_t rep, const struct s5_http_reply *http, char *why, size_t cap) {
  if (up->type == S5_UPSTREAM_HTTP) {
    why_http(up, req, status, http, why, cap);
    return;
  }
  if (up->type == S5_UPSTREAM_SOCKS4 && (status == S5_SOCKS5_REFUSED || status == S5_SOCKS5_AUTH_FAILED)) {
    snprintf(why, cap, "proxy refused %s: %s (SOCKS4 %u)", req, s5_socks4_strcd(rep), rep);
    return;
  }
  if (status == S5_SOCKS5_REFUSED) snprintf(why, cap, "proxy refused %s: %s", req, s5_socks5_strrep(rep));
  else if (status == S5_SOCKS5_AUTH_FAILED) snprintf(why, cap, "proxy rejected the username/password");
  else if (status == S5_SOCKS5_NO_METHOD)
    snprintf(why, cap, "proxy accepts none of our authentication methods (%s)",
             up->username[0] != '\0' ? "username/password" : "none: configure [socks5] username");
  else if (up->type == S5_UPSTREAM_SOCKS5)
    snprintf(why, cap, "%s failed: %s", hs, s5_socks5_strerror(status));
  else snprintf(why, cap, "%s handshake failed: %s", s5_upstream_proto(up), s5_socks5_strerror(status));
}
