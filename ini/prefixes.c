/* SPDX-License-Identifier: MIT */
/* auto-route's prefix lists: the key types of [tun] route-exclude and
 * route-include (inline lists) and of route-exclude-file and
 * route-include-file, and the files themselves (see config.h), read at
 * start and at every reload (a country list of 10,000 lines is a few
 * hundred kilobytes), a line at a time. */

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

#include <arpa/inet.h>

#include "ini/internal.h"
#include "ini/keys.h"

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
FILE *s5_open_regular(const char *path, char *err, size_t errlen) {
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
  FILE *f = s5_open_regular(path, err, errlen);
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

int s5_prefix_covers(const struct s5_prefix *p, const struct sockaddr_storage *ss) {
  size_t n;
  const uint8_t *a = s5_sockaddr_raw(ss, &n);
  if (p->family == 0 || a == NULL || ss->ss_family != p->family || p->len > n * 8) return 0;
  unsigned bytes = p->len / 8, bits = p->len % 8;
  if (memcmp(a, p->addr, bytes) != 0) return 0;
  return bits == 0 || ((a[bytes] ^ p->addr[bytes]) & (uint8_t)(0xff00 >> bits)) == 0;
}

const char *s5_prefix_text(const struct s5_prefix *p, char *buf, size_t len) {
  char addr[INET6_ADDRSTRLEN] = "";
  if (p->family == 0 || inet_ntop(p->family, p->addr, addr, sizeof addr) == NULL) buf[0] = '\0';
  else snprintf(buf, len, "%s/%u", addr, p->len);
  return buf;
}

/* ---- the key types ---- */

static int prefixes_item(char *item, void *arg, char *err, size_t errlen) {
  struct s5_prefix_list *l = arg;
  if (l->n == S5_ROUTE_PREFIXES_MAX) {
    snprintf(err, errlen,
             "more than %d prefixes (put long lists into a file: route-exclude-file, "
             "route-include-file)",
             S5_ROUTE_PREFIXES_MAX);
    return -1;
  }
  return s5_parse_route_prefix(item, &l->p[l->n++], err, errlen);
}

/* "10.0.0.0/8, fd00::/8, 192.0.2.1": prefixes of either family. */
static int prefixes_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                          size_t errlen) {
  struct s5_prefix_list l;
  memset(&l, 0, sizeof l);
  if (s5_list_each(text, prefixes_item, &l, err, errlen) != 0) return -1;
  *(struct s5_prefix_list *)s5_key_field(k, cfg) = l;
  return 0;
}

static void prefixes_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_prefix_list *l = s5_key_cfield(k, cfg);
  fprintf(out, "%s =", k->name);
  for (unsigned i = 0; i < l->n; i++) {
    char buf[INET6_ADDRSTRLEN + 8];
    s5_prefix_text(&l->p[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? ", " : " ", buf);
  }
  fputc('\n', out);
}

/* A prefix file is read when the configuration is, so that a bad line is a
 * configuration error (exit 2, or a failed reload) before anything changes. */
static int prefix_file_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                             size_t errlen) {
  struct s5_prefix_file pf;
  memset(&pf, 0, sizeof pf);
  if (s5_parse_text(text, sizeof pf.path - 1, pf.path, sizeof pf.path, err, errlen) != 0) return -1;
  if (pf.path[0] != '\0') {
    if (pf.path[0] != '/') {
      snprintf(err, errlen, "must be an absolute path (it is read again at every reload)");
      return -1;
    }
    if (s5_prefix_file_read(pf.path, NULL, NULL, &pf.n4, &pf.n6, err, errlen) < 0) return -1;
  }
  *(struct s5_prefix_file *)s5_key_field(k, cfg) = pf;
  return 0;
}

/* The path, and what the file held as a comment line after it. */
static void prefix_file_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_prefix_file *pf = s5_key_cfield(k, cfg);
  s5_key_print_quoted(k, out, pf->path);
  if (pf->path[0] != '\0')
    fprintf(out, "; %u prefixes (%u IPv4, %u IPv6)\n", pf->n4 + pf->n6, pf->n4, pf->n6);
}

const struct s5_key_type s5_type_prefixes = {"prefix list", prefixes_parse, prefixes_print};
const struct s5_key_type s5_type_prefix_file = {"file of prefixes", prefix_file_parse, prefix_file_print};
