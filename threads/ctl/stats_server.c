/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "threads/ctl/conntab_render.h"
#include "threads/ctl/ctl_server.h"
#include "base/clock.h"
#include "base/log.h"
#include "threads/ctl/stats_render.h"
#include "threads/ctl/render.h"
#include "threads/ctl/stats_server.h"
#include "threads/ctl/group_select.h"
#include "threads/cli/exec.h"

/* --connections: every worker writes its list on its own loop; at most
 * this long for all of them (a stalled worker is named in the answer). */
#define S5_CONNECTIONS_WAIT_MS 1000
/* Older clients send no request line: nothing within this long is "stats". */
#define S5_STATS_READ_MS 200
/* A connection's whole life: the answer is ready at once (or within
 * S5_CONNECTIONS_WAIT_MS), the rest is a client that reads slowly. */
#define S5_STATS_DEADLINE_MS 3000

static const struct s5_ctl_ops stats_ops;

static int unix_address(const char *path, struct sockaddr_un *sun) {
  memset(sun, 0, sizeof *sun);
  sun->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sun->sun_path) return -1;
  strcpy(sun->sun_path, path);
  return 0;
}

/* A socket file left at the path: a stale one (a daemon killed -9) is
 * removed (0); a live one belongs to another daemon and is never taken
 * over (1). -1 after logging. */
static int stale_remove(const char *path, const struct sockaddr_un *sun) {
  struct stat st;
  if (lstat(path, &st) < 0) {
    if (errno == ENOENT) return 0;
    s5_error("stats socket %s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISSOCK(st.st_mode)) {
    s5_error("stats socket %s: exists and is not a socket; not replacing it", path);
    return -1;
  }
  /* Refused twice 20 ms apart: stale. Once only could be another daemon
   * starting at the same moment, bound and not listening yet. */
  int err = 0;
  for (int tries = 0; tries < 2; tries++) {
    if (tries > 0) usleep(20 * 1000);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) {
      s5_error("stats socket %s: probing the existing socket: %s", path, strerror(errno));
      return -1;
    }
    int live = connect(probe, (const struct sockaddr *)sun, sizeof *sun) == 0;
    err = errno;
    close(probe);
    if (live) return 1;
    if (err != ECONNREFUSED) break;
  }
  if (err != ECONNREFUSED && err != ENOENT) {
    s5_error("stats socket %s: probing the existing socket: %s", path, strerror(err));
    return -1;
  }
  if (unlink(path) < 0 && errno != ENOENT) {
    s5_error("stats socket %s: removing the stale socket: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* The path still names the socket this daemon bound (not one a later
 * daemon put there), so it is ours to remove. */
static void own_remove(const struct s5_stats_server *srv) {
  struct stat st;
  if (lstat(srv->path, &st) == 0 && st.st_dev == srv->dev && st.st_ino == srv->ino) unlink(srv->path);
}

int s5_stats_server_open(struct s5_stats_server *srv, const struct s5_config *cfg,
                         const struct s5_stats_area *stats) {
  srv->ctl.fd = -1;
  srv->conn_req = 0;
  snprintf(srv->path, sizeof srv->path, "%s", cfg->stats.socket);
  srv->stats = stats;
  srv->cfg = cfg;
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
  int r = stale_remove(srv->path, &sun), bound = 0;
  if (r == 0 && bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0) bound = 1;
  else if (r == 0 && errno == EADDRINUSE) /* another daemon bound it after our look */
    r = stale_remove(srv->path, &sun);
  if (r != 0) close(fd);
  if (r < 0) return -1;
  if (r > 0 && strncmp(cfg->tun.netns, S5_EXEC_NETNS_PREFIX, strlen(S5_EXEC_NETNS_PREFIX)) == 0) {
    /* `s5tund exec` with the running daemon's file: that one keeps it. */
    s5_warn("stats socket %s: in use by another running s5tund; this tunnel serves none", srv->path);
    srv->path[0] = '\0';
    return 0;
  }
  if (r > 0) {
    s5_error("stats socket %s: in use by another running s5tund; give this one another [stats] socket",
             srv->path);
    return -1;
  }
  if ((!bound && bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0) || listen(fd, 16) < 0) {
    s5_error("stats socket %s: %s", srv->path, strerror(errno));
    close(fd);
    return -1;
  }
  struct stat st;
  if (stat(srv->path, &st) < 0) {
    s5_error("stats socket %s: stat after bind: %s", srv->path, strerror(errno));
    close(fd);
    return -1;
  }
  srv->dev = st.st_dev;
  srv->ino = st.st_ino;
  if (s5_ctl_init(&srv->ctl, fd, "stats socket", &stats_ops, srv) < 0) {
    s5_error("stats socket %s: out of memory", srv->path);
    close(fd);
    own_remove(srv);
    return -1;
  }
  srv->ctl.read_ms = S5_STATS_READ_MS;
  srv->ctl.deadline_ms = S5_STATS_DEADLINE_MS;
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

static char *connections_document(uint64_t req, int json, size_t *len) {
  char *doc = NULL;
  FILE *out = open_memstream(&doc, len);
  if (out == NULL) return NULL;
  s5_conntab_render(out, req, json, s5_now_ms());
  fclose(out);
  return doc;
}

/* "select GROUP MEMBER": done here, on the control loop; the answer is
 * "ok WHAT\n" or "error WHY\n". */
static char *select_answer(const struct s5_stats_server *srv, struct s5_ctl_conn *c, size_t *len) {
  char group[64] = "", member[64] = "", msg[1024], *out = NULL;
  size_t n = c->got < sizeof c->req ? c->got : sizeof c->req - 1;
  c->req[n] = '\0';
  int ok = -1;
  if (sscanf(c->req, "select %63s %63s", group, member) != 2)
    snprintf(msg, sizeof msg, "the request is select GROUP MEMBER");
  else if (s5_uptab() == NULL) snprintf(msg, sizeof msg, "no upstream table");
  else ok = s5_group_select(s5_uptab(), srv->cfg, group, member, msg, sizeof msg);
  FILE *f = open_memstream(&out, len);
  if (f == NULL) return NULL;
  fprintf(f, "%s %s\n", ok == 0 ? "ok" : "error", msg);
  fclose(f);
  return out;
}

/* What the client asks for: "stats" (or nothing, as older clients send),
 * "connections table" or "connections json", "select GROUP MEMBER". One --connections request is
 * in flight at a time (a new one empties every queue's list): clients that
 * ask meanwhile share it. */
static enum s5_ctl_verdict stats_request(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool eof) {
  struct s5_stats_server *srv = s->owner;
  if (memchr(c->req, '\n', c->got) == NULL && !eof) return S5_CTL_MORE;
  if (c->got >= 7 && strncmp(c->req, "select ", 7) == 0) {
    c->out = select_answer(srv, c, &c->out_len);
    return S5_CTL_ANSWER;
  }
  if (c->got < 11 || strncmp(c->req, "connections", 11) != 0) {
    c->out = stats_document(srv->stats, &c->out_len);
    return S5_CTL_ANSWER;
  }
  if (srv->conn_req == 0) {
    srv->conn_req = s5_conntab_request();
    srv->conn_until_ms = s5_now_ms() + S5_CONNECTIONS_WAIT_MS;
    if (srv->poke != NULL) srv->poke(srv->poke_arg);
  }
  c->token = srv->conn_req;
  c->wait_until_ms = srv->conn_until_ms;
  return S5_CTL_LATER;
}

static bool request_shared(const struct s5_ctl_server *s, const struct s5_ctl_conn *self) {
  for (unsigned i = 0; i < S5_CTL_CONNS; i++) {
    const struct s5_ctl_conn *c = &s->conns[i];
    if (c != self && c->state == S5_CTL_WAIT && c->token == self->token) return true;
  }
  return false;
}

static enum s5_ctl_verdict stats_pending(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool late) {
  struct s5_stats_server *srv = s->owner;
  unsigned done = 0;
  for (unsigned i = 0; i < srv->stats->queues; i++) done += (unsigned)s5_conntab_answered(i, c->token);
  if (done < srv->stats->queues && !late) return S5_CTL_LATER;
  size_t n = c->got < sizeof c->req ? c->got : sizeof c->req - 1;
  c->req[n] = '\0';
  c->out = connections_document(c->token, strstr(c->req, "json") != NULL, &c->out_len);
  if (!request_shared(s, c) && srv->conn_req == c->token) srv->conn_req = 0;
  return S5_CTL_ANSWER;
}

static const struct s5_ctl_ops stats_ops = {stats_request, stats_pending};

unsigned s5_stats_server_pollfds(const struct s5_stats_server *srv, struct pollfd *pfd) {
  return s5_ctl_pollfds(&srv->ctl, pfd);
}

int s5_stats_server_wait_ms(const struct s5_stats_server *srv) { return s5_ctl_wait_ms(&srv->ctl); }

void s5_stats_server_serve(struct s5_stats_server *srv, const struct pollfd *pfd, unsigned n) {
  s5_ctl_serve(&srv->ctl, pfd, n);
}

void s5_stats_server_close(struct s5_stats_server *srv) {
  if (srv->ctl.fd < 0) return;
  s5_ctl_close(&srv->ctl);
  own_remove(srv);
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
  if (flag == NULL) return; /* s5_stats_fetch: quiet */
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
    if (flag != NULL) fprintf(stderr, "s5tund: %s %s: path too long\n", flag, path);
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
    if (err == EAGAIN || err == EINPROGRESS || flag == NULL) ask_failed(flag, path, err);
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

char *s5_stats_fetch(const char *path) {
  int code;
  return ask(NULL, path, "stats\n", &code);
}

int s5_select_client(const char *path, const char *group, const char *member) {
  char req[256];
  int code;
  if (snprintf(req, sizeof req, "select %s %s\n", group, member) >= (int)sizeof req ||
      strpbrk(group, " \t\n") != NULL || strpbrk(member, " \t\n") != NULL) {
    fprintf(stderr, "s5tund: --select: %s %s: not a group and a member name\n", group, member);
    return 2;
  }
  char *doc = ask("--select", path, req, &code);
  if (doc == NULL) return code;
  int ok = strncmp(doc, "ok ", 3) == 0;
  if (ok) fputs(doc + 3, stdout);
  else if (strncmp(doc, "error ", 6) == 0) fprintf(stderr, "s5tund: --select: %s", doc + 6);
  else fprintf(stderr, "s5tund: --select %s: unreadable answer (an s5tund without --select?)\n", path);
  free(doc);
  return ok ? 0 : 1;
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
      for (size_t i = 0; i < s5_render_part_count; i++) s5_render_parts[i]->table(stdout, doc);
    }
  }
  free(doc);
  return code;
}
