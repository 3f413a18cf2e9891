/* SPDX-License-Identifier: MIT */
/* The stats socket: a unix stream socket that answers every connection
 * with one JSON document (core/shared/stats.h), or the open sessions, or
 * the answer to --select, and closes it; served without blocking the control loop (ctl_server.h). */
#ifndef S5_THREADS_STATS_SERVER_H
#define S5_THREADS_STATS_SERVER_H

#include <stdint.h>
#include <sys/types.h>

#include "ini/config.h"
#include "threads/ctl/ctl_server.h"
#include "shared/stats.h"

struct s5_stats_server {
  struct s5_ctl_server ctl; /* its fd: -1 when no socket is configured */
  char path[108];           /* a copy: a reload may change the configuration's */
  dev_t dev;                /* the socket file this daemon bound: removed at */
  ino_t ino;                /* close only while the path still names it */
  const struct s5_stats_area *stats;
  const struct s5_config *cfg; /* the live one (a reload rewrites it in place): --select checks against it */
  void (*poke)(void *arg);     /* --connections: ask every worker for its list */
  void *poke_arg;
  uint64_t conn_req;      /* the --connections request in flight, 0 = none */
  uint64_t conn_until_ms; /* when its answer goes out with what has come */
};

/* Returns 0 (also when [stats] socket is empty), or -1 after logging. */
int s5_stats_server_open(struct s5_stats_server *srv, const struct s5_config *cfg,
                         const struct s5_stats_area *stats);
/* As ctl_server.h's: what to poll, how long the loop may sleep, serve. */
unsigned s5_stats_server_pollfds(const struct s5_stats_server *srv, struct pollfd *pfd);
int s5_stats_server_wait_ms(const struct s5_stats_server *srv);
void s5_stats_server_serve(struct s5_stats_server *srv, const struct pollfd *pfd, unsigned n);
void s5_stats_server_close(struct s5_stats_server *srv);

/* The client side, for `s5tund --stats [SOCKET] [--json]`: prints the
 * document (json) or a table to stdout. Returns the exit code. */
int s5_stats_client(const char *path, int json);

/* `s5tund --connections [SOCKET] [--json]`: the open sessions. */
int s5_connections_client(const char *path, int json);

/* The stats document of the daemon at path (malloc'd), or NULL without a
 * word when none answers (--explain's look at a group's member now). */
char *s5_stats_fetch(const char *path);

/* `s5tund --select GROUP MEMBER [SOCKET]`: a select group's member from
 * now on (threads/ctl/group_select.h). Prints the daemon's answer; returns
 * 0 when it took it, 1 when it refused (or no daemon answered). */
int s5_select_client(const char *path, const char *group, const char *member);

#endif
