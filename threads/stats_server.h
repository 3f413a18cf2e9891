/* SPDX-License-Identifier: MIT */
/* The stats socket: a unix stream socket that answers every connection
 * with one JSON document (core/stats.h) and closes it. */
#ifndef S5_THREADS_STATS_SERVER_H
#define S5_THREADS_STATS_SERVER_H

#include <stdint.h>

#include "config.h"
#include "stats.h"

struct s5_stats_server {
  int fd;         /* -1 when no socket is configured */
  char path[108]; /* a copy: a reload may change the configuration's */
  const struct s5_stats_area *stats;
  void (*poke)(void *arg); /* --connections: ask every worker for its list */
  void *poke_arg;
  uint64_t pause_until_ms; /* out of descriptors even with the reserve: not polled until then */
  uint64_t warned_ms;      /* the last warning about it */
};

/* Returns 0 (also when [stats] socket is empty), or -1 after logging. */
int s5_stats_server_open(struct s5_stats_server *srv, const struct s5_config *cfg,
                         const struct s5_stats_area *stats);
/* The descriptor to poll for connections: -1 while resting (see answer). */
int s5_stats_server_pollfd(const struct s5_stats_server *srv);
void s5_stats_server_answer(struct s5_stats_server *srv);
void s5_stats_server_close(struct s5_stats_server *srv);

/* The client side, for `s5tund --stats [SOCKET] [--json]`: prints the
 * document (json) or a table to stdout. Returns the exit code. */
int s5_stats_client(const char *path, int json);

/* `s5tund --connections [SOCKET] [--json]`: the open sessions. */
int s5_connections_client(const char *path, int json);

#endif
