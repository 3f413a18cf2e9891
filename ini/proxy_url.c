/* SPDX-License-Identifier: MIT */
/* --proxy URL: one upstream written the way other tunnels take it,
 *
 *   SCHEME://[USER[:PASSWORD]@]HOST:PORT[/][#NAME]
 *
 * SCHEME socks5 (socks5h alike: names always go to the proxy), socks4 or
 * socks4a (one type: 4a is used for names), http, https (http with tls); HOST an IPv4 literal or
 * an IPv6 one in brackets (no host names: DNS may itself be in the
 * tunnel); USER and PASSWORD percent-encoded where they hold ':', '@', '/'
 * or '#'; NAME the upstream's name (default proxyN, N its place).
 *
 * Shadowsocks (SIP002): ss://USERINFO@HOST:PORT[/][#NAME], USERINFO the
 * base64 (URL-safe or standard, padding optional) of METHOD:PASSWORD, or
 * METHOD:PASSWORD itself percent-encoded; no plugin. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ini/internal.h"
#include "ini/keys.h"

static const struct {
  const char *scheme;
  const char *type;
  const char *tls;
} schemes[] = {
  {"socks5", "socks5", "false"},  {"socks5h", "socks5", "false"}, {"socks4", "socks4", "false"},
  {"socks4a", "socks4", "false"}, {"http", "http", "false"},      {"https", "http", "true"},
  {"ss", "shadowsocks", "false"},
};

static int hex(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes len bytes of s into out (NUL-terminated). */
static int decode(const char *s, size_t len, char *out, size_t outlen, const char *what, char *err,
                  size_t errlen) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    int c = (unsigned char)s[i];
    if (c == '%') {
      int hi = i + 2 < len ? hex((unsigned char)s[i + 1]) : -1;
      int lo = hi >= 0 ? hex((unsigned char)s[i + 2]) : -1;
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
        snprintf(err, errlen, "%s: bad percent-encoding (%%XX, not %%00)", what);
        return -1;
      }
      c = hi * 16 + lo;
      i += 2;
    }
    if (n + 1 >= outlen) {
      snprintf(err, errlen, "%s: too long", what);
      return -1;
    }
    out[n++] = (char)c;
  }
  out[n] = '\0';
  return 0;
}

static int b64(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
}

/* Base64 (either alphabet, '=' padding optional) of len bytes of s into out (NUL-terminated). */
static int unbase64(const char *s, size_t len, char *out, size_t outlen, char *err, size_t errlen) {
  size_t n = 0;
  unsigned acc = 0, bits = 0;
  while (len > 0 && s[len - 1] == '=') len--;
  for (size_t i = 0; i < len; i++) {
    int v = b64((unsigned char)s[i]);
    if (v < 0 || n + 1 >= outlen) {
      snprintf(err, errlen, "userinfo: %s", v < 0 ? "neither base64 nor METHOD:PASSWORD" : "too long");
      return -1;
    }
    acc = acc << 6 | (unsigned)v, bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (char)(acc >> bits & 0xff);
      if (out[n - 1] == '\0') break; /* the check below refuses it */
    }
  }
  out[n] = '\0';
  if (strlen(out) != n) {
    snprintf(err, errlen, "userinfo: a NUL in its base64");
    return -1;
  }
  return 0;
}

/* Sets [upstream] key name of upstream up, prefixing a failure with it. */
static int set(struct s5_config *cfg, int up, const char *name, const char *value, char *err, size_t errlen) {
  char what[256];
  if (s5_upstream_key_set(cfg, s5_config_key_find("upstream", name), (unsigned)up, value, what,
                          sizeof what) == 0)
    return 0;
  snprintf(err, errlen, "%s: %s", name, what);
  return -1;
}

/* The part after "SCHEME://": credentials, host, port; the fragment and
 * path already cut off. */
static int authority(struct s5_config *cfg, int up, const char *a, int ss, char *err, size_t errlen) {
  char user[512], pass[512], host[128];
  const char *at = strrchr(a, '@');
  if (ss && at == NULL) {
    snprintf(err, errlen, "no METHOD:PASSWORD (e.g. ss://BASE64@192.0.2.1:8388, SIP002)");
    return -1;
  }
  if (ss) { /* METHOD:PASSWORD, as is (percent-encoded) or in base64 */
    char info[512];
    size_t len = (size_t)(at - a);
    int plain = memchr(a, ':', len) != NULL || memchr(a, '%', len) != NULL;
    if ((plain ? decode(a, len, info, sizeof info, "userinfo", err, errlen)
               : unbase64(a, len, info, sizeof info, err, errlen)) != 0)
      return -1;
    char *colon = strchr(info, ':');
    if (colon == NULL) {
      snprintf(err, errlen, "userinfo: not METHOD:PASSWORD");
      return -1;
    }
    *colon = '\0';
    if (set(cfg, up, "method", info, err, errlen) != 0 ||
        set(cfg, up, "password", colon + 1, err, errlen) != 0)
      return -1;
    at = NULL, a += len + 1;
  }
  if (at != NULL) {
    const char *colon = memchr(a, ':', (size_t)(at - a));
    size_t ulen = colon != NULL ? (size_t)(colon - a) : (size_t)(at - a);
    if (decode(a, ulen, user, sizeof user, "username", err, errlen) != 0) return -1;
    pass[0] = '\0';
    if (colon != NULL &&
        decode(colon + 1, (size_t)(at - colon - 1), pass, sizeof pass, "password", err, errlen))
      return -1;
    int r =
      set(cfg, up, "username", user, err, errlen) != 0 || set(cfg, up, "password", pass, err, errlen) != 0;
    explicit_bzero(pass, sizeof pass); /* the configuration's copy is the one kept */
    if (r) return -1;
    a = at + 1;
  }
  const char *port;
  if (a[0] == '[') {
    const char *close = strchr(a, ']');
    if (close == NULL) {
      snprintf(err, errlen, "an IPv6 address without its closing ']'");
      return -1;
    }
    port = close + 1;
  } else {
    port = strchr(a, ':');
    if (port == NULL) port = a + strlen(a);
  }
  if (*port != ':' || port[1] == '\0') {
    snprintf(err, errlen, "no port (e.g. http://192.0.2.1:3128)");
    return -1;
  }
  if ((size_t)(port - a) >= sizeof host) {
    snprintf(err, errlen, "the host is not an IPv4 or IPv6 address");
    return -1;
  }
  memcpy(host, a, (size_t)(port - a));
  host[port - a] = '\0';
  return set(cfg, up, "address", host, err, errlen) != 0 || set(cfg, up, "port", port + 1, err, errlen) != 0
           ? -1
           : 0;
}

int s5_upstream_from_url(struct s5_config *cfg, const char *url, char *err, size_t errlen) {
  char buf[1200], name[64];
  const char *sep = strstr(url, "://");
  const char *type = NULL, *tls = "false";
  if (sep == NULL) {
    snprintf(err, errlen, "expected SCHEME://HOST:PORT (socks5, socks4, socks4a, http, https or ss)");
    return -1;
  }
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
    if (strlen(schemes[i].scheme) == (size_t)(sep - url) &&
        strncasecmp(url, schemes[i].scheme, (size_t)(sep - url)) == 0)
      type = schemes[i].type, tls = schemes[i].tls;
  if (type == NULL) {
    char shown[S5_SHOW_MAX], scheme[32];
    snprintf(scheme, sizeof scheme, "%.*s", (int)(sep - url) < 31 ? (int)(sep - url) : 31, url);
    s5_show(shown, sizeof shown, scheme);
    snprintf(err, errlen, "scheme %s: expected socks5, socks4, socks4a, http, https or ss", shown);
    return -1;
  }
  if (strlen(sep + 3) >= sizeof buf) {
    snprintf(err, errlen, "too long");
    return -1;
  }
  strcpy(buf, sep + 3);
  /* The name: after '#' (an encoded one in the credentials is "%23"). */
  char *hash = strchr(buf, '#');
  snprintf(name, sizeof name, "proxy%u", cfg->n_upstreams + 1);
  if (hash != NULL) {
    *hash = '\0';
    if (s5_section_name_check("upstream", hash + 1, err, errlen) != 0) return -1;
    snprintf(name, sizeof name, "%s", hash + 1);
  }
  /* Nothing after the authority but an empty path. */
  char *slash = strchr(buf, '/');
  if (slash != NULL) {
    if (slash[1] != '\0') {
      snprintf(err, errlen, "a path or query after HOST:PORT (a proxy URL has none)");
      return -1;
    }
    *slash = '\0';
  }
  int up = s5_upstream_add(cfg, name, err, errlen);
  if (up < 0) return -1;
  if (set(cfg, up, "type", type, err, errlen) != 0 || set(cfg, up, "tls", tls, err, errlen) != 0 ||
      authority(cfg, up, buf, strcmp(type, "shadowsocks") == 0, err, errlen) != 0) {
    cfg->n_upstreams--;
    return -1;
  }
  return up;
}
