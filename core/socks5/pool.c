/* SPDX-License-Identifier: MIT */
/* The warm pool of proxy connections (see pool.h for the design). Each
 * entry is a proxy client (proxy.c) with the WARM command: it connects,
 * greets and authenticates, then reports granted and waits. A session
 * takes it by adopting a duplicate of its socket (s5_proxy_adopt); the
 * entry itself is then closed, which leaves the socket to the session. */
#include "socks5/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/env.h"
#include "base/log.h"
#include "ini/config.h"
#include "ctx/wctx.h"

struct s5_pool_conn {
  struct s5_proxy proxy; /* WARM; owner is the entry */
  struct s5_pool *pool;
  struct s5_pool_conn *prev, *next;
  const struct s5_config *cfg; /* held while the entry lives */
  uint64_t expires;            /* uv_now after which it is recycled */
  uint64_t granted;            /* uv_now when it became ready */
  unsigned ready : 1;          /* greeted and authenticated */
};

static uint64_t pool_now(const struct s5_pool *pool) { return uv_now(&pool->w->loop); }

/* Up to max, for spreading recycles and retries (xorshift64). */
static uint64_t pool_jitter(struct s5_pool *pool, uint64_t max) {
  pool->rng ^= pool->rng << 13;
  pool->rng ^= pool->rng >> 7;
  pool->rng ^= pool->rng << 17;
  return max == 0 ? 0 : pool->rng % (max + 1);
}

/* Warm connections wanted for up (of the worker's configuration): its
 * pool, none while it is down (its checks decide when it is back). A
 * Shadowsocks one is pooled connected with nothing sent (its salt and the
 * target go with a session's first chunk). */
static unsigned pool_target(const struct s5_pool *pool, const struct s5_upstream_cfg *up) {
  if (pool->stopped) return 0;
  if (s5_uptab() != NULL && __atomic_load_n(&s5_uptab()->u[up->slot].down, __ATOMIC_RELAXED)) return 0;
  return up->pool;
}

/* Connections to a and b are interchangeable: same proxy, same type, same
 * login (an HTTP or SOCKS4 entry is a bare TCP connection, the login goes
 * with each CONNECT; compared all the same), same TLS and what it verified. */
static int pool_same_proxy(const struct s5_upstream_cfg *a, const struct s5_upstream_cfg *b) {
  return a->type == b->type && a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0 &&
         strcmp(a->username, b->username) == 0 && strcmp(a->password, b->password) == 0 &&
         a->mark == b->mark && a->tls == b->tls && a->ss_method == b->ss_method &&
         (!a->tls ||
          (a->tls_verify == b->tls_verify && strcmp(a->tls_server_name, b->tls_server_name) == 0 &&
           strcmp(a->tls_ca_file, b->tls_ca_file) == 0 && strcmp(a->tls_cert_file, b->tls_cert_file) == 0 &&
           strcmp(a->tls_key_file, b->tls_key_file) == 0));
}

/* ---------------------------------------------------------------- entries */

static void pool_unlink(struct s5_pool_conn *c) {
  struct s5_pool *pool = c->pool;
  pool->live_up[c->proxy.up->slot]--;
  if (c->prev != NULL) c->prev->next = c->next;
  else pool->list = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  pool->live--;
}

/* Out of the pool; freed once its handles closed (pool_conn_closed). */
static void pool_drop(struct s5_pool_conn *c) {
  pool_unlink(c);
  s5_proxy_close(&c->proxy, 0);
}

static void pool_conn_closed(void *owner) {
  struct s5_pool_conn *c = owner;
  s5_wctx_cfg_release(c->pool->w, c->cfg);
  free(c);
}

static int pool_conn_request(void *owner, uint8_t *buf, size_t cap) {
  (void)owner, (void)buf, (void)cap;
  return -1; /* never asked: a WARM client stops before the request */
}

static void pool_fill(struct s5_pool *pool);

/* A warm-up to the upstream in slot failed: wait before its next, twice
 * as long as last time (once per wait: the other warm-ups of that round
 * failing do not count). */
static void pool_back_off(struct s5_pool *pool, unsigned slot, const char *why) {
  S5_STAT_ADD(pool->w->stats, pool_failed, 1);
  uint64_t now = pool_now(pool);
  if (now < pool->retry_at[slot]) return;
  uint64_t b = pool->backoff_ms[slot] == 0 ? S5_POOL_BACKOFF_MIN_MS : pool->backoff_ms[slot] * 2;
  pool->backoff_ms[slot] = b > S5_POOL_BACKOFF_MAX_MS ? S5_POOL_BACKOFF_MAX_MS : b;
  pool->retry_at[slot] = now + pool->backoff_ms[slot] / 2 + pool_jitter(pool, pool->backoff_ms[slot] / 2);
  s5_debug("connection pool: %s; next warm-up in %llu ms", why,
           (unsigned long long)(pool->retry_at[slot] - now));
}

static void pool_conn_result(void *owner, const struct s5_proxy_result *r) {
  struct s5_pool_conn *c = owner;
  struct s5_pool *pool = c->pool;
  if (r->outcome == S5_PROXY_GRANTED) {
    c->ready = 1;
    c->granted = pool_now(pool);
    c->expires = c->granted + pool->age_ms + pool_jitter(pool, pool->jitter_ms);
    pool->backoff_ms[c->proxy.up->slot] = 0;
  } else if (c->ready) { /* the proxy closed it while it waited: replaced */
    S5_STAT_ADD(pool->w->stats, pool_recycled, 1);
    uint64_t now = pool_now(pool);
    if (now < c->expires && !pool->await_demand) { /* its idle timeout is shorter than our age */
      pool->await_demand = 1;
      s5_info(
        "connection pool: the proxy closed a warm connection after %llu ms idle: refilled at the next "
        "session only",
        (unsigned long long)(now - c->granted));
    }
    pool_drop(c);
  } else {
    pool_back_off(pool, c->proxy.up->slot, r->why);
    pool_drop(c);
  }
  pool_fill(pool);
}

static const struct s5_proxy_ops pool_conn_ops = {
  .cmd = S5_PROXY_WARM,
  .request = pool_conn_request,
  .result = pool_conn_result,
  .closed = pool_conn_closed,
};

/* One more warm-up to upstream i of the worker's configuration. Returns
 * 0, or -1 when it could not even start. */
static int pool_open_one(struct s5_pool *pool, unsigned i) {
  unsigned slot = pool->w->cfg->upstreams[i].slot;
  struct s5_pool_conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    pool_back_off(pool, slot, "no memory for a pooled connection");
    return -1;
  }
  c->pool = pool;
  c->cfg = s5_wctx_cfg_hold(pool->w);
  c->next = pool->list;
  if (c->next != NULL) c->next->prev = c;
  pool->list = c;
  pool->live++;
  pool->live_up[slot]++;
  s5_proxy_init(&c->proxy, pool->w, c->cfg, &pool_conn_ops, c);
  s5_proxy_use(&c->proxy, &c->cfg->upstreams[i], NULL);
  char why[160];
  if (s5_proxy_start(&c->proxy, why, sizeof why) == 0) return 0;
  pool_back_off(pool, slot, why);
  pool_drop(c);
  return -1;
}

/* ---------------------------------------------------------------- the pool */

/* The timer for the earliest of: a ready entry's recycle, the end of a
 * backoff while the pool is short. Stopped when neither is due. */
static void pool_arm(struct s5_pool *pool);

static void pool_fill(struct s5_pool *pool) {
  uint64_t now = pool_now(pool);
  const struct s5_config *cfg = pool->w->cfg;
  int wanted = !pool->stopped && !pool->await_demand && now - pool->last_demand < pool->idle_ms;
  for (unsigned i = 0; wanted && i < cfg->n_upstreams; i++) {
    const struct s5_upstream_cfg *up = &cfg->upstreams[i];
    while (pool->live_up[up->slot] < pool_target(pool, up) && now >= pool->retry_at[up->slot])
      if (pool_open_one(pool, i) < 0) break;
  }
  pool_arm(pool);
}

/* Ready entries past their age are closed (the pool_fill after it
 * replaces them while sessions come). */
static void pool_recycle(struct s5_pool *pool) {
  uint64_t now = pool_now(pool);
  struct s5_pool_conn *next;
  for (struct s5_pool_conn *c = pool->list; c != NULL; c = next) {
    next = c->next;
    if (!c->ready || now < c->expires) continue;
    S5_STAT_ADD(pool->w->stats, pool_recycled, 1);
    pool_drop(c);
  }
}

static void pool_timer_fired(uv_timer_t *timer) {
  struct s5_pool *pool = timer->data;
  pool_recycle(pool);
  pool_fill(pool);
}

static void pool_arm(struct s5_pool *pool) {
  uint64_t now = pool_now(pool), due = UINT64_MAX;
  for (const struct s5_pool_conn *c = pool->list; c != NULL; c = c->next)
    if (c->ready && c->expires < due) due = c->expires;
  const struct s5_config *cfg = pool->w->cfg;
  int wanted = !pool->await_demand && now - pool->last_demand < pool->idle_ms;
  for (unsigned i = 0; wanted && i < cfg->n_upstreams; i++) {
    const struct s5_upstream_cfg *up = &cfg->upstreams[i];
    uint64_t at = pool->retry_at[up->slot];
    if (pool->live_up[up->slot] < pool_target(pool, up) && at > now && at < due) due = at;
  }
  if (pool->stopped || due == UINT64_MAX) {
    uv_timer_stop(&pool->timer);
    return;
  }
  uv_timer_start(&pool->timer, pool_timer_fired, due > now ? due - now : 0, 0);
}

/* Still open as far as we can tell without a round trip: no EOF, no reset
 * and no stray bytes waiting on its socket. */
static int pool_conn_alive(const struct s5_pool_conn *c, uint64_t now) {
  if (!c->ready || now >= c->expires || c->proxy.step != S5_PROXY_DONE) return 0;
  uv_os_fd_t fd;
  if (uv_fileno((const uv_handle_t *)&c->proxy.sock, &fd) < 0) return 0;
  char b;
  ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* A ready entry for a session to up; the ones to it found dead are
 * dropped (other upstreams' are left alone). */
static struct s5_pool_conn *pool_take(struct s5_pool *pool, const struct s5_upstream_cfg *up) {
  uint64_t now = pool_now(pool);
  struct s5_pool_conn *next;
  for (struct s5_pool_conn *c = pool->list; c != NULL; c = next) {
    next = c->next;
    if (!c->ready || !pool_same_proxy(c->proxy.up, up)) continue;
    if (pool_conn_alive(c, now)) return c;
    S5_STAT_ADD(pool->w->stats, pool_recycled, 1);
    pool_drop(c);
  }
  return NULL;
}

int s5_pool_connect(struct s5_pool *pool, struct s5_proxy *p, char *why, size_t cap) {
  if (pool == NULL || !pool->started || pool->stopped || pool_target(pool, p->up) == 0)
    return s5_proxy_start(p, why, cap);
  pool->last_demand = pool_now(pool);
  pool->await_demand = 0;
  struct s5_pool_conn *c = pool_take(pool, p->up);
  int r;
  if (c != NULL) {
    S5_STAT_ADD(pool->w->stats, pool_hits, 1);
    r = s5_proxy_adopt(p, &c->proxy, why, cap);
    pool_drop(c); /* the session has its own descriptor of the socket now */
  } else {
    S5_STAT_ADD(pool->w->stats, pool_misses, 1);
    r = s5_proxy_start(p, why, cap);
  }
  pool_fill(pool);
  return r;
}

/* ---------------------------------------------------------------- lifecycle */

void s5_pool_init(struct s5_pool *pool, struct s5_wctx *w) {
  memset(pool, 0, sizeof *pool);
  pool->w = w;
  pool->rng = (uv_hrtime() ^ ((uint64_t)w->index << 32)) | 1;
  int short_age = s5_env_flag("S5TUND_POOL_SHORT_AGE"); /* tests: see the recycling without waiting 20 s */
  pool->age_ms = short_age ? S5_POOL_SHORT_AGE_MS : S5_POOL_AGE_MS;
  pool->jitter_ms = short_age ? S5_POOL_SHORT_JITTER_MS : S5_POOL_JITTER_MS;
  pool->idle_ms = short_age ? S5_POOL_SHORT_IDLE_MS : S5_POOL_IDLE_MS;
  uv_timer_init(&w->loop, &pool->timer);
  pool->timer.data = pool;
}

void s5_pool_start(struct s5_pool *pool) {
  pool->started = 1;
  pool->last_demand = pool_now(pool); /* the start counts as demand: warm for the first sessions */
  pool_fill(pool);
}

void s5_pool_reload(struct s5_pool *pool) {
  if (!pool->started || pool->stopped) return;
  pool->await_demand = 0; /* another proxy, perhaps: warm again */
  const struct s5_config *cfg = pool->w->cfg;
  struct s5_pool_conn *next;
  unsigned keep[S5_UPTAB_SLOTS] = {0};
  for (struct s5_pool_conn *c = pool->list; c != NULL; c = next) {
    next = c->next;
    const struct s5_upstream_cfg *up = NULL;
    for (unsigned i = 0; i < cfg->n_upstreams && up == NULL; i++)
      if (cfg->upstreams[i].slot == c->proxy.up->slot) up = &cfg->upstreams[i];
    if (up != NULL && pool_same_proxy(c->proxy.up, up) && keep[up->slot] < up->pool) {
      keep[up->slot]++;
      continue;
    }
    S5_STAT_ADD(pool->w->stats, pool_recycled, 1);
    pool_drop(c);
  }
  memset(pool->backoff_ms, 0, sizeof pool->backoff_ms); /* a new proxy deserves a try at once */
  memset(pool->retry_at, 0, sizeof pool->retry_at);
  pool_fill(pool);
}

void s5_pool_stop(struct s5_pool *pool) {
  if (pool->stopped) return;
  pool->stopped = 1;
  while (pool->list != NULL) pool_drop(pool->list);
  if (!uv_is_closing((uv_handle_t *)&pool->timer)) uv_close((uv_handle_t *)&pool->timer, NULL);
}
