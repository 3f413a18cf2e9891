/* SPDX-License-Identifier: MIT */
/* Shared by the fuzz targets: a check that aborts (a crash, so libFuzzer
 * saves the input and ctest's replay fails) when a parser breaks one of its
 * documented promises, and a helper that hands a parser an exactly sized
 * heap copy so that ASan catches a read one byte too far. */
#ifndef S5_FUZZ_CHECK_H
#define S5_FUZZ_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: fuzz check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                 \
      fputc('\n', stderr);                                                          \
      abort();                                                                      \
    }                                                                               \
  } while (0)

/* malloc(len) holding a copy of data (len 0 gives a valid 1-byte block). */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t len) {
  uint8_t *p = malloc(len > 0 ? len : 1);
  if (p == NULL) abort();
  if (len > 0) memcpy(p, data, len);
  return p;
}

#endif
