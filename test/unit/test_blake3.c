/* SPDX-License-Identifier: MIT */
/* BLAKE3 (third_party/blake3, the reference C code as built here, SIMD
 * dispatch included) against upstream's test vectors: for every case of
 * test_vectors.json (argv[1]), the hash, keyed_hash (its "key") and
 * derive_key (its "context_string", or upstream's context where the copy
 * leaves it out) of the input bytes i % 251, each with the whole extended
 * output the file gives (131 bytes), fed in one update and again in
 * pieces of 67 bytes. derive_key is what Shadowsocks 2022 derives its
 * session subkeys with. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blake3.h"
#include "check.h"

#define CONTEXT_DEFAULT "BLAKE3 2019-12-27 16:29:52 test vectors context"
#define OUT_MAX 1024
#define CASES_MIN 20 /* the copy fetched has 22 */

enum mode { HASH, KEYED, DERIVE };
static const char *const mode_name[] = {"hash", "keyed_hash", "derive_key"};

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    exit(1);
  }
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len + 4096 + 1 > cap) {
      cap = (len + 4096 + 1) * 2;
      buf = realloc(buf, cap);
      if (buf == NULL) {
        perror("realloc");
        exit(1);
      }
    }
    n = fread(buf + len, 1, 4096, f);
    len += n;
  } while (n > 0);
  fclose(f);
  buf[len] = 0;
  return buf;
}

/* The string value of "name" at or after p, copied into out (NUL-ended);
 * returns where it ends, or NULL if there is no such key. */
static const char *json_string(const char *p, const char *name, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", name);
  const char *k = strstr(p, pat);
  if (k == NULL) return NULL;
  const char *v = strchr(k + strlen(pat), '"');
  if (v == NULL) return NULL;
  const char *e = strchr(v + 1, '"');
  if (e == NULL || (size_t)(e - v - 1) >= cap) return NULL;
  memcpy(out, v + 1, (size_t)(e - v - 1));
  out[e - v - 1] = 0;
  return e + 1;
}

static size_t unhex(const char *hex, uint8_t *out, size_t cap) {
  size_t n = strlen(hex) / 2;
  if (n > cap) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned b;
    if (sscanf(hex + 2 * i, "%2x", &b) != 1) return 0;
    out[i] = (uint8_t)b;
  }
  return n;
}

static void run(enum mode m, const uint8_t key[BLAKE3_KEY_LEN], const char *context, const uint8_t *in,
                size_t in_len, const char *want_hex) {
  uint8_t want[OUT_MAX], got[OUT_MAX];
  size_t out_len = unhex(want_hex, want, sizeof want);
  CHECK(out_len >= BLAKE3_OUT_LEN, "%s len %zu: expected output unreadable", mode_name[m], in_len);
  static const size_t pieces[] = {SIZE_MAX, 67}; /* one update, then 67 bytes at a time */
  for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
    size_t piece = pieces[k];
    blake3_hasher h;
    if (m == HASH) blake3_hasher_init(&h);
    else if (m == KEYED) blake3_hasher_init_keyed(&h, key);
    else blake3_hasher_init_derive_key(&h, context);
    for (size_t off = 0; off < in_len; off += piece)
      blake3_hasher_update(&h, in + off, in_len - off < piece ? in_len - off : piece);
    memset(got, 0, sizeof got);
    blake3_hasher_finalize(&h, got, out_len);
    CHECK(memcmp(got, want, out_len) == 0, "%s of %zu bytes (%s): mismatch", mode_name[m], in_len,
          k == 0 ? "one update" : "updates of 67");
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s test_vectors.json\n", argv[0]);
    return 2;
  }
  char *json = slurp(argv[1]);
  char keystr[64], context[256], hex[2 * OUT_MAX + 1];
  uint8_t key[BLAKE3_KEY_LEN];

  CHECK(json_string(json, "key", keystr, sizeof keystr) != NULL && strlen(keystr) == BLAKE3_KEY_LEN,
        "a 32-byte \"key\"");
  memcpy(key, keystr, BLAKE3_KEY_LEN);
  if (json_string(json, "context_string", context, sizeof context) == NULL)
    snprintf(context, sizeof context, "%s", CONTEXT_DEFAULT);

  uint8_t *in = NULL;
  int cases = 0;
  for (const char *p = strstr(json, "\"input_len\""); p != NULL; p = strstr(p + 1, "\"input_len\"")) {
    size_t len = strtoul(strchr(p, ':') + 1, NULL, 10);
    in = realloc(in, len + 1);
    CHECK(in != NULL, "realloc %zu", len);
    if (in == NULL) return check_done();
    for (size_t i = 0; i < len; i++) in[i] = (uint8_t)(i % 251);
    for (enum mode m = HASH; m <= DERIVE; m++) {
      const char *next = strstr(p + 1, "\"input_len\"");
      const char *end = json_string(p, mode_name[m], hex, sizeof hex);
      CHECK(end != NULL && (next == NULL || end < next), "case %d: no %s", cases, mode_name[m]);
      if (end != NULL) run(m, key, context, in, len, hex);
    }
    cases++;
  }
  CHECK(cases >= CASES_MIN, "%d cases read from %s, expected at least %d", cases, argv[1], CASES_MIN);
  printf("%d cases, BLAKE3 %s\n", cases, blake3_version());
  free(in);
  free(json);
  return check_done();
}
