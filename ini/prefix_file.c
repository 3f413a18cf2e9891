/* SPDX-License-Identifier: MIT */
/* Prefix files for [tun] route-exclude-file and route-include-file: see
 * config.h. Read whole at start and at every reload (a country list of
 * 10,000 lines is a few hundred kilobytes), a line at a time. */

/* A prefix, blanks and a comment fit in far less; a longer line is not a
 * prefix file. */
#define S5_PREFIX_LINE_MAX 512
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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

/* Only a regular file (or /dev/null, for "none"): a FIFO, a terminal or
 * /dev/zero would block the daemon or never end. O_NONBLOCK so that opening
 * a FIFO to find out does not wait for a writer. */
static FILE *open_regular(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode) && !(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))) {
    snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return NULL;
  }
  FILE *f = fdopen(fd, "r");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
  }
  return f;
}

long s5_prefix_file_read(const char *path, s5_prefix_fn *fn, void *arg, unsigned *n4, unsigned *n6, char *err,
                         size_t errlen) {
  FILE *f = open_regular(path, err, errlen);
  if (f == NULL) return -1;
  char buf[S5_PREFIX_LINE_MAX], what[256];
  unsigned long lineno = 0;
  long count = 0;
  unsigned c4 = 0, c6 = 0;
  int r = 0;
  while (r == 0 && fgets(buf, sizeof buf, f) != NULL) {
    lineno++;
    if (strchr(buf, '\n') == NULL && !feof(f)) {
      snprintf(err, errlen, "%s:%lu: longer than %d bytes", path, lineno, S5_PREFIX_LINE_MAX - 2);
      r = -1;
      break;
    }
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
  fclose(f);
  if (r != 0) return -1;
  if (n4 != NULL) *n4 = c4;
  if (n6 != NULL) *n6 = c6;
  return count;
}
