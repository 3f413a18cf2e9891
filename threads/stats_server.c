/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conntab.h"
#include "fd_reserve.h"
#include "log.h"
#include "stats_server.h"

static int unix_address(const char *path, struct sockaddr_un *sun) {
  memset(sun, 0, sizeof *sun);
  sun->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sun->sun_path) return -1;
  strcpy(sun->sun_path, path);
  return 0;
}

int s5_stats_server_open(struct s5_stats_server *srv, const struct s5_config *cfg,
                         const struct s5_stats_area *stats) {
  srv->fd = -1;
  srv->pause_until_ms = srv->warned_ms = 0;
  snprintf(srv->path, sizeof srv->path, "%s", cfg->stats.socket);
  srv->stats = stats;
  if (srv->path[0] == '\0') return 0;
  struct sockaddr_un sun;
  if (unix_address(srv->path, &sun) < 0) {
    s5_error("stats socket %s: path too long", srv->path);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    s5_error("stats socket: %s", strerror(errno));
    return -1;
  }
  unlink(srv->path); /* a stale socket from a previous run */
  if (bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0 || listen(fd, 16) < 0) {
    s5_error("stats socket %s: %s", srv->path, strerror(errno));
    close(fd);
    return -1;
  }
  srv->fd = fd;
  return 0;
}

/* The stats document, rendered until it fits: counters move between the
 * sizing pass and the writing pass, so it may grow. */
static char *stats_document(const struct s5_stats_area *stats, size_t *len) {
  size_t cap = s5_stats_json(stats, NULL, 0) + 1024;
  char *doc = NULL;
  *len = 0;
  for (int tries = 0; tries < 4; tries++, cap *= 2) {
    char *bigger = realloc(doc, cap);
    if (bigger == NULL) break;
    doc = bigger;
    *len = s5_stats_json(stats, doc, cap);
    if (*len < cap) return doc;
    *len = 0;
  }
  free(doc);
  return NULL;
}

/* --connections: every worker writes its list on its own loop; at most
 * this long for all of them (a stalled worker is named in the answer). */
#define S5_CONNECTIONS_WAIT_MS 1000

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char *connections_document(struct s5_stats_server *srv, int json, size_t *len) {
  uint64_t req = s5_conntab_request();
  if (srv->poke != NULL) srv->poke(srv->poke_arg);
  for (uint64_t end = mono_ms() + S5_CONNECTIONS_WAIT_MS; mono_ms() < end;) {
    unsigned done = 0;
    for (unsigned i = 0; i < srv->stats->queues; i++) done += (unsigned)s5_conntab_answered(i, req);
    if (done == srv->stats->queues) break;
    poll(NULL, 0, 2);
  }
  char *doc = NULL;
  FILE *out = open_memstream(&doc, len);
  if (out == NULL) return NULL;
  s5_conntab_render(out, req, json, mono_ms());
  fclose(out);
  return doc;
}

/* What the client asks for: "stats" (or nothing within a moment, as older
 * clients send), "connections table" or "connections json". */
static int read_request(int c, char *buf, size_t cap) {
  struct pollfd p = {.fd = c, .events = POLLIN};
  size_t n = 0;
  while (n + 1 < cap && poll(&p, 1, 200) > 0) {
    ssize_t r = recv(c, buf + n, cap - 1 - n, 0);
    if (r <= 0) break;
    n += (size_t)r;
    if (memchr(buf, '\n', n) != NULL) break;
  }
  buf[n] = '\0';
  return (int)n;
}

static void answer_one(struct s5_stats_server *srv, int c) {
  struct timeval tv = {.tv_sec = 1};
  if (setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
    s5_debug("stats socket: SO_SNDTIMEO: %s", strerror(errno));
  char req[64];
  read_request(c, req, sizeof req);
  size_t len = 0;
  char *doc = strncmp(req, "connections", 11) == 0
                ? connections_document(srv, strstr(req, "json") != NULL, &len)
                : stats_document(srv->stats, &len);
  for (size_t off = 0; doc != NULL && off < len;) {
    ssize_t n = send(c, doc + off, len - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += (size_t)n;
  }
  free(doc);
}

/* Out of descriptors even with the reserve: the queued connection would
 * wake the loop at once, again and again; rest the listener a second. */
static void answer_pause(struct s5_stats_server *srv, int err) {
  uint64_t now = mono_ms();
  srv->pause_until_ms = now + 1000;
  if (srv->warned_ms != 0 && now < srv->warned_ms + 60000) return;
  srv->warned_ms = now;
  s5_warn("stats socket: accept: %s (listener paused for 1 s at a time)", strerror(err));
}

int s5_stats_server_pollfd(const struct s5_stats_server *srv) {
  return srv->pause_until_ms > mono_ms() ? -1 : srv->fd;
}

/* The answer is written with a short send timeout: a client that does not
 * read must not hold up the control loop. At the descriptor limit the
 * reserve (fd_reserve.h) takes the connection, which is answered as any. */
void s5_stats_server_answer(struct s5_stats_server *srv) {
  for (;;) {
    bool reserved;
    int c = s5_accept_reserved(srv->fd, NULL, NULL, SOCK_CLOEXEC, &reserved);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (s5_fd_exhausted(errno)) answer_pause(srv, errno);
      else if (errno != EAGAIN && errno != EWOULDBLOCK) s5_warn("stats socket: accept: %s", strerror(errno));
      return;
    }
    answer_one(srv, c);
    close(c);
    if (reserved) s5_fd_reserve_put();
  }
}

void s5_stats_server_close(struct s5_stats_server *srv) {
  if (srv->fd < 0) return;
  close(srv->fd);
  unlink(srv->path);
  srv->fd = -1;
}

/* How long --stats and --connections wait for the daemon, for each of
 * connect, send and every read: the daemon answers in milliseconds, or in
 * about a second with --connections and a stalled worker. */
#define S5_STATS_CLIENT_TIMEOUT_S 5

/* Reads to EOF. NULL with errno set on failure (EAGAIN: the timeout). */
static char *read_all(int fd) {
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (buf == NULL) return NULL;
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      free(buf);
      errno = err;
      return NULL;
    }
    if (n == 0) break;
    len += (size_t)n;
    if (cap - len < 2) {
      char *bigger = realloc(buf, cap * 2);
      if (bigger == NULL) free(buf);
      buf = bigger;
      cap *= 2;
    }
  }
  buf[len] = '\0';
  return buf;
}

static void ask_failed(const char *flag, const char *path, int err) {
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS)
    fprintf(stderr,
            "s5tund: %s %s: no answer within %d s (the daemon is stalled or at its descriptor limit; see its "
            "log)\n",
            flag, path, S5_STATS_CLIENT_TIMEOUT_S);
  else fprintf(stderr, "s5tund: %s %s: %s\n", flag, path, strerror(err));
}

/* Connects to the stats socket, sends the request line, reads the answer
 * to its end, each step bounded. NULL after printing why (*code set). */
static char *ask(const char *flag, const char *path, const char *request, int *code) {
  struct sockaddr_un sun;
  *code = 1;
  if (unix_address(path, &sun) < 0) {
    fprintf(stderr, "s5tund: %s %s: path too long\n", flag, path);
    *code = 2;
    return NULL;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {.tv_sec = S5_STATS_CLIENT_TIMEOUT_S};
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0) {
    ask_failed(flag, path, errno);
    if (fd >= 0) close(fd);
    return NULL;
  }
  if (connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
    int err = errno;
    if (err == EAGAIN || err == EINPROGRESS) ask_failed(flag, path, err);
    else
      fprintf(stderr, "s5tund: %s %s: %s (is s5tund running with [stats] socket = %s?)\n", flag, path,
              strerror(err), path);
    close(fd);
    return NULL;
  }
  if (send(fd, request, strlen(request), MSG_NOSIGNAL) < 0) {
    ask_failed(flag, path, errno);
    close(fd);
    return NULL;
  }
  shutdown(fd, SHUT_WR);
  char *doc = read_all(fd);
  if (doc == NULL) ask_failed(flag, path, errno);
  close(fd);
  if (doc != NULL) *code = 0;
  return doc;
}

int s5_connections_client(const char *path, int json) {
  int code;
  char *doc = ask("--connections", path, json ? "connections json\n" : "connections table\n", &code);
  if (doc == NULL) return code;
  fputs(doc, stdout);
  free(doc);
  return 0;
}

int s5_stats_client(const char *path, int json) {
  int code;
  char *doc = ask("--stats", path, "stats\n", &code);
  if (doc == NULL) return code;
  if (json) {
    fputs(doc, stdout);
  } else {
    struct s5_queue_stats totals, queues[S5_QUEUES_MAX];
    int n = s5_stats_parse(doc, &totals, queues, S5_QUEUES_MAX);
    if (n < 0) {
      fprintf(stderr, "s5tund: --stats %s: unreadable answer\n", path);
      code = 1;
    } else {
      s5_stats_table(stdout, &totals, queues, (unsigned)n);
    }
  }
  free(doc);
  return code;
}
