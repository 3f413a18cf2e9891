/* SPDX-License-Identifier: MIT */
/* A request head parser for the metrics endpoint (see http.h). It reads the
 * head line by line as RFC 9112 writes it, strictly where laxness would
 * only hide a broken client: a line ends with LF (a CR right before it is
 * dropped, a CR anywhere else is refused), the request line is
 * METHOD SP TARGET SP HTTP/1.x, the target is origin-form, a field is
 * NAME ":" VALUE without obsolete line folding, and HTTP/1.1 needs exactly
 * one Host. Every complete line is judged at once, so a bad request is
 * answered without waiting for the rest (or for the deadline). */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "threads/ctl/http.h"

/* RFC 9110 5.6.2 token characters. */
static bool tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static size_t token_len(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && tchar((unsigned char)s[i])) i++;
  return i;
}

/* METHOD SP TARGET SP HTTP/1.x. The method is judged after the form of the
 * whole line, so that a line that is not HTTP at all gets 400, not 405. */
static enum s5_http_result request_line(const char *s, size_t n, bool *http11) {
  size_t m = token_len(s, n);
  if (m == 0 || m == n || s[m] != ' ') return S5_HTTP_BAD_REQUEST;
  size_t t0 = m + 1, t = t0;
  while (t < n && (unsigned char)s[t] > 0x20 && (unsigned char)s[t] < 0x7f) t++;
  if (t == t0 || t == n || s[t] != ' ') return S5_HTTP_BAD_REQUEST;
  const char *v = s + t + 1;
  size_t vlen = n - t - 1;
  /* HTTP/1.2 and later minor versions read as 1.1 (RFC 9110 6.2). */
  if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' || v[7] > '9') return S5_HTTP_BAD_REQUEST;
  *http11 = v[7] != '0';
  if (s[t0] != '/') return S5_HTTP_BAD_REQUEST; /* absolute-, authority- or asterisk-form */
  if (m != 3 || memcmp(s, "GET", 3) != 0) return S5_HTTP_METHOD_NOT_ALLOWED;
  const char *q = memchr(s + t0, '?', t - t0);
  size_t plen = (q != NULL ? (size_t)(q - s) : t) - t0;
  if ((plen == 8 && memcmp(s + t0, "/metrics", 8) == 0) || plen == 1) return S5_HTTP_OK;
  return S5_HTTP_NOT_FOUND;
}

/* NAME ":" OWS VALUE OWS. Returns 1 for a Host field, 0 for another, -1 for
 * a malformed one (no space before the colon, no control bytes but HTAB). */
static int header_line(const char *s, size_t n) {
  size_t i = token_len(s, n);
  if (i == 0 || i == n || s[i] != ':') return -1;
  for (size_t j = i + 1; j < n; j++) {
    unsigned char c = (unsigned char)s[j];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return -1;
  }
  return i == 4 && strncasecmp(s, "host", 4) == 0;
}

enum s5_http_result s5_http_parse(const char *buf, size_t len, size_t cap) {
  if (cap > S5_HTTP_HEAD_MAX) cap = S5_HTTP_HEAD_MAX;
  if (len > cap) len = cap;
  bool first = true, http11 = false;
  int hosts = 0;
  for (size_t pos = 0;;) {
    const char *lf = memchr(buf + pos, '\n', len - pos);
    if (lf == NULL) {
      if (len < cap) return S5_HTTP_NEED_MORE;
      return first ? S5_HTTP_URI_TOO_LONG : S5_HTTP_HEADERS_TOO_LARGE;
    }
    const char *line = buf + pos;
    size_t n = (size_t)(lf - line);
    if (n > 0 && line[n - 1] == '\r') n--;
    pos = (size_t)(lf - buf) + 1;
    if (first) {
      if (n == 0) continue; /* empty lines before the request line are ignored (RFC 9112 2.2) */
      enum s5_http_result r = request_line(line, n, &http11);
      if (r != S5_HTTP_OK) return r;
      first = false;
      continue;
    }
    if (n == 0) return (http11 && hosts != 1) ? S5_HTTP_BAD_REQUEST : S5_HTTP_OK;
    int h = header_line(line, n);
    if (h < 0) return S5_HTTP_BAD_REQUEST;
    hosts += h;
    if (hosts > 1) return S5_HTTP_BAD_REQUEST; /* RFC 9112 3.2: more than one Host */
  }
}

const char *s5_http_reason(enum s5_http_result r) {
  switch (r) {
    case S5_HTTP_OK: return "OK";
    case S5_HTTP_BAD_REQUEST: return "Bad Request";
    case S5_HTTP_NOT_FOUND: return "Not Found";
    case S5_HTTP_METHOD_NOT_ALLOWED: return "Method Not Allowed";
    case S5_HTTP_URI_TOO_LONG: return "URI Too Long";
    case S5_HTTP_HEADERS_TOO_LARGE: return "Request Header Fields Too Large";
    case S5_HTTP_NEED_MORE: break;
  }
  return "Internal Server Error";
}
