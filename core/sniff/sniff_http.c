/* SPDX-License-Identifier: MIT */
/* HTTP/1.x: the Host of a request (RFC 9112 3, RFC 9110 7.2) from the
 * client's first bytes. The request line is checked (a known method, a
 * target, HTTP/1.0 or 1.1), then the header lines up to Host; a request
 * that ends its headers without one, a folded line or a malformed one is
 * NONE. Lines end in CRLF or a bare LF. */
#include <string.h>
#include <strings.h>

#include "sniff/sniff_int.h"

static const char *const methods[] = {"GET ",     "HEAD ",    "POST ",  "PUT ",  "DELETE ",
                                      "OPTIONS ", "CONNECT ", "TRACE ", "PATCH "};

static enum s5_sniff more(size_t len) { return len < S5_SNIFF_HOLD_MAX ? S5_SNIFF_MORE : S5_SNIFF_NONE; }

/* The end of the line starting at p (the index of its LF), or -1 when it
 * has none yet; -2 for a CR not followed by LF. */
static long line_end(const uint8_t *p, size_t len) {
  const uint8_t *lf = memchr(p, '\n', len);
  size_t n = lf != NULL ? (size_t)(lf - p) : len;
  const uint8_t *cr = memchr(p, '\r', n);
  if (cr != NULL && (size_t)(cr - p) != (lf != NULL ? n - 1 : len - 1)) return -2;
  return lf != NULL ? (long)n : -1;
}

static int tchar(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Host's value (OWS trimmed): a name and an optional port. */
static enum s5_sniff host_value(const uint8_t *v, size_t n, char name[S5_SNIFF_NAME_MAX + 1]) {
  while (n > 0 && (v[0] == ' ' || v[0] == '\t')) v++, n--;
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r')) n--;
  if (n == 0 || v[0] == '[') return S5_SNIFF_NONE; /* empty, or an IPv6 literal */
  const uint8_t *colon = memchr(v, ':', n);
  if (colon != NULL) {
    size_t port = n - (size_t)(colon - v) - 1;
    if (port == 0 || port > 5) return S5_SNIFF_NONE;
    for (size_t i = 0; i < port; i++)
      if (colon[1 + i] < '0' || colon[1 + i] > '9') return S5_SNIFF_NONE;
    n = (size_t)(colon - v);
  }
  return s5_sniff_name(v, n, name) ? S5_SNIFF_FOUND : S5_SNIFF_NONE;
}

enum s5_sniff s5_sniff_http(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  if (len == 0) return S5_SNIFF_MORE;
  if (len > S5_SNIFF_HOLD_MAX) len = S5_SNIFF_HOLD_MAX;
  /* The method: a known one and its space, or a prefix of one. */
  size_t at = 0;
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
    size_t m = strlen(methods[i]);
    if (len >= m && memcmp(buf, methods[i], m) == 0) at = m;
  }
  if (at == 0) {
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
      if (len < strlen(methods[i]) && memcmp(buf, methods[i], len) == 0) return more(len);
    return S5_SNIFF_NONE;
  }
  /* The request line: target SP HTTP/1.x */
  long e = line_end(buf + at, len - at);
  if (e == -2) return S5_SNIFF_NONE;
  if (e < 0) {
    /* No controls, no second space inside a target not yet ended. */
    for (size_t i = at; i < len; i++)
      if (buf[i] < 0x20 && buf[i] != '\r') return S5_SNIFF_NONE;
    return more(len);
  }
  size_t n = (size_t)e;
  if (n > 0 && buf[at + n - 1] == '\r') n--;
  static const char ver[] = " HTTP/1.";
  if (n < 1 + sizeof ver || memcmp(buf + at + n - sizeof ver, ver, sizeof ver - 1) != 0 ||
      (buf[at + n - 1] != '0' && buf[at + n - 1] != '1'))
    return S5_SNIFF_NONE;
  for (size_t i = at; i < at + n - sizeof ver; i++)
    if (buf[i] <= 0x20 || buf[i] == 0x7f) return S5_SNIFF_NONE;
  at += (size_t)e + 1;

  /* The header lines, until Host or the empty line. */
  for (;;) {
    if (at == len) return more(len);
    e = line_end(buf + at, len - at);
    if (e == -2) return S5_SNIFF_NONE;
    size_t avail = e < 0 ? len - at : (size_t)e;
    /* The empty line: the headers ended without Host. */
    if (e == 0 || (e == 1 && buf[at] == '\r')) return S5_SNIFF_NONE;
    if (e < 0 && avail == 1 && buf[at] == '\r') return more(len);
    if (buf[at] == ' ' || buf[at] == '\t') return S5_SNIFF_NONE; /* obsolete folding */
    size_t k = 0;
    while (k < avail && tchar(buf[at + k])) k++;
    if (k == avail) return e < 0 ? more(len) : S5_SNIFF_NONE;
    if (k == 0 || buf[at + k] != ':') return S5_SNIFF_NONE;
    if (e < 0) return more(len);
    if (k == 4 && strncasecmp((const char *)buf + at, "host", 4) == 0)
      return host_value(buf + at + k + 1, (size_t)e - k - 1, name);
    at += (size_t)e + 1;
  }
}
