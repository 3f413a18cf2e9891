/* SPDX-License-Identifier: MIT */
#include "threads/ctl/render.h"

#include <stdarg.h>
#include <stdio.h>

size_t s5_render_put(char *buf, size_t cap, size_t at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0, fmt, ap);
  va_end(ap);
  return at + (n > 0 ? (size_t)n : 0);
}
