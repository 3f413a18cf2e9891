/* SPDX-License-Identifier: MIT */
/* The Prometheus endpoint ([stats] http): an HTTP/1.1 listener in the
 * control loop (the main thread, or the supervisor in process mode) that
 * answers GET /metrics and GET / with the counters of the shared stats area
 * in the text exposition format 0.0.4. It never touches a worker: it reads
 * the area as the stats socket does.
 *
 * Bounded for a port that anyone on the network may reach: non-blocking
 * sockets, at most S5_METRICS_CONNS connections (a new one beyond that
 * pushes out the oldest that has not sent its request yet), requests of at
 * most S5_HTTP_HEAD_MAX bytes, and S5_METRICS_DEADLINE_MS per connection
 * from accept to close, reading, answering and draining included. One
 * answer per connection, then close. */
#ifndef S5_THREADS_METRICS_H
#define S5_THREADS_METRICS_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "ini/config.h"
#include "threads/ctl/ctl_server.h"
#include "shared/stats.h"

#define S5_METRICS_CONNS S5_CTL_CONNS
#define S5_METRICS_DEADLINE_MS 5000
#define S5_METRICS_POLLFDS S5_CTL_POLLFDS

struct s5_metrics_server {
  struct s5_ctl_server ctl; /* its fd: -1 when [stats] http is empty */
  const struct s5_config *cfg;
  const struct s5_stats_area *stats;
};

/* Returns 0 (also when [stats] http is empty), or -1 after logging. */
int s5_metrics_open(struct s5_metrics_server *m, const struct s5_config *cfg,
                    const struct s5_stats_area *stats);

/* Fills pfd with what to poll (at most S5_METRICS_POLLFDS entries, fd -1
 * for nothing) and returns how many entries it used. */
unsigned s5_metrics_pollfds(const struct s5_metrics_server *m, struct pollfd *pfd);

/* Handles what poll() said about those n entries (revents may all be 0)
 * and closes connections past their deadline. Call once per loop turn. */
void s5_metrics_serve(struct s5_metrics_server *m, const struct pollfd *pfd, unsigned n);

/* The longest the control loop may sleep for this server, ms; -1: any. */
int s5_metrics_wait_ms(const struct s5_metrics_server *m);

void s5_metrics_close(struct s5_metrics_server *m);

/* The exposition document into a malloc'ed buffer (*len bytes, no NUL
 * needed); NULL when out of memory. */
char *s5_metrics_render(const struct s5_stats_area *stats, const struct s5_config *cfg, size_t *len);

#endif
