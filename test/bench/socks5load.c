/* SPDX-License-Identifier: MIT */
/*
 * socks5load: a SOCKS5 client that loads a proxy with short connections,
 * on one libuv loop, so that the bench can measure the rate the proxy
 * itself serves to a client that speaks SOCKS5 (the ceiling of what
 * s5tund can reach through it), beside connrate's rate through the tunnel.
 *
 *   socks5load -s PROXY_ADDR -P PROXY_PORT -a TARGET_ADDR -p TARGET_PORT
 *              [-c CONC] [-d SECS] [-q REQ] [-r RESP] [-t MS] [-U USER -W PASS]
 *
 * CONC clients, each in a loop until SECS have passed: connect to the
 * proxy, greet it (no authentication, or USER and PASS with -U/-W), CONNECT
 * to the target, send a REQ-byte request line asking for RESP bytes
 * (benchsrv's request/response port), read the response until the target
 * closes, close. A client waits for each reply
 * before the next message, as an ordinary SOCKS5 client does. Prints one
 * line like connrate rr's: conns, errors, secs, rate, time to first byte
 * (from the start of the connect to the first response byte) and the
 * whole exchange, p50 and p99. Every exchange is bounded by -t (default
 * 5000 ms). Exit status 0 when at least one exchange succeeded, 1
 * otherwise, 2 for a bad command line.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#define MAX_CONC 4096
#define SAMPLES_MAX (1u << 22)

enum step { GREETING, AUTH, REPLY, RESPONSE };

struct client {
  uv_tcp_t sock;
  uv_connect_t connect_req;
  uv_write_t write_req;
  uv_timer_t timer;
  enum step step;
  uint8_t in[512];
  size_t in_len;
  size_t got;      /* response bytes */
  uint64_t t0, t1; /* ns: connect started, first response byte */
  int closing;
};

static uv_loop_t *loop;
static struct sockaddr_storage proxy, target;
static const char *user, *pass;
static size_t req_size = 64, resp_size = 128;
static uint64_t timeout_ms = 5000, deadline_ns;
static uint8_t request[65536];
static uint32_t *ttfb, *total;
static size_t n_ok;
static uint64_t n_err;
static char last_error[160];

static void client_start(struct client *c);

static int parse_addr(const char *text, int port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (uv_ip4_addr(text, port, (struct sockaddr_in *)ss) == 0) return 0;
  return uv_ip6_addr(text, port, (struct sockaddr_in6 *)ss);
}

static void client_closed(uv_handle_t *h) {
  struct client *c = h->data;
  c->closing = 0;
  if (uv_hrtime() < deadline_ns) client_start(c);
  else uv_close((uv_handle_t *)&c->timer, NULL);
}

/* The exchange is over (ok or not): the socket closes, and the client
 * starts again while time is left. */
static void client_end(struct client *c, const char *error) {
  if (c->closing) return;
  c->closing = 1;
  uv_timer_stop(&c->timer);
  if (error != NULL) {
    n_err++;
    snprintf(last_error, sizeof last_error, "%s", error);
  } else if (n_ok < SAMPLES_MAX) {
    uint64_t end = uv_hrtime();
    ttfb[n_ok] = (uint32_t)((c->t1 - c->t0) / 1000);
    total[n_ok] = (uint32_t)((end - c->t0) / 1000);
    n_ok++;
  }
  uv_close((uv_handle_t *)&c->sock, client_closed);
}

static void client_timed_out(uv_timer_t *t) { client_end(t->data, "timed out"); }

static void client_written(uv_write_t *req, int status) {
  if (status < 0 && status != UV_ECANCELED) client_end(req->data, uv_strerror(status));
}

static void client_send(struct client *c, const uint8_t *msg, size_t len) {
  uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
  c->write_req.data = c;
  int r = uv_write(&c->write_req, (uv_stream_t *)&c->sock, &b, 1, client_written);
  if (r < 0) client_end(c, uv_strerror(r));
}

static void client_send_connect(struct client *c) {
  static uint8_t msg[22];
  size_t len;
  msg[0] = 5, msg[1] = 1, msg[2] = 0;
  if (target.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&target;
    msg[3] = 4;
    memcpy(msg + 4, &a->sin6_addr, 16);
    memcpy(msg + 20, &a->sin6_port, 2);
    len = 22;
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&target;
    msg[3] = 1;
    memcpy(msg + 4, &a->sin_addr, 4);
    memcpy(msg + 8, &a->sin_port, 2);
    len = 10;
  }
  c->step = REPLY;
  client_send(c, msg, len);
}

/* One whole reply of the current step at the start of in[]: its length,
 * 0 when more must come, -1 when it refuses. */
static int reply_len(const struct client *c) {
  if (c->step == GREETING || c->step == AUTH) return c->in_len < 2 ? 0 : 2;
  if (c->in_len < 5) return 0;
  size_t need = c->in[3] == 1 ? 10 : c->in[3] == 4 ? 22 : c->in[3] == 3 ? 7u + c->in[4] : 0;
  if (need == 0) return -1;
  return c->in_len < need ? 0 : (int)need;
}

static void client_reply(struct client *c) {
  int n = reply_len(c);
  if (n == 0) return;
  if (n < 0) return client_end(c, "bad reply");
  const uint8_t *r = c->in;
  if (c->step == GREETING) {
    if (r[0] != 5 || (r[1] != 0 && !(r[1] == 2 && user != NULL))) return client_end(c, "method refused");
    if (r[1] == 2) {
      static uint8_t msg[515];
      size_t ul = strlen(user), pl = strlen(pass);
      msg[0] = 1, msg[1] = (uint8_t)ul;
      memcpy(msg + 2, user, ul);
      msg[2 + ul] = (uint8_t)pl;
      memcpy(msg + 3 + ul, pass, pl);
      c->step = AUTH;
      client_send(c, msg, 3 + ul + pl);
    } else client_send_connect(c);
  } else if (c->step == AUTH) {
    if (r[1] != 0) return client_end(c, "authentication refused");
    client_send_connect(c);
  } else {
    if (r[1] != 0) return client_end(c, "CONNECT refused");
    c->step = RESPONSE;
    client_send(c, request, req_size);
  }
  memmove(c->in, c->in + n, c->in_len - (size_t)n);
  c->in_len -= (size_t)n;
}

static void client_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  struct client *c = h->data;
  static char sink[65536];
  if (c->step == RESPONSE) *buf = uv_buf_init(sink, sizeof sink);
  else *buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(sizeof c->in - c->in_len));
}

static void client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  struct client *c = s->data;
  if (nread == 0 || c->closing) return;
  if (nread == UV_EOF && c->step == RESPONSE)
    return client_end(c, c->got >= resp_size ? NULL : "short response");
  if (nread < 0) return client_end(c, uv_strerror((int)nread));
  if (c->step == RESPONSE) {
    if (c->got == 0) c->t1 = uv_hrtime();
    c->got += (size_t)nread;
    return;
  }
  c->in_len += (size_t)nread;
  client_reply(c);
}

static void client_connected(uv_connect_t *req, int status) {
  struct client *c = req->data;
  if (status < 0) return client_end(c, uv_strerror(status));
  uv_tcp_nodelay(&c->sock, 1);
  int r = uv_read_start((uv_stream_t *)&c->sock, client_alloc, client_read);
  if (r < 0) return client_end(c, uv_strerror(r));
  static uint8_t noauth[] = {5, 1, 0}, both[] = {5, 2, 0, 2};
  c->step = GREETING;
  if (user != NULL) client_send(c, both, sizeof both);
  else client_send(c, noauth, sizeof noauth);
}

static void client_start(struct client *c) {
  c->in_len = c->got = 0;
  c->t0 = uv_hrtime();
  uv_tcp_init(loop, &c->sock);
  c->sock.data = c;
  c->connect_req.data = c;
  uv_timer_start(&c->timer, client_timed_out, timeout_ms, 0);
  int r = uv_tcp_connect(&c->connect_req, &c->sock, (const struct sockaddr *)&proxy, client_connected);
  if (r < 0) client_end(c, uv_strerror(r));
}

static int by_value(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static uint32_t pct(uint32_t *v, size_t n, int p) { return n == 0 ? 0 : v[(n - 1) * (size_t)p / 100]; }

static int usage(void) {
  fprintf(stderr,
          "usage: socks5load -s PROXY_ADDR -P PROXY_PORT -a TARGET_ADDR -p TARGET_PORT [-c CONC] "
          "[-d SECS] [-q REQ] [-r RESP] [-t MS] [-U USER -W PASS]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *paddr = NULL, *taddr = NULL;
  int pport = 0, tport = 0, conc = 32, opt;
  double secs = 5;
  while ((opt = getopt(argc, argv, "s:P:a:p:c:d:q:r:t:U:W:")) != -1) {
    switch (opt) {
      case 's': paddr = optarg; break;
      case 'P': pport = atoi(optarg); break;
      case 'a': taddr = optarg; break;
      case 'p': tport = atoi(optarg); break;
      case 'c': conc = atoi(optarg); break;
      case 'd': secs = atof(optarg); break;
      case 'q': req_size = (size_t)atol(optarg); break;
      case 'r': resp_size = (size_t)atol(optarg); break;
      case 't': timeout_ms = (uint64_t)atol(optarg); break;
      case 'U': user = optarg; break;
      case 'W': pass = optarg; break;
      default: return usage();
    }
  }
  if (paddr == NULL || taddr == NULL || parse_addr(paddr, pport, &proxy) != 0 ||
      parse_addr(taddr, tport, &target) != 0 || conc < 1 || conc > MAX_CONC || secs <= 0 ||
      req_size > sizeof request || (user != NULL) != (pass != NULL) ||
      (user != NULL && (strlen(user) > 255 || strlen(pass) > 255)))
    return usage();
  /* benchsrv's request line: "<RESP> " padded to REQ bytes, then '\n' */
  int head = snprintf((char *)request, sizeof request, "%zu ", resp_size);
  if (head < 0 || (size_t)head + 1 > req_size) return usage();
  memset(request + head, ' ', req_size - (size_t)head - 1);
  request[req_size - 1] = '\n';
  ttfb = malloc(SAMPLES_MAX * sizeof *ttfb);
  total = malloc(SAMPLES_MAX * sizeof *total);
  struct client *cs = calloc((size_t)conc, sizeof *cs);
  if (ttfb == NULL || total == NULL || cs == NULL) return 1;
  loop = uv_default_loop();
  uint64_t t0 = uv_hrtime();
  deadline_ns = t0 + (uint64_t)(secs * 1e9);
  for (int i = 0; i < conc; i++) {
    uv_timer_init(loop, &cs[i].timer);
    cs[i].timer.data = &cs[i];
    client_start(&cs[i]);
  }
  uv_run(loop, UV_RUN_DEFAULT);
  double elapsed = (double)(uv_hrtime() - t0) / 1e9;
  qsort(ttfb, n_ok, sizeof *ttfb, by_value);
  qsort(total, n_ok, sizeof *total, by_value);
  printf(
    "conns=%zu errors=%llu clients=%d secs=%.3f rate=%.1f ttfb_p50_us=%u ttfb_p99_us=%u "
    "total_p50_us=%u total_p99_us=%u",
    n_ok, (unsigned long long)n_err, conc, elapsed, (double)n_ok / elapsed, pct(ttfb, n_ok, 50),
    pct(ttfb, n_ok, 99), pct(total, n_ok, 50), pct(total, n_ok, 99));
  if (n_err) printf(" last_error=\"%s\"", last_error);
  printf("\n");
  return n_ok > 0 ? 0 : 1;
}
