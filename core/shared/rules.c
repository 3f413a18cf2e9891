/* SPDX-License-Identifier: MIT */
/* [rules] matched, counted, and kept in the region shared by the workers
 * (see rules.h); rules_build.c compiles them. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "shared/rules_block.h"
#include "ini/sockaddr.h"

/* ---------------------------------------------------------------- matching */

static const struct node *find(const struct s5_rules *t, uint32_t slots_off, uint32_t mask, const void *key,
                               uint32_t len) {
  uint64_t h = hash_bytes(HASH0, key, len);
  const uint32_t *slots = (const uint32_t *)CAT(t, slots_off);
  for (uint32_t s = (uint32_t)h & mask; slots[s] != 0; s = (s + 1) & mask) {
    const struct node *nd = (const struct node *)CAT(t, slots[s]);
    if (nd->hash == h && nd->key_len == len && memcmp((const uint32_t *)(nd + 1) + nd->n, key, len) == 0)
      return nd;
  }
  return NULL;
}

static bool in_prefix(const uint8_t *net, unsigned len, const uint8_t *addr) {
  unsigned whole = len / 8;
  if (memcmp(net, addr, whole) != 0) return false;
  return len % 8 == 0 || ((net[whole] ^ addr[whole]) & (uint8_t)(0xff00u >> (len % 8))) == 0;
}

static bool name_matches(unsigned kind, const char *rname, const char *name, size_t nlen) {
  size_t rlen = strlen(rname);
  switch (kind) {
    case S5_RULE_FULL: return nlen == rlen && memcmp(name, rname, rlen) == 0;
    case S5_RULE_DOMAIN:
      return nlen == rlen
               ? memcmp(name, rname, rlen) == 0
               : nlen > rlen && name[nlen - rlen - 1] == '.' && memcmp(name + nlen - rlen, rname, rlen) == 0;
    default: return strstr(name, rname) != NULL;
  }
}

/* Every matcher of rule i against the flow; any_name: its name matcher
 * (if any) taken as matching. */
static bool rule_takes(const struct s5_rules *t, uint32_t i, const struct s5_flow *f, const char *name,
                       size_t nlen, bool any_name) {
  const struct crule *c = (const struct crule *)CAT(t, t->rules) + i;
  if (c->proto != 0 && c->proto != f->proto) return false;
  if (f->dport < c->port_lo || f->dport > c->port_hi) return false;
  const uint8_t *x = CAT(t, c->extra);
  int v6 = f->family == AF_INET6;
  if (c->flags & F_DST) {
    if ((c->dst_len >> 8) != v6 || !in_prefix(x, c->dst_len & 0xff, f->dst)) return false;
    x += 16;
  }
  if (c->flags & F_SRC) {
    if ((c->src_len >> 8) != v6 || !in_prefix(x, c->src_len & 0xff, f->src)) return false;
    x += 16;
  }
  unsigned kind = (c->flags >> F_KIND_SHIFT) & 3;
  if (kind != S5_RULE_NONE && !any_name && (name == NULL || !name_matches(kind, (const char *)x, name, nlen)))
    return false;
  return true;
}

static bool rule_matches(const struct s5_rules *t, uint32_t i, const struct s5_flow *f, const char *name,
                         size_t nlen) {
  return rule_takes(t, i, f, name, nlen, false);
}

int s5_rules_named(const struct s5_rules *t) { return t != NULL && t->n_named > 0; }

/* Rules with a name looked at, at most, before the answer is "it could". */
#define BY_NAME_SCAN_MAX 4096

int s5_rules_by_name(const struct s5_rules *t, const struct s5_flow *f, uint32_t rule, int out) {
  if (t == NULL || t->n_named == 0 || (rule != S5_RULE_DEFAULT && rule <= t->first_named)) return 0;
  uint32_t end = rule == S5_RULE_DEFAULT ? t->n_rules : rule;
  const struct crule *c = (const struct crule *)CAT(t, t->rules);
  unsigned seen = 0;
  for (uint32_t i = t->first_named; i < end; i++) {
    if (((c[i].flags >> F_KIND_SHIFT) & 3) == S5_RULE_NONE || c[i].out == out) continue;
    if (++seen > BY_NAME_SCAN_MAX || rule_takes(t, i, f, NULL, 0, true)) return 1;
  }
  return 0;
}

/* The first rule of a node's list that matches, if before *best. */
static void try_node(const struct s5_rules *t, const struct node *nd, const struct s5_flow *f,
                     const char *name, size_t nlen, uint32_t *best) {
  if (nd == NULL) return;
  const uint32_t *r = (const uint32_t *)(nd + 1);
  for (uint32_t k = 0; k < nd->n && r[k] < *best; k++)
    if (rule_matches(t, r[k], f, name, nlen)) {
      *best = r[k];
      return;
    }
}

static void try_list(const struct s5_rules *t, uint32_t off, uint32_t n, const struct s5_flow *f,
                     const char *name, size_t nlen, uint32_t *best) {
  const uint32_t *r = (const uint32_t *)CAT(t, off);
  for (uint32_t k = 0; k < n && r[k] < *best; k++)
    if (rule_matches(t, r[k], f, name, nlen)) {
      *best = r[k];
      return;
    }
}

void s5_flow_init(struct s5_flow *f, uint8_t proto, const struct sockaddr_storage *dst,
                  const struct sockaddr_storage *src, const char *name) {
  size_t len;
  memset(f, 0, sizeof *f);
  f->proto = proto;
  f->name = name;
  f->family = dst->ss_family == AF_INET6 ? AF_INET6 : AF_INET;
  f->dport = s5_sockaddr_port(dst);
  const void *bytes = s5_sockaddr_raw(dst, &len);
  if (bytes != NULL) memcpy(f->dst, bytes, len);
  if (src != NULL && src->ss_family == dst->ss_family && (bytes = s5_sockaddr_raw(src, &len)) != NULL)
    memcpy(f->src, bytes, len);
}

int s5_rules_lookup(const struct s5_rules *t, const struct s5_flow *f, uint32_t *rule) {
  uint32_t best = S5_RULE_DEFAULT;
  char name[S5_RULE_NAME_MAX];
  size_t nlen = 0;
  if (t == NULL) {
    *rule = best;
    return 0;
  }
  if (f->name != NULL && f->name[0] != '\0') {
    while (f->name[nlen] != '\0' && nlen < sizeof name - 1) {
      name[nlen] = (char)tolower((unsigned char)f->name[nlen]);
      nlen++;
    }
    if (nlen > 0 && name[nlen - 1] == '.') nlen--;
    name[nlen] = '\0';
    /* The name, then each parent: a.b.c, b.c, c. */
    for (const char *p = name; p != NULL && t->names_mask != 0; p = strchr(p, '.'), p = p ? p + 1 : NULL)
      try_node(t, find(t, t->names, t->names_mask, p, (uint32_t)(nlen - (size_t)(p - name))), f, name, nlen,
               &best);
    try_list(t, t->kw, t->n_kw, f, name, nlen, &best);
  }
  int v6 = f->family == AF_INET6;
  const uint8_t *lens = CAT(t, t->lens[v6]);
  for (uint32_t k = 0; k < t->n_lens[v6]; k++) {
    uint8_t key[18];
    size_t len = pfx_key(key, v6, lens[k], f->dst);
    try_node(t, find(t, t->pfx, t->pfx_mask, key, (uint32_t)len), f, nlen ? name : NULL, nlen, &best);
  }
  try_list(t, t->rest, t->n_rest, f, nlen ? name : NULL, nlen, &best);
  *rule = best;
  return best == S5_RULE_DEFAULT ? t->def_out : ((const struct crule *)CAT(t, t->rules))[best].out;
}

int s5_rules_match(struct s5_rules *t, const struct s5_flow *f, uint32_t *rule) {
  int out = s5_rules_lookup(t, f, rule);
  if (t == NULL) return out;
  if (*rule == S5_RULE_DEFAULT) ADD(&t->def_hits, 1);
  else ADD((uint64_t *)AT(t, t->hits) + *rule, 1);
  ADD(&t->out_hits[out_index(out)], 1);
  return out;
}

void s5_rules_where(const struct s5_rules *t, uint32_t rule, const char **file, unsigned *line) {
  const struct crule *c = (const struct crule *)CAT(t, t->rules) + rule;
  *file = c->file == 0 ? t->conf : (const char *)CAT(t, ((const uint32_t *)CAT(t, t->files))[c->file - 1]);
  *line = c->line;
}

const char *s5_rules_outbound_name(const struct s5_rules *t, int out) {
  switch (out) {
    case S5_OUTBOUND_DIRECT: return "direct";
    case S5_OUTBOUND_BLOCK: return "block";
    case S5_OUTBOUND_BALANCE: return "balance";
    default:
      if (out >= S5_OUTBOUND_GROUP && (uint32_t)(out - S5_OUTBOUND_GROUP) < t->n_groups)
        return t->group_names[out - S5_OUTBOUND_GROUP];
      return out >= 0 && (uint32_t)out < t->n_ups ? t->up_names[out] : "?";
  }
}

int s5_rules_configured(const struct s5_rules *t) {
  return t != NULL && (t->n_rules > 0 || t->def_out != S5_OUTBOUND_BALANCE);
}

void s5_rules_label(const struct s5_rules *t, uint32_t rule, char *buf, size_t len) {
  if (rule == S5_RULE_DEFAULT) {
    snprintf(buf, len, "default");
    return;
  }
  const char *file, *slash;
  unsigned line;
  s5_rules_where(t, rule, &file, &line);
  slash = strrchr(file, '/');
  snprintf(buf, len, "%s:%u", slash != NULL ? slash + 1 : file, line);
}

uint32_t s5_rules_count(const struct s5_rules *t) { return t != NULL ? t->n_rules : 0; }
uint64_t s5_rules_hits(const struct s5_rules *t, uint32_t rule) {
  return rule == S5_RULE_DEFAULT ? LOAD(&t->def_hits) : LOAD((const uint64_t *)CAT(t, t->hits) + rule);
}
int s5_rules_outbound_of(const struct s5_rules *t, uint32_t rule) {
  return rule == S5_RULE_DEFAULT ? t->def_out : ((const struct crule *)CAT(t, t->rules))[rule].out;
}
uint64_t s5_rules_outbound_hits(const struct s5_rules *t, int outbound) {
  return LOAD(&t->out_hits[out_index(outbound)]);
}
size_t s5_rules_size(const struct s5_rules *t) { return t != NULL ? t->size : 0; }

/* ---------------------------------------------------------------- the region */

/* Each half: room for a few million rules; only what a set uses is ever
 * touched (MAP_NORESERVE), and a reload gives the rest of its half back. */
#define HALF_BYTES (512ull << 20)

struct region_head {
  uint32_t using[S5_QUEUES_MAX]; /* half + 1 each worker uses; 0 = none yet */
};

static uint8_t *region;  /* head page, then the two halves */
static unsigned current; /* the live configuration's half: set at setup and by s5_rules_commit */
#define HEAD_BYTES ((sizeof(struct region_head) + 4095) & ~(size_t)4095)

static struct s5_rules *half(unsigned h) { return (struct s5_rules *)(region + HEAD_BYTES + h * HALF_BYTES); }

static int build_into(unsigned h, struct s5_config *cfg, char *err, size_t errlen) {
  madvise(half(h), HALF_BYTES, MADV_REMOVE); /* the old set's pages go back (and read as zero) */
  size_t need = s5_rules_build(half(h), HALF_BYTES, cfg, err, errlen);
  if (need == 0) return -1;
  if (need > HALF_BYTES) {
    snprintf(err, errlen, "[rules]: the rules need %zu MiB, more than the %llu MiB a set may have",
             need >> 20, HALF_BYTES >> 20);
    return -1;
  }
  cfg->rules_half = h;
  return 0;
}

int s5_rules_setup(struct s5_config *cfg, char *err, size_t errlen) {
  void *m = mmap(NULL, HEAD_BYTES + 2 * HALF_BYTES, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -errno;
  region = m;
  current = 0;
  return build_into(0, cfg, err, errlen);
}

/* The worker still on half h, or -1. */
static int user_of(unsigned h, unsigned queues) {
  const struct region_head *rh = (const struct region_head *)region;
  for (unsigned q = 0; q < queues && q < S5_QUEUES_MAX; q++)
    if (LOAD(&rh->using[q]) == h + 1) return (int)q;
  return -1;
}

/* A reload that follows the last one at once (SIGHUPs coalesced while it
 * compiled) finds workers that have not yet taken the last one: each does
 * at its next loop turn, so this waits a little, on the reload's thread. */
#define RELOAD_WAIT_MS 2000
#define RELOAD_NAP_MS 5

int s5_rules_reload(struct s5_config *next, const struct s5_config *live, char *err, size_t errlen) {
  if (region == NULL) return 0;
  unsigned h = 1 - live->rules_half;
  int q = user_of(h, next->queues);
  for (int waited = 0; q >= 0 && waited < RELOAD_WAIT_MS && !s5_rules_cancelled(); waited += RELOAD_NAP_MS) {
    nanosleep(&(struct timespec){0, RELOAD_NAP_MS * 1000000L}, NULL);
    q = user_of(h, next->queues);
  }
  if (q >= 0) {
    snprintf(err, errlen, "[rules]: worker %d still uses the rules before the last reload; try again", q);
    return -1;
  }
  return build_into(h, next, err, errlen);
}

void s5_rules_commit(const struct s5_config *cfg) {
  if (region != NULL) current = cfg->rules_half;
}

void s5_rules_released(unsigned q) {
  if (region != NULL && q < S5_QUEUES_MAX)
    __atomic_store_n(&((struct region_head *)region)->using[q], 0, __ATOMIC_RELAXED);
}

struct s5_rules *s5_rules_of(const struct s5_config *cfg) {
  if (region == NULL) return NULL;
  struct s5_rules *t = half(cfg->rules_half);
  return t->magic == RULES_MAGIC ? t : NULL;
}

struct s5_rules *s5_rules_current(void) {
  if (region == NULL) return NULL;
  struct s5_rules *t = half(current);
  return t->magic == RULES_MAGIC ? t : NULL;
}

void s5_rules_taken(unsigned q, const struct s5_config *cfg) {
  if (region != NULL && q < S5_QUEUES_MAX)
    __atomic_store_n(&((struct region_head *)region)->using[q], cfg -> rules_half + 1, __ATOMIC_RELAXED);
}
