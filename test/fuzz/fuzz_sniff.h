/* SPDX-License-Identifier: MIT */
/* Shared by the sniff fuzz targets: what a name found must be, and the
 * parser's answer checked as a streaming one (every prefix MORE or the
 * whole's answer, with the same name). */
#ifndef S5_FUZZ_SNIFF_H
#define S5_FUZZ_SNIFF_H

#include <string.h>

#include "fuzz_check.h"
#include "sniff/sniff.h"

/* A name as sniff.h promises it: 1..253 bytes of [a-z0-9._-], labels of
 * 1..63, no trailing dot, its last label not all digits. */
static inline void fuzz_sniff_name_ok(const char *name) {
  size_t len = strnlen(name, S5_SNIFF_NAME_MAX + 1), label = 0;
  int digits = 1;
  FUZZ_CHECK(len >= 1 && len <= S5_SNIFF_NAME_MAX, "name of %zu bytes", len);
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (c == '.') {
      FUZZ_CHECK(label > 0, "empty label in '%s'", name);
      label = 0, digits = 1;
      continue;
    }
    FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_',
               "byte 0x%02x in a name", (unsigned char)c);
    digits &= c >= '0' && c <= '9';
    FUZZ_CHECK(++label <= 63, "label over 63 in '%s'", name);
  }
  FUZZ_CHECK(label > 0, "trailing dot in '%s'", name);
  FUZZ_CHECK(!digits, "numeric last label in '%s'", name);
}

typedef enum s5_sniff (*fuzz_sniff_fn)(const uint8_t *, size_t, char[S5_SNIFF_NAME_MAX + 1]);

/* fn on an exactly sized heap copy of data[0..len): its answer checked. */
static inline enum s5_sniff fuzz_sniff_run(fuzz_sniff_fn fn, const uint8_t *data, size_t len,
                                           char name[S5_SNIFF_NAME_MAX + 1]) {
  uint8_t *copy = fuzz_dup(data, len);
  if (len == 0) copy[0] = 0x16; /* never read: len says so */
  memset(name, 0x55, S5_SNIFF_NAME_MAX + 1);
  enum s5_sniff r = fn(copy, len, name);
  free(copy);
  FUZZ_CHECK(r == S5_SNIFF_MORE || r == S5_SNIFF_FOUND || r == S5_SNIFF_NONE, "answer %d", (int)r);
  FUZZ_CHECK(r != S5_SNIFF_MORE || len < S5_SNIFF_HOLD_MAX, "MORE with %zu bytes held", len);
  if (r == S5_SNIFF_FOUND) fuzz_sniff_name_ok(name);
  return r;
}

/* Every prefix up to 512 bytes, then every 61st: MORE, or the whole's
 * answer and name. Returns the whole's answer. */
static inline enum s5_sniff fuzz_sniff_stream(fuzz_sniff_fn fn, const uint8_t *data, size_t len,
                                              char full_name[S5_SNIFF_NAME_MAX + 1]) {
  char name[S5_SNIFF_NAME_MAX + 1];
  enum s5_sniff full = fuzz_sniff_run(fn, data, len, full_name);
  for (size_t n = 0; n < len; n += n < 512 ? 1 : 61) {
    enum s5_sniff r = fuzz_sniff_run(fn, data, n, name);
    FUZZ_CHECK(r == S5_SNIFF_MORE || r == full, "%zu bytes answer %d, all %zu bytes %d", n, (int)r, len,
               (int)full);
    FUZZ_CHECK(r != S5_SNIFF_FOUND || strcmp(name, full_name) == 0, "%zu bytes found '%s', all '%s'", n, name,
               full_name);
  }
  return full;
}

#endif
