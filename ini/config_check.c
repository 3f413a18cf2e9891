/* SPDX-License-Identifier: MIT */
/* The rules that involve more than one key, checked once the whole file
 * (or command line) is in: each names the key to blame, so the loader can
 * point at the line that set it. Everything about a single value is the
 * key table's business (keys.c, types.c). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ini/internal.h"
#include "ini/keys.h"

static uint32_t ipv4_host(const uint8_t *a) {
  return ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
}

/* 1 if the IPv6 address a lies inside p. */
static int prefix_holds(const struct s5_prefix *p, const uint8_t a[16]) {
  for (unsigned bit = 0; bit < p->len; bit++) {
    unsigned m = 0x80u >> (bit % 8);
    if ((a[bit / 8] & m) != (p->addr[bit / 8] & m)) return 0;
  }
  return 1;
}

/* Mapped DNS: hijack needs the resolver, the pool must hold cache-size
 * names, and the resolver's own address must not be one of the addresses
 * it hands out. */
static int check_dns(const struct s5_config *cfg, int *key, char *err, size_t errlen) {
  if (cfg->dns.hijack && cfg->dns.addr[0].ss_family == 0 && cfg->dns.addr[1].ss_family == 0) {
    *key = s5_config_key_find("dns", "hijack");
    snprintf(err, errlen, "needs [dns] address: the mapped resolver is what answers the queries it takes");
    return -1;
  }
  const struct s5_prefix *net = &cfg->dns.network;
  if (net->family != AF_INET || net->len < 1 || net->len > 30)
    return 0; /* the parser refused anything else */
  unsigned long long pool = (1ull << (32 - net->len)) - 2;
  if (cfg->dns.cache_size > pool) {
    *key = s5_config_key_find("dns", "cache-size");
    snprintf(err, errlen, "%u is more than the %llu addresses of [dns] network /%u", cfg->dns.cache_size,
             pool, net->len);
    return -1;
  }
  const struct s5_prefix *net6 = &cfg->dns.network6;
  if (net6->family == AF_INET6) {
    unsigned long long pool6 = net6->len <= 64 ? ~0ull : (1ull << (128 - net6->len)) - 2;
    if (cfg->dns.cache_size > pool6) {
      *key = s5_config_key_find("dns", "cache-size");
      snprintf(err, errlen, "%u is more than the %llu addresses of [dns] network6 /%u", cfg->dns.cache_size,
               pool6, net6->len);
      return -1;
    }
    size_t n;
    const uint8_t *ip6 = s5_sockaddr_raw(&cfg->dns.addr[1], &n);
    if (cfg->dns.addr[1].ss_family == AF_INET6 && prefix_holds(net6, ip6)) {
      *key = s5_config_key_find("dns", "address");
      snprintf(err, errlen, "is inside [dns] network6, the pool of mapped addresses");
      return -1;
    }
  }
  if (cfg->dns.addr[0].ss_family != AF_INET) return 0;
  size_t n;
  const uint8_t *ip = s5_sockaddr_raw(&cfg->dns.addr[0], &n);
  uint32_t mask = 0xffffffffu << (32 - net->len);
  if ((ipv4_host(ip) & mask) == (ipv4_host(net->addr) & mask)) {
    *key = s5_config_key_find("dns", "address");
    snprintf(err, errlen, "is inside [dns] network, the pool of mapped addresses");
    return -1;
  }
  return 0;
}

/* [tun] netns: a name `ip netns` could have made (a file in /run/netns),
 * and no auto-route: nothing outside that namespace is routed. */
static int check_netns(const struct s5_config *cfg, int *key, char *err, size_t errlen) {
  const char *n = cfg->tun.netns;
  if (n[0] == '\0') return 0;
  *key = s5_config_key_find("tun", "netns");
  if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 ||
      strspn(n,
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789_.-") != strlen(n)) {
    snprintf(err, errlen, "\"%s\" is not a namespace name (letters, digits, '_', '.', '-')", n);
    return -1;
  }
  if (cfg->tun.auto_route) {
    snprintf(err, errlen,
             "set with [tun] auto-route: a namespace of its own needs no routing outside it (its default "
             "route is the device); remove auto-route");
    return -1;
  }
  return 0;
}

/* Points *key and *up at an upstream's key: [socks5]'s own for a [socks5]
 * upstream (which has no type or weight), else the [upstream] one. */
static void blame(const struct s5_config *cfg, unsigned i, const char *name, int *key, int *up) {
  if (i == 0 && cfg->socks5_section && s5_config_key_find("socks5", name) >= 0) {
    *key = s5_config_key_find("socks5", name);
    *up = -1;
    return;
  }
  *key = s5_config_key_find("upstream", name);
  *up = (int)i;
}

/* Credentials as each protocol carries them. */
static int check_upstream(const struct s5_config *cfg, unsigned i, int *key, int *up, char *err,
                          size_t errlen) {
  const struct s5_upstream_cfg *u = &cfg->upstreams[i];
  bool user = u->username[0] != '\0';
  bool pass = u->password[0] != '\0';
  char where[64];
  if (i == 0 && cfg->socks5_section) snprintf(where, sizeof where, "[socks5]");
  else snprintf(where, sizeof where, "[upstream %s]", u->name);
  if (u->type == S5_UPSTREAM_SHADOWSOCKS) {
    size_t klen = u->ss_method == S5_SS_2022_AES_128_GCM ? 16 : 32;
    uint8_t psk[S5_SS2022_KEYS_MAX * 32];
    bool v22 = s5_ss_method_2022(u->ss_method);
    int keys = v22 && pass ? s5_b64_key_chain(u->password, klen, psk, S5_SS2022_KEYS_MAX) : 1;
    explicit_bzero(psk, sizeof psk);
    bool bad_psk = keys<0, eih_chacha = keys> 1 && u->ss_method == S5_SS_2022_CHACHA20_POLY1305;
    const char *k = !pass || bad_psk || eih_chacha ? "password" : user ? "username" : NULL;
    if (k == NULL) return 0;
    blame(cfg, i, k, key, up);
    if (bad_psk)
      snprintf(err, errlen,
               "not a 2022 key: method 2022-blake3-* takes base64 of exactly %zu random bytes, the server's "
               "(e.g. from `openssl rand -base64 %zu`); for a multi-user server, its identity keys then "
               "the user's, separated by ':' (at most %d)",
               klen, klen, S5_SS2022_KEYS_MAX);
    else if (eih_chacha)
      snprintf(err, errlen,
               "identity keys (iPSK:uPSK) with method 2022-blake3-chacha20-poly1305: identity headers are "
               "defined for the 2022-blake3-aes-* methods only");
    else
      snprintf(err, errlen, "%s",
               !pass ? "empty: type = shadowsocks needs the server's password"
                     : "set for type = shadowsocks, which has none (password alone is the key's)");
    return -1;
  }
  if (u->type == S5_UPSTREAM_SOCKS4) {
    if (pass) {
      blame(cfg, i, "password", key, up);
      snprintf(err, errlen, "set for type = socks4, which has none (username is its user id)");
      return -1;
    }
    return 0;
  }
  /* RFC 1929 sends both or nothing; one alone is surely a mistake. Basic
   * too: a proxy that wants credentials wants both. */
  if (user != pass) {
    blame(cfg, i, user ? "username" : "password", key, up);
    snprintf(err, errlen, "set without %s %s (authentication needs both)", where,
             user ? "password" : "username");
    return -1;
  }
  if (u->type == S5_UPSTREAM_HTTP && strchr(u->username, ':') != NULL) {
    blame(cfg, i, "username", key, up);
    snprintf(err, errlen, "contains ':', which Basic authentication cannot carry in a user id (RFC 7617)");
    return -1;
  }
  return 0;
}

int (*s5_config_tls_pair_check)(const char *cert, const char *key, char *err, size_t errlen);

/* TLS: the types that carry it, the files it reads (refused here rather
 * than at a session's first connection), a client key with its certificate. */
static int check_tls(const struct s5_config *cfg, unsigned i, int *key, int *up, char *err, size_t errlen) {
  const struct s5_upstream_cfg *u = &cfg->upstreams[i];
  if (!u->tls) return 0;
  if (u->type != S5_UPSTREAM_HTTP && u->type != S5_UPSTREAM_SOCKS5) {
    blame(cfg, i, "tls", key, up);
    snprintf(err, errlen, "set for type = %s: TLS is for http and socks5 upstreams",
             u->type == S5_UPSTREAM_SOCKS4 ? "socks4" : "shadowsocks");
    return -1;
  }
  if ((u->tls_cert_file[0] != '\0') != (u->tls_key_file[0] != '\0')) {
    blame(cfg, i, u->tls_cert_file[0] != '\0' ? "tls-cert-file" : "tls-key-file", key, up);
    snprintf(err, errlen, "set without %s (a client certificate needs both)",
             u->tls_cert_file[0] != '\0' ? "tls-key-file" : "tls-cert-file");
    return -1;
  }
  const char *names[] = {"tls-ca-file", "tls-cert-file", "tls-key-file"};
  const char *files[] = {u->tls_ca_file, u->tls_cert_file, u->tls_key_file};
  for (int f = 0; f < 3; f++) {
    if (files[f][0] == '\0' || access(files[f], R_OK) == 0) continue;
    blame(cfg, i, names[f], key, up);
    snprintf(err, errlen, "%s: %s", files[f], strerror(errno));
    return -1;
  }
  if (u->tls_cert_file[0] != '\0' && s5_config_tls_pair_check != NULL &&
      s5_config_tls_pair_check(u->tls_cert_file, u->tls_key_file, err, errlen) != 0) {
    blame(cfg, i, "tls-key-file", key, up);
    return -1;
  }
  return 0;
}

/* Without a mark the proxy connections would be routed into the tunnel;
 * the routing rule keeps one mark out, so every upstream carries it. */
static int check_marks(const struct s5_config *cfg, int *key, int *up, char *err, size_t errlen) {
  if (!cfg->tun.auto_route) return 0;
  if (cfg->upstreams[0].mark == 0) {
    *key = s5_config_key_find("tun", "auto-route");
    *up = -1;
    snprintf(err, errlen, "needs %s mark: the proxy connections must carry a mark to stay out of the tunnel",
             cfg->socks5_section ? "[socks5]" : "[upstream] NAME");
    return -1;
  }
  for (unsigned i = 1; i < cfg->n_upstreams; i++) {
    if (cfg->upstreams[i].mark == cfg->upstreams[0].mark) continue;
    blame(cfg, i, "mark", key, up);
    snprintf(err, errlen,
             "differs from the first upstream's (%s, %#x): auto-route keeps one mark out of the tunnel",
             cfg->upstreams[0].name, (unsigned)cfg->upstreams[0].mark);
    return -1;
  }
  return 0;
}

int s5_config_check(const struct s5_config *cfg, int *key, int *up, char *err, size_t errlen) {
  *up = -1;
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (check_upstream(cfg, i, key, up, err, errlen) != 0 || check_tls(cfg, i, key, up, err, errlen) != 0)
      return -1;
  /* One family may be switched off by leaving it empty, not both. */
  if (cfg->tun.ipv4.family == 0 && cfg->tun.ipv6.family == 0) {
    *key = s5_config_key_find("tun", "ipv4");
    snprintf(err, errlen, "empty, and [tun] ipv6 is not set either: the device needs at least one address");
    return -1;
  }
  if (check_dns(cfg, key, err, errlen) != 0) return -1;
  /* Per-user routing is a refinement of auto-route, and one way or the other. */
  if (cfg->tun.exclude_uid.n > 0 && cfg->tun.include_uid.n > 0) {
    *key = s5_config_key_find("tun", "include-uid");
    snprintf(err, errlen, "set with [tun] exclude-uid: choose one of the two");
    return -1;
  }
  if ((cfg->tun.exclude_uid.n > 0 || cfg->tun.include_uid.n > 0) && !cfg->tun.auto_route) {
    *key = s5_config_key_find("tun", cfg->tun.exclude_uid.n > 0 ? "exclude-uid" : "include-uid");
    snprintf(err, errlen, "needs [tun] auto-route = true (it selects which users' traffic auto-route takes)");
    return -1;
  }
  /* The prefix lists choose what auto-route takes; without it they do nothing. */
  if (!cfg->tun.auto_route) {
    const char *set = cfg->tun.route_exclude.n > 0               ? "route-exclude"
                      : cfg->tun.route_include.n > 0             ? "route-include"
                      : cfg->tun.route_exclude_file.path[0] != 0 ? "route-exclude-file"
                      : cfg->tun.route_include_file.path[0] != 0 ? "route-include-file"
                                                                 : NULL;
    if (set != NULL) {
      *key = s5_config_key_find("tun", set);
      snprintf(err, errlen, "needs [tun] auto-route = true (it selects which destinations auto-route takes)");
      return -1;
    }
  }
  if (check_netns(cfg, key, err, errlen) != 0) return -1;
  return check_marks(cfg, key, up, err, errlen);
}

void s5_config_derive(struct s5_config *cfg) {
  struct s5_upstream_cfg *d = &cfg->direct;
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "direct");
  d->type = S5_UPSTREAM_DIRECT;
  d->weight = 1;
  /* Direct sockets leave around the tunnel: [rules] mark, or with
   * auto-route the mark its rule keeps out of the device. */
  d->mark = cfg->rules.mark != 0 ? cfg->rules.mark : cfg->tun.auto_route ? cfg->upstreams[0].mark : 0;
}
