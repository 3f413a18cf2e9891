/* SPDX-License-Identifier: MIT */
/* Fuzz target: the HTTP Host parser (core/sniff/sniff_http.c), fed what a
 * client's first TCP bytes could be (the whole input).
 *
 * Promises checked: MORE only below S5_SNIFF_HOLD_MAX; a name found is a
 * host name as sniff.h says; every prefix is MORE or the whole's answer
 * with the same name; FOUND only for input that starts with a method and
 * has a Host header line, whose value holds the name. */
#include <strings.h>

#include "fuzz_sniff.h"

static int has_host_line(const uint8_t *p, size_t len, const char *name) {
  for (size_t i = 0; i + 6 < len; i++) {
    if (p[i] != '\n' || strncasecmp((const char *)p + i + 1, "host:", 5) != 0) continue;
    const uint8_t *lf = memchr(p + i + 1, '\n', len - i - 1);
    size_t end = lf != NULL ? (size_t)(lf - p) : len, nl = strlen(name);
    for (size_t j = i + 6; j + nl <= end; j++)
      if (strncasecmp((const char *)p + j, name, nl) == 0) return 1;
    return 0; /* the first Host line decides */
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char name[S5_SNIFF_NAME_MAX + 1];
  enum s5_sniff r = fuzz_sniff_stream(s5_sniff_http, data, size, name);
  if (r == S5_SNIFF_FOUND) {
    FUZZ_CHECK(size > 0 && data[0] >= 'A' && data[0] <= 'Z',
               "FOUND for a request not starting with a method");
    FUZZ_CHECK(has_host_line(data, size, name), "FOUND '%s' without a Host line holding it", name);
  }
  return 0;
}
