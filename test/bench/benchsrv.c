/* SPDX-License-Identifier: MIT */
/*
 * benchsrv: the small target server of the s5tund benchmark.
 *
 *   benchsrv -a ADDR [-r PORT] [-e PORT] [-k PORT] [-u PORT] [-f READY_FILE]
 *
 * Three listening sockets and a UDP socket on ADDR, served by one epoll loop:
 *
 *   request/response port (-r, default 7100): the client sends one line
 *     "<N> ...\n" (any padding before the newline); the server answers with
 *     N bytes (N <= 16 MiB) and closes the connection, like HTTP/1.0. A
 *     request that starts with a letter is an HTTP request (ab's): after its
 *     empty line the answer is "HTTP/1.0 200 OK" with a body of HTTP_BODY
 *     bytes, then the close. The
 *     server closing first keeps TIME_WAIT off the client side, so a load
 *     client can open many connections per second without running out of
 *     ports.
 *   echo port (-e, default 7101): everything read is written back, until
 *     the client closes. Used for round-trip latency.
 *   UDP echo port (-u, default 7103): every datagram is sent back to its
 *     sender. Used to hold many UDP flows open through the tunnel.
 *   keep-alive port (-k, default 7102): the same request lines as the
 *     request/response port, any number on one connection; each is
 *     answered with its N bytes and the connection stays open, like
 *     HTTP/1.1 keep-alive (the client closes). Requests sent before the
 *     previous answer was read are answered in turn.
 *
 * When every socket listens, READY_FILE (if given) is written. SIGTERM or
 * SIGINT end the server. Built by test/bench/run.sh with cc.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_RESP (16u << 20)
#define LINE_MAX_LEN 4096
#define ECHO_BUF 65536
#define HTTP_BODY 1024
static const char http_head[] = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1024\r\n\r\n";

enum kind { K_LISTEN_RR, K_LISTEN_ECHO, K_LISTEN_KA, K_RR, K_ECHO, K_KA, K_UDP_ECHO };

struct conn {
  enum kind kind;
  int fd;
  /* request/response and keep-alive: the request line being read */
  size_t line_len;
  int digits_done;
  uint64_t line_size; /* keep-alive: its N so far */
  int replying;       /* request/response: the line is complete */
  uint64_t resp_left; /* bytes still to send */
  /* request/response, HTTP: the request's bytes so far, its end seen
   * ("\r\n\r\n" matched up to ends_seen), the status line and header
   * still to send */
  int http;
  unsigned ends_seen;
  size_t head_off;
  /* echo: bytes read but not yet written back */
  char *buf;
  size_t buf_off, buf_len;
};

static volatile sig_atomic_t stop;
static int ep;
static char fill[65536];

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void die(const char *what) {
  fprintf(stderr, "benchsrv: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* A bound socket of TYPE (SOCK_STREAM: listening too) on ADDR:PORT. */
static int listen_on(int family, int type, const char *addr, int port) {
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  if (family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1) return -1;
    len = sizeof *s4;
  } else {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) return -1;
    len = sizeof *s6;
  }
  int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, len) < 0) die("bind");
  if (type == SOCK_STREAM && listen(fd, 4096) < 0) die("listen");
  return fd;
}

static void add(struct conn *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl add");
}

static void modify(struct conn *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void drop(struct conn *c) {
  close(c->fd); /* also removes it from the epoll set */
  free(c->buf);
  free(c);
}

static void accept_all(struct conn *l) {
  for (;;) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) fprintf(stderr, "benchsrv: accept: %s\n", strerror(errno));
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    if (l->kind == K_LISTEN_RR) {
      c->kind = K_RR;
    } else if (l->kind == K_LISTEN_KA) {
      c->kind = K_KA;
    } else {
      c->kind = K_ECHO;
      c->buf = malloc(ECHO_BUF);
      if (!c->buf) {
        close(fd);
        free(c);
        continue;
      }
    }
    add(c, EPOLLIN | EPOLLRDHUP);
  }
}

/* Writes what is left of the response; 1 when done, 0 to wait, -1 error. */
static int rr_send(struct conn *c) {
  while (c->http && c->head_off < sizeof http_head - 1) {
    ssize_t w =
      send(c->fd, http_head + c->head_off, sizeof http_head - 1 - c->head_off, MSG_NOSIGNAL | MSG_MORE);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -1;
    }
    c->head_off += (size_t)w;
  }
  while (c->resp_left > 0) {
    size_t n = c->resp_left < sizeof fill ? (size_t)c->resp_left : sizeof fill;
    ssize_t w = send(c->fd, fill, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      return -1;
    }
    c->resp_left -= (uint64_t)w;
  }
  return 1;
}

/* One byte of a request line "<N> ...\n": the leading decimal N goes into
 * *size (capped at MAX_RESP). Returns 1 at the end of the line (ready for
 * the next one), -1 when the line is too long, 0 otherwise. */
static int line_byte(struct conn *c, char ch, uint64_t *size) {
  if (ch == '\n') {
    c->line_len = 0;
    c->digits_done = 0;
    return 1;
  }
  if (!c->digits_done && ch >= '0' && ch <= '9') {
    *size = *size * 10 + (uint64_t)(ch - '0');
    if (*size > MAX_RESP) *size = MAX_RESP;
  } else {
    c->digits_done = 1;
  }
  return ++c->line_len > LINE_MAX_LEN ? -1 : 0;
}

static void rr_event(struct conn *c, uint32_t events) {
  if (c->replying) {
    int r = rr_send(c);
    if (r != 0) drop(c);
    return;
  }
  char buf[1024];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      drop(c);
      return;
    }
    if (n == 0) { /* closed before a full request */
      drop(c);
      return;
    }
    /* The size is the leading decimal number of the line; a letter first
     * is HTTP: the request ends at its empty line. */
    for (ssize_t i = 0; i < n; i++) {
      if (c->line_len == 0 && !c->http && !c->digits_done &&
          ((buf[i] | 0x20) >= 'a' && (buf[i] | 0x20) <= 'z')) {
        c->http = 1;
        c->resp_left = HTTP_BODY;
      }
      if (c->http) {
        static const char end[] = "\r\n\r\n";
        c->ends_seen = buf[i] == end[c->ends_seen] ? c->ends_seen + 1 : (buf[i] == '\r' ? 1u : 0u);
        if (++c->line_len > LINE_MAX_LEN) {
          drop(c);
          return;
        }
        if (c->ends_seen == 4) {
          c->replying = 1;
          break;
        }
        continue;
      }
      int r = line_byte(c, buf[i], &c->resp_left);
      if (r < 0) {
        drop(c);
        return;
      }
      if (r > 0) {
        c->replying = 1;
        break;
      }
    }
    if (c->replying) break;
  }
  if (!c->replying) {
    if (events & (EPOLLHUP | EPOLLERR)) drop(c);
    return;
  }
  int r = rr_send(c);
  if (r == 0) modify(c, EPOLLOUT);
  else drop(c); /* done (FIN after the response) or error */
}

/* Reads the keep-alive requests that have arrived: each complete line adds
 * its N to what is owed. 0 ok (wait for more), -1 closed or error. */
static int ka_read(struct conn *c) {
  char buf[1024];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
    if (n == 0) return -1;
    for (ssize_t i = 0; i < n; i++) {
      int r = line_byte(c, buf[i], &c->line_size);
      if (r < 0) return -1;
      if (r > 0) {
        c->resp_left += c->line_size;
        c->line_size = 0;
      }
    }
    /* A short read emptied the socket: skip the recv() that would only
         * say EAGAIN (level-triggered epoll reports what comes later). */
    if ((size_t)n < sizeof buf) return 0;
  }
}

/* Keep-alive: answer what is owed; while a reply is blocked, read no more
 * requests (the client's sending then stalls: bounded work per client). */
static void ka_event(struct conn *c, uint32_t events) {
  if (c->resp_left == 0) {
    if (ka_read(c) < 0) {
      drop(c);
      return;
    }
    if (c->resp_left == 0) {
      if (events & (EPOLLHUP | EPOLLERR)) drop(c);
      return;
    }
  }
  int r = rr_send(c);
  if (r < 0) drop(c);
  else if (r == 0) modify(c, EPOLLOUT);
  else if (events & EPOLLOUT) modify(c, EPOLLIN | EPOLLRDHUP); /* all sent: back to reading */
}

static void echo_event(struct conn *c, uint32_t events) {
  (void)events;
  for (;;) {
    /* Flush what is pending first. */
    while (c->buf_off < c->buf_len) {
      ssize_t w = send(c->fd, c->buf + c->buf_off, c->buf_len - c->buf_off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          modify(c, EPOLLOUT);
          return;
        }
        drop(c);
        return;
      }
      c->buf_off += (size_t)w;
    }
    c->buf_off = c->buf_len = 0;
    ssize_t n = recv(c->fd, c->buf, ECHO_BUF, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        modify(c, EPOLLIN | EPOLLRDHUP);
        return;
      }
      drop(c);
      return;
    }
    if (n == 0) {
      drop(c);
      return;
    }
    c->buf_len = (size_t)n;
  }
}

/* Every datagram waiting goes back to its sender (a full send buffer drops
 * it: the client retries, as UDP clients do). */
static void udp_echo_event(struct conn *c) {
  char buf[2048];
  for (;;) {
    struct sockaddr_storage from;
    socklen_t flen = sizeof from;
    ssize_t n = recvfrom(c->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) perror("benchsrv: recvfrom");
      return;
    }
    if (sendto(c->fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen) < 0) perror("benchsrv: sendto");
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: benchsrv -a ADDR [-r RR_PORT] [-e ECHO_PORT] [-k KA_PORT] [-u UDP_PORT] [-f READY_FILE]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *addr = NULL, *ready = NULL;
  int rr_port = 7100, echo_port = 7101, ka_port = 7102, udp_port = 7103, opt;
  while ((opt = getopt(argc, argv, "a:r:e:k:u:f:")) != -1) {
    switch (opt) {
      case 'a': addr = optarg; break;
      case 'r': rr_port = atoi(optarg); break;
      case 'e': echo_port = atoi(optarg); break;
      case 'k': ka_port = atoi(optarg); break;
      case 'u': udp_port = atoi(optarg); break;
      case 'f': ready = optarg; break;
      default: usage();
    }
  }
  if (!addr || rr_port <= 0 || rr_port > 65535 || echo_port <= 0 || echo_port > 65535 || ka_port <= 0 ||
      ka_port > 65535 || udp_port <= 0 || udp_port > 65535)
    usage();
  int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
  memset(fill, 'x', sizeof fill);

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  static struct conn lrr, lecho, lka, ludp;
  lrr.kind = K_LISTEN_RR;
  lrr.fd = listen_on(family, SOCK_STREAM, addr, rr_port);
  lecho.kind = K_LISTEN_ECHO;
  lecho.fd = listen_on(family, SOCK_STREAM, addr, echo_port);
  lka.kind = K_LISTEN_KA;
  lka.fd = listen_on(family, SOCK_STREAM, addr, ka_port);
  ludp.kind = K_UDP_ECHO;
  ludp.fd = listen_on(family, SOCK_DGRAM, addr, udp_port);
  if (lrr.fd < 0 || lecho.fd < 0 || lka.fd < 0 || ludp.fd < 0) {
    fprintf(stderr, "benchsrv: bad address %s\n", addr);
    return 2;
  }
  add(&lrr, EPOLLIN);
  add(&lecho, EPOLLIN);
  add(&lka, EPOLLIN);
  add(&ludp, EPOLLIN);
  if (ready) {
    FILE *f = fopen(ready, "w");
    if (!f) die(ready);
    fprintf(f, "%d %d %d\n", rr_port, echo_port, ka_port);
    fclose(f);
  }

  struct epoll_event evs[256];
  while (!stop) {
    int n = epoll_wait(ep, evs, 256, 500);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      struct conn *c = evs[i].data.ptr;
      switch (c->kind) {
        case K_LISTEN_RR:
        case K_LISTEN_ECHO:
        case K_LISTEN_KA: accept_all(c); break;
        case K_RR: rr_event(c, evs[i].events); break;
        case K_ECHO: echo_event(c, evs[i].events); break;
        case K_KA: ka_event(c, evs[i].events); break;
        case K_UDP_ECHO: udp_echo_event(c); break;
      }
    }
  }
  return 0;
}
