#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum s5_log_level s5_log_level = S5_LOG_INFO;

static int log_fd = STDERR_FILENO;
static __thread int log_queue = -1;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int s5_log_open(const struct s5_config *cfg) {
  s5_log_level = cfg->log.level;
  if (cfg->log.file[0] == '\0') return 0;
  int fd = open(cfg->log.file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) return -errno;
  log_fd = fd;
  return 0;
}

void s5_log_set_queue(int queue) { log_queue = queue; }

/* Formats the whole line first and writes it with one write(2), so lines
 * from different threads and processes never interleave. */
void s5_log_write(enum s5_log_level level, const char *fmt, ...) {
  char line[1024];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);

  int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
  n += snprintf(line + n, sizeof line - n, ".%03ld %-5s ", ts.tv_nsec / 1000000,
                level_names[level]);
  if (log_queue >= 0)
    n += snprintf(line + n, sizeof line - n, "q%d ", log_queue);
  else
    n += snprintf(line + n, sizeof line - n, "main ");

  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  n = (m < 0 || (size_t)(n + m) >= sizeof line - 1) ? (int)sizeof line - 2 : n + m;
  line[n++] = '\n';

  int saved = errno;   /* callers often log right before returning -errno */
  ssize_t unused = write(log_fd, line, (size_t)n);
  (void)unused;
  errno = saved;
}
