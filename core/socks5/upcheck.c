/* SPDX-License-Identifier: MIT */
/* The checks of down upstreams (see upcheck.h). Each probe is a proxy
 * client (proxy.c) on the upstream that speaks its protocol to the end:
 * connection, greeting and authentication, a CONNECT and its reply. To
 * [balance] check-target, which must grant it; else to the last destination
 * queue 0 reached (wctx's reached), else to the proxy's own address, where
 * the proxy must answer for itself: granted, or the destination's own
 * refusal (s5_upstream_broken says 0). A refusal that says it is broken, a
 * wrong password, a reply not of the protocol or silence keep it down;
 * while every upstream is down, any refusal after authentication brings it
 * back (nothing to lose: the alternative is refusing every connection). A
 * timer of its own ends it after check-timeout.
 *
 * A Shadowsocks upstream grants every CONNECT unheard (no reply in its
 * protocol), and a wrong password or method shows only as silence or a
 * hang-up: its probe sends an HTTP HEAD request through the granted
 * connection and needs a reply, any byte the destination sent that opened
 * with the key (so check-target should be an HTTP server, or one that
 * speaks first). */
#include "socks5/upcheck.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ini/config.h"
#include "ctx/wctx.h"
#include "shared/uptab.h"
#include "socks5/proxy.h"
#include "socks5/upstream.h"

struct s5_upcheck_probe {
  struct s5_proxy proxy; /* WARM or CONNECT; owner is the probe */
  uv_timer_t timer;      /* check-timeout */
  struct s5_upcheck *check;
  struct s5_upcheck_probe *next;
  const struct s5_config *cfg; /* held while the probe lives */
  struct s5_target target;     /* what it CONNECTs to (probe_target) */
  unsigned index;
  int handles; /* the proxy client and the timer: freed when both closed */
  int ended;
  char byte[64]; /* shadowsocks: the reply's first bytes, ignored */
};

static void upcheck_arm(struct s5_upcheck *c);

static void probe_unlink(struct s5_upcheck_probe *pr) {
  struct s5_upcheck_probe **at = &pr->check->probes;
  while (*at != NULL && *at != pr) at = &(*at)->next;
  if (*at == pr) *at = pr->next;
  pr->check->busy &= ~(1ull << pr->cfg->upstreams[pr->index].slot);
}

static void probe_closed(void *owner) {
  struct s5_upcheck_probe *pr = owner;
  if (--pr->handles > 0) return;
  s5_wctx_cfg_release(pr->check->w, pr->cfg);
  free(pr);
}

static void probe_timer_closed(uv_handle_t *h) { probe_closed(h->data); }

/* Out of the list, its handles closed. Once. */
static void probe_end(struct s5_upcheck_probe *pr) {
  if (pr->ended) return;
  pr->ended = 1;
  probe_unlink(pr);
  uv_close((uv_handle_t *)&pr->timer, probe_timer_closed);
  s5_proxy_close(&pr->proxy, 1);
}

/* A failed check: the cause the upstream is down for is this one's now;
 * a change is said at info, the same again at debug. */
static void probe_failed(struct s5_upcheck_probe *pr, enum s5_up_cause cause, const char *why) {
  const char *name = pr->cfg->upstreams[pr->index].name;
  if (s5_uptab() != NULL && s5_uptab_check_failed(s5_uptab(), pr->cfg->upstreams[pr->index].slot, cause))
    s5_info("upstream %s: still down, now for %s: check failed: %s", name, s5_up_cause_name(cause), why);
  else s5_debug("upstream %s: check failed: %s", name, why);
}

/* Does the proxy work, by its answer (see the top). */
static int probe_ok(const struct s5_upcheck_probe *pr, const struct s5_proxy_result *r) {
  const struct s5_upstream_cfg *up = &pr->cfg->upstreams[pr->index];
  if (r->outcome == S5_PROXY_GRANTED) return 1;
  if (pr->cfg->balance.check_target.ss_family != 0 || r->status != S5_SOCKS5_REFUSED) return 0;
  if (s5_upstream_broken(up, r->status, r->rep, r->http) == 0) return 1;
  return __atomic_load_n(&s5_uptab()->all_down, __ATOMIC_RELAXED) != 0;
}

static void probe_alloc(uv_handle_t *h, size_t size, uv_buf_t *buf) {
  struct s5_upcheck_probe *pr = h->data;
  (void)size;
  *buf = uv_buf_init(pr->byte, sizeof pr->byte);
}

/* Shadowsocks: the reply through the granted connection, or its end. */
static void probe_heard(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct s5_upcheck_probe *pr = s->data;
  (void)buf;
  if (n == 0 || pr->ended) return;
  if (n > 0) s5_uptab_probe_ok(s5_uptab(), pr->cfg->upstreams[pr->index].slot);
  else
    probe_failed(pr, S5_UP_HANDSHAKE,
                 n == UV_EOF ? "the Shadowsocks server hung up with no reply (a wrong password or method, or "
                               "the check's destination did not answer)"
                             : uv_strerror((int)n));
  probe_end(pr);
}

static int probe_ask(struct s5_upcheck_probe *pr) {
  static const char head[] = "HEAD / HTTP/1.0\r\n\r\n";
  uv_buf_t b = uv_buf_init((char *)head, sizeof head - 1);
  uv_stream_t *s = (uv_stream_t *)&pr->proxy.sock;
  if (uv_try_write(s, &b, 1) != (int)b.len || uv_read_start(s, probe_alloc, probe_heard) != 0) return -1;
  return 0;
}

static void probe_result(void *owner, const struct s5_proxy_result *r) {
  struct s5_upcheck_probe *pr = owner;
  if (r->outcome == S5_PROXY_GRANTED && pr->cfg->upstreams[pr->index].type == S5_UPSTREAM_SHADOWSOCKS) {
    if (probe_ask(pr) == 0) return; /* the reply decides (probe_heard), or check-timeout */
    probe_failed(pr, S5_UP_HANDSHAKE, "the check's request could not be sent");
  } else if (probe_ok(pr, r)) s5_uptab_probe_ok(s5_uptab(), pr->cfg->upstreams[pr->index].slot);
  else /* a check refused for any reason counts as refusing */
    probe_failed(pr, r->cause == S5_UP_DESTINATION ? S5_UP_REFUSING : r->cause, r->why);
  probe_end(pr);
}

static void probe_timed_out(uv_timer_t *timer) {
  struct s5_upcheck_probe *pr = timer->data;
  probe_failed(pr, S5_UP_TIMEOUT, "no answer within check-timeout");
  probe_end(pr);
}

/* The CONNECT's destination: check-target, else the last one reached,
 * else the proxy's own address. */
static void probe_target(struct s5_upcheck_probe *pr, struct s5_target *t) {
  const struct s5_wctx *w = pr->check->w;
  t->name[0] = '\0';
  if (pr->cfg->balance.check_target.ss_family != 0) t->addr = pr->cfg->balance.check_target;
  else if (w->reached.addr.ss_family != 0 &&
           (w->reached.addr.ss_family == AF_INET || w->reached.name[0] != '\0' ||
            pr->cfg->upstreams[pr->index].type != S5_UPSTREAM_SOCKS4)) { /* SOCKS4: no IPv6 */
    t->addr = w->reached.addr;
    snprintf(t->name, sizeof t->name, "%s", w->reached.name);
  } else t->addr = pr->cfg->upstreams[pr->index].addr;
}

static const struct s5_proxy_ops probe_ops = {
  .cmd = S5_PROXY_CONNECT, .result = probe_result, .closed = probe_closed};

static void probe_start(struct s5_upcheck *c, unsigned i) {
  struct s5_upcheck_probe *pr = calloc(1, sizeof *pr);
  if (pr == NULL) {
    s5_warn("upstream check: no memory");
    return;
  }
  pr->check = c;
  pr->index = i;
  pr->cfg = s5_wctx_cfg_hold(c->w);
  pr->next = c->probes;
  pr->handles = 2;
  c->probes = pr;
  c->busy |= 1ull << pr->cfg->upstreams[i].slot;
  uv_timer_init(&c->w->loop, &pr->timer);
  pr->timer.data = pr;
  uv_timer_start(&pr->timer, probe_timed_out, pr->cfg->balance.check_timeout * 1000ull, 0);
  s5_proxy_init(&pr->proxy, c->w, pr->cfg, &probe_ops, pr);
  probe_target(pr, &pr->target);
  s5_proxy_use(&pr->proxy, &pr->cfg->upstreams[i], &pr->target);
  char why[160];
  if (s5_proxy_start(&pr->proxy, why, sizeof why) == 0) return;
  s5_debug("upstream %s: check not started: %s", pr->cfg->upstreams[i].name, why);
  probe_end(pr);
}

static void upcheck_fired(uv_timer_t *timer) {
  struct s5_upcheck *c = timer->data;
  struct s5_uptab *t = s5_uptab();
  const struct s5_config *cfg = c->w->cfg;
  for (unsigned i = 0; t != NULL && i < cfg->n_upstreams; i++)
    if (__atomic_load_n(&t->u[cfg->upstreams[i].slot].down, __ATOMIC_RELAXED) &&
        !(c->busy & (1ull << cfg->upstreams[i].slot)))
      probe_start(c, i);
  upcheck_arm(c);
}

/* check-interval, 75..125 % of it; while there is something to fail over
 * to (no timer, no wake-up, for one upstream). */
static void upcheck_arm(struct s5_upcheck *c) {
  if (c->stopped || !c->started || s5_uptab() == NULL ||
      __atomic_load_n(&s5_uptab()->active, __ATOMIC_RELAXED) < 2) {
    uv_timer_stop(&c->timer);
    return;
  }
  uint64_t ms = c->w->cfg->balance.check_interval * 1000ull;
  c->rng ^= c->rng << 13;
  c->rng ^= c->rng >> 7;
  c->rng ^= c->rng << 17;
  uint64_t due = ms * 3 / 4 + c->rng % (ms / 2 + 1);
  uv_timer_start(&c->timer, upcheck_fired, due, 0);
}

void s5_upcheck_init(struct s5_upcheck *c, struct s5_wctx *w) {
  memset(c, 0, sizeof *c);
  c->w = w;
  c->rng = uv_hrtime() | 1;
  uv_timer_init(&w->loop, &c->timer);
  c->timer.data = c;
}

void s5_upcheck_start(struct s5_upcheck *c) {
  c->started = 1;
  upcheck_arm(c);
}

void s5_upcheck_reload(struct s5_upcheck *c) {
  if (!uv_is_active((uv_handle_t *)&c->timer)) upcheck_arm(c);
}

void s5_upcheck_stop(struct s5_upcheck *c) {
  if (c->stopped) return;
  c->stopped = 1;
  while (c->probes != NULL) probe_end(c->probes);
  if (!uv_is_closing((uv_handle_t *)&c->timer)) uv_close((uv_handle_t *)&c->timer, NULL);
}
