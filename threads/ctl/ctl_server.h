/* SPDX-License-Identifier: MIT */
/* One way to serve the control plane's listeners (the stats socket, the
 * Prometheus port) from the control loop without ever blocking it: every
 * socket non-blocking, a fixed set of connection slots, and each connection
 *
 *   READ (until the owner has the request) -> WAIT (optional: until the
 *   owner can answer, e.g. the workers' lists) -> WRITE (as fast as the
 *   peer takes it) -> DRAIN (write side shut, the peer's rest read and
 *   dropped until its EOF, so that the answer is not reset away) -> closed
 *
 * with a deadline from accept to close in every state. A silent or
 * trickling client costs a slot, never the loop's time: signals, the
 * watchdog and worker restarts go on. A new connection with every slot
 * busy pushes out the oldest one not writing an answer, once that one has
 * had S5_CTL_PUSH_MS; until then it waits in the backlog. At the descriptor
 * limit the reserve (fd_reserve.h) takes the connection. The owner's part
 * is an ops table: what a request is, and what answers it. */
#ifndef S5_THREADS_CTL_SERVER_H
#define S5_THREADS_CTL_SERVER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S5_CTL_CONNS 16
#define S5_CTL_PUSH_MS 100 /* the least a connection holds its slot against a new one */
#define S5_CTL_REQ_MAX 8192
#define S5_CTL_POLLFDS (1 + S5_CTL_CONNS)

enum s5_ctl_state { S5_CTL_FREE, S5_CTL_READ, S5_CTL_WAIT, S5_CTL_WRITE, S5_CTL_DRAIN };

struct s5_ctl_conn {
  int fd;
  enum s5_ctl_state state;
  bool reserved; /* taken with the descriptor reserve: given back at close */
  uint64_t opened_ms, deadline_ms, wait_until_ms;
  uint64_t token; /* the owner's, while WAIT */
  size_t got;     /* request bytes in req */
  char req[S5_CTL_REQ_MAX];
  char *out; /* the answer (malloc'ed; freed by the server) */
  size_t out_len, out_off;
  char peer[64]; /* for the (debug) log */
};

/* What the owner says of a request. */
enum s5_ctl_verdict {
  S5_CTL_MORE,   /* read on */
  S5_CTL_ANSWER, /* c->out and c->out_len are set (out NULL: out of memory, closed) */
  S5_CTL_LATER,  /* c->wait_until_ms (and token) set: pending() answers it */
};

struct s5_ctl_server;

struct s5_ctl_ops {
  /* The request so far (c->req, c->got); eof: the peer shut its side, or
   * the server's read time ran out. MORE is then taken as a bad request. */
  enum s5_ctl_verdict (*request)(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool eof);
  /* A waiting connection, every loop turn; late: its wait_until_ms passed.
   * Returns ANSWER (out set) or LATER (not yet; not allowed when late). */
  enum s5_ctl_verdict (*pending)(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool late);
};

struct s5_ctl_server {
  int fd;           /* the listener; -1: none configured */
  const char *name; /* for the log: "metrics", "stats socket" */
  const struct s5_ctl_ops *ops;
  void *owner;
  unsigned deadline_ms; /* a connection's life, accept to close */
  unsigned read_ms;     /* 0, or: a request incomplete by then is taken as it is (eof) */
  bool reserve_closes;  /* at the descriptor limit: close what the reserve took, not answer it */
  uint64_t pause_until_ms, warned_ms;
  struct s5_ctl_conn *conns; /* S5_CTL_CONNS slots */
};

/* The slots for a listener fd the owner made (non-blocking). 0 or -ENOMEM. */
int s5_ctl_init(struct s5_ctl_server *s, int fd, const char *name, const struct s5_ctl_ops *ops, void *owner);

/* Fills pfd (S5_CTL_POLLFDS entries, fd -1 for nothing); returns how many
 * it used (0 without a listener). */
unsigned s5_ctl_pollfds(const struct s5_ctl_server *s, struct pollfd *pfd);

/* The longest the loop may sleep for this server's deadlines and waits, in
 * ms; -1: no limit. */
int s5_ctl_wait_ms(const struct s5_ctl_server *s);

/* Handles what poll() said of those n entries (0: only the clocks). */
void s5_ctl_serve(struct s5_ctl_server *s, const struct pollfd *pfd, unsigned n);

/* Closes every connection and the listener. */
void s5_ctl_close(struct s5_ctl_server *s);

/* "ADDR:PORT", "[V6]:PORT", or "local client" for a unix socket peer. */
struct sockaddr_storage;
const char *s5_ctl_sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t len);

#endif
