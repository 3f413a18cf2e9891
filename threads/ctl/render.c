/* SPDX-License-Identifier: MIT */
#include "threads/ctl/render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t s5_render_put(char *buf, size_t cap, size_t at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0, fmt, ap);
  va_end(ap);
  return at + (n > 0 ? (size_t)n : 0);
}

static const struct s5_config *render_cfg;

void s5_render_config(const struct s5_config *cfg) { render_cfg = cfg; }

const struct s5_config *s5_render_cfg(void) { return render_cfg; }

uint64_t s5_render_json_num(const char *p, const char *end, const char *name) {
  char key[48];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *q = strstr(p, key);
  return q != NULL && q < end ? strtoull(q + strlen(key), NULL, 10) : 0;
}

void s5_render_json_str(const char *p, const char *end, const char *name, char *out, size_t cap) {
  char key[48];
  snprintf(key, sizeof key, "\"%s\":\"", name);
  const char *q = strstr(p, key);
  out[0] = '\0';
  if (q == NULL || q >= end) return;
  q += strlen(key);
  const char *e = strchr(q, '"');
  if (e != NULL) snprintf(out, cap, "%.*s", (int)(e - q), q);
}
