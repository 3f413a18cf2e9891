/* SPDX-License-Identifier: MIT */
/* HTTP CONNECT client messages (see http_connect.h). */
#include "socks5/http_connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "socks5/socks5.h"
#include "ini/sockaddr.h"

/* RFC 4648 base64 of n bytes into out (4 * ceil(n / 3) + 1 bytes). */
static size_t base64(const uint8_t *in, size_t n, char *out) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v =
      (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out[o++] = digits[v >> 18 & 63];
    out[o++] = digits[v >> 12 & 63];
    out[o++] = i + 1 < n ? digits[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? digits[v & 63] : '=';
  }
  out[o] = '\0';
  return o;
}

int s5_http_write_connect(uint8_t *buf, size_t cap, const char *host, const struct sockaddr *dst,
                          uint16_t port, const char *user, const char *pass) {
  char authority[300], auth[720] = "";
  if (host != NULL) {
    size_t n = strnlen(host, 256);
    if (n == 0 || n > 255) return S5_SOCKS5_TOO_LONG;
    snprintf(authority, sizeof authority, "%s:%u", host, (unsigned)port);
  } else {
    char a[INET6_ADDRSTRLEN];
    if (s5_sockaddr_host((const struct sockaddr_storage *)dst, a, sizeof a)[0] == '\0')
      return S5_SOCKS5_BAD_MESSAGE;
    snprintf(authority, sizeof authority, dst->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
             (unsigned)port);
  }
  if (user != NULL && user[0] != '\0') {
    uint8_t cred[512];
    size_t ul = strnlen(user, 256), pl = pass != NULL ? strnlen(pass, 256) : 0;
    if (ul > 255 || pl > 255) return S5_SOCKS5_TOO_LONG;
    memcpy(cred, user, ul);
    cred[ul] = ':';
    if (pl > 0) memcpy(cred + ul + 1, pass, pl);
    memcpy(auth, "Proxy-Authorization: Basic ", 27);
    size_t n = 27 + base64(cred, ul + 1 + pl, auth + 27);
    memcpy(auth + n, "\r\n", 3);
    explicit_bzero(cred, sizeof cred);
  }
  int n = snprintf((char *)buf, cap, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", authority, authority, auth);
  explicit_bzero(auth, sizeof auth); /* buf's copy: the caller's to clear once sent */
  return n < 0 || (size_t)n >= cap ? S5_SOCKS5_TOO_LONG : n;
}

/* The states of the response reader. */
enum {
  ST_STATUS,     /* in the status line */
  ST_LINE_START, /* at the start of a header line (or of the blank line) */
  ST_FIELD,      /* in a header field line */
  ST_FIELD_CR,   /* a CR in a field line: LF must follow */
  ST_END_CR,     /* a CR at a line start: the blank line's LF must follow */
};

void s5_http_reply_init(struct s5_http_reply *r) { memset(r, 0, sizeof *r); }

/* "HTTP/1.x NNN ...": the status, or 0. */
static uint16_t status_of(const char *line) {
  if (strncmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' || line[8] != ' ') return 0;
  const char *d = line + 9;
  if (d[0] < '1' || d[0] > '5' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9') return 0;
  if (d[3] != '\0' && d[3] != ' ') return 0;
  return (uint16_t)((d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0'));
}

/* The status line's byte c; a status once it ended (0 while in it, < 0 if bad). */
static int status_byte(struct s5_http_reply *r, uint8_t c) {
  if (c == '\r') return 0; /* its CR is dropped; the LF ends it */
  if (c == '\n') {
    r->status = status_of(r->line);
    r->state = ST_LINE_START;
    return r->status != 0 ? 0 : S5_SOCKS5_BAD_MESSAGE;
  }
  if (c == 0) return S5_SOCKS5_BAD_MESSAGE;
  if (r->line_len + 1u < sizeof r->line) { /* the rest of a long reason phrase is not kept */
    r->line[r->line_len++] = (char)(c < 0x20 || c == 0x7f ? '?' : c);
    r->line[r->line_len] = '\0';
  }
  /* Not HTTP at all (a SOCKS server's binary reply): at once, not at the timeout. */
  if (r->line_len <= 5 && strncmp(r->line, "HTTP/", r->line_len) != 0) return S5_SOCKS5_BAD_MESSAGE;
  return 0;
}

/* A header line's byte (its start is kept). */
static void field_byte(struct s5_http_reply *r, uint8_t c) {
  if (r->field_len + 1u < sizeof r->field) r->field[r->field_len++] = (char)c;
}

/* A header line ended: a Proxy-Authenticate's scheme (its first token) is
 * added to r->schemes, once, as far as it fits; only token characters, so
 * nothing of the peer's but a word reaches a log line. */
static void field_end(struct s5_http_reply *r) {
  static const char name[] = "proxy-authenticate:";
  static const char token[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
  r->field[r->field_len] = '\0';
  r->field_len = 0;
  if (strncasecmp(r->field, name, sizeof name - 1) != 0) return;
  const char *s = r->field + sizeof name - 1;
  s += strspn(s, " \t");
  size_t n = strspn(s, token), have = strlen(r->schemes);
  if (n == 0) return;
  for (const char *p = r->schemes; *p != '\0'; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 2 : 0))
    if (strncasecmp(p, s, n) == 0 && (p[n] == ',' || p[n] == '\0')) return;
  if (have + (have ? 2 : 0) + n >= sizeof r->schemes) return;
  snprintf(r->schemes + have, sizeof r->schemes - have, "%s%.*s", have ? ", " : "", (int)n, s);
}

/* The blank line: the header of a response ended. */
static int header_end(struct s5_http_reply *r) {
  if (r->status >= 100 && r->status < 200) { /* interim: the next response follows */
    r->status = 0;
    r->line_len = 0;
    r->line[0] = '\0';
    r->schemes[0] = '\0';
    r->state = ST_STATUS;
    return 0;
  }
  if (r->status >= 200 && r->status < 300) return r->status;
  return r->status == 407 ? S5_SOCKS5_AUTH_FAILED : S5_SOCKS5_REFUSED;
}

int s5_http_reply_feed(struct s5_http_reply *r, const uint8_t *buf, size_t len, size_t *used) {
  for (size_t i = 0; i < len; i++) {
    uint8_t c = buf[i];
    *used = i + 1;
    if (++r->seen > S5_HTTP_HEADER_MAX) return S5_SOCKS5_TOO_LONG;
    int rc = 0;
    switch (r->state) {
      case ST_STATUS: rc = status_byte(r, c); break;
      case ST_LINE_START:
        if (c == '\n') rc = header_end(r);
        else if (c == '\r') r->state = ST_END_CR;
        else if (c == 0) rc = S5_SOCKS5_BAD_MESSAGE;
        else r->state = ST_FIELD, field_byte(r, c);
        break;
      case ST_FIELD:
        if (c == '\n') r->state = ST_LINE_START, field_end(r);
        else if (c == '\r') r->state = ST_FIELD_CR;
        else if (c == 0) rc = S5_SOCKS5_BAD_MESSAGE;
        else field_byte(r, c);
        break;
      case ST_FIELD_CR:
        if (c != '\n') rc = S5_SOCKS5_BAD_MESSAGE; /* a bare CR (RFC 9112 section 2.2) */
        r->state = ST_LINE_START;
        field_end(r);
        break;
      case ST_END_CR:
        if (c != '\n') rc = S5_SOCKS5_BAD_MESSAGE;
        else rc = header_end(r);
        break;
      default: rc = S5_SOCKS5_BAD_MESSAGE;
    }
    if (rc != 0) return rc;
  }
  *used = len;
  return S5_SOCKS5_NEED_MORE;
}
