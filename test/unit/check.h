/* SPDX-License-Identifier: MIT */
/* The unit tests' one harness. CHECK(cond, fmt, ...) counts a pass, or
 * prints "FAIL file.c:N: message" and counts a failure; main() ends with
 * `return check_done();`, which prints "N passed, M failed" and gives the
 * exit status (1 on any failure). Tests that cannot run here (no root, no
 * /dev/net/tun) exit CHECK_SKIP (ctest SKIP_RETURN_CODE, see
 * s5_unit_test() in CMakeLists.txt).
 *
 * Threads may CHECK at once: the counters are atomic, each line is printed
 * with one call, and check_who (per thread) names the thread in its lines. */
#ifndef S5_TEST_CHECK_H
#define S5_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CHECK_SKIP 77

static _Atomic int passed, failed;
static _Thread_local const char *check_who; /* e.g. "thread 2"; NULL: nothing */

#define CHECK(cond, ...) check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static void check(int ok, const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

static void check(int ok, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  char msg[512];
  const char *base = strrchr(file, '/');

  if (ok) {
    passed++;
    return;
  }
  failed++;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("%s%sFAIL %s:%d: %s\n", check_who != NULL ? check_who : "", check_who != NULL ? ": " : "",
         base != NULL ? base + 1 : file, line, msg);
  fflush(stdout);
}

/* The last line of every test, and its exit status. */
static inline int check_done(void) {
  int p = passed, f = failed;
  printf("%d passed, %d failed\n", p, f);
  return f == 0 ? 0 : 1;
}

#endif
