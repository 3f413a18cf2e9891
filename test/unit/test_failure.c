/* SPDX-License-Identifier: MIT */
/* Unit test of the failure limiter (core/base/failure.c) through the real
 * log (core/base/log.c) into a scratch file: the first failure is a line at
 * once, later ones within S5_FAILURE_LOG_MS only counted, then one summary
 * line at the most severe level among them naming the latest; the window's
 * edge exactly; a quiet spell starts over. Times are handed in, so no
 * clock is involved. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/failure.h"
#include "base/log.h"

#include "check.h"

static char path[64];
static long read_off; /* what earlier checks already read */

/* The lines logged since the last call: their number; the last one's level
 * and text (after "main ") into level and text. */
static int new_lines(char *level, size_t llen, char *text, size_t tlen) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int n = 0;

  level[0] = text[0] = '\0';
  if (f == NULL || fseek(f, read_off, SEEK_SET) != 0) {
    CHECK(0, "reading %s: %s", path, strerror(errno));
    if (f != NULL) fclose(f);
    return -1;
  }
  while (fgets(line, sizeof line, f) != NULL) {
    char lv[16] = "";
    const char *who = strstr(line, " main ");
    n++;
    line[strcspn(line, "\n")] = '\0';
    if (sscanf(line, "%*s %15s", lv) == 1) snprintf(level, llen, "%s", lv);
    snprintf(text, tlen, "%s", who != NULL ? who + 6 : line);
  }
  read_off = ftell(f);
  fclose(f);
  return n;
}

/* Exactly one new line, at level, saying text. */
static void expect_line(int line, const char *level, const char *text) {
  char lv[16], got[1024];
  int n = new_lines(lv, sizeof lv, got, sizeof got);
  check(n == 1, __FILE__, line, "%d new log lines, want 1 (last: %s)", n, got);
  check(strcmp(lv, level) == 0, __FILE__, line, "level '%s', want '%s' (%s)", lv, level, got);
  check(strcmp(got, text) == 0, __FILE__, line, "logged '%s', want '%s'", got, text);
}

static void expect_nothing(int line, const char *when) {
  char lv[16], got[1024];
  int n = new_lines(lv, sizeof lv, got, sizeof got);
  check(n == 0, __FILE__, line, "%s: %d new log lines (last: %s), want none", when, n, got);
}

/* The first failure at once, then silence, then the summary. */
static void test_burst(void) {
  struct s5_failures f = {0};

  s5_failures_note(&f, 1000, S5_LOG_WARN, "a: refused");
  expect_line(__LINE__, "warn", "a: refused (further failures: one line per 10 s)");
  s5_failures_note(&f, 2000, S5_LOG_INFO, "b: timed out");
  s5_failures_note(&f, 3000, S5_LOG_ERROR, "c: bad reply");
  s5_failures_note(&f, 4000, S5_LOG_INFO, "d: refused");
  s5_failures_tick(&f, 10999); /* 9999 ms after the line: still quiet */
  expect_nothing(__LINE__, "three failures within the window, tick before its end");
  s5_failures_tick(&f, 11000);
  expect_line(__LINE__, "error", "3 more sessions failed in the last 10 s (latest: d: refused)");
  s5_failures_tick(&f, 30000);
  expect_nothing(__LINE__, "a tick with nothing new");
  /* Quiet for long enough: the next failure is a line of its own again. */
  s5_failures_note(&f, 30000, S5_LOG_INFO, "e: refused");
  expect_line(__LINE__, "info", "e: refused (further failures: one line per 10 s)");
}

/* A failure after the window with some still unlogged: counted with them
 * and the summary goes out at once, at their most severe level. */
static void test_note_flushes(void) {
  struct s5_failures f = {0};

  s5_failures_note(&f, 5000, S5_LOG_INFO, "a");
  expect_line(__LINE__, "info", "a (further failures: one line per 10 s)");
  s5_failures_note(&f, 6000, S5_LOG_WARN, "b");
  expect_nothing(__LINE__, "a failure within the window");
  s5_failures_note(&f, 27000, S5_LOG_INFO, "c");
  expect_line(__LINE__, "warn", "2 more sessions failed in the last 22 s (latest: c)");
  /* The summary resets the level: the next one is at its own. */
  s5_failures_note(&f, 28000, S5_LOG_INFO, "d");
  s5_failures_tick(&f, 37000);
  expect_line(__LINE__, "info", "1 more sessions failed in the last 10 s (latest: d)");
}

/* A long reason is cut, not overrun. */
static void test_long_reason(void) {
  struct s5_failures f = {0};
  char what[600];

  memset(what, 'x', sizeof what - 1);
  what[sizeof what - 1] = '\0';
  s5_failures_note(&f, 1000, S5_LOG_WARN, "first");
  expect_line(__LINE__, "warn", "first (further failures: one line per 10 s)");
  s5_failures_note(&f, 2000, S5_LOG_WARN, what);
  CHECK(strlen(f.last) == sizeof f.last - 1, "latest kept as %zu bytes, want %zu", strlen(f.last),
        sizeof f.last - 1);
  s5_failures_tick(&f, 11000);
  char lv[16], got[1024];
  CHECK(new_lines(lv, sizeof lv, got, sizeof got) == 1, "one summary line for a long reason");
}

int main(void) {
  struct s5_config cfg;
  int fd;

  snprintf(path, sizeof path, "/tmp/s5-test-failure.XXXXXX");
  fd = mkstemp(path);
  if (fd < 0) {
    printf("FAIL mkstemp: %s\n", strerror(errno));
    return 1;
  }
  close(fd);
  s5_config_defaults(&cfg);
  snprintf(cfg.log.file, sizeof cfg.log.file, "%s", path);
  cfg.log.level = S5_LOG_DEBUG;
  CHECK(s5_log_open(&cfg.log) == 0, "opening the log %s", path);
  test_burst();
  test_note_flushes();
  test_long_reason();
  unlink(path);
  return check_done();
}
