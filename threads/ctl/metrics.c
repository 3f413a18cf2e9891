/* SPDX-License-Identifier: MIT */
/* The Prometheus endpoint (see metrics.h): the document, then the listener
 * and its connections.
 *
 * The document has one family per counter of core/shared/stats.h, each sample
 * labelled with its queue and no total series (sum() in PromQL gives it,
 * and equals the totals of --stats --json). A counter NAME is
 * s5tund_NAME_total (tcp_total is s5tund_tcp_total: "_total" once); the
 * counts of what is open now, tcp_active and udp_active, are gauges named
 * s5tund_NAME. Besides: s5tund_info{version,mode} 1, s5tund_queues,
 * s5tund_start_time_seconds, the reloads (s5tund_reloads_total,
 * s5tund_reload_failures_total, s5tund_last_reload_timestamp_seconds) and
 * s5tund_queue_ready{queue}.
 *
 * The connections are a ctl_server's (ctl_server.h), as the stats
 * socket's: this file says only what a request is (http.c) and what
 * answers it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "threads/ctl/http.h"
#include "threads/ctl/ctl_server.h"
#include "base/log.h"
#include "threads/ctl/metrics.h"
#include "threads/ctl/render.h"
#include "ini/sockaddr.h"

#ifndef S5_VERSION
#error "S5_VERSION must be defined by the build (see threads/CMakeLists.txt)"
#endif

/* ---- the document ---- */

/* Every counter of core/shared/stats.h, with what it means. */
enum { S5_STATS_COUNT, S5_STATS_GAUGE };
static const struct {
  const char *name;
  size_t offset;
  int gauge;
  const char *help;
} counters[] = {
#define S5_METRICS_COUNTER(n, kind, doc) {#n, offsetof(struct s5_queue_stats, n), S5_STATS_##kind, doc},
  S5_STATS_COUNTERS(S5_METRICS_COUNTER)
#undef S5_METRICS_COUNTER
};

#define COUNTER_COUNT (sizeof counters / sizeof counters[0])

/* A growing text buffer; a failed allocation sticks (text becomes NULL). */
struct text {
  char *p;
  size_t len, cap;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...) {
  for (int pass = 0; pass < 2 && t->p != NULL; pass++) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) break;
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap * 2 + (size_t)n;
    char *bigger = realloc(t->p, cap);
    if (bigger == NULL) break;
    t->p = bigger;
    t->cap = cap;
  }
  free(t->p);
  t->p = NULL;
}

static void family_header(struct text *t, const char *name, const char *type, const char *help) {
  text_add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void add_counters(struct text *t, const struct s5_queue_stats *q, unsigned nq) {
  for (size_t c = 0; c < COUNTER_COUNT; c++) {
    const char *name = counters[c].name;
    bool gauge = counters[c].gauge;
    size_t base = strlen(name);
    if (!gauge && base > 6 && strcmp(name + base - 6, "_total") == 0) base -= 6;
    char metric[96];
    snprintf(metric, sizeof metric, "s5tund_%.*s%s", (int)base, name, gauge ? "" : "_total");
    family_header(t, metric, gauge ? "gauge" : "counter", counters[c].help);
    for (unsigned i = 0; i < nq; i++) {
      uint64_t v;
      memcpy(&v, (const char *)&q[i] + counters[c].offset, sizeof v);
      text_add(t, "%s{queue=\"%u\"} %llu\n", metric, i, (unsigned long long)v);
    }
  }
}

char *s5_metrics_render(const struct s5_stats_area *stats, const struct s5_config *cfg, size_t *len) {
  unsigned nq = stats->queues;
  struct s5_queue_stats *q = calloc(nq > 0 ? nq : 1, sizeof *q);
  struct text t = {malloc(16384), 0, 16384};
  if (q == NULL || t.p == NULL) {
    free(q);
    free(t.p);
    return NULL;
  }
  /* One copy per queue first, so that each queue's samples are of one moment. */
  for (unsigned i = 0; i < nq; i++) s5_stats_read(stats, i, &q[i]);
  family_header(&t, "s5tund_info", "gauge", "The version and run mode of s5tund; always 1.");
  text_add(&t, "s5tund_info{version=\"%s\",mode=\"%s\"} 1\n", S5_VERSION,
           cfg->mode == S5_MODE_THREAD ? "thread" : "process");
  family_header(&t, "s5tund_queues", "gauge", "TUN queues, one worker each.");
  text_add(&t, "s5tund_queues %u\n", nq);
  family_header(&t, "s5tund_start_time_seconds", "gauge",
                "When s5tund started, seconds since the Unix epoch.");
  text_add(&t, "s5tund_start_time_seconds %llu\n", (unsigned long long)stats->started_unix);
  family_header(&t, "s5tund_reloads_total", "counter", "Configuration reloads applied (SIGHUP).");
  text_add(&t, "s5tund_reloads_total %llu\n", (unsigned long long)S5_STAT_GET(stats, reloads));
  family_header(&t, "s5tund_reload_failures_total", "counter",
                "Reloads refused: the file did not load or check; the configuration stayed.");
  text_add(&t, "s5tund_reload_failures_total %llu\n",
           (unsigned long long)S5_STAT_GET(stats, reload_failures));
  family_header(&t, "s5tund_last_reload_timestamp_seconds", "gauge",
                "When the last reload was applied, seconds since the Unix epoch; 0 = none yet.");
  text_add(&t, "s5tund_last_reload_timestamp_seconds %llu\n",
           (unsigned long long)S5_STAT_GET(stats, last_reload_unix));
  family_header(
    &t, "s5tund_tun_tx_dropped_total", "counter",
    "Packets the kernel dropped toward s5tund because the device's queue was full ([tun] txqueuelen).");
  text_add(&t, "s5tund_tun_tx_dropped_total %llu\n", (unsigned long long)S5_STAT_GET(stats, tun_tx_dropped));
  family_header(&t, "s5tund_queue_ready", "gauge", "1 while the queue's worker serves, else 0.");
  for (unsigned i = 0; i < nq; i++)
    text_add(&t, "s5tund_queue_ready{queue=\"%u\"} %u\n", i, q[i].ready ? 1u : 0u);
  add_counters(&t, q, nq);
  for (size_t i = 0; i < s5_render_part_count; i++) {
    size_t need = s5_render_parts[i]->prom(NULL, 0);
    char *part = need > 0 ? malloc(need + 1) : NULL;
    if (part != NULL) {
      s5_render_parts[i]->prom(part, need + 1);
      text_add(&t, "%s", part);
    }
    free(part);
  }
  free(q);
  *len = t.len;
  return t.p;
}

/* ---- connections ---- */

/* ---- the connections (ctl_server.h) ---- */

static char *answer(const struct s5_metrics_server *m, enum s5_http_result r, size_t *len) {
  char *body = NULL;
  size_t blen = 0;
  char small[64];
  if (r == S5_HTTP_OK) body = s5_metrics_render(m->stats, m->cfg, &blen);
  if (body == NULL) {
    if (r == S5_HTTP_OK) r = 0; /* out of memory: said as a 500 */
    blen = (size_t)snprintf(small, sizeof small, "%d %s\n", r ? (int)r : 500, s5_http_reason(r));
  }
  char head[256];
  int hlen =
    snprintf(head, sizeof head,
             "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
             r ? (int)r : 500, s5_http_reason(r),
             body != NULL ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8", blen,
             r == S5_HTTP_METHOD_NOT_ALLOWED ? "Allow: GET\r\n" : "");
  char *out = malloc((size_t)hlen + blen);
  if (out != NULL) {
    memcpy(out, head, (size_t)hlen);
    memcpy(out + hlen, body != NULL ? body : small, blen);
    *len = (size_t)hlen + blen;
  }
  free(body);
  return out;
}

/* The ctl_server's question: is the request complete, and what answers it. */
static enum s5_ctl_verdict metrics_request(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool eof) {
  struct s5_metrics_server *m = s->owner;
  enum s5_http_result r = s5_http_parse(c->req, c->got, sizeof c->req);
  if (r == S5_HTTP_NEED_MORE) return S5_CTL_MORE; /* at eof: closed as incomplete */
  (void)eof;
  c->out = answer(m, r, &c->out_len);
  if (r != S5_HTTP_OK) s5_debug("metrics: %s: answered %d %s", c->peer, (int)r, s5_http_reason(r));
  return S5_CTL_ANSWER;
}

static enum s5_ctl_verdict metrics_pending(struct s5_ctl_server *s, struct s5_ctl_conn *c, bool late) {
  (void)s, (void)c, (void)late;
  return S5_CTL_ANSWER; /* never asked: metrics answers at once */
}

static const struct s5_ctl_ops metrics_ops = {metrics_request, metrics_pending};

/* ---- the listener ---- */

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
  const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(a)) return a->s6_addr[12] == 127;
  return IN6_IS_ADDR_LOOPBACK(a);
}

int s5_metrics_open(struct s5_metrics_server *m, const struct s5_config *cfg,
                    const struct s5_stats_area *stats) {
  const struct sockaddr_storage *ss = &cfg->stats.http;
  char where[INET6_ADDRSTRLEN + 16];
  memset(m, 0, sizeof *m);
  m->ctl.fd = -1;
  m->cfg = cfg;
  m->stats = stats;
  if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6) return 0;
  s5_ctl_sockaddr_text(ss, where, sizeof where);
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  socklen_t len = s5_sockaddr_len(ss);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 64) < 0) {
    s5_error("[stats] http %s: %s", where, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (s5_ctl_init(&m->ctl, fd, "metrics", &metrics_ops, m) < 0) {
    s5_error("[stats] http %s: out of memory", where);
    close(fd);
    return -1;
  }
  m->ctl.deadline_ms = S5_METRICS_DEADLINE_MS;
  m->ctl.reserve_closes = true;
  if (!is_loopback(ss))
    s5_warn(
      "[stats] http %s is not a loopback address: whoever reaches it reads the counters "
      "(no authentication; 127.0.0.1 or [::1] keep it on this host)",
      where);
  s5_info("metrics: http://%s/metrics", where);
  return 0;
}

unsigned s5_metrics_pollfds(const struct s5_metrics_server *m, struct pollfd *pfd) {
  return s5_ctl_pollfds(&m->ctl, pfd);
}

int s5_metrics_wait_ms(const struct s5_metrics_server *m) { return s5_ctl_wait_ms(&m->ctl); }

void s5_metrics_serve(struct s5_metrics_server *m, const struct pollfd *pfd, unsigned n) {
  s5_ctl_serve(&m->ctl, pfd, n);
}

void s5_metrics_close(struct s5_metrics_server *m) { s5_ctl_close(&m->ctl); }
