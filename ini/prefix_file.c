/* SPDX-License-Identifier: MIT */
/* Prefix files for [tun] route-exclude-file and route-include-file: see
 * config.h. Read whole at start and at every reload (a country list of
 * 10,000 lines is a few hundred kilobytes), a line at a time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The line without its comment and surrounding blanks (in place). */
static char *line_trim(char *line) {
  char *hash = strchr(line, '#');
  if (hash != NULL) *hash = '\0';
  while (*line == ' ' || *line == '\t') line++;
  char *end = line + strlen(line);
  while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
    *--end = '\0';
  return line;
}

long s5_prefix_file_read(const char *path, s5_prefix_fn *fn, void *arg, unsigned *n4, unsigned *n6, char *err,
                         size_t errlen) {
  FILE *f = fopen(path, "re");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  char *buf = NULL, what[256];
  size_t cap = 0;
  unsigned long lineno = 0;
  long count = 0;
  unsigned c4 = 0, c6 = 0;
  int r = 0;
  while (r == 0 && getline(&buf, &cap, f) >= 0) {
    lineno++;
    char *item = line_trim(buf);
    if (*item == '\0') continue;
    struct s5_prefix p;
    if (s5_parse_route_prefix(item, &p, what, sizeof what) != 0) {
      snprintf(err, errlen, "%s:%lu: %s", path, lineno, what);
      r = -1;
    } else if (fn != NULL && fn(&p, arg, err, errlen) != 0) {
      r = -1;
    } else {
      count++;
      if (p.family == AF_INET) c4++;
      else c6++;
    }
  }
  if (r == 0 && ferror(f)) {
    snprintf(err, errlen, "%s: reading: %s", path, strerror(errno));
    r = -1;
  }
  free(buf);
  fclose(f);
  if (r != 0) return -1;
  if (n4 != NULL) *n4 = c4;
  if (n6 != NULL) *n6 = c6;
  return count;
}
