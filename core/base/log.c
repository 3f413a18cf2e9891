/* SPDX-License-Identifier: MIT */
#include "base/log.h"

#include "base/assert.h"

#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

enum s5_log_level s5_log_level = S5_LOG_INFO;

static int log_fd = STDERR_FILENO; /* -1: syslog */
static char log_path[PATH_MAX];    /* the file, for reopening; "" = none */
static __thread int log_queue = -1;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const int syslog_levels[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

static void log_open_syslog(void) { openlog("s5tund", LOG_PID | LOG_NDELAY, LOG_DAEMON); }

int s5_log_open(const struct s5_log_cfg *cfg) {
  s5_log_level = cfg->level;
  if (cfg->file[0] == '\0') return 0;
  if (strcmp(cfg->file, "syslog") == 0) {
    log_open_syslog();
    log_fd = -1;
    return 0;
  }
  int fd = open(cfg->file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return -errno;
  log_fd = fd;
  snprintf(log_path, sizeof log_path, "%s", cfg->file);
  return 0;
}

int s5_log_apply(const struct s5_log_cfg *cfg) {
  __atomic_store_n(&s5_log_level, cfg->level, __ATOMIC_RELAXED);
  if (strcmp(cfg->file, log_path) == 0) return 0;
  if (log_path[0] == '\0' || cfg->file[0] == '\0' || strcmp(cfg->file, "syslog") == 0) return -1;
  int fd = open(cfg->file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return -errno;
  int r = dup3(fd, log_fd, O_CLOEXEC) < 0 ? -errno : 0;
  close(fd);
  if (r == 0) snprintf(log_path, sizeof log_path, "%s", cfg->file);
  return r;
}

int s5_log_can_apply(const struct s5_log_cfg *cur, const struct s5_log_cfg *next) {
  if (strcmp(cur->file, next->file) == 0) return 1;
  int cur_file = cur->file[0] != '\0' && strcmp(cur->file, "syslog") != 0;
  int next_file = next->file[0] != '\0' && strcmp(next->file, "syslog") != 0;
  return cur_file && next_file;
}

int s5_log_fd(void) { return log_fd; }

/* glibc keeps the syslog socket's fd number to itself: once a new worker
 * process has closed it with the other inherited fds, syslog(3) would write
 * to (and on an error close) whatever fd took that number next, the TUN
 * queue's among them. So the worker lets glibc close it first and opens a
 * socket of its own afterwards. */
void s5_log_child_close(void) {
  if (log_fd < 0) closelog();
}

void s5_log_child_open(void) {
  if (log_fd < 0) log_open_syslog();
}

/* dup2() swaps the file under the same fd number atomically, so writers on
 * other threads never see a closed fd. */
void s5_log_reopen(void) {
  if (log_path[0] == '\0') return;
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    s5_error("reopening log %s: %s", log_path, strerror(errno));
    return;
  }
  if (dup3(fd, log_fd, O_CLOEXEC) < 0) s5_error("reopening log %s: %s", log_path, strerror(errno));
  close(fd);
}

void s5_log_set_queue(int queue) { log_queue = queue; }

/* The length of the valid UTF-8 sequence at p (at most n bytes), C1
 * controls (U+0080..U+009F) not counted as valid; 0 when there is none. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  size_t k = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (k == 0 || k > n) return 0;
  unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
  if (c == 0xc2) lo = 0xa0;           /* C1 */
  else if (c == 0xe0) lo = 0xa0;      /* overlong */
  else if (c == 0xed) hi = 0x9f;      /* surrogates */
  else if (c == 0xf0) lo = 0x90;
  else if (c == 0xf4) hi = 0x8f;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return k;
}

size_t s5_log_escape(char *out, size_t cap, const char *in, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)in;
  size_t o = 0;
  if (cap == 0) return 0;
  for (size_t i = 0; i < len;) {
    size_t k = p[i] >= 0x80 ? utf8_len(p + i, len - i) : (p[i] >= 0x20 && p[i] != 0x7f);
    if (k > 0) {
      if (o + k >= cap) break;
      memcpy(out + o, p + i, k);
      o += k, i += k;
      continue;
    }
    if (o + 4 >= cap) break;
    out[o++] = '\\', out[o++] = 'x', out[o++] = hex[p[i] >> 4], out[o++] = hex[p[i] & 15];
    i++;
  }
  out[o] = '\0';
  return o;
}

/* Formats the whole line first and writes it with one write(2), so lines
 * from different threads and processes never interleave. */
void s5_log_write(enum s5_log_level level, const char *fmt, ...) {
  char line[1024];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);

  int n = 0;
  if (log_fd >= 0) { /* syslog stamps time and level itself */
    n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - n, ".%03ld %-5s ", ts.tv_nsec / 1000000, level_names[level]);
  }
  if (log_queue >= 0) n += snprintf(line + n, sizeof line - n, "q%d ", log_queue);
  else n += snprintf(line + n, sizeof line - n, "main ");

  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  if ((size_t)m >= sizeof msg) m = (int)sizeof msg - 1;
  n += (int)s5_log_escape(line + n, sizeof line - 1 - (size_t)n, msg, (size_t)m); /* room for the '\n' */
  line[n++] = '\n';

  int saved = errno; /* callers often log right before returning -errno */
  if (log_fd < 0) {
    line[n - 1] = '\0';
    syslog(syslog_levels[level], "%s", line);
  } else {
    ssize_t unused = write(log_fd, line, (size_t)n);
    (void)unused;
  }
  errno = saved;
}

_Noreturn void s5_assert_fail(const char *file, int line, const char *cond) {
  s5_error("assertion failed: %s:%d: %s", file, line, cond);
  abort();
}
