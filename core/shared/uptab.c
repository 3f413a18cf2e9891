/* SPDX-License-Identifier: MIT */
/* The upstreams' shared health and counters, and the choice of an
 * upstream for a new session (see uptab.h). */
#include "shared/uptab.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/log.h"
#include "ini/sockaddr.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

static struct s5_uptab *table; /* set before the workers start */

const unsigned s5_up_hs_bucket_ms[S5_UP_HS_BUCKETS] = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000};

static void slot_take(struct s5_uptab *t, unsigned s, const char *name) {
  struct s5_up_slot *u = &t->u[s];
  memset(u, 0, sizeof *u);
  snprintf(u->name, sizeof u->name, "%s", name);
  STORE(&u->state, S5_UP_ACTIVE);
  if (s >= t->n) t->n = s + 1;
}

/* The groups' shared state for cfg's groups, each carried over by name. */
static void groups_assign(struct s5_uptab *t, const struct s5_config *cfg) {
  struct s5_up_group was[S5_GROUPS_MAX];
  memcpy(was, t->g, sizeof was);
  for (unsigned g = 0; g < S5_GROUPS_MAX; g++) {
    struct s5_up_group n = {0};
    if (g < cfg->n_groups) {
      snprintf(n.name, sizeof n.name, "%s", cfg->groups[g].name);
      for (unsigned k = 0; k < S5_GROUPS_MAX; k++)
        if (was[k].name[0] != '\0' && strcmp(was[k].name, n.name) == 0) n = was[k];
    }
    STORE(&t->g[g].chosen, 0); /* none while the name is rewritten (a worker may read it) */
    memcpy(t->g[g].name, n.name, sizeof n.name);
    STORE(&t->g[g].since_unix, n.since_unix);
    STORE(&t->g[g].chosen, n.chosen);
  }
}

void s5_uptab_init(struct s5_uptab *t, struct s5_config *cfg) {
  t->fail_after = cfg->balance.fail_after;
  t->active = cfg->n_upstreams;
  for (unsigned i = 0; i < cfg->n_upstreams; i++) {
    slot_take(t, i, cfg->upstreams[i].name);
    cfg->upstreams[i].slot = i;
  }
  groups_assign(t, cfg);
}

/* The slot for a name a reload brings: its own (active or removed), else
 * a free one, else a removed one that no session holds, else the removed
 * one with the fewest (their counts then go to the new name: said). */
static unsigned slot_for(struct s5_uptab *t, const char *name, uint64_t claimed) {
  int free_at = -1, idle = -1, fewest = -1;
  for (unsigned s = 0; s < S5_UPTAB_SLOTS; s++) {
    const struct s5_up_slot *u = &t->u[s];
    uint32_t st = LOAD(&u->state);
    if (st != S5_UP_FREE && strcmp(u->name, name) == 0) return s;
    if (claimed & (1ull << s)) continue;
    if (st == S5_UP_FREE && free_at < 0) free_at = (int)s;
    if (st != S5_UP_REMOVED) continue;
    if (LOAD(&u->open) == 0 && idle < 0) idle = (int)s;
    if (fewest < 0 || LOAD(&u->open) < LOAD(&t->u[fewest].open)) fewest = (int)s;
  }
  unsigned s = (unsigned)(free_at >= 0 ? free_at : idle >= 0 ? idle : fewest);
  if (free_at < 0 && idle < 0)
    s5_warn("upstream table full: %s takes the row of removed %s (%llu sessions still open there)", name,
            t->u[s].name, (unsigned long long)LOAD(&t->u[s].open));
  slot_take(t, s, name);
  return s;
}

void s5_uptab_assign(struct s5_uptab *t, struct s5_config *cfg) {
  uint64_t claimed = 0; /* slots of cfg's upstreams */
  for (unsigned i = 0; i < cfg->n_upstreams; i++) {
    unsigned s = slot_for(t, cfg->upstreams[i].name, claimed);
    claimed |= 1ull << s;
    cfg->upstreams[i].slot = s;
    if (LOAD(&t->u[s].state) == S5_UP_REMOVED)
      s5_info("upstream %s: back in the configuration", t->u[s].name);
    STORE(&t->u[s].state, S5_UP_ACTIVE);
  }
  for (unsigned s = 0; s < t->n; s++) {
    if (claimed & (1ull << s) || LOAD(&t->u[s].state) != S5_UP_ACTIVE) continue;
    STORE(&t->u[s].state, S5_UP_REMOVED);
    s5_info("upstream %s: removed; it takes no new sessions, its %llu open ones run to their end",
            t->u[s].name, (unsigned long long)LOAD(&t->u[s].open));
  }
  STORE(&t->active, cfg->n_upstreams);
  STORE(&t->fail_after, cfg->balance.fail_after);
  groups_assign(t, cfg);
}

int s5_uptab_setup(struct s5_config *cfg) {
  void *m = mmap(NULL, sizeof *table, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -errno;
  table = m; /* zeroed */
  s5_uptab_init(table, cfg);
  return 0;
}

struct s5_uptab *s5_uptab(void) {
  return table;
}

const char *s5_up_cause_name(enum s5_up_cause c) {
  static const char *const names[] = {"connect", "handshake", "auth", "timeout", "refusing"};
  return (unsigned)c < S5_UP_CAUSES ? names[c] : "?";
}

/* ---------------------------------------------------------------- choosing */

static uint64_t fnv1a(uint64_t h, const void *data, size_t len) {
  const uint8_t *b = data;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* A 64-bit finaliser (splitmix64's), so that close keys spread. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t s5_uptab_hash(const struct sockaddr_storage *dest, const char *name) {
  uint64_t h = 0xcbf29ce484222325ull;
  if (name != NULL && name[0] != '\0') return mix(fnv1a(h, name, strlen(name))); /* the site: any port */
  size_t len;
  const void *raw = s5_sockaddr_raw(dest, &len);
  uint16_t port = s5_sockaddr_port(dest);
  if (raw != NULL) h = fnv1a(fnv1a(h, raw, len), &port, sizeof port);
  return mix(h);
}

/* The candidates of one choice: members m[0..n) (indexes in cfg->upstreams). */
struct pick {
  struct s5_uptab *t;
  const struct s5_config *cfg;
  const uint8_t *m;
  unsigned n;
  uint32_t tried;
};
#define UP_OF(k, j) (&(k)->cfg->upstreams[(k)->m[j]])

/* Member j: not tried yet, and up. */
static int usable(const struct pick *k, unsigned j) {
  return !(k->tried & (1u << k->m[j])) && LOAD(&k->t->u[UP_OF(k, j)->slot].down) == 0;
}

/* The first usable in the members' order. */
static int pick_failover(const struct pick *k) {
  for (unsigned j = 0; j < k->n; j++)
    if (usable(k, j)) return k->m[j];
  return -1;
}

/* Weighted: ticket k of each sum-of-weights round falls on the upstream
 * whose share of the round holds it; taken by a down one, the next usable. */
static int pick_round_robin(const struct pick *k) {
  uint64_t sum = 0;
  for (unsigned j = 0; j < k->n; j++) sum += UP_OF(k, j)->weight;
  uint64_t ticket = (ADD(&k->t->rr, 1) - 1) % sum;
  unsigned at = 0;
  while (ticket >= UP_OF(k, at)->weight) ticket -= UP_OF(k, at++)->weight;
  for (unsigned j = 0; j < k->n; j++)
    if (usable(k, (at + j) % k->n)) return k->m[(at + j) % k->n];
  return -1;
}

/* The fewest open sessions per weight; ties to the fewest set-ups begun
 * (per weight: granted or not, so that one that refuses at once does not
 * win every tie), then by turns from a rotating start, not always the
 * first in file order. */
static int pick_least(const struct pick *k) {
  int best = -1;
  double best_open = 0, best_begun = 0;
  unsigned start = (unsigned)(ADD(&k->t->rr, 1) % k->n);
  for (unsigned i = 0; i < k->n; i++) {
    unsigned j = (start + i) % k->n;
    if (!usable(k, j)) continue;
    const struct s5_up_slot *u = &k->t->u[UP_OF(k, j)->slot];
    double w = UP_OF(k, j)->weight;
    double open = (double)LOAD(&u->open) / w, begun = (double)LOAD(&u->begun) / w;
    if (best < 0 || open < best_open || (open == best_open && begun < best_begun)) {
      best = k->m[j];
      best_open = open;
      best_begun = begun;
    }
  }
  if (best >= 0) ADD(&k->t->u[k->cfg->upstreams[best].slot].begun, 1);
  return best;
}

/* Rendezvous hashing, weighted: each upstream scores the destination,
 * the highest usable one wins. An upstream that goes down moves only its
 * own destinations, which return when it is back. */
static int pick_hash(const struct pick *k, uint64_t hash) {
  int best = -1;
  double best_score = 0;
  for (unsigned j = 0; j < k->n; j++) {
    if (!usable(k, j)) continue;
    const char *name = UP_OF(k, j)->name;
    uint64_t h = mix(hash ^ fnv1a(0xcbf29ce484222325ull, name, strlen(name)));
    double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    double score = -(double)UP_OF(k, j)->weight / log(u);
    if (best < 0 || score > best_score) {
      best = k->m[j];
      best_score = score;
    }
  }
  return best;
}

/* fastest: the member chosen by latency while usable; else the usable one
 * of lowest smoothed latency, unmeasured ones last in the members' order. */
static int pick_fastest(const struct pick *k, int chosen) {
  for (unsigned j = 0; j < k->n; j++)
    if (k->m[j] == chosen && usable(k, j)) return chosen;
  int best = -1;
  uint64_t best_lat = UINT64_MAX;
  for (unsigned j = 0; j < k->n; j++) {
    if (!usable(k, j)) continue;
    uint64_t lat = LOAD(&k->t->u[UP_OF(k, j)->slot].lat_avg_us);
    if (best < 0 || (lat != 0 && (best_lat == 0 || lat < best_lat))) {
      best = k->m[j];
      best_lat = lat;
    }
  }
  return best;
}

int s5_uptab_group_member(const struct s5_uptab *t, const struct s5_config *cfg, unsigned g) {
  const struct s5_group_cfg *gc = &cfg->groups[g];
  uint32_t chosen = LOAD(&t->g[g].chosen);
  for (unsigned j = 0; chosen != 0 && j < gc->n_members; j++)
    if (cfg->upstreams[gc->members[j]].slot == chosen - 1) return gc->members[j];
  if (gc->strategy != S5_BALANCE_SELECT) return -1;
  for (unsigned j = 0; gc->selected[0] != '\0' && j < gc->n_members; j++)
    if (strcmp(cfg->upstreams[gc->members[j]].name, gc->selected) == 0) return gc->members[j];
  return gc->members[0];
}

void s5_uptab_group_choose(struct s5_uptab *t, unsigned g, unsigned s) {
  if (__atomic_exchange_n(&t->g[g].chosen, s + 1, __ATOMIC_RELAXED) != s + 1)
    STORE(&t->g[g].since_unix, (uint64_t)time(NULL));
}

int s5_uptab_pick_in(struct s5_uptab *t, const struct s5_config *cfg, int g, uint64_t hash, uint32_t tried) {
  static const uint8_t all[S5_UPSTREAMS_MAX] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  _Static_assert(S5_UPSTREAMS_MAX == 16, "all[] lists every upstream's index");
  /* The session's configuration's list; each upstream's health in its slot. */
  struct pick k = {.t = t, .cfg = cfg, .m = all, .tried = tried};
  enum s5_balance strategy = cfg->balance.strategy;
  k.n = cfg->n_upstreams < S5_UPSTREAMS_MAX ? cfg->n_upstreams : S5_UPSTREAMS_MAX;
  if (g >= 0) {
    k.m = cfg->groups[g].members;
    k.n = cfg->groups[g].n_members;
    strategy = cfg->groups[g].strategy;
  }
  if (k.n == 0) return -1;
  switch (strategy) {
    case S5_BALANCE_ROUND_ROBIN: return pick_round_robin(&k);
    case S5_BALANCE_LEAST_CONN: return pick_least(&k);
    case S5_BALANCE_HASH: return pick_hash(&k, hash);
    case S5_BALANCE_FASTEST:
      return g < 0 ? pick_failover(&k) : pick_fastest(&k, s5_uptab_group_member(t, cfg, (unsigned)g));
    case S5_BALANCE_SELECT: { /* the operator's member alone */
      if (g < 0) return pick_failover(&k);
      int i = s5_uptab_group_member(t, cfg, (unsigned)g);
      k.m = &all[i];
      k.n = 1;
      return pick_failover(&k);
    }
    default: return pick_failover(&k);
  }
}

int s5_uptab_pick(struct s5_uptab *t, const struct s5_config *cfg, uint64_t hash, uint32_t tried) {
  return s5_uptab_pick_in(t, cfg, -1, hash, tried);
}

/* ---------------------------------------------------------------- health */

static int count_up(const struct s5_uptab *t) {
  int n = 0;
  for (unsigned i = 0; i < t->n; i++) n += LOAD(&t->u[i].state) == S5_UP_ACTIVE && LOAD(&t->u[i].down) == 0;
  return n;
}

/* Down -> up: the one that flips it says so. */
static void mark_up(struct s5_uptab *t, unsigned i, const char *how) {
  uint32_t one = 1;
  if (!__atomic_compare_exchange_n(&t->u[i].down, &one, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  STORE(&t->u[i].since_unix, (uint64_t)time(NULL));
  s5_warn("upstream %s is up again (%s)", t->u[i].name, how);
  uint32_t all = 1;
  if (__atomic_compare_exchange_n(&t->all_down, &all, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    s5_warn("upstreams: %s is back, new connections are accepted again", t->u[i].name);
}

uint32_t s5_uptab_downs(const struct s5_uptab *t, unsigned i) { return LOAD(&t->u[i].downs); }
int s5_uptab_up(const struct s5_uptab *t, unsigned i) { return LOAD(&t->u[i].down) == 0; }
void s5_uptab_count_refused(struct s5_uptab *t, unsigned i) { ADD(&t->u[i].refused, 1); }
void s5_uptab_count_retried(struct s5_uptab *t, unsigned i) { ADD(&t->u[i].retried, 1); }
void s5_uptab_count_no_upstream(struct s5_uptab *t) { ADD(&t->no_upstream, 1); }
void s5_uptab_count_stream_bad(struct s5_uptab *t, unsigned i) { ADD(&t->u[i].stream_bad, 1); }
void s5_uptab_count_ss_bad(struct s5_uptab *t, unsigned i, enum s5_up_ss_cause cause) {
  ADD(&t->u[i].ss_bad[cause], 1);
}

void s5_uptab_count_tls(struct s5_uptab *t, unsigned i, int resumed) {
  ADD(&t->u[i].tls_handshakes, 1);
  if (resumed) ADD(&t->u[i].tls_resumed, 1);
}

void s5_uptab_granted(struct s5_uptab *t, unsigned q, unsigned i, uint64_t hs_us, uint32_t downs) {
  struct s5_up_slot *u = &t->u[i];
  unsigned b = 0;
  while (b < S5_UP_HS_BUCKETS && hs_us > s5_up_hs_bucket_ms[b] * 1000ull) b++;
  ADD(&u->hs_le[b], 1);
  ADD(&u->hs_sum_us, hs_us);
  STORE(&t->open_q[q][i], LOAD(&t->open_q[q][i]) + 1); /* one writer: the queue's worker */
  ADD(&u->open, 1);
  ADD(&u->total, 1);
  if (LOAD(&u->downs) != downs) return; /* begun before its last fall: neither news nor a run's end */
  if (LOAD(&u->fails_row) != 0) {
    STORE(&u->fails_row, 0);
    for (unsigned k = 0; k < 4; k++) STORE(&u->refuse_dest[k], 0);
  }
  if (LOAD(&u->down) != 0) mark_up(t, i, "a connection through it succeeded");
}

int s5_uptab_check_failed(struct s5_uptab *t, unsigned i, enum s5_up_cause cause) {
  struct s5_up_slot *u = &t->u[i];
  if (LOAD(&u->down) == 0) return 0;
  return __atomic_exchange_n(&u->why, (uint32_t)cause, __ATOMIC_RELAXED) != (uint32_t)cause;
}

void s5_uptab_probe_ok(struct s5_uptab *t, unsigned i) {
  STORE(&t->u[i].fails_row, 0);
  mark_up(t, i, "its check succeeded");
}

/* One more failure in i's run: down when it reaches fail-after. */
static int run_failed(struct s5_uptab *t, unsigned i, enum s5_up_cause cause, const char *why) {
  struct s5_up_slot *u = &t->u[i];
  ADD(&u->failed[cause], 1);
  uint64_t row = ADD(&u->fails_row, 1);
  /* One upstream alone has nothing to fail over to: every session tries
   * it, as with [socks5] before there were several. */
  if (LOAD(&u->down) != 0) STORE(&u->why, (uint32_t)cause); /* a session begun before it fell */
  if (LOAD(&t->active) < 2 || row < LOAD(&t->fail_after) || LOAD(&u->down) != 0) return 0;
  uint32_t zero = 0;
  if (!__atomic_compare_exchange_n(&u->down, &zero, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 0;
  STORE(&u->why, (uint32_t)cause);
  ADD(&u->downs, 1);
  STORE(&u->since_unix, (uint64_t)time(NULL));
  s5_warn(
    "upstream %s is down: %llu set-ups failed in a row (%s: %s); it takes no new connections until a "
    "check succeeds",
    u->name, (unsigned long long)row, s5_up_cause_name(cause), why);
  uint32_t none = 0;
  if (count_up(t) == 0 &&
      __atomic_compare_exchange_n(&t->all_down, &none, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    s5_warn("upstreams: every upstream is down, new connections are refused until one is back");
  return 1;
}

int s5_uptab_failed(struct s5_uptab *t, unsigned i, enum s5_up_cause cause, const char *why) {
  return run_failed(t, i, cause, why);
}

int s5_uptab_refusing(struct s5_uptab *t, unsigned i, uint64_t dest, int every, const char *why) {
  struct s5_up_slot *u = &t->u[i];
  dest += dest == 0; /* 0 is an empty entry */
  if (!every) {
    for (unsigned k = 0; k < 4; k++)
      if (LOAD(&u->refuse_dest[k]) == dest) {
        ADD(&u->failed[S5_UP_REFUSING], 1); /* counted, but this destination is in the run already */
        return 0;
      }
    STORE(&u->refuse_dest[(ADD(&u->refuse_at, 1) - 1) % 4], dest);
  }
  return run_failed(t, i, S5_UP_REFUSING, why);
}

void s5_uptab_ended(struct s5_uptab *t, unsigned q, unsigned i, uint64_t up, uint64_t down) {
  struct s5_up_slot *u = &t->u[i];
  STORE(&t->open_q[q][i], LOAD(&t->open_q[q][i]) - 1);
  __atomic_sub_fetch(&u->open, 1, __ATOMIC_RELAXED);
  ADD(&u->bytes_up, up);
  ADD(&u->bytes_down, down);
}

void s5_uptab_queue_reset(struct s5_uptab *t, unsigned q) {
  for (unsigned i = 0; i < S5_UPTAB_SLOTS; i++) {
    uint64_t left = LOAD(&t->open_q[q][i]);
    if (left == 0) continue;
    __atomic_sub_fetch(&t->u[i].open, left, __ATOMIC_RELAXED);
    STORE(&t->open_q[q][i], 0);
  }
}
