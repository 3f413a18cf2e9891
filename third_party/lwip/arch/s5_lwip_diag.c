/* SPDX-License-Identifier: MIT */
/* LWIP_PLATFORM_DIAG / LWIP_PLATFORM_ASSERT: lwIP's messages go to stderr.
 *
 * Each message is formatted into one buffer and written with one stdio call
 * so that lines from concurrent workers do not interleave mid-line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch/cc.h"

void s5_lwip_diag(const char *fmt, ...) {
  char line[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* lwIP's debug messages carry their own newlines; ours adds none. */
  fputs(line, stderr);
}

void s5_lwip_assert(const char *msg, const char *file, int line) {
  fprintf(stderr, "lwip: assertion \"%s\" failed at %s:%d\n", msg, file, line);
  abort();
}
