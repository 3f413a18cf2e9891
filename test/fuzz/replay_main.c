/* SPDX-License-Identifier: MIT */
/* A main() for the fuzz targets when they are not built with libFuzzer:
 * runs LLVMFuzzerTestOneInput() once on every file named on the command
 * line or found in a directory named there (not recursive, in name order),
 * so that ctest replays the committed corpora in every build, under the
 * sanitizers when the build has them (S5_SANITIZE).
 *
 * The command line is the one libFuzzer's own binaries take for the same
 * job (`fuzz_x -runs=0 DIR...`): arguments starting with '-' are ignored.
 * Exits 0 after replaying at least one input, 1 when there was nothing to
 * replay or a path could not be read (a renamed corpus directory must fail
 * the test, not pass it silently). A crashing input crashes this program,
 * naming the file on stderr first. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned replayed;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *bigger = realloc(buf, cap *= 2);
      if (bigger == NULL) free(buf);
      buf = bigger;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (buf == NULL || bad) {
    fprintf(stderr, "replay: %s: read failed\n", path);
    free(buf);
    return -1;
  }
  /* An exactly sized copy, so that ASan sees a read one byte too far. */
  uint8_t *exact = malloc(len > 0 ? len : 1);
  if (exact == NULL) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, len);
  free(buf);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  replayed++;
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char **more = realloc(names, (count + 1) * sizeof *names);
    if (more == NULL) break;
    names = more;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[count] = malloc(len);
    if (names[count] == NULL) break;
    snprintf(names[count], len, "%s/%s", dir, e->d_name);
    count++;
  }
  closedir(d);
  qsort(names, count, sizeof *names, by_name);
  int rc = 0;
  for (size_t i = 0; i < count; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && replay_file(names[i]) < 0) rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize != NULL) LLVMFuzzerInitialize(&argc, &argv);
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (argv[i][0] == '-') continue;
    if (stat(argv[i], &st) < 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      rc = 1;
    } else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i]) < 0 : replay_file(argv[i]) < 0) {
      rc = 1;
    }
  }
  if (replayed == 0) {
    fprintf(stderr, "replay: no input replayed (usage: %s [-flags ignored] FILE|DIR...)\n", argv[0]);
    return 1;
  }
  fprintf(stderr, "replay: %u inputs, no crash\n", replayed);
  return rc;
}
