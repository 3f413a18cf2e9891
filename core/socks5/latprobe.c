/* SPDX-License-Identifier: MIT */
/* The latency probes of [group] strategy = fastest (see latprobe.h). Each
 * probe is a proxy client (proxy.c) on the member doing a CONNECT to the
 * probe's HOST:PORT (by name when HOST is one); `connect` is timed to the
 * grant, `http` goes on over the granted connection with a GET and is
 * timed to the first line of the response. A timer of its own ends it
 * after probe-timeout. */
#include "socks5/latprobe.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ctx/wctx.h"
#include "ini/config.h"
#include "ini/sockaddr.h"
#include "shared/uplat.h"
#include "socks5/proxy.h"

struct s5_latprobe_probe {
  struct s5_proxy proxy; /* CONNECT; owner is the probe */
  uv_timer_t timer;      /* probe-timeout */
  struct s5_latprobe *lp;
  struct s5_latprobe_probe *next;
  const struct s5_config *cfg; /* held while the probe lives */
  const struct s5_group_cfg *g;
  struct s5_target target;
  unsigned index; /* the member, in cfg->upstreams */
  uint64_t began; /* uv_hrtime() at the start */
  char line[256]; /* http: the response so far, to its first line */
  size_t line_len;
  int handles; /* the proxy client and the timer: freed when both closed */
  int ended;
};

static void latprobe_arm(struct s5_latprobe *l);

static void probe_closed(void *owner) {
  struct s5_latprobe_probe *pr = owner;
  if (--pr->handles > 0) return;
  s5_wctx_cfg_release(pr->lp->w, pr->cfg);
  free(pr);
}

static void probe_timer_closed(uv_handle_t *h) { probe_closed(h->data); }

/* Out of the list, its handles closed. Once. */
static void probe_end(struct s5_latprobe_probe *pr) {
  if (pr->ended) return;
  pr->ended = 1;
  struct s5_latprobe_probe **at = &pr->lp->probes;
  while (*at != NULL && *at != pr) at = &(*at)->next;
  if (*at == pr) *at = pr->next;
  pr->lp->busy &= ~(1ull << pr->cfg->upstreams[pr->index].slot);
  uv_close((uv_handle_t *)&pr->timer, probe_timer_closed);
  s5_proxy_close(&pr->proxy, 1);
}

/* Every fastest group of the worker's configuration chooses again. */
static void groups_choose(struct s5_latprobe *l) {
  struct s5_uptab *t = s5_uptab();
  const struct s5_config *cfg = l->w->cfg;
  for (unsigned g = 0; t != NULL && g < cfg->n_groups; g++) {
    const struct s5_group_cfg *gc = &cfg->groups[g];
    if (gc->strategy != S5_BALANCE_FASTEST || strcmp(t->g[g].name, gc->name) != 0) continue;
    uint64_t lat[S5_UPSTREAMS_MAX];
    uint8_t usable[S5_UPSTREAMS_MAX];
    int now = s5_uptab_group_member(t, cfg, g), cur = -1;
    for (unsigned j = 0; j < gc->n_members; j++) {
      const struct s5_up_slot *u = &t->u[cfg->upstreams[gc->members[j]].slot];
      lat[j] = __atomic_load_n(&u->lat_avg_us, __ATOMIC_RELAXED);
      usable[j] = __atomic_load_n(&u->state, __ATOMIC_RELAXED) == S5_UP_ACTIVE &&
                  __atomic_load_n(&u->down, __ATOMIC_RELAXED) == 0;
      if (gc->members[j] == now) cur = (int)j;
    }
    int next = s5_uplat_choose(lat, usable, gc->n_members, cur, gc->tolerance * 1000ull);
    if (next < 0 || next == cur) continue;
    s5_uptab_group_choose(t, g, cfg->upstreams[gc->members[next]].slot);
    if (cur < 0)
      s5_info("group %s: fastest is now %s (%.1f ms; was none)", gc->name,
              cfg->upstreams[gc->members[next]].name, lat[next] / 1000.0);
    else
      s5_info("group %s: fastest is now %s (%.1f ms; was %s %.1f ms%s)", gc->name,
              cfg->upstreams[gc->members[next]].name, lat[next] / 1000.0,
              cfg->upstreams[gc->members[cur]].name, lat[cur] / 1000.0,
              !usable[cur]    ? ", down"
              : lat[cur] == 0 ? ", its probe failed"
                              : "");
  }
}

static void probe_sample(struct s5_latprobe_probe *pr) {
  uint64_t us = (uv_hrtime() - pr->began) / 1000;
  unsigned slot = pr->cfg->upstreams[pr->index].slot;
  uint64_t avg = 0, *last = pr->lp->last[slot];
  uint64_t sample = s5_uplat_median3(us, last[0], last[1]);
  last[1] = last[0];
  last[0] = us;
  if (s5_uptab() != NULL) {
    s5_uptab_latency(s5_uptab(), slot, us, sample);
    avg = __atomic_load_n(&s5_uptab()->u[slot].lat_avg_us, __ATOMIC_RELAXED);
  }
  s5_debug("upstream %s: probe %.1f ms, smoothed %.1f ms", pr->cfg->upstreams[pr->index].name, us / 1000.0,
           avg / 1000.0);
  groups_choose(pr->lp);
  probe_end(pr);
}

static void probe_failed(struct s5_latprobe_probe *pr, const char *why) {
  const struct s5_upstream_cfg *up = &pr->cfg->upstreams[pr->index];
  struct s5_uptab *t = s5_uptab();
  /* said at info when it was measured (a change), else at debug */
  if (t != NULL && __atomic_load_n(&t->u[up->slot].lat_avg_us, __ATOMIC_RELAXED) != 0)
    s5_info("upstream %s: latency probe failed, unmeasured until one answers: %s", up->name, why);
  else s5_debug("upstream %s: latency probe failed: %s", up->name, why);
  if (t != NULL) s5_uptab_latency_lost(t, up->slot);
  pr->lp->last[up->slot][0] = pr->lp->last[up->slot][1] = 0; /* a fresh start */
  groups_choose(pr->lp);
  probe_end(pr);
}

static void http_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  struct s5_latprobe_probe *pr = h->data;
  (void)hint;
  *buf = uv_buf_init(pr->line + pr->line_len, (unsigned)(sizeof pr->line - 1 - pr->line_len));
}

/* The status line is in when line holds a "\r\n" (or line is full). */
static int http_line(struct s5_latprobe_probe *pr) {
  pr->line[pr->line_len] = '\0';
  if (strstr(pr->line, "\r\n") == NULL && pr->line_len < sizeof pr->line - 1) return 0;
  if (strncmp(pr->line, "HTTP/", 5) == 0) probe_sample(pr);
  else probe_failed(pr, "the probe's answer is not an HTTP status line");
  return 1;
}

static void http_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  struct s5_latprobe_probe *pr = s->data;
  (void)buf;
  if (pr->ended) return;
  if (nread < 0) {
    char why[96];
    snprintf(why, sizeof why, "the connection ended before the status line: %s", uv_strerror((int)nread));
    probe_failed(pr, why);
    return;
  }
  pr->line_len += (size_t)nread;
  http_line(pr);
}

/* http: the GET on the granted connection, then its status line. */
static void http_start(struct s5_latprobe_probe *pr) {
  char req[640];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                   pr->g->probe_path, pr->g->probe_host);
  uv_buf_t b = uv_buf_init(req, (unsigned)n);
  int r = n > 0 && (size_t)n < sizeof req ? uv_try_write((uv_stream_t *)&pr->proxy.sock, &b, 1) : UV_E2BIG;
  if (r != n) {
    char why[96];
    snprintf(why, sizeof why, "the GET not written: %s", r < 0 ? uv_strerror(r) : "partly");
    probe_failed(pr, why);
    return;
  }
  size_t take = pr->proxy.in_len < sizeof pr->line - 1 ? pr->proxy.in_len : sizeof pr->line - 1;
  memcpy(pr->line, pr->proxy.in, take); /* what came beyond the proxy's reply */
  pr->line_len = take;
  if (http_line(pr)) return;
  r = uv_read_start((uv_stream_t *)&pr->proxy.sock, http_alloc, http_read);
  if (r < 0) probe_failed(pr, uv_strerror(r));
}

static void probe_result(void *owner, const struct s5_proxy_result *r) {
  struct s5_latprobe_probe *pr = owner;
  if (r->outcome != S5_PROXY_GRANTED) probe_failed(pr, r->why);
  else if (pr->g->probe == S5_PROBE_HTTP) http_start(pr);
  else probe_sample(pr);
}

static void probe_timed_out(uv_timer_t *timer) {
  probe_failed(timer->data, "no answer within probe-timeout");
}

static const struct s5_proxy_ops probe_ops = {
  .cmd = S5_PROXY_CONNECT, .result = probe_result, .closed = probe_closed};

/* The probe's HOST:PORT: an address, else a name (the proxy resolves it). */
static void probe_target(const struct s5_group_cfg *g, struct s5_target *t) {
  unsigned char raw[16] = {0};
  int fam = s5_sockaddr_pton(g->probe_host, strlen(g->probe_host), raw);
  s5_sockaddr_from_raw(raw, fam == AF_INET6 ? 16 : 4, g->probe_port, &t->addr);
  snprintf(t->name, sizeof t->name, "%s", fam != 0 ? "" : g->probe_host);
}

static void probe_start(struct s5_latprobe *l, unsigned g, unsigned i) {
  struct s5_latprobe_probe *pr = calloc(1, sizeof *pr);
  if (pr == NULL) {
    s5_warn("latency probe: no memory");
    return;
  }
  pr->lp = l;
  pr->index = i;
  pr->cfg = s5_wctx_cfg_hold(l->w);
  pr->g = &pr->cfg->groups[g];
  pr->next = l->probes;
  pr->handles = 2;
  pr->began = uv_hrtime();
  l->probes = pr;
  l->busy |= 1ull << pr->cfg->upstreams[i].slot;
  uv_timer_init(&l->w->loop, &pr->timer);
  pr->timer.data = pr;
  uv_timer_start(&pr->timer, probe_timed_out, pr->g->probe_timeout * 1000ull, 0);
  s5_proxy_init(&pr->proxy, l->w, pr->cfg, &probe_ops, pr);
  probe_target(pr->g, &pr->target);
  s5_proxy_use(&pr->proxy, &pr->cfg->upstreams[i], &pr->target);
  char why[160];
  if (s5_proxy_start(&pr->proxy, why, sizeof why) == 0) return;
  probe_failed(pr, why);
}

/* probe-interval in ms, 90..110 % of it. */
static uint64_t jittered(struct s5_latprobe *l, unsigned seconds) {
  uint64_t ms = seconds * 1000ull;
  l->rng ^= l->rng << 13;
  l->rng ^= l->rng >> 7;
  l->rng ^= l->rng << 17;
  return ms * 9 / 10 + l->rng % (ms / 5 + 1);
}

/* Probes what is due; the timer for the next one due. */
static void latprobe_fired(uv_timer_t *timer) {
  struct s5_latprobe *l = timer->data;
  latprobe_arm(l);
}

static void latprobe_arm(struct s5_latprobe *l) {
  struct s5_uptab *t = s5_uptab();
  const struct s5_config *cfg = l->w->cfg;
  uint64_t now = uv_now(&l->w->loop), next = UINT64_MAX, seen = 0;
  for (unsigned g = 0; !l->stopped && l->started && t != NULL && g < cfg->n_groups; g++) {
    const struct s5_group_cfg *gc = &cfg->groups[g];
    if (gc->strategy != S5_BALANCE_FASTEST) continue;
    for (unsigned j = 0; j < gc->n_members; j++) {
      unsigned i = gc->members[j], s = cfg->upstreams[i].slot;
      if (seen & (1ull << s)) continue; /* probed for an earlier group */
      seen |= 1ull << s;
      if (l->due[s] <= now && !(l->busy & (1ull << s))) {
        l->due[s] = now + jittered(l, gc->probe_interval);
        if (__atomic_load_n(&t->u[s].down, __ATOMIC_RELAXED) == 0) probe_start(l, g, i);
        else if (__atomic_load_n(&t->u[s].lat_avg_us, __ATOMIC_RELAXED) != 0) {
          s5_uptab_latency_lost(t, s); /* down: measured afresh once it is back */
          l->last[s][0] = l->last[s][1] = 0;
        }
      }
      if (l->due[s] < next) next = l->due[s];
    }
  }
  if (next == UINT64_MAX) uv_timer_stop(&l->timer);
  else uv_timer_start(&l->timer, latprobe_fired, next > now ? next - now : 1, 0);
}

void s5_latprobe_init(struct s5_latprobe *l, struct s5_wctx *w) {
  memset(l, 0, sizeof *l);
  l->w = w;
  l->rng = uv_hrtime() | 1;
  uv_timer_init(&w->loop, &l->timer);
  l->timer.data = l;
}

void s5_latprobe_start(struct s5_latprobe *l) {
  l->started = 1;
  latprobe_arm(l);
}

void s5_latprobe_reload(struct s5_latprobe *l) {
  if (!l->stopped) latprobe_arm(l);
}

void s5_latprobe_stop(struct s5_latprobe *l) {
  if (l->stopped) return;
  l->stopped = 1;
  while (l->probes != NULL) probe_end(l->probes);
  if (!uv_is_closing((uv_handle_t *)&l->timer)) uv_close((uv_handle_t *)&l->timer, NULL);
}
