/* SPDX-License-Identifier: MIT */
/* Unit test of the log's escaping (core/base/log.c): a peer's bytes (a DNS
 * query name, a proxy's reply text, a session's name) reach log lines
 * through %s; control characters (CR, LF, ESC, NUL-free others, DEL),
 * bytes that are not UTF-8 and UTF-8's C1 controls come out as \xNN, so
 * that no peer can end a line, forge the next one or drive a terminal.
 * Valid UTF-8 (a file name) is kept. Through the real log into a file: one
 * line per call, whatever the text. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#include "check.h"

static void escape(const char *in, const char *want) {
  char out[256];
  size_t n = s5_log_escape(out, sizeof out, in, strlen(in));
  CHECK(n == strlen(want) && strcmp(out, want) == 0, "escape [%s]: got [%s], want [%s]", in, out, want);
}

static void test_escape(void) {
  escape("www.example.com", "www.example.com");
  escape("a\r\nmain error forged", "a\\x0d\\x0amain error forged");
  escape("\x1b[31mred\x7f", "\\x1b[31mred\\x7f");
  escape("tab\there", "tab\\x09here");
  escape(
    "b\xc3\xbc"
    "cher",
    "b\xc3\xbc"
    "cher");                                  /* UTF-8 kept */
  escape("\xe2\x82\xac 5", "\xe2\x82\xac 5"); /* three bytes */
  escape("x\xff\xc3", "x\\xff\\xc3");         /* not UTF-8; cut short */
  escape(
    "\xc2\x9b"
    "2J",
    "\\xc2\\x9b2J");                         /* C1 CSI, UTF-8 encoded */
  escape("\xc0\xaf", "\\xc0\\xaf");          /* overlong */
  escape("\xed\xa0\x80", "\\xed\\xa0\\x80"); /* a surrogate */
  char out[8];
  size_t n = s5_log_escape(out, 7, "ab\ncd", 5);
  CHECK(n == 6 && strcmp(out, "ab\\x0a") == 0, "a short buffer never cuts an escape: [%s] %zu", out, n);
  n = s5_log_escape(out, 4, "ab\ncd", 5);
  CHECK(n == 2 && strcmp(out, "ab") == 0, "no room for the escape: [%s]", out);
}

static void test_lines(void) {
  char path[] = "/tmp/test_log.XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0) return;
  close(fd);
  struct s5_log_cfg cfg = {.level = S5_LOG_DEBUG};
  snprintf(cfg.file, sizeof cfg.file, "%s", path);
  CHECK(s5_log_open(&cfg) == 0, "open %s", path);
  /* As dns.c logs a query's name, and a proxy's status line. */
  s5_debug("dns: type %u for \"%s\": rcode %u, no answer", 1,
           "x\r\n2026-12-05T00:00:00.000 error main forged", 5);
  s5_warn("proxy answered CONNECT with \"%s\"", "HTTP/1.1 403 no\n\x1b]0;title\x07");
  FILE *f = fopen(path, "r");
  char buf[4096];
  size_t len = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
  buf[len] = '\0';
  if (f != NULL) fclose(f);
  unsigned lines = 0;
  for (char *p = buf; *p; p++) lines += *p == '\n';
  CHECK(lines == 2, "two calls, two lines: %u\n%s", lines, buf);
  CHECK(strstr(buf, "x\\x0d\\x0a2026-12-05T00:00:00.000 error main forged\": rcode 5") != NULL,
        "the name escaped: %s", buf);
  CHECK(strstr(buf, "403 no\\x0a\\x1b]0;title\\x07\"") != NULL, "the reason escaped: %s", buf);
  unlink(path);
}

int main(void) {
  test_escape();
  test_lines();
  return check_done();
}
