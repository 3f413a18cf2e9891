/* SPDX-License-Identifier: MIT */
/* The mapped names' state file (see dns_state.h). */
#include "dns/dns_state.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dns/dns_msg.h"

#define MAGIC "s5tund-dnsmap"
#define HEADER_MAX 256                                           /* the four header lines and the sum line */
#define LINE_MAX_LEN (INET_ADDRSTRLEN + 1 + S5_DNS_NAME_MAX + 1) /* "address name\n" */

static uint64_t fnv64(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

int s5_dns_state_name_ok(const char *name, size_t len) {
  if (len == 0 || len > S5_DNS_NAME_MAX) return 0;
  size_t label = 0;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (c == '.') {
      if (label == 0) return 0; /* empty label: leading dot or ".." */
      label = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return 0;
    if (++label > 63) return 0;
  }
  return label > 0; /* no final dot */
}

static uint32_t get_u32(const uint8_t *a) {
  return ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
}

/* The IPv4 network's address of entry 0 (host order), as dns_table.c has it. */
static uint32_t first_of(const struct s5_prefix *net4) {
  uint32_t mask = net4->len == 0 ? 0 : 0xffffffffu << (32 - net4->len);
  return (get_u32(net4->addr) & mask) + 1;
}

/* The header lines for these networks: the same text when writing and
 * when checking a file. Returns its length. */
static int header(char *buf, size_t cap, const struct s5_prefix *net4, const struct s5_prefix *net6) {
  char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN + 8] = "-";
  inet_ntop(AF_INET, net4->addr, a4, sizeof a4);
  if (net6 != NULL && net6->family == AF_INET6) {
    char a[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, net6->addr, a, sizeof a);
    snprintf(a6, sizeof a6, "%s/%u", a, net6->len);
  }
  return snprintf(buf, cap, MAGIC " %d\nnetwork %s/%u\nnetwork6 %s\n", S5_DNS_STATE_VERSION, a4, net4->len,
                  a6);
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* buf to path through path.tmp, fsync and rename, then the directory's fsync. */
static int write_file(const char *path, const char *buf, size_t len, char *err, size_t errlen) {
  char tmp[PATH_MAX + 8];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
    snprintf(err, errlen, "%s: path too long", path);
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    snprintf(err, errlen, "creating %s: %s", tmp, strerror(errno));
    return -1;
  }
  const char *what = "writing";
  int r = write_all(fd, buf, len);
  if (r == 0 && (what = "fsync of", fsync(fd)) < 0) r = -1;
  int e = errno;
  if (close(fd) < 0 && r == 0) {
    r = -1;
    e = errno;
    what = "closing";
  }
  if (r == 0 && rename(tmp, path) < 0) {
    r = -1;
    e = errno;
    what = "renaming";
  }
  if (r < 0) {
    snprintf(err, errlen, "%s %s: %s", what, tmp, strerror(e));
    unlink(tmp);
    return -1;
  }
  /* the rename itself lasts once the directory is on disk */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir) slash[1] = '\0';
  else if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) < 0) {
    snprintf(err, errlen, "fsync of directory %s: %s", dir, strerror(errno));
    if (dfd >= 0) close(dfd);
    return -1;
  }
  close(dfd);
  return 0;
}

long s5_dns_state_save(struct s5_dns_table *t, const struct s5_prefix *net4, const struct s5_prefix *net6,
                       const char *path, uint64_t *generation, char *err, size_t errlen) {
  /* The copy's size as the table says, with room for names added before
   * the copy is made; asked again if even that was too little. */
  uint8_t *snap = NULL;
  size_t slen = SIZE_MAX;
  for (int tries = 0; tries < 8 && slen == SIZE_MAX; tries++) {
    size_t scap = s5_dns_table_snapshot_size(t) + 64 * S5_DNS_SNAP_ENTRY_MAX;
    free(snap);
    snap = malloc(scap);
    if (snap == NULL) break;
    /* Touched before the lock is taken: faulting fresh pages in under it
     * held the workers' lookups 1.2 ms instead of 0.14 (10,000 names). */
    memset(snap, 0, scap);
    slen = s5_dns_table_snapshot(t, snap, scap, generation);
  }
  if (snap != NULL && slen == SIZE_MAX) {
    free(snap);
    snprintf(err, errlen, "names were added faster than they could be copied, 8 times");
    return -1;
  }
  /* A line is at most 12 bytes more than its record (a 15-byte address and
   * two separators instead of 5 bytes), and a record at least 6 bytes. */
  size_t tcap = HEADER_MAX + 32 + slen + 12 * (slen / 6) + 32;
  char *text = snap != NULL ? malloc(tcap) : NULL;
  if (text == NULL) {
    free(snap);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* the names line is written once the count is known: keep room for it */
  int h = header(text, tcap, net4, net6);
  size_t body = (size_t)h + 32, pos = body;
  long names = 0;
  uint32_t first = first_of(net4);
  for (size_t at = 0; at + 5 <= slen;) {
    uint32_t index = get_u32(snap + at);
    size_t len = snap[at + 4];
    const char *name = (const char *)snap + at + 5;
    at += 5 + len;
    if (!s5_dns_state_name_ok(name, len)) continue; /* a proxy's odd name: not kept */
    uint32_t a = htonl(first + index);
    char a4[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, a4, sizeof a4);
    pos += (size_t)snprintf(text + pos, tcap - pos, "%s %.*s\n", a4, (int)len, name);
    names++;
  }
  free(snap);
  char names_line[32];
  int nl = snprintf(names_line, sizeof names_line, "names %ld\n", names);
  size_t start = body - (size_t)h - (size_t)nl; /* header and names line end where the entries begin */
  memmove(text + start, text, (size_t)h);
  memcpy(text + start + h, names_line, (size_t)nl);
  uint64_t sum = fnv64(text + start, pos - start);
  pos += (size_t)snprintf(text + pos, tcap - pos, "sum %016" PRIx64 "\n", sum);
  int r = write_file(path, text + start, pos - start, err, errlen);
  free(text);
  return r < 0 ? -1 : names;
}

/* The next line of [*at, end) without its '\n', NUL-terminated in place;
 * NULL when no complete line is left. */
static char *next_line(char **at, char *end) {
  char *s = *at, *nl = s < end ? memchr(s, '\n', (size_t)(end - s)) : NULL;
  if (nl == NULL) return NULL;
  *nl = '\0';
  *at = nl + 1;
  return s;
}

/* The file into a NUL-terminated buffer of at most cap bytes; -1 with err,
 * S5_DNS_STATE_NONE without a file. */
static long read_file(const char *path, size_t cap, char **out, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return S5_DNS_STATE_NONE;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(err, errlen, "%s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > cap) {
    snprintf(err, errlen, "%s (%lld bytes; at most %zu for this cache-size)",
             S_ISREG(st.st_mode) ? "too large" : "not a regular file", (long long)st.st_size, cap);
    close(fd);
    return -1;
  }
  char *buf = malloc((size_t)st.st_size + 1);
  size_t len = 0;
  int e = 0;
  while (buf != NULL && len < (size_t)st.st_size) { /* bounded by the size checked above */
    ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) e = errno;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  if (buf == NULL || len != (size_t)st.st_size) {
    snprintf(err, errlen, "%s",
             buf == NULL ? "out of memory"
             : e != 0    ? strerror(e)
                         : "shorter than its size");
    free(buf);
    return -1;
  }
  buf[len] = '\0';
  *out = buf;
  return (long)len;
}

/* Parses the entries of a file whose sum and header were checked. */
static long load_entries(struct s5_dns_table *t, const struct s5_prefix *net4, char *at, char *end,
                         long *skipped, char *err, size_t errlen) {
  char *line = next_line(&at, end);
  char *rest;
  long want = -1;
  if (line != NULL && strncmp(line, "names ", 6) == 0) want = strtol(line + 6, &rest, 10);
  if (want < 0 || want > (long)(INT32_MAX) || *rest != '\0') {
    snprintf(err, errlen, "no names line");
    return -1;
  }
  uint32_t first = first_of(net4), count = s5_dns_table_count(t);
  uint64_t pool = s5_dns_pool_size(net4->len);
  long n = 0, lineno = 5;
  for (long k = 0; k < want; k++, lineno++) {
    line = next_line(&at, end);
    char *sp = line != NULL ? strchr(line, ' ') : NULL;
    if (sp == NULL) {
      snprintf(err, errlen, "line %ld: no \"address name\"", lineno);
      return -1;
    }
    *sp = '\0';
    struct in_addr a;
    size_t len = strlen(sp + 1);
    if (inet_pton(AF_INET, line, &a) != 1 || !s5_dns_state_name_ok(sp + 1, len)) {
      snprintf(err, errlen, "line %ld: bad address or name", lineno);
      return -1;
    }
    uint64_t index = (uint64_t)ntohl(a.s_addr) - first; /* wraps far above the pool when below it */
    if (index >= pool) {
      snprintf(err, errlen, "line %ld: %s is outside the network", lineno, line);
      return -1;
    }
    if (index >= count) { /* cache-size was lowered */
      if (skipped != NULL) (*skipped)++;
      continue;
    }
    if (s5_dns_table_restore(t, (uint32_t)index, sp + 1, len) < 0) {
      snprintf(err, errlen, "line %ld: %s or %s appears twice", lineno, line, sp + 1);
      return -1;
    }
    n++;
  }
  if (at != end) {
    snprintf(err, errlen, "more lines than names %ld", want);
    return -1;
  }
  return n;
}

long s5_dns_state_load(struct s5_dns_table *t, const struct s5_prefix *net4, const struct s5_prefix *net6,
                       const char *path, long *skipped, char *err, size_t errlen) {
  if (skipped != NULL) *skipped = 0;
  char *buf = NULL;
  /* The largest file this table writes (IPv4 addresses are at most 15 bytes). */
  size_t cap = HEADER_MAX + (size_t)s5_dns_table_count(t) * LINE_MAX_LEN;
  long len = read_file(path, cap, &buf, err, errlen);
  if (len < 0) return len;
  char *end = buf + len;
  /* The last line is the sum of everything before it. */
  char *sum = len >= 21 && end[-1] == '\n' ? end - 21 : NULL; /* "sum " 16 hex digits "\n" */
  long r = -1;
  if (sum == NULL || (sum > buf && sum[-1] != '\n') || strncmp(sum, "sum ", 4) != 0) {
    snprintf(err, errlen, "truncated (no sum line at the end)");
    goto out;
  }
  char *hex_end;
  uint64_t want = strtoull(sum + 4, &hex_end, 16);
  if (hex_end != end - 1 || want != fnv64(buf, (size_t)(sum - buf))) {
    snprintf(err, errlen, "checksum does not match: damaged");
    goto out;
  }
  char head[HEADER_MAX], version[32];
  int h = header(head, sizeof head, net4, net6);
  int vl = snprintf(version, sizeof version, MAGIC " %d\n", S5_DNS_STATE_VERSION);
  if (strncmp(buf, MAGIC " ", sizeof MAGIC) != 0) snprintf(err, errlen, "not a state file of s5tund");
  else if (strncmp(buf, version, (size_t)vl) != 0)
    snprintf(err, errlen, "not version %d", S5_DNS_STATE_VERSION);
  else if ((sum - buf) < h || memcmp(buf, head, (size_t)h) != 0)
    snprintf(err, errlen, "written for other networks than [dns] network and network6 now");
  else r = 0;
  if (r < 0) goto out;
  r = load_entries(t, net4, buf + h, sum, skipped, err, errlen);
  if (r < 0) s5_dns_table_reset(t);
out:
  free(buf);
  return r;
}
