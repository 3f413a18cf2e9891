/* SPDX-License-Identifier: MIT */
/* The unit tests' one assertion: CHECK(cond, fmt, ...) counts a pass, or
 * prints "FAIL line N: message" and counts a failure; a test's main()
 * prints "N passed, M failed" from the two counters and exits non-zero on
 * any failure. */
#ifndef S5_TEST_CHECK_H
#define S5_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...) check((cond), __LINE__, __VA_ARGS__)

static void check(int ok, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void check(int ok, int line, const char *fmt, ...) {
  va_list ap;

  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL line %d: ", line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

#endif
