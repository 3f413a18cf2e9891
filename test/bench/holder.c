/* SPDX-License-Identifier: MIT */
/*
 * holder: opens many TCP connections or UDP flows through the tunnel and
 * holds them, so that the benchmark can read s5tund's memory with them
 * open and after they close.
 *
 *   holder tcp -a ADDR -p ECHO_PORT -n N [-t MS]
 *   holder udp -a ADDR -p UDP_ECHO_PORT -n N [-t MS]
 *
 * tcp: N connections to benchsrv's echo port, one after another; on each,
 * one byte is sent and read back, so every connection is known to reach
 * the target (through the proxy), not only s5tund.
 * udp: N UDP sockets (N source ports, so N flows, each its own SOCKS5
 * association in s5tund), each connected to benchsrv's UDP echo port; on
 * each, a datagram is sent until its echo comes back (up to 5 tries).
 *
 * Then one line "held=N ..." on stdout, and the connections stay open
 * until SIGTERM or SIGINT, when they are closed and holder exits 0. Exit 1
 * when one of them failed (the line then says which and why), 2 for a bad
 * command line. Every socket operation is bounded by -t (default 5000 ms).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for fd to be readable; 1 ready, 0 timed out, -1 error. */
static int wait_in(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR) {
  }
  return r;
}

/* One echoed byte on a new TCP connection; the fd, or -1 (why in err). */
static int open_tcp(const struct sockaddr_in *sa, int ms, const char **err) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return *err = "socket", -1;
  struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() */
  char b = 'h';
  if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) < 0) *err = "connect";
  else if (send(fd, &b, 1, MSG_NOSIGNAL) != 1) *err = "send";
  else if (wait_in(fd, ms) <= 0) *err = "no echo in time";
  else if (recv(fd, &b, 1, 0) != 1) *err = "recv";
  else return fd;
  close(fd);
  return -1;
}

/* A UDP flow whose datagram came back; the fd, or -1 (why in err). */
static int open_udp(const struct sockaddr_in *sa, int ms, const char **err) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return *err = "socket", -1;
  if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) < 0) {
    close(fd);
    return *err = "connect", -1;
  }
  /* The first datagram of a flow waits for its association: retried. */
  for (int i = 0; i < 5; i++) {
    char b[16] = "holder";
    if (send(fd, b, sizeof b, 0) < 0) {
      *err = "send";
      break;
    }
    if (wait_in(fd, ms / 5) > 0 && recv(fd, b, sizeof b, 0) > 0) return fd;
    *err = "no echo in time";
  }
  close(fd);
  return -1;
}

static void usage(void) {
  fprintf(stderr, "usage: holder tcp|udp -a ADDR -p PORT -n N [-t MS]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  int udp = strcmp(argv[1], "udp") == 0;
  if (!udp && strcmp(argv[1], "tcp") != 0) usage();
  const char *addr = NULL;
  int port = 0, n = 0, ms = 5000, opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "a:p:n:t:")) != -1) {
    switch (opt) {
      case 'a': addr = optarg; break;
      case 'p': port = atoi(optarg); break;
      case 'n': n = atoi(optarg); break;
      case 't': ms = atoi(optarg); break;
      default: usage();
    }
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (!addr || port <= 0 || port > 65535 || n < 1 || n > 100000 || ms < 5 ||
      inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
    usage();
  /* N sockets and a few more: raise the soft limit as far as allowed. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) perror("holder: setrlimit");
  }
  struct sigaction sig = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sig, NULL);
  sigaction(SIGINT, &sig, NULL);
  int *fds = calloc((size_t)n, sizeof *fds);
  if (!fds) return 1;
  double t0 = now();
  const char *err = "";
  int held = 0;
  while (held < n && !stop) {
    int fd = udp ? open_udp(&sa, ms, &err) : open_tcp(&sa, ms, &err);
    if (fd < 0) break;
    fds[held++] = fd;
  }
  printf("held=%d wanted=%d secs=%.3f", held, n, now() - t0);
  if (held < n) printf(" error=\"%s (%s) at %d\"", err, strerror(errno), held);
  printf("\n");
  fflush(stdout);
  /* Blocked outside sigsuspend(): a signal cannot slip in between the
   * check and the wait. */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, &old);
  while (!stop && held == n) sigsuspend(&old);
  for (int i = 0; i < held; i++) close(fds[i]);
  free(fds);
  return held == n ? 0 : 1;
}
