/* SPDX-License-Identifier: MIT */
/*
 * connrate: the short-connection and latency load client of the s5tund
 * benchmark, talking to benchsrv (see benchsrv.c for the protocol).
 *
 *   connrate rr       -a ADDR -p PORT [-c CONC] [-d SECS] [-q REQ] [-r RESP] [-t MS]
 *       CONC threads, each in a loop until SECS have passed: connect, send a
 *       REQ-byte request, read the RESP-byte response until the server
 *       closes, close. Prints the rate of completed exchanges and the time
 *       to first byte (from the start of connect() to the first response
 *       byte) and the whole exchange, p50/p99.
 *   connrate ka       -a ADDR -p PORT [-c CONC] [-d SECS] [-q REQ] [-r RESP] [-t MS]
 *       Keep-alive requests, to benchsrv's keep-alive port: CONC connections
 *       (default 32, like wrk's usual figure), TCP_NODELAY, all opened
 *       before the clock starts; each thread in a loop until SECS have
 *       passed: send a REQ-byte request, read the RESP-byte response, on the
 *       same connection (one that breaks is counted as an error and
 *       redialled). Prints requests/s and the per-request latency (from the
 *       first byte sent to the last byte received) p50/p99.
 *   connrate pingpong -a ADDR -p PORT [-n ROUNDS] [-s SIZE] [-t MS]
 *       One connection to the echo port, TCP_NODELAY; ROUNDS times: send
 *       SIZE bytes, read SIZE bytes back. Prints the round trip p50/p99.
 *   connrate probe    -a ADDR -p PORT [-w SECS] [-t MS]
 *       One request/response exchange, retried every 100 ms until it
 *       succeeds (exit 0) or SECS have passed (exit 1).
 *
 * Output: one line of key=value pairs on stdout. Exit status: 0 when at
 * least one exchange (rr), one request (ka), all rounds (pingpong) or the
 * probe succeeded, 1 otherwise, 2 for a bad command line. Every socket
 * operation is bounded by -t (default 5000 ms), so it cannot hang.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_storage target;
static socklen_t target_len;
static int timeout_ms = 5000;
static size_t req_size = 64, resp_size = 128;
static double deadline; /* CLOCK_MONOTONIC seconds */
static char last_error[256];
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_error(const char *what, int err) {
  pthread_mutex_lock(&err_lock);
  snprintf(last_error, sizeof last_error, "%s: %s", what, err ? strerror(err) : "short read");
  pthread_mutex_unlock(&err_lock);
}

static int parse_target(const char *addr, int port) {
  memset(&target, 0, sizeof target);
  if (strchr(addr, ':')) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&target;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) return -1;
    target_len = sizeof *s6;
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&target;
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1) return -1;
    target_len = sizeof *s4;
  }
  return 0;
}

/* A connected blocking socket with send/receive (and so connect) timeouts. */
static int dial(void) {
  int fd = socket(target.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    note_error("socket", errno);
    return -1;
  }
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() too */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  while (connect(fd, (struct sockaddr *)&target, target_len) < 0) {
    if (errno == EINTR) continue;
    note_error("connect", errno);
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      note_error("send", errno);
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* One request/response exchange; times in microseconds. 0 ok, -1 error. */
static int exchange(const char *req, uint32_t *ttfb_us, uint32_t *total_us) {
  double t0 = now(), t1 = 0;
  int fd = dial();
  if (fd < 0) return -1;
  if (send_all(fd, req, req_size) < 0) {
    close(fd);
    return -1;
  }
  char buf[16384];
  size_t got = 0;
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      note_error("recv", errno);
      close(fd);
      return -1;
    }
    if (n == 0) break;
    if (got == 0) t1 = now();
    got += (size_t)n;
  }
  close(fd);
  if (got != resp_size) {
    pthread_mutex_lock(&err_lock);
    snprintf(last_error, sizeof last_error, "response of %zu bytes, expected %zu", got, resp_size);
    pthread_mutex_unlock(&err_lock);
    return -1;
  }
  double t2 = now();
  if (got == 0) t1 = t2;
  *ttfb_us = (uint32_t)((t1 - t0) * 1e6);
  *total_us = (uint32_t)((t2 - t0) * 1e6);
  return 0;
}

static void make_request(char *req) {
  /* "<resp_size> " then padding, then '\n', req_size bytes in all. */
  memset(req, 'r', req_size);
  int n = snprintf(req, req_size, "%zu ", resp_size);
  if (n > 0 && (size_t)n < req_size) req[n] = 'r'; /* overwrite snprintf's NUL */
  req[req_size - 1] = '\n';
}

/* A growing array of latencies in microseconds, one per thread (no lock). */
struct samples {
  uint32_t *v;
  size_t n, cap;
};

enum { TTFB, TOTAL }; /* which latency */

struct worker {
  pthread_t tid;
  struct samples lat[2]; /* rr: TTFB and TOTAL; ka: TOTAL only */
  uint64_t errors;
  uint64_t dials; /* ka: connections opened */
};

/* Appends x; -1 when out of memory (the caller stops measuring). */
static int push(struct samples *s, uint32_t x) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4096;
    uint32_t *v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return 0;
}

static void *rr_worker(void *arg) {
  struct worker *w = arg;
  char *req = malloc(req_size);
  if (!req) return NULL;
  make_request(req);
  while (now() < deadline) {
    uint32_t a, b;
    if (exchange(req, &a, &b) < 0) {
      w->errors++;
      usleep(1000); /* do not spin on a refusing target */
      continue;
    }
    if (push(&w->lat[TTFB], a) < 0 || push(&w->lat[TOTAL], b) < 0) break;
  }
  free(req);
  return NULL;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static uint32_t pct(const uint32_t *v, size_t n, double p) {
  if (n == 0) return 0;
  size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return v[rank - 1];
}

/* Latency `which` of every worker in one sorted array (the workers' own
 * arrays are freed); NULL when out of memory. */
static uint32_t *gather(struct worker *ws, int nw, int which, size_t *n) {
  *n = 0;
  for (int i = 0; i < nw; i++) *n += ws[i].lat[which].n;
  uint32_t *all = malloc((*n ? *n : 1) * sizeof *all);
  size_t k = 0;
  for (int i = 0; i < nw; i++) {
    struct samples *s = &ws[i].lat[which];
    if (all) memcpy(all + k, s->v, s->n * sizeof *all);
    k += s->n;
    free(s->v);
    *s = (struct samples){0};
  }
  if (all) qsort(all, *n, sizeof *all, cmp_u32);
  return all;
}

static int run_rr(int conc, double secs) {
  struct worker *ws = calloc((size_t)conc, sizeof *ws);
  if (!ws) return 1;
  double t0 = now();
  deadline = t0 + secs;
  int started = 0;
  for (int i = 0; i < conc; i++) {
    if (pthread_create(&ws[i].tid, NULL, rr_worker, &ws[i]) != 0) break;
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(ws[i].tid, NULL);
  double elapsed = now() - t0;
  uint64_t errors = 0;
  for (int i = 0; i < started; i++) errors += ws[i].errors;
  size_t n;
  uint32_t *ttfb = gather(ws, started, TTFB, &n);
  uint32_t *total = gather(ws, started, TOTAL, &n);
  if (!ttfb || !total) return 1;
  printf(
    "conns=%zu errors=%llu threads=%d secs=%.3f rate=%.1f "
    "ttfb_p50_us=%u ttfb_p99_us=%u total_p50_us=%u total_p99_us=%u",
    n, (unsigned long long)errors, started, elapsed, n / elapsed, pct(ttfb, n, 50), pct(ttfb, n, 99),
    pct(total, n, 50), pct(total, n, 99));
  if (errors) printf(" last_error=\"%s\"", last_error);
  printf("\n");
  free(ttfb);
  free(total);
  free(ws);
  return n > 0 ? 0 : 1;
}

static int recv_all(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      note_error("recv", errno);
      return -1;
    }
    if (r == 0) {
      note_error("recv (peer closed)", 0);
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* ka: the workers open their connection, then wait until every one has
 * (or failed to): the clock starts only then, so connection set-up (slow
 * through a proxy) is not counted in the request rate. */
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int ka_ready, ka_go;

static void ka_wait_start(void) {
  pthread_mutex_lock(&go_lock);
  ka_ready++;
  pthread_cond_broadcast(&go_cond);
  while (!ka_go) pthread_cond_wait(&go_cond, &go_lock);
  pthread_mutex_unlock(&go_lock);
}

/* Opens a connection for a ka worker; -1 (counted) when it fails. */
static int ka_dial(struct worker *w) {
  int fd = dial();
  if (fd < 0) w->errors++;
  else w->dials++;
  return fd;
}

static void *ka_worker(void *arg) {
  struct worker *w = arg;
  char *req = malloc(req_size), *resp = malloc(resp_size ? resp_size : 1);
  int fd = (req && resp) ? ka_dial(w) : -1;
  ka_wait_start();
  if (!req || !resp) goto out;
  make_request(req);
  while (now() < deadline) {
    if (fd < 0) {
      usleep(1000); /* do not spin on a refusing target */
      fd = ka_dial(w);
      continue;
    }
    double t0 = now();
    if (send_all(fd, req, req_size) < 0 || recv_all(fd, resp, resp_size) < 0) {
      /* Broken: the next request goes on a new connection. */
      w->errors++;
      close(fd);
      fd = -1;
      continue;
    }
    if (push(&w->lat[TOTAL], (uint32_t)((now() - t0) * 1e6)) < 0) break;
  }
out:
  if (fd >= 0) close(fd);
  free(req);
  free(resp);
  return NULL;
}

static int run_ka(int conc, double secs) {
  struct worker *ws = calloc((size_t)conc, sizeof *ws);
  if (!ws) return 1;
  int started = 0;
  for (int i = 0; i < conc; i++) {
    if (pthread_create(&ws[i].tid, NULL, ka_worker, &ws[i]) != 0) break;
    started++;
  }
  /* Every dial is bounded by -t, so this wait is too. */
  pthread_mutex_lock(&go_lock);
  while (ka_ready < started) pthread_cond_wait(&go_cond, &go_lock);
  double t0 = now();
  deadline = t0 + secs;
  ka_go = 1;
  pthread_cond_broadcast(&go_cond);
  pthread_mutex_unlock(&go_lock);
  for (int i = 0; i < started; i++) pthread_join(ws[i].tid, NULL);
  double elapsed = now() - t0;
  uint64_t errors = 0, dials = 0;
  for (int i = 0; i < started; i++) {
    errors += ws[i].errors;
    dials += ws[i].dials;
  }
  size_t n;
  uint32_t *lat = gather(ws, started, TOTAL, &n);
  if (!lat) return 1;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += lat[i];
  printf(
    "requests=%zu errors=%llu conns=%llu threads=%d secs=%.3f rate=%.1f "
    "lat_p50_us=%u lat_p99_us=%u lat_mean_us=%.1f",
    n, (unsigned long long)errors, (unsigned long long)dials, started, elapsed, n / elapsed, pct(lat, n, 50),
    pct(lat, n, 99), n ? (double)sum / n : 0.0);
  if (errors) printf(" last_error=\"%s\"", last_error);
  printf("\n");
  free(lat);
  free(ws);
  return n > 0 ? 0 : 1;
}

static int run_pingpong(int rounds, size_t size) {
  int warmup = rounds / 20 + 1;
  char *out = malloc(size), *in = malloc(size);
  uint32_t *rtt = malloc((size_t)rounds * sizeof *rtt);
  if (!out || !in || !rtt) return 1;
  for (size_t i = 0; i < size; i++) out[i] = (char)('a' + i % 26);
  int fd = dial();
  if (fd < 0) {
    printf("rounds=0 error=\"%s\"\n", last_error);
    return 1;
  }
  int done = 0;
  for (int i = -warmup; i < rounds; i++) {
    double t0 = now();
    if (send_all(fd, out, size) < 0 || recv_all(fd, in, size) < 0) break;
    double t1 = now();
    if (memcmp(in, out, size) != 0) {
      snprintf(last_error, sizeof last_error, "echo mismatch");
      break;
    }
    if (i >= 0) rtt[done++] = (uint32_t)((t1 - t0) * 1e6);
  }
  close(fd);
  uint64_t sum = 0;
  for (int i = 0; i < done; i++) sum += rtt[i];
  qsort(rtt, (size_t)done, sizeof *rtt, cmp_u32);
  printf("rounds=%d size=%zu rtt_p50_us=%u rtt_p99_us=%u rtt_mean_us=%.1f rtt_min_us=%u rtt_max_us=%u", done,
         size, pct(rtt, (size_t)done, 50), pct(rtt, (size_t)done, 99), done ? (double)sum / done : 0.0,
         done ? rtt[0] : 0, done ? rtt[done - 1] : 0);
  if (done < rounds) printf(" error=\"%s\"", last_error);
  printf("\n");
  free(out);
  free(in);
  free(rtt);
  return done == rounds ? 0 : 1;
}

static int run_probe(double secs) {
  char *req = malloc(req_size);
  if (!req) return 1;
  make_request(req);
  double end = now() + secs;
  int tries = 0;
  for (;;) {
    uint32_t a, b;
    tries++;
    if (exchange(req, &a, &b) == 0) {
      printf("probe=ok tries=%d ttfb_us=%u\n", tries, a);
      free(req);
      return 0;
    }
    if (now() >= end) break;
    usleep(100000);
  }
  printf("probe=failed tries=%d error=\"%s\"\n", tries, last_error);
  free(req);
  return 1;
}

static void usage(void) {
  fprintf(stderr,
          "usage: connrate rr       -a ADDR -p PORT [-c CONC] [-d SECS] [-q REQ] [-r RESP] [-t MS]\n"
          "       connrate ka       -a ADDR -p PORT [-c CONC] [-d SECS] [-q REQ] [-r RESP] [-t MS]\n"
          "       connrate pingpong -a ADDR -p PORT [-n ROUNDS] [-s SIZE] [-t MS]\n"
          "       connrate probe    -a ADDR -p PORT [-w SECS] [-t MS]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  const char *mode = argv[1];
  const char *addr = NULL;
  int port = 0, conc = -1, rounds = 2000, opt;
  double secs = 5, wait_s = 10;
  size_t size = 64;
  optind = 2;
  while ((opt = getopt(argc, argv, "a:p:c:d:q:r:t:n:s:w:")) != -1) {
    switch (opt) {
      case 'a': addr = optarg; break;
      case 'p': port = atoi(optarg); break;
      case 'c': conc = atoi(optarg); break;
      case 'd': secs = atof(optarg); break;
      case 'q': req_size = (size_t)atol(optarg); break;
      case 'r': resp_size = (size_t)atol(optarg); break;
      case 't': timeout_ms = atoi(optarg); break;
      case 'n': rounds = atoi(optarg); break;
      case 's': size = (size_t)atol(optarg); break;
      case 'w': wait_s = atof(optarg); break;
      default: usage();
    }
  }
  if (conc == -1) conc = strcmp(mode, "ka") == 0 ? 32 : 16;
  if (!addr || port <= 0 || port > 65535 || parse_target(addr, port) < 0) usage();
  if (conc < 1 || conc > 4096 || secs <= 0 || req_size < 16 || req_size > 65536 || resp_size > (16u << 20) ||
      timeout_ms < 1 || rounds < 1 || rounds > 10000000 || size < 1 || size > (1u << 20))
    usage();
  signal(SIGPIPE, SIG_IGN);
  if (strcmp(mode, "rr") == 0) return run_rr(conc, secs);
  if (strcmp(mode, "ka") == 0) return run_ka(conc, secs);
  if (strcmp(mode, "pingpong") == 0) return run_pingpong(rounds, size);
  if (strcmp(mode, "probe") == 0) return run_probe(wait_s);
  usage();
  return 2;
}
