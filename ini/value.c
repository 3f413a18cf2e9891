/* SPDX-License-Identifier: MIT */
/* Text-to-value parsers shared by the INI file and the command-line flags, so
 * that "mtu = 70000" and "--mtu 70000" are judged by the same rule and
 * explained with the same words. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ini/internal.h"

/* Values longer than this are cut in messages: enough to recognise them. */
#define SHOW_CHARS 40

void s5_show(char *buf, size_t len, const char *text) {
  size_t n = 0;
  size_t shown;

  if (len < 8) { /* too small for anything useful */
    if (len > 0) buf[0] = '\0';
    return;
  }
  buf[n++] = '"';
  for (shown = 0; text[shown] != '\0' && shown < SHOW_CHARS; shown++) {
    unsigned char c = (unsigned char)text[shown];
    /* Worst case per byte is 4 ("\xNN"), plus "...\"" and the NUL. */
    if (n + 4 + 5 > len) break;
    if (c < 0x20 || c == 0x7f) n += (size_t)snprintf(buf + n, len - n, "\\x%02x", c);
    else if (c == '"' || c == '\\') n += (size_t)snprintf(buf + n, len - n, "\\%c", c);
    else buf[n++] = (char)c;
  }
  if (text[shown] != '\0') {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n++] = '"';
  buf[n] = '\0';
}

/* Accumulates decimal digits, saturating instead of wrapping so that a huge
 * number is reported as out of range rather than as some small value. */
static int digits_value(const char *text, int base, unsigned long long *out) {
  unsigned long long v = 0;
  const char *p = text;

  if (*p == '\0') return -1;
  for (; *p != '\0'; p++) {
    int d;
    if (*p >= '0' && *p <= '9') d = *p - '0';
    else if (base == 16 && *p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
    else if (base == 16 && *p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
    else return -1;
    if (v > (UINT64_MAX - (unsigned)d) / (unsigned)base) v = UINT64_MAX;
    else v = v * (unsigned)base + (unsigned)d;
  }
  *out = v;
  return 0;
}

/* A number reads better unquoted ("70000 is out of range"); a very long one
 * is shown shortened, in quotes, like any other value. */
static const char *plain_number(const char *text, const char *shown) {
  return strlen(text) <= 24 ? text : shown;
}

int s5_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out, char *err,
                  size_t errlen) {
  char shown[S5_SHOW_MAX];
  unsigned long long v;

  if (*text == '\0') {
    snprintf(err, errlen, "empty value (expected a number in %lu..%lu)", min, max);
    return -1;
  }
  s5_show(shown, sizeof shown, text);
  /* "-1" is a number, just not an allowed one: say so rather than "not a
   * number", which would puzzle the reader. */
  if (text[0] == '-' && digits_value(text + 1, 10, &v) == 0) {
    snprintf(err, errlen, "%s is out of range (%lu..%lu)", plain_number(text, shown), min, max);
    return -1;
  }
  if (digits_value(text, 10, &v) != 0) {
    snprintf(err, errlen, "%s is not a number", shown);
    return -1;
  }
  if (v < min || v > max) {
    snprintf(err, errlen, "%s is out of range (%lu..%lu)", plain_number(text, shown), min, max);
    return -1;
  }
  *out = (unsigned long)v;
  return 0;
}

int s5_parse_u32(const char *text, uint32_t *out, char *err, size_t errlen) {
  char shown[S5_SHOW_MAX];
  unsigned long long v;
  int rc;

  /* A firewall mark is often written in hex (iptables prints it so). */
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) rc = digits_value(text + 2, 16, &v);
  else rc = digits_value(text, 10, &v);
  s5_show(shown, sizeof shown, text);
  if (rc != 0) {
    snprintf(err, errlen, "%s is not a number (decimal, or hex with 0x)", shown);
    return -1;
  }
  if (v > UINT32_MAX) {
    snprintf(err, errlen, "%s is out of range (0..4294967295)", plain_number(text, shown));
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

int s5_parse_bool(const char *text, bool *out, char *err, size_t errlen) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  char shown[S5_SHOW_MAX];
  size_t i;

  for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(text, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp(text, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  s5_show(shown, sizeof shown, text);
  snprintf(err, errlen, "%s is not a boolean (true/false, yes/no, on/off, 1/0)", shown);
  return -1;
}

int s5_parse_word(const char *text, const char *const *words, int *out, char *err, size_t errlen) {
  char shown[S5_SHOW_MAX];
  size_t n;
  int i;

  for (i = 0; words[i] != NULL; i++) {
    if (strcasecmp(text, words[i]) == 0) {
      *out = i;
      return 0;
    }
  }
  s5_show(shown, sizeof shown, text);
  n = (size_t)snprintf(err, errlen, "%s is not one of:", shown);
  for (i = 0; words[i] != NULL && n < errlen; i++)
    n += (size_t)snprintf(err + n, errlen - n, "%s %s", i ? "," : "", words[i]);
  return -1;
}

/* The kernel's own rule (dev_valid_name) forbids '/', ':' and blanks; we
 * narrow it to a portable set that needs no quoting in shells or ip(8). */
static bool ifname_char_ok(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

int s5_parse_ifname(const char *text, char *out, size_t outlen, char *err, size_t errlen) {
  char shown[S5_SHOW_MAX];
  size_t len = strlen(text);
  size_t i;

  s5_show(shown, sizeof shown, text);
  if (len == 0) {
    snprintf(err, errlen, "empty (expected 1..15 characters)");
    return -1;
  }
  if (len >= outlen) {
    snprintf(err, errlen, "%s is too long (%zu characters, at most %zu)", shown, len, outlen - 1);
    return -1;
  }
  /* A "tun%d" template would let the kernel pick the name when the first
   * queue is created; every other queue, the routes and the operator need
   * the name in advance, so only exact names are accepted. */
  if (strchr(text, '%') != NULL) {
    snprintf(err, errlen, "%s is a name template; give the exact device name", shown);
    return -1;
  }
  for (i = 0; i < len; i++) {
    if (!ifname_char_ok(text[i])) {
      snprintf(err, errlen, "%s has a character other than letters, digits, '_', '.', '-'", shown);
      return -1;
    }
  }
  if (strcmp(text, ".") == 0 || strcmp(text, "..") == 0) {
    snprintf(err, errlen, "%s is not a valid device name", shown);
    return -1;
  }
  memcpy(out, text, len + 1);
  return 0;
}

static void prefix_set(struct s5_prefix *out, int family, const unsigned char *addr, unsigned len) {
  memset(out, 0, sizeof *out);
  out->family = family;
  memcpy(out->addr, addr, family == AF_INET ? 4 : 16);
  out->len = len;
}

int s5_parse_prefix(const char *text, int family, struct s5_prefix *out, char *err, size_t errlen) {
  const char *name = family == AF_INET ? "IPv4" : "IPv6";
  unsigned long maxlen = family == AF_INET ? 32 : 128;
  char shown[S5_SHOW_MAX];
  char lenmsg[128];
  const char *slash;
  unsigned char addr[16];
  unsigned long len;

  if (*text == '\0') {
    memset(out, 0, sizeof *out);
    return 0;
  }
  s5_show(shown, sizeof shown, text);
  slash = strchr(text, '/');
  /* No silent /32 or /128: the prefix decides which destinations the kernel
   * sends into the device, so it must be written down. */
  if (slash == NULL) {
    snprintf(err, errlen, "%s has no prefix length (write ADDR/LEN, e.g. %s)", shown,
             family == AF_INET ? "198.18.0.1/15" : "fc00::1/64");
    return -1;
  }
  int got = s5_sockaddr_pton(text, (size_t)(slash - text), addr);
  if (got != family) {
    if (got != 0) snprintf(err, errlen, "%s is not an %s address (wrong family)", shown, name);
    else snprintf(err, errlen, "%s is not an %s address", shown, name);
    return -1;
  }
  /* A zero-length prefix would claim every destination. */
  if (s5_parse_uint(slash + 1, 1, maxlen, &len, lenmsg, sizeof lenmsg) != 0) {
    snprintf(err, errlen, "prefix length: %s", lenmsg);
    return -1;
  }
  prefix_set(out, family, addr, (unsigned)len);
  return 0;
}

/* A destination prefix for the route lists: either family, "ADDR/LEN" or a
 * bare address (one host). Host bits must be clear (the kernel would refuse
 * the route), and /0 is refused: to tunnel everything, leave the include
 * list empty; to tunnel nothing, do not use auto-route. */
int s5_parse_route_prefix(const char *text, struct s5_prefix *out, char *err, size_t errlen) {
  char shown[S5_SHOW_MAX];
  unsigned char addr[16];
  const char *slash = strchr(text, '/');
  size_t alen = slash != NULL ? (size_t)(slash - text) : strlen(text);
  s5_show(shown, sizeof shown, text);
  int family = s5_sockaddr_pton(text, alen, addr);
  if (family == 0) {
    snprintf(err, errlen, "%s is not an IPv4 or IPv6 prefix (ADDR/LEN)", shown);
    return -1;
  }
  unsigned long maxlen = family == AF_INET ? 32 : 128, len = maxlen;
  char lenmsg[128];
  if (slash != NULL && s5_parse_uint(slash + 1, 1, maxlen, &len, lenmsg, sizeof lenmsg) != 0) {
    snprintf(err, errlen, "%s: prefix length: %s", shown, lenmsg);
    return -1;
  }
  for (unsigned bit = (unsigned)len; bit < maxlen; bit++) {
    if (addr[bit / 8] & (0x80u >> (bit % 8))) {
      snprintf(err, errlen, "%s has host bits set beyond /%lu", shown, len);
      return -1;
    }
  }
  prefix_set(out, family, addr, (unsigned)len);
  return 0;
}

static bool all_zero(const unsigned char *p, size_t n) {
  while (n > 0 && *p == 0) {
    p++;
    n--;
  }
  return n == 0;
}

int s5_parse_ip(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *sslen, char *err,
                size_t errlen) {
  char shown[S5_SHOW_MAX];
  unsigned char addr[16];
  size_t len = strlen(text);

  s5_show(shown, sizeof shown, text);
  /* Allow "[::1]" too, as written in URLs and in --socks5. */
  if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
    text++;
    len -= 2;
  }
  if (len == 0) {
    snprintf(err, errlen, "empty (expected an IPv4 or IPv6 address)");
    return -1;
  }
  int family = s5_sockaddr_pton(text, len, addr);
  if (family == 0) {
    snprintf(err, errlen,
             "%s is not an IPv4 or IPv6 address (host names are not looked "
             "up: DNS may itself be routed into the tunnel)",
             shown);
    return -1;
  }
  if (all_zero(addr, family == AF_INET ? 4 : 16)) {
    snprintf(err, errlen, "%s is the unspecified address", shown);
    return -1;
  }
  s5_sockaddr_from_raw(addr, family == AF_INET ? 4 : 16, port, ss);
  *sslen = s5_sockaddr_len(ss);
  return 0;
}

/* "ADDR:PORT" or "[V6]:PORT" to listen on. Unlike s5_parse_ip() the
 * unspecified address (0.0.0.0, [::]) is taken: it means every address,
 * which is a choice to make (and the daemon warns about), not a mistake. */
int s5_parse_listen(const char *text, struct sockaddr_storage *ss, char *err, size_t errlen) {
  char shown[S5_SHOW_MAX];
  char portmsg[128];
  unsigned char addr[16];
  const char *colon = strrchr(text, ':');
  const char *host = text;
  size_t hlen;
  unsigned long port;

  s5_show(shown, sizeof shown, text);
  if (colon == NULL || colon == text) {
    snprintf(err, errlen,
             "%s is not ADDR:PORT (e.g. 127.0.0.1:9553 or "
             "[::1]:9553)",
             shown);
    return -1;
  }
  hlen = (size_t)(colon - text);
  if (text[0] == '[') {
    if (hlen < 2 || text[hlen - 1] != ']') {
      snprintf(err, errlen, "%s: no ']' before the port (write [V6]:PORT)", shown);
      return -1;
    }
    host++;
    hlen -= 2;
  } else if (memchr(text, ':', hlen) != NULL) {
    snprintf(err, errlen,
             "%s: an IPv6 address needs brackets, e.g. "
             "[::1]:9553",
             shown);
    return -1;
  }
  int family = s5_sockaddr_pton(host, hlen, addr);
  if (family == 0 || (family == AF_INET && text[0] == '[')) {
    snprintf(err, errlen,
             "%s: not an IPv4 or IPv6 address before the port "
             "(host names are not looked up)",
             shown);
    return -1;
  }
  if (s5_parse_uint(colon + 1, 1, 65535, &port, portmsg, sizeof portmsg) != 0) {
    snprintf(err, errlen, "port: %s", portmsg);
    return -1;
  }
  s5_sockaddr_from_raw(addr, family == AF_INET ? 4 : 16, (uint16_t)port, ss);
  return 0;
}

int s5_parse_text(const char *text, size_t max, char *out, size_t outlen, char *err, size_t errlen) {
  size_t len = strlen(text);
  size_t i;

  if (len > max || len >= outlen) {
    snprintf(err, errlen, "too long (%zu bytes, at most %zu)", len, max < outlen - 1 ? max : outlen - 1);
    return -1;
  }
  /* Control bytes could not be written back by s5_config_print() and are
   * almost always a pasting accident. */
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c < 0x20 || c == 0x7f) {
      snprintf(err, errlen, "contains a control character (byte %zu)", i + 1);
      return -1;
    }
  }
  memcpy(out, text, len + 1);
  return 0;
}

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int s5_b64_key(const char *text, size_t len, uint8_t *out) {
  size_t tlen = strlen(text), n = 0;
  if (len == 0 || tlen != (len + 2) / 3 * 4) return -1;
  size_t pad = len % 3 == 0 ? 0 : 3 - len % 3; /* the '=' the text ends with */
  for (size_t i = 0; i < tlen; i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; j++) {
      int tail = i + 4 == tlen && j >= 4 - pad, d = tail ? 0 : b64_value(text[i + j]);
      if (d < 0 || (tail && text[i + j] != '=')) return -1;
      v = v << 6 | (uint32_t)d;
    }
    for (int s = 16; s >= 0 && n < len; s -= 8) out[n++] = (uint8_t)(v >> s);
    if (i + 4 == tlen && (v & ((1u << (8 * pad)) - 1)) != 0) return -1; /* bits past the key: not canonical */
  }
  return 0;
}

int s5_b64_key_chain(const char *text, size_t len, uint8_t *out, size_t max) {
  char part[256]; /* a password's room (struct s5_upstream_cfg) */
  size_t n = 0;
  for (const char *p = text;; n++) {
    const char *end = strchr(p, ':');
    size_t plen = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n >= max || plen >= sizeof part) return -1;
    memcpy(part, p, plen);
    part[plen] = '\0';
    int bad = s5_b64_key(part, len, out + n * len);
    explicit_bzero(part, sizeof part);
    if (bad != 0) return -1;
    if (end == NULL) return (int)n + 1;
    p = end + 1;
  }
}
