/* SPDX-License-Identifier: MIT */
/* One line per event: time, level, who (supervisor or queue N), message.
 * The level test is a macro so that a disabled debug line costs one compare
 * and formats nothing. */
#ifndef S5_CORE_LOG_H
#define S5_CORE_LOG_H

#include "ini/config.h"

extern enum s5_log_level s5_log_level;

/* Opens the log: stderr (file empty), syslog (file = syslog), or a file
 * opened for appending. Returns 0 or -errno. */
int s5_log_open(const struct s5_log_cfg *cfg);

/* A reload: the new level at once, and a log file at another path (from a
 * file to a file only: s5_log_can_apply). Returns 0, -1 when the change of
 * file is not one it makes, or -errno. Per process (each worker process
 * calls it itself). */
int s5_log_apply(const struct s5_log_cfg *cfg);

/* 1 if s5_log_apply() can move the log from cur's file to next's. */
int s5_log_can_apply(const struct s5_log_cfg *cur, const struct s5_log_cfg *next);

/* Reopens the log file (SIGHUP, after rotation). Safe to call at any time:
 * lines being written meanwhile go to the old file or the new one. */
void s5_log_reopen(void);

/* The fd lines are written to, or -1 for syslog. */
int s5_log_fd(void);

/* Process mode, in a new worker: before it closes the fds it inherited,
 * and after. A syslog connection is closed and opened anew (its fd is one
 * of those); a log file's fd is kept by the caller (s5_log_fd). */
void s5_log_child_close(void);
void s5_log_child_open(void);

/* Names this thread in every line it logs: queue index, or -1 for the supervisor. */
void s5_log_set_queue(int queue);

/* Writes one line: the message as formatted, escaped (s5_log_escape), so
 * that what a peer sent (a DNS name, a proxy's text) cannot end the line. */
void s5_log_write(enum s5_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* in[0..len) into out (cap bytes, NUL-terminated): control characters
 * (below 0x20, DEL), bytes that are not UTF-8 and UTF-8's C1 controls as
 * \xNN, valid UTF-8 as it is; never an escape cut in two. Its length. */
size_t s5_log_escape(char *out, size_t cap, const char *in, size_t len);

/* The level may change on reload while other threads log: a relaxed load. */
#define s5_log_enabled(level) ((int)(level) <= (int)__atomic_load_n(&s5_log_level, __ATOMIC_RELAXED))

#define s5_log(level, ...)                                         \
  do {                                                             \
    if (s5_log_enabled(level)) s5_log_write((level), __VA_ARGS__); \
  } while (0)

#define s5_error(...) s5_log(S5_LOG_ERROR, __VA_ARGS__)
#define s5_warn(...) s5_log(S5_LOG_WARN, __VA_ARGS__)
#define s5_info(...) s5_log(S5_LOG_INFO, __VA_ARGS__)
#define s5_debug(...) s5_log(S5_LOG_DEBUG, __VA_ARGS__)

#endif
