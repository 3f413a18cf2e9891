/* SPDX-License-Identifier: MIT */
/* The messages of the other upstream types, pure functions: the HTTP
 * CONNECT request (IPv4, IPv6 in brackets, a name, Basic credentials) and
 * its response read as a stream (2xx with the tunnel's first bytes after
 * it, 1xx skipped, 407 and 403 with their status line, a header past the
 * bound, not HTTP at all, a bare CR, bytes fed one at a time); the SOCKS4
 * and 4a requests and the reply; the request written for each type. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "socks5/http_connect.h"
#include "socks5/socks4.h"
#include "socks5/socks5.h"
#include "socks5/upstream.h"

static struct sockaddr_storage addr(const char *ip, uint16_t port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
  } else {
    CHECK(inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1, "address %s", ip);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
  }
  return ss;
}

static void test_http_request(void) {
  uint8_t buf[S5_HTTP_REQUEST_MAX + 1];
  struct sockaddr_storage v4 = addr("192.0.2.7", 443), v6 = addr("2001:db8::7", 8443);
  int n = s5_http_write_connect(buf, sizeof buf, NULL, (struct sockaddr *)&v4, 443, NULL, NULL);
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strcmp((char *)buf, "CONNECT 192.0.2.7:443 HTTP/1.1\r\nHost: 192.0.2.7:443\r\n\r\n") == 0,
        "IPv4: [%s]", buf);
  n = s5_http_write_connect(buf, sizeof buf, NULL, (struct sockaddr *)&v6, 8443, "", "");
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 &&
          strcmp((char *)buf, "CONNECT [2001:db8::7]:8443 HTTP/1.1\r\nHost: [2001:db8::7]:8443\r\n\r\n") == 0,
        "IPv6 in brackets: [%s]", buf);
  /* RFC 7617's example credentials. */
  n = s5_http_write_connect(buf, sizeof buf, "example.org", NULL, 80, "Aladdin", "open sesame");
  buf[n > 0 ? n : 0] = 0;
  CHECK(n > 0 && strcmp((char *)buf,
                        "CONNECT example.org:80 HTTP/1.1\r\nHost: example.org:80\r\n"
                        "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n") == 0,
        "a name with Basic: [%s]", buf);
  /* The longest request fits the bound. */
  char name[256], user[256], pass[256];
  memset(name, 'n', 255), name[255] = 0;
  memset(user, 'u', 255), user[255] = 0;
  memset(pass, 'p', 255), pass[255] = 0;
  n = s5_http_write_connect(buf, S5_HTTP_REQUEST_MAX, name, NULL, 65535, user, pass);
  CHECK(n > 0 && n < S5_HTTP_REQUEST_MAX, "255-byte name, user and password: %d bytes", n);
  CHECK(s5_http_write_connect(buf, 40, name, NULL, 80, NULL, NULL) == S5_SOCKS5_TOO_LONG, "small buffer");
  CHECK(s5_http_write_connect(buf, sizeof buf, "", NULL, 80, NULL, NULL) == S5_SOCKS5_TOO_LONG, "empty name");
}

/* Feeds text (len bytes) in pieces of step bytes; returns the final answer
 * and where the header ended (bytes taken in total). */
static int feed(struct s5_http_reply *r, const char *text, size_t len, size_t step, size_t *taken) {
  s5_http_reply_init(r);
  *taken = 0;
  for (size_t at = 0; at < len;) {
    size_t n = len - at < step ? len - at : step, used = 0;
    int rc = s5_http_reply_feed(r, (const uint8_t *)text + at, n, &used);
    CHECK(used <= n, "used %zu of %zu", used, n);
    *taken += used;
    at += used;
    if (rc != S5_SOCKS5_NEED_MORE) return rc;
  }
  return S5_SOCKS5_NEED_MORE;
}

static void test_http_reply(void) {
  struct s5_http_reply r;
  size_t taken;
  static const char ok[] = "HTTP/1.1 200 Connection established\r\nVia: 1.1 squid\r\n\r\nSSH-2.0-x\r\n";
  for (size_t step = 1; step <= sizeof ok; step *= 3) {
    int rc = feed(&r, ok, sizeof ok - 1, step, &taken);
    CHECK(rc == 200 && taken == strlen(ok) - strlen("SSH-2.0-x\r\n"),
          "200 in pieces of %zu: rc %d, header %zu bytes", step, rc, taken);
  }
  CHECK(strcmp(r.line, "HTTP/1.1 200 Connection established") == 0, "status line kept: [%s]", r.line);
  static const char interim[] =
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
    "HTTP/1.0 204 Fine\n\nrest";
  CHECK(feed(&r, interim, sizeof interim - 1, 7, &taken) == 204 && taken == sizeof interim - 1 - 4,
        "1xx skipped, LF-only lines, HTTP/1.0: taken %zu", taken);
  static const char auth[] =
    "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n"
    "Content-Length: 5\r\n\r\nbody!";
  CHECK(feed(&r, auth, sizeof auth - 1, 100, &taken) == S5_SOCKS5_AUTH_FAILED &&
          strcmp(r.line, "HTTP/1.1 407 Proxy Authentication Required") == 0 && r.status == 407,
        "407: [%s]", r.line);
  static const char forbidden[] = "HTTP/1.1 403 Forbidden\r\n\r\n";
  CHECK(feed(&r, forbidden, sizeof forbidden - 1, 2, &taken) == S5_SOCKS5_REFUSED && r.status == 403,
        "403 refused");
  CHECK(feed(&r, "SSH-2.0", 7, 1, &taken) == S5_SOCKS5_BAD_MESSAGE && taken == 1,
        "not HTTP: at the first byte");
  CHECK(feed(&r, "\x05\x00", 2, 2, &taken) == S5_SOCKS5_BAD_MESSAGE, "a SOCKS5 reply");
  CHECK(feed(&r, "HTTP/1.1 2000 OK\r\n", 18, 4, &taken) == S5_SOCKS5_BAD_MESSAGE, "four digits");
  CHECK(feed(&r, "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", 27, 1, &taken) == S5_SOCKS5_BAD_MESSAGE, "bare CR");
  CHECK(feed(&r, "HTTP/1.1 200 OK\r\n\r", 18, 1, &taken) == S5_SOCKS5_NEED_MORE, "no final LF: waits");
  /* An endless header: refused at the bound, whatever the pieces. */
  size_t big = S5_HTTP_HEADER_MAX + 100;
  char *endless = malloc(big);
  memcpy(endless, "HTTP/1.1 200 OK\r\nX: ", 20);
  memset(endless + 20, 'x', big - 20);
  CHECK(feed(&r, endless, big, 1000, &taken) == S5_SOCKS5_TOO_LONG && taken == S5_HTTP_HEADER_MAX + 1,
        "endless header: at %zu", taken);
  /* Many 1xx count toward the bound too. */
  for (size_t i = 0; i + 25 < big; i += 25) memcpy(endless + i, "HTTP/1.1 100 Continue\r\n\r\n", 25);
  CHECK(feed(&r, endless, big - big % 25, 512, &taken) == S5_SOCKS5_TOO_LONG, "endless 1xx");
  free(endless);
}

/* A 407's words: the schemes the proxy offered (its Proxy-Authenticate
 * headers) and what to do, with and without a username. */
static void test_http_407(void) {
  struct s5_http_reply r;
  struct s5_upstream_cfg up;
  char why[512];
  size_t taken;
  memset(&up, 0, sizeof up);
  up.type = S5_UPSTREAM_HTTP;
  static const char digest[] =
    "HTTP/1.1 407 Proxy Authentication Required\r\n"
    "Proxy-Authenticate: Digest realm=\"proxy\", nonce=\"abc\", qop=\"auth\"\r\n"
    "proxy-authenticate:Negotiate\r\nProxy-Authenticate: Digest realm=\"other\"\r\nVia: x\r\n\r\n";
  CHECK(feed(&r, digest, sizeof digest - 1, 5, &taken) == S5_SOCKS5_AUTH_FAILED &&
          strcmp(r.schemes, "Digest, Negotiate") == 0,
        "schemes offered: [%s]", r.schemes);
  s5_upstream_why(&up, "CONNECT a.example:443", "", S5_SOCKS5_AUTH_FAILED, 0, &r, why, sizeof why);
  CHECK(strstr(why, "Digest, Negotiate") != NULL && strstr(why, "not supported") != NULL &&
          strstr(why, "Basic") != NULL && strstr(why, "check username") == NULL,
        "Digest without credentials: [%s]", why);
  snprintf(up.username, sizeof up.username, "alice");
  s5_upstream_why(&up, "CONNECT a.example:443", "", S5_SOCKS5_AUTH_FAILED, 0, &r, why, sizeof why);
  CHECK(strstr(why, "not supported") != NULL && strstr(why, "check username") == NULL,
        "Digest with credentials: [%s]", why);
  static const char basic[] =
    "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\n\r\n";
  CHECK(
    feed(&r, basic, sizeof basic - 1, 1, &taken) == S5_SOCKS5_AUTH_FAILED && strcmp(r.schemes, "Basic") == 0,
    "Basic: [%s]", r.schemes);
  s5_upstream_why(&up, "CONNECT a.example:443", "", S5_SOCKS5_AUTH_FAILED, 0, &r, why, sizeof why);
  CHECK(strstr(why, "check username and password") != NULL, "Basic with credentials: [%s]", why);
  up.username[0] = '\0';
  s5_upstream_why(&up, "CONNECT a.example:443", "", S5_SOCKS5_AUTH_FAILED, 0, &r, why, sizeof why);
  CHECK(strstr(why, "set username and password") != NULL && strstr(why, "check") == NULL,
        "Basic without credentials: [%s]", why);
  static const char none[] = "HTTP/1.1 407 Who are you\r\n\r\n";
  CHECK(feed(&r, none, sizeof none - 1, 3, &taken) == S5_SOCKS5_AUTH_FAILED && r.schemes[0] == '\0',
        "no scheme: [%s]", r.schemes);
  s5_upstream_why(&up, "CONNECT a.example:443", "", S5_SOCKS5_AUTH_FAILED, 0, &r, why, sizeof why);
  CHECK(strstr(why, "offered no scheme") != NULL, "407 without Proxy-Authenticate: [%s]", why);
}

static void test_socks4(void) {
  uint8_t buf[600];
  struct sockaddr_storage v4 = addr("192.0.2.9", 80), v6 = addr("2001:db8::9", 80);
  int n = s5_socks4_write_connect(buf, sizeof buf, (struct sockaddr *)&v4, "alice");
  CHECK(n == 14 && memcmp(buf,
                          "\x04\x01\x00\x50\xc0\x00\x02\x09"
                          "alice\0",
                          14) == 0,
        "SOCKS4: %d", n);
  n = s5_socks4_write_connect_name(buf, sizeof buf, "example.org", 443, "");
  CHECK(n == 8 + 1 + 12 && memcmp(buf, "\x04\x01\x01\xbb\x00\x00\x00\x01\0example.org\0", 21) == 0,
        "SOCKS4a: %d", n);
  CHECK(s5_socks4_write_connect(buf, sizeof buf, (struct sockaddr *)&v6, "") == S5_SOCKS5_BAD_MESSAGE,
        "IPv6");
  uint8_t cd = 0;
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x00\x5a\x00\x00\x00\x00\x00\x00more", 12, &cd) == 8,
        "granted");
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x00\x5a\x00", 3, &cd) == S5_SOCKS5_NEED_MORE, "need more");
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x00\x5b", 2, &cd) == S5_SOCKS5_REFUSED && cd == 91, "91");
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x00\x5c", 2, &cd) == S5_SOCKS5_AUTH_FAILED && cd == 92,
        "92");
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x05\x00", 2, &cd) == S5_SOCKS5_BAD_VERSION,
        "a SOCKS5 reply");
  CHECK(s5_socks4_parse_reply((const uint8_t *)"\x00\x01", 2, &cd) == S5_SOCKS5_BAD_MESSAGE, "unknown CD");
}

static void test_by_type(void) {
  struct s5_upstream_cfg up;
  memset(&up, 0, sizeof up);
  struct s5_target t;
  memset(&t, 0, sizeof t);
  t.addr = addr("2001:db8::1", 22);
  uint8_t buf[S5_HTTP_REQUEST_MAX];
  const char *why = NULL;
  up.type = S5_UPSTREAM_SOCKS4;
  CHECK(s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why) < 0 && why != NULL &&
          strstr(why, "IPv6") != NULL,
        "SOCKS4 and IPv6: %s", why ? why : "");
  snprintf(t.name, sizeof t.name, "mapped.test");
  CHECK(s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why) == 8 + 1 + 12 && buf[7] == 1,
        "SOCKS4 and a mapped name: 4a");
  up.type = S5_UPSTREAM_HTTP;
  int n = s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why);
  CHECK(n > 0 && memcmp(buf, "CONNECT mapped.test:22 ", 23) == 0, "HTTP and a mapped name: sent as the name");
  up.type = S5_UPSTREAM_SOCKS5;
  n = s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why);
  CHECK(n == 4 + 1 + 11 + 2 && buf[3] == 3, "SOCKS5 and a mapped name: ATYP 3");
}

/* Which refusals say the proxy is broken (they count toward down and move
 * the session on) and which are the destination's own answer. */
static void test_broken(void) {
  struct s5_upstream_cfg up;
  memset(&up, 0, sizeof up);
  up.type = S5_UPSTREAM_HTTP;
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 403) == S5_BROKEN_EACH, "HTTP 403: each");
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 500) == S5_BROKEN_DISTINCT &&
          s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 503) == S5_BROKEN_DISTINCT,
        "HTTP 500, 503: by destination");
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 502) == 0 &&
          s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 504) == 0 &&
          s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0, 404) == 0,
        "HTTP 502, 504, 404: the destination's");
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_AUTH_FAILED, 0, 407) == 0,
        "407 is authentication, counted as such");
  up.type = S5_UPSTREAM_SOCKS5;
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 1, 0) == S5_BROKEN_DISTINCT, "SOCKS5 general failure");
  for (uint8_t rep = 2; rep <= 8; rep++)
    CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, rep, 0) == 0, "SOCKS5 REP %u: the destination's", rep);
  up.type = S5_UPSTREAM_SOCKS4;
  CHECK(s5_upstream_broken(&up, S5_SOCKS5_REFUSED, 0x5b, 0) == 0, "SOCKS4 0x5B: the destination's");
}

int main(void) {
  test_http_request();
  test_http_reply();
  test_http_407();
  test_socks4();
  test_by_type();
  test_broken();
  return check_done();
}
