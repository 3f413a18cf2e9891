/* SPDX-License-Identifier: MIT */
/* Unit test for core/socks5/socks5.c: exact encoder bytes, parser answers on valid,
 * truncated, refused and malformed replies. Prints one line per failed check
 * and "N passed, M failed" at the end; exits 1 when anything failed. */
#include "socks5/socks5.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Compares an encoder's result with the expected bytes. */
static void check_bytes(int line, const char *what, int got, const uint8_t *buf, const uint8_t *want,
                        size_t wantlen) {
  check(got == (int)wantlen, __FILE__, line, "%s: returned %d, want %zu", what, got, wantlen);
  if (got == (int)wantlen) check(memcmp(buf, want, wantlen) == 0, __FILE__, line, "%s: wrong bytes", what);
}

/* Copies the message to the heap with exactly len bytes, so that the
 * sanitizer catches any read past len. */
static uint8_t *exact_copy(const uint8_t *msg, size_t len) {
  uint8_t *p = malloc(len ? len : 1);

  if (p == NULL) {
    perror("malloc");
    exit(2);
  }
  if (len) memcpy(p, msg, len);
  return p;
}

static int parse_reply_exact(const uint8_t *msg, size_t len, uint8_t *rep) {
  uint8_t *p = exact_copy(msg, len);
  int r = s5_socks5_parse_reply(p, len, rep);

  free(p);
  return r;
}

static int parse_method_exact(const uint8_t *msg, size_t len, int offered_auth) {
  uint8_t *p = exact_copy(msg, len);
  int r = s5_socks5_parse_method(p, len, offered_auth);

  free(p);
  return r;
}

static int parse_auth_exact(const uint8_t *msg, size_t len) {
  uint8_t *p = exact_copy(msg, len);
  int r = s5_socks5_parse_auth(p, len);

  free(p);
  return r;
}

/* ---- encoders ---------------------------------------------------------- */

static void test_greeting(void) {
  static const uint8_t noauth[] = {0x05, 0x01, 0x00};
  static const uint8_t auth[] = {0x05, 0x01, 0x02};
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  int r;

  r = s5_socks5_write_greeting(buf, sizeof buf, 0);
  check_bytes(__LINE__, "greeting no auth", r, buf, noauth, sizeof noauth);
  r = s5_socks5_write_greeting(buf, sizeof buf, 1);
  check_bytes(__LINE__, "greeting auth", r, buf, auth, sizeof auth);
  r = s5_socks5_write_greeting(buf, 3, 1);
  check_bytes(__LINE__, "greeting exact cap", r, buf, auth, sizeof auth);
  r = s5_socks5_write_greeting(buf, 2, 0);
  CHECK(r == S5_SOCKS5_TOO_LONG, "greeting cap 2: %d", r);
}

static void test_auth(void) {
  static const uint8_t want[] = {0x01, 0x04, 'u', 's', 'e', 'r', 0x03, 'p', 'w', 'd'};
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  uint8_t exp[S5_SOCKS5_MAX_MSG];
  char user[300];
  char pass[300];
  int r;

  r = s5_socks5_write_auth(buf, sizeof buf, "user", "pwd");
  check_bytes(__LINE__, "auth", r, buf, want, sizeof want);
  r = s5_socks5_write_auth(buf, sizeof want, "user", "pwd");
  check_bytes(__LINE__, "auth exact cap", r, buf, want, sizeof want);
  r = s5_socks5_write_auth(buf, sizeof want - 1, "user", "pwd");
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth cap short: %d", r);

  /* Longest allowed: 255 + 255, message 513 bytes. */
  memset(user, 'U', 255);
  user[255] = '\0';
  memset(pass, 'P', 255);
  pass[255] = '\0';
  exp[0] = 0x01;
  exp[1] = 255;
  memset(exp + 2, 'U', 255);
  exp[257] = 255;
  memset(exp + 258, 'P', 255);
  r = s5_socks5_write_auth(buf, sizeof buf, user, pass);
  check_bytes(__LINE__, "auth 255/255", r, buf, exp, 513);
  CHECK(513 <= S5_SOCKS5_MAX_MSG, "S5_SOCKS5_MAX_MSG too small for auth");

  /* One byte over, either field. */
  memset(user, 'U', 256);
  user[256] = '\0';
  r = s5_socks5_write_auth(buf, sizeof buf, user, "p");
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth user 256: %d", r);
  r = s5_socks5_write_auth(buf, sizeof buf, "u", user);
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth pass 256: %d", r);
  memset(user, 'U', 299);
  user[299] = '\0';
  r = s5_socks5_write_auth(buf, sizeof buf, user, "p");
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth user 299: %d", r);

  /* Empty fields are not allowed by RFC 1929 (1..255). */
  r = s5_socks5_write_auth(buf, sizeof buf, "", "p");
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth empty user: %d", r);
  r = s5_socks5_write_auth(buf, sizeof buf, "u", "");
  CHECK(r == S5_SOCKS5_TOO_LONG, "auth empty pass: %d", r);
  r = s5_socks5_write_auth(buf, sizeof buf, NULL, "p");
  CHECK(r < 0, "auth NULL user: %d", r);

  /* Short single-byte fields. */
  {
    static const uint8_t one[] = {0x01, 0x01, 'a', 0x01, 'b'};

    r = s5_socks5_write_auth(buf, sizeof buf, "a", "b");
    check_bytes(__LINE__, "auth a/b", r, buf, one, sizeof one);
  }
}

static void test_connect_ipv4(void) {
  static const uint8_t want[] = {0x05, 0x01, 0x00, 0x01, 192, 0, 2, 7, 0x01, 0xBB};
  struct sockaddr_in sin;
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  int r;

  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons(443);
  CHECK(inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr) == 1, "inet_pton v4");
  r = s5_socks5_write_connect(buf, sizeof buf, (const struct sockaddr *)&sin);
  check_bytes(__LINE__, "connect v4", r, buf, want, sizeof want);
  r = s5_socks5_write_connect(buf, sizeof want, (const struct sockaddr *)&sin);
  check_bytes(__LINE__, "connect v4 exact cap", r, buf, want, sizeof want);
  r = s5_socks5_write_connect(buf, sizeof want - 1, (const struct sockaddr *)&sin);
  CHECK(r == S5_SOCKS5_TOO_LONG, "connect v4 short cap: %d", r);

  /* Port byte order: 0x1234 must go out as 12 34. */
  sin.sin_port = htons(0x1234);
  r = s5_socks5_write_connect(buf, sizeof buf, (const struct sockaddr *)&sin);
  CHECK(r == 10 && buf[8] == 0x12 && buf[9] == 0x34, "connect v4 port order");
}

static void test_connect_ipv6(void) {
  static const uint8_t want[] = {0x05, 0x01, 0x00, 0x04, 0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,
                                 0,    0,    0,    0,    0,    0,    0,    0,    0x01, 0x00, 0x50};
  struct sockaddr_in6 sin6;
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  int r;

  memset(&sin6, 0, sizeof sin6);
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(80);
  CHECK(inet_pton(AF_INET6, "2001:db8::1", &sin6.sin6_addr) == 1, "inet_pton v6");
  r = s5_socks5_write_connect(buf, sizeof buf, (const struct sockaddr *)&sin6);
  check_bytes(__LINE__, "connect v6", r, buf, want, sizeof want);
  r = s5_socks5_write_connect(buf, sizeof want, (const struct sockaddr *)&sin6);
  check_bytes(__LINE__, "connect v6 exact cap", r, buf, want, sizeof want);
  r = s5_socks5_write_connect(buf, sizeof want - 1, (const struct sockaddr *)&sin6);
  CHECK(r == S5_SOCKS5_TOO_LONG, "connect v6 short cap: %d", r);
}

static void test_connect_bad_family(void) {
  struct sockaddr_storage ss;
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  int r;

  memset(&ss, 0, sizeof ss);
  ss.ss_family = AF_UNIX;
  r = s5_socks5_write_connect(buf, sizeof buf, (const struct sockaddr *)&ss);
  CHECK(r == S5_SOCKS5_BAD_MESSAGE, "connect AF_UNIX: %d", r);
  ss.ss_family = AF_UNSPEC;
  r = s5_socks5_write_connect(buf, sizeof buf, (const struct sockaddr *)&ss);
  CHECK(r == S5_SOCKS5_BAD_MESSAGE, "connect AF_UNSPEC: %d", r);
  r = s5_socks5_write_connect(buf, sizeof buf, NULL);
  CHECK(r == S5_SOCKS5_BAD_MESSAGE, "connect NULL: %d", r);
}

static void test_connect_name(void) {
  static const uint8_t want[] = {0x05, 0x01, 0x00, 0x03, 11,  'e', 'x', 'a',  'm',
                                 'p',  'l',  'e',  '.',  'c', 'o', 'm', 0x1F, 0x90};
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  uint8_t exp[S5_SOCKS5_MAX_MSG];
  char name[300];
  int r;

  r = s5_socks5_write_connect_name(buf, sizeof buf, "example.com", 8080);
  check_bytes(__LINE__, "connect name", r, buf, want, sizeof want);
  r = s5_socks5_write_connect_name(buf, sizeof want, "example.com", 8080);
  check_bytes(__LINE__, "connect name exact cap", r, buf, want, sizeof want);
  r = s5_socks5_write_connect_name(buf, sizeof want - 1, "example.com", 8080);
  CHECK(r == S5_SOCKS5_TOO_LONG, "connect name short cap: %d", r);

  memset(name, 'a', 255);
  name[255] = '\0';
  memcpy(exp, "\x05\x01\x00\x03\xff", 5);
  memset(exp + 5, 'a', 255);
  exp[260] = 0xFF;
  exp[261] = 0xFE;
  r = s5_socks5_write_connect_name(buf, sizeof buf, name, 0xFFFE);
  check_bytes(__LINE__, "connect name 255", r, buf, exp, 262);

  memset(name, 'a', 256);
  name[256] = '\0';
  r = s5_socks5_write_connect_name(buf, sizeof buf, name, 80);
  CHECK(r == S5_SOCKS5_TOO_LONG, "connect name 256: %d", r);
  r = s5_socks5_write_connect_name(buf, sizeof buf, "", 80);
  CHECK(r == S5_SOCKS5_TOO_LONG, "connect name empty: %d", r);
  r = s5_socks5_write_connect_name(buf, sizeof buf, NULL, 80);
  CHECK(r < 0, "connect name NULL: %d", r);
}

/* ---- parsers ----------------------------------------------------------- */

static void test_parse_method(void) {
  static const uint8_t none[] = {0x05, 0x00};
  static const uint8_t userpass[] = {0x05, 0x02};
  static const uint8_t rejected[] = {0x05, 0xFF};
  static const uint8_t gssapi[] = {0x05, 0x01};
  static const uint8_t v4[] = {0x04, 0x00};
  int r;

  r = parse_method_exact(none, 2, 0);
  CHECK(r == 2, "method none/none: %d", r);
  r = parse_method_exact(userpass, 2, 1);
  CHECK(r == 2, "method userpass/userpass: %d", r);
  /* Longer buffer: only the 2 reply bytes are consumed. */
  {
    static const uint8_t more[] = {0x05, 0x00, 0x05, 0x00, 0x00, 0x01};

    r = parse_method_exact(more, sizeof more, 0);
    CHECK(r == 2, "method with trailing bytes: %d", r);
  }

  r = parse_method_exact(rejected, 2, 0);
  CHECK(r == S5_SOCKS5_NO_METHOD, "method 0xFF no auth: %d", r);
  r = parse_method_exact(rejected, 2, 1);
  CHECK(r == S5_SOCKS5_NO_METHOD, "method 0xFF auth: %d", r);
  r = parse_method_exact(userpass, 2, 0);
  CHECK(r == S5_SOCKS5_NO_METHOD, "method userpass not offered: %d", r);
  r = parse_method_exact(none, 2, 1);
  CHECK(r == S5_SOCKS5_NO_METHOD, "method none not offered: %d", r);
  r = parse_method_exact(gssapi, 2, 1);
  CHECK(r == S5_SOCKS5_NO_METHOD, "method gssapi not offered: %d", r);

  r = parse_method_exact(none, 0, 0);
  CHECK(r == S5_SOCKS5_NEED_MORE, "method len 0: %d", r);
  r = parse_method_exact(none, 1, 0);
  CHECK(r == S5_SOCKS5_NEED_MORE, "method len 1: %d", r);
  r = parse_method_exact(v4, 2, 0);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "method ver 4: %d", r);
  r = parse_method_exact(v4, 1, 0);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "method ver 4 len 1: %d", r);
}

static void test_parse_auth(void) {
  static const uint8_t ok[] = {0x01, 0x00};
  static const uint8_t denied[] = {0x01, 0x01};
  static const uint8_t denied_ff[] = {0x01, 0xFF};
  static const uint8_t v5[] = {0x05, 0x00};
  int r;

  r = parse_auth_exact(ok, 2);
  CHECK(r == 2, "auth ok: %d", r);
  r = parse_auth_exact(ok, 0);
  CHECK(r == S5_SOCKS5_NEED_MORE, "auth len 0: %d", r);
  r = parse_auth_exact(ok, 1);
  CHECK(r == S5_SOCKS5_NEED_MORE, "auth len 1: %d", r);
  r = parse_auth_exact(denied, 2);
  CHECK(r == S5_SOCKS5_AUTH_FAILED, "auth status 1: %d", r);
  r = parse_auth_exact(denied_ff, 2);
  CHECK(r == S5_SOCKS5_AUTH_FAILED, "auth status 0xFF: %d", r);
  /* Servers that answer with the SOCKS version are wrong: RFC 1929 VER is 1. */
  r = parse_auth_exact(v5, 2);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "auth ver 5: %d", r);
  r = parse_auth_exact(v5, 1);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "auth ver 5 len 1: %d", r);
}

/* Checks that msg parses to its full length and that every proper prefix
 * asks for more. */
static void check_valid_reply(int line, const char *what, const uint8_t *msg, size_t len) {
  uint8_t rep = 0xAA;
  size_t i;
  int r;

  r = parse_reply_exact(msg, len, &rep);
  check(r == (int)len, __FILE__, line, "%s: returned %d, want %zu", what, r, len);
  for (i = 0; i < len; i++) {
    r = parse_reply_exact(msg, i, &rep);
    check(r == S5_SOCKS5_NEED_MORE, __FILE__, line, "%s: prefix %zu returned %d", what, i, r);
  }
}

static void test_parse_reply_valid(void) {
  static const uint8_t v4[] = {0x05, 0x00, 0x00, 0x01, 10, 0, 0, 1, 0x04, 0x38};
  static const uint8_t v6[] = {0x05, 0x00, 0x00, 0x04, 0xfe, 0x80, 0, 0, 0,    0,    0,
                               0,    0,    0,    0,    0,    0,    0, 0, 0x01, 0x00, 0x50};
  static const uint8_t name[] = {0x05, 0x00, 0x00, 0x03, 5, 'p', 'r', 'o', 'x', 'y', 0x04, 0x38};
  static const uint8_t name1[] = {0x05, 0x00, 0x00, 0x03, 1, 'x', 0x00, 0x00};
  static const uint8_t rsv[] = {0x05, 0x00, 0x7F, 0x01, 0, 0, 0, 0, 0, 0};
  uint8_t name255[4 + 1 + 255 + 2];
  uint8_t more[sizeof v4 + 5];
  uint8_t rep = 0xAA;
  int r;

  check_valid_reply(__LINE__, "reply v4", v4, sizeof v4);
  check_valid_reply(__LINE__, "reply v6", v6, sizeof v6);
  check_valid_reply(__LINE__, "reply name", name, sizeof name);
  check_valid_reply(__LINE__, "reply name len 1", name1, sizeof name1);

  memcpy(name255, "\x05\x00\x00\x03\xff", 5);
  memset(name255 + 5, 'n', 255);
  name255[260] = 0x01;
  name255[261] = 0x02;
  check_valid_reply(__LINE__, "reply name 255", name255, sizeof name255);
  CHECK(sizeof name255 <= S5_SOCKS5_MAX_MSG, "S5_SOCKS5_MAX_MSG too small for reply");

  /* RSV is accepted whatever it holds (see socks5.c). */
  check_valid_reply(__LINE__, "reply rsv 0x7f", rsv, sizeof rsv);

  /* Data following the reply (early payload from the target) is not eaten. */
  memcpy(more, v4, sizeof v4);
  memcpy(more + sizeof v4, "HELLO", 5);
  r = parse_reply_exact(more, sizeof more, &rep);
  CHECK(r == (int)sizeof v4, "reply with trailing data: %d", r);

  /* rep may be NULL. */
  r = parse_reply_exact(v4, sizeof v4, NULL);
  CHECK(r == (int)sizeof v4, "reply rep NULL: %d", r);
}

static void test_parse_reply_refused(void) {
  uint8_t msg[] = {0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
  uint8_t name[] = {0x05, 0x00, 0x00, 0x03, 4, 'h', 'o', 's', 't', 0, 0};
  uint8_t rep;
  unsigned code;
  size_t len;
  int r;

  for (code = 1; code <= 0xFF; code++) {
    msg[1] = (uint8_t)code;
    /* Refusal is known from the REP byte on: any length >= 2. */
    for (len = 2; len <= sizeof msg; len++) {
      rep = 0;
      r = parse_reply_exact(msg, len, &rep);
      CHECK(r == S5_SOCKS5_REFUSED && rep == code, "reply REP %u len %zu: returned %d rep %u", code, len, r,
            rep);
    }
    r = parse_reply_exact(msg, 1, &rep);
    CHECK(r == S5_SOCKS5_NEED_MORE, "reply REP %u len 1: %d", code, r);
    name[1] = (uint8_t)code;
    rep = 0;
    r = parse_reply_exact(name, sizeof name, &rep);
    CHECK(r == S5_SOCKS5_REFUSED && rep == code, "reply name REP %u: %d", code, r);
  }
  r = parse_reply_exact(msg, sizeof msg, NULL);
  CHECK(r == S5_SOCKS5_REFUSED, "reply refused rep NULL: %d", r);
}

static void test_parse_reply_malformed(void) {
  static const uint8_t v4ver[] = {0x04, 0x5A, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
  static const uint8_t http[] = "HTTP/1.1 400 Bad Request\r\n";
  static const uint8_t zero_name[] = {0x05, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00};
  uint8_t msg[] = {0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
  uint8_t rep;
  unsigned atyp;
  int r;

  r = parse_reply_exact(v4ver, sizeof v4ver, &rep);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "reply SOCKS4 version: %d", r);
  r = parse_reply_exact(v4ver, 1, &rep);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "reply SOCKS4 version len 1: %d", r);
  r = parse_reply_exact(http, sizeof http - 1, &rep);
  CHECK(r == S5_SOCKS5_BAD_VERSION, "reply HTTP: %d", r);

  for (atyp = 0; atyp <= 0xFF; atyp++) {
    if (atyp == 1 || atyp == 3 || atyp == 4) continue;
    msg[3] = (uint8_t)atyp;
    r = parse_reply_exact(msg, 4, &rep);
    CHECK(r == S5_SOCKS5_BAD_MESSAGE, "reply ATYP %u len 4: %d", atyp, r);
    r = parse_reply_exact(msg, sizeof msg, &rep);
    CHECK(r == S5_SOCKS5_BAD_MESSAGE, "reply ATYP %u: %d", atyp, r);
  }

  r = parse_reply_exact(zero_name, 5, &rep);
  CHECK(r == S5_SOCKS5_BAD_MESSAGE, "reply name len 0 (prefix): %d", r);
  r = parse_reply_exact(zero_name, sizeof zero_name, &rep);
  CHECK(r == S5_SOCKS5_BAD_MESSAGE, "reply name len 0: %d", r);
}

/* Feeds every 1-, 2- and 3-byte sequence and a pseudo-random stream to the
 * parsers under the sanitizer: they must return a defined value and never
 * claim more bytes than they were given. */
static void test_parse_any_bytes(void) {
  uint8_t buf[S5_SOCKS5_MAX_MSG];
  uint32_t seed = 12345;
  unsigned a, b, c;
  size_t len, i;
  uint8_t rep;
  int bad = 0;
  int r;

  for (a = 0; a < 256; a++)
    for (b = 0; b < 256; b++)
      for (c = 0; c < 256; c += 17) {
        buf[0] = (uint8_t)a;
        buf[1] = (uint8_t)b;
        buf[2] = (uint8_t)c;
        for (len = 0; len <= 3; len++) {
          r = parse_reply_exact(buf, len, &rep);
          bad += r > (int)len || r == 0 || r < S5_SOCKS5_TOO_LONG;
          r = parse_method_exact(buf, len, (int)(c & 1));
          bad += r > (int)len || r == 0 || r < S5_SOCKS5_TOO_LONG;
          r = parse_auth_exact(buf, len);
          bad += r > (int)len || r == 0 || r < S5_SOCKS5_TOO_LONG;
        }
      }
  for (i = 0; i < 20000; i++) {
    size_t j;

    len = i % 40;
    for (j = 0; j < len; j++) {
      seed = seed * 1103515245u + 12345u;
      buf[j] = (uint8_t)(seed >> 16);
    }
    /* Bias toward the interesting start: VER 5, REP 0. */
    if (len > 0 && (i & 1)) buf[0] = 0x05;
    if (len > 1 && (i & 2)) buf[1] = 0x00;
    if (len > 3 && (i & 4)) buf[3] = (uint8_t)(1 + (i >> 3) % 4);
    r = parse_reply_exact(buf, len, &rep);
    bad += r > (int)len || r == 0 || r < S5_SOCKS5_TOO_LONG;
  }
  CHECK(bad == 0, "parsers on arbitrary bytes: %d bad results", bad);
}

static void test_strings(void) {
  static const char *const want[] = {
    NULL,
    "general SOCKS server failure",
    "connection not allowed by ruleset",
    "network unreachable",
    "host unreachable",
    "connection refused",
    "TTL expired",
    "command not supported",
    "address type not supported",
  };
  unsigned i;
  int s;

  for (i = 1; i <= 8; i++)
    CHECK(strcmp(s5_socks5_strrep((uint8_t)i), want[i]) == 0, "strrep %u: \"%s\"", i,
          s5_socks5_strrep((uint8_t)i));
  for (i = 9; i <= 0xFF; i++)
    CHECK(strcmp(s5_socks5_strrep((uint8_t)i), "unknown") == 0, "strrep %u: \"%s\"", i,
          s5_socks5_strrep((uint8_t)i));
  CHECK(s5_socks5_strrep(0) != NULL, "strrep 0 NULL");
  for (s = S5_SOCKS5_TOO_LONG - 2; s <= 2; s++)
    CHECK(s5_socks5_strerror(s) != NULL && s5_socks5_strerror(s)[0] != '\0', "strerror %d", s);
  CHECK(strcmp(s5_socks5_strerror(S5_SOCKS5_AUTH_FAILED), s5_socks5_strerror(S5_SOCKS5_REFUSED)) != 0,
        "strerror texts differ");
}

int main(void) {
  test_greeting();
  test_auth();
  test_connect_ipv4();
  test_connect_ipv6();
  test_connect_bad_family();
  test_connect_name();
  test_parse_method();
  test_parse_auth();
  test_parse_reply_valid();
  test_parse_reply_refused();
  test_parse_reply_malformed();
  test_parse_any_bytes();
  test_strings();
  return check_done();
}
