#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

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
  unlink(srv->path);   /* a stale socket from a previous run */
  if (bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0 || listen(fd, 16) < 0) {
    s5_error("stats socket %s: %s", srv->path, strerror(errno));
    close(fd);
    return -1;
  }
  srv->fd = fd;
  return 0;
}

/* The document is written with a short send timeout: a client that does not
 * read must not hold up the control loop. */
void s5_stats_server_answer(struct s5_stats_server *srv) {
  int c;
  while ((c = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
    struct timeval tv = {.tv_sec = 1};
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* Counters move between the sizing pass and the writing pass, so the
     * document may grow: render until it fits, never send past the buffer. */
    size_t cap = s5_stats_json(srv->stats, NULL, 0) + 1024, len = 0;
    char *doc = NULL;
    for (int tries = 0; tries < 4; tries++, cap *= 2) {
      char *bigger = realloc(doc, cap);
      if (bigger == NULL) break;
      doc = bigger;
      len = s5_stats_json(srv->stats, doc, cap);
      if (len < cap) break;
      len = 0;
    }
    if (doc != NULL && len > 0) {
      for (size_t off = 0; off < len;) {
        ssize_t n = send(c, doc + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += (size_t)n;
      }
    }
    free(doc);
    close(c);
  }
}

void s5_stats_server_close(struct s5_stats_server *srv) {
  if (srv->fd < 0) return;
  close(srv->fd);
  unlink(srv->path);
  srv->fd = -1;
}

static char *read_all(int fd) {
  size_t cap = 65536, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (buf == NULL) return NULL;
    ssize_t n = read(fd, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
    if (cap - len < 2) buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  return buf;
}

int s5_stats_client(const char *path, int json) {
  struct sockaddr_un sun;
  if (unix_address(path, &sun) < 0) {
    fprintf(stderr, "s5tund: --stats %s: path too long\n", path);
    return 2;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
    fprintf(stderr, "s5tund: --stats %s: %s (is s5tund running with [stats] socket = %s?)\n", path,
            strerror(errno), path);
    if (fd >= 0) close(fd);
    return 1;
  }
  char *doc = read_all(fd);
  close(fd);
  if (doc == NULL) return 1;
  int code = 0;
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
