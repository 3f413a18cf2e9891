/* SPDX-License-Identifier: MIT */
/* [rules] compiled (see rules.h): the rules are read twice
 * (s5_rules_each), once to count them, once to lay them out; the keys of
 * the name and prefix tables are sorted so that each node lists its rules
 * in order. A rules file may change between the two reads (a list updater
 * writing in place during a reload): the second read never writes past
 * what the first counted, and a build whose two reads differ is done
 * again, up to BUILD_TRIES times, then refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/rules_block.h"

/* ---------------------------------------------------------------- building */

/* A key and its rules while building: sorted, then laid out. */
struct bkey { /* 32 bytes: 100,000 rules sort in 3 MiB */
  uint64_t hash;
  uint32_t rule;
  uint8_t table; /* 0 names, 1 prefixes */
  uint8_t len;
  union {
    uint32_t name; /* a name: its offset in the set (the rule's extra) */
    uint8_t pfx[18];
  };
};

/* A key's bytes; t: the set its names' offsets point into. */
static const uint8_t *key_of(const struct s5_rules *t, const struct bkey *k) {
  return k->table == 0 ? CAT(t, k->name) : k->pfx;
}

struct build {
  const struct s5_config *cfg;
  uint32_t n, n_files, n_kw, n_rest, n_keys;
  size_t extra; /* bytes of the rules' extras */
  size_t files_bytes;
  long last_item; /* the item whose file was counted (placed) last; -1 none */
  /* second pass, within what the first counted */
  bool changed; /* it read more (or longer rules) than the first */
  uint32_t cap_n, cap_keys, cap_kw, cap_rest, cap_files, end_extra, end_file;
  struct s5_rules *t;
  struct bkey *keys;
  uint32_t at_extra, at_file;
  uint32_t i_kw, i_rest;
  uint8_t has_len[2][129];
};

static size_t extra_of(const struct s5_rule *r) {
  return (r->dst.family ? 16 : 0) + (r->src.family ? 16 : 0) + (r->name_kind ? strlen(r->name) + 1 : 0);
}

static int count_one(const struct s5_rule *r, const struct s5_rule_at *at, void *arg, char *err,
                     size_t errlen) {
  struct build *b = arg;
  (void)err, (void)errlen;
  if (b->n == UINT32_MAX - 1) return -1;
  b->n++;
  b->extra += (extra_of(r) + 3) & ~(size_t)3;
  if (r->name_kind == S5_RULE_KEYWORD) b->n_kw++;
  else if (r->name_kind != S5_RULE_NONE || r->dst.family != 0) b->n_keys++;
  else b->n_rest++;
  if (at->file != NULL && b->last_item != (long)at->item) { /* the walk reads one file at a time */
    b->n_files++;
    b->files_bytes += strlen(at->file) + 1;
    b->last_item = at->item;
  }
  return 0;
}

/* The second read found what the first did not count: stop before writing. */
static bool outgrown(struct build *b, const struct s5_rule *r, const struct s5_rule_at *at) {
  const struct s5_rules *t = b->t;
  bool keyed = r->name_kind != S5_RULE_KEYWORD && (r->name_kind != S5_RULE_NONE || r->dst.family != 0);
  bool new_file = at->file != NULL && b->last_item != (long)at->item;
  b->changed = t->n_rules >= b->cap_n || (r->name_kind == S5_RULE_KEYWORD && b->i_kw >= b->cap_kw) ||
               (keyed && b->n_keys >= b->cap_keys) ||
               (!keyed && r->name_kind != S5_RULE_KEYWORD && b->i_rest >= b->cap_rest) ||
               b->at_extra + ((extra_of(r) + 3) & ~(size_t)3) > b->end_extra ||
               (new_file && (t->n_files >= b->cap_files || b->at_file + strlen(at->file) + 1 > b->end_file));
  return b->changed;
}

static int place_one(const struct s5_rule *r, const struct s5_rule_at *at, void *arg, char *err,
                     size_t errlen) {
  struct build *b = arg;
  struct s5_rules *t = b->t;
  if (outgrown(b, r, at)) {
    snprintf(err, errlen, "changed while it was read");
    return -1;
  }
  uint32_t i = t->n_rules++;
  struct crule *c = (struct crule *)AT(t, t->rules) + i;
  (void)errlen;
  c->out = (int16_t)s5_rules_outbound(b->cfg, r->out);
  if (c->out == -1) {
    snprintf(err, errlen, "unknown outbound \"%s\"", r->out);
    return -1;
  }
  c->proto = r->proto;
  c->port_lo = r->port_lo, c->port_hi = r->port_hi;
  c->line = at->line;
  c->flags = (uint8_t)(r->name_kind << F_KIND_SHIFT);
  if (at->file != NULL) {
    if (b->last_item != (long)at->item) {
      b->last_item = at->item;
      size_t n = strlen(at->file) + 1;
      memcpy(AT(t, b->at_file), at->file, n);
      ((uint32_t *)AT(t, t->files))[t->n_files++] = b->at_file;
      b->at_file += (uint32_t)n;
    }
    c->file = (uint16_t)(t->n_files > 65535 ? 65535 : t->n_files);
  }
  c->extra = b->at_extra;
  uint8_t *x = AT(t, b->at_extra);
  if (r->dst.family) {
    memcpy(x, r->dst.addr, 16), x += 16;
    c->flags |= F_DST;
    c->dst_len = (uint16_t)(r->dst.len | (r->dst.family == AF_INET6 ? 0x100 : 0));
  }
  if (r->src.family) {
    memcpy(x, r->src.addr, 16), x += 16;
    c->flags |= F_SRC;
    c->src_len = (uint16_t)(r->src.len | (r->src.family == AF_INET6 ? 0x100 : 0));
  }
  uint32_t name_at = (uint32_t)(x - AT(t, 0));
  if (r->name_kind) memcpy(x, r->name, strlen(r->name) + 1);
  if (r->name_kind != S5_RULE_NONE && t->n_named++ == 0) t->first_named = i;
  b->at_extra += (uint32_t)((extra_of(r) + 3) & ~(size_t)3);
  if (r->name_kind == S5_RULE_KEYWORD) {
    ((uint32_t *)AT(t, t->kw))[b->i_kw++] = i;
  } else if (r->name_kind != S5_RULE_NONE || r->dst.family != 0) {
    struct bkey *k = &b->keys[b->n_keys++];
    k->rule = i;
    if (r->name_kind != S5_RULE_NONE) {
      k->table = 0;
      k->len = (uint8_t)strlen(r->name);
      k->name = name_at;
    } else {
      int v6 = r->dst.family == AF_INET6;
      k->table = 1;
      k->len = (uint8_t)pfx_key(k->pfx, v6, r->dst.len, r->dst.addr);
      b->has_len[v6][r->dst.len] = 1;
    }
    k->hash = hash_bytes(HASH0, key_of(t, k), k->len);
  } else {
    ((uint32_t *)AT(t, t->rest))[b->i_rest++] = i;
  }
  return 0;
}

static int key_cmp(const void *a, const void *b, void *set) {
  const struct bkey *x = a, *y = b;
  if (x->table != y->table) return x->table - y->table;
  if (x->len != y->len) return x->len - y->len;
  int c = memcmp(key_of(set, x), key_of(set, y), x->len);
  if (c != 0) return c;
  return x->rule < y->rule ? -1 : x->rule > y->rule;
}

static uint32_t pow2_at_least(uint64_t n) {
  uint32_t s = 8;
  while (s < n * 2) s <<= 1;
  return s;
}

static bool same_key(const struct s5_rules *t, const struct bkey *a, const struct bkey *b) {
  return a->table == b->table && a->len == b->len && memcmp(key_of(t, a), key_of(t, b), a->len) == 0;
}

static uint32_t node_bytes(uint32_t n, uint32_t len) {
  return (uint32_t)((sizeof(struct node) + 4 * n + len + 7) & ~7u);
}

/* The distinct keys of one table (0 names, 1 prefixes) among the sorted
 * keys, and the bytes of their nodes. */
static uint32_t distinct(const struct build *b, uint8_t table, size_t *bytes) {
  uint32_t n = 0;
  for (uint32_t i = 0, j; i < b->n_keys; i = j) {
    for (j = i + 1; j < b->n_keys && same_key(b->t, &b->keys[i], &b->keys[j]); j++) continue;
    if (b->keys[i].table != table) continue;
    n++;
    *bytes += node_bytes(j - i, b->keys[i].len);
  }
  return n;
}

/* Lays out one table's nodes from the sorted keys at *at. */
static void emit_table(struct build *b, uint8_t table, uint32_t slots_off, uint32_t mask, uint32_t *at) {
  struct s5_rules *t = b->t;
  uint32_t *slots = (uint32_t *)AT(t, slots_off);
  for (uint32_t i = 0, j; i < b->n_keys; i = j) {
    const struct bkey *k = &b->keys[i];
    for (j = i + 1; j < b->n_keys && same_key(t, k, &b->keys[j]); j++) continue;
    if (k->table == table) {
      struct node *nd = (struct node *)AT(t, *at);
      nd->hash = k->hash;
      nd->n = j - i;
      nd->key_len = k->len;
      uint32_t *rules = (uint32_t *)(nd + 1);
      for (uint32_t m = i; m < j; m++) rules[m - i] = b->keys[m].rule;
      memcpy(rules + nd->n, key_of(t, k), k->len);
      uint32_t s = (uint32_t)k->hash & mask;
      while (slots[s] != 0) s = (s + 1) & mask;
      slots[s] = *at;
      *at += node_bytes(nd->n, k->len);
    }
  }
}

/* One build: both reads. *changed: they differed (err says where). */
static size_t build_once(void *mem, size_t cap, const struct s5_config *cfg, bool *changed, char *err,
                         size_t errlen) {
  struct build b = {.cfg = cfg, .last_item = -1};
  if (s5_rules_each(cfg, count_one, &b, err, errlen) < 0) return 0;
  b.keys = calloc(b.n_keys ? b.n_keys : 1, sizeof *b.keys);
  if (b.keys == NULL) {
    snprintf(err, errlen, "[rules]: out of memory for %u rules", b.n);
    return 0;
  }
  /* Fixed parts first; the tables' sizes once the keys are known. */
  size_t at = (sizeof(struct s5_rules) + 7) & ~(size_t)7;
  size_t rules = at;
  at += (size_t)b.n * sizeof(struct crule);
  at = (at + 7) & ~(size_t)7;
  size_t hits = at;
  at += (size_t)b.n * 8;
  size_t kw = at;
  at += (size_t)b.n_kw * 4;
  size_t rest = at;
  at += (size_t)b.n_rest * 4;
  size_t files = at;
  at += (size_t)b.n_files * 4;
  size_t file_text = at;
  at += (b.files_bytes + 3) & ~(size_t)3;
  size_t extra = at;
  at += b.extra;
  /* A scratch set in the heap for the second pass (keys, layout). */
  size_t head = at;
  struct s5_rules *t = calloc(1, head);
  if (t == NULL) {
    free(b.keys);
    snprintf(err, errlen, "[rules]: out of memory for %u rules", b.n);
    return 0;
  }
  t->rules = (uint32_t)rules, t->hits = (uint32_t)hits, t->kw = (uint32_t)kw, t->rest = (uint32_t)rest;
  t->files = (uint32_t)files;
  b.t = t;
  b.at_extra = (uint32_t)extra;
  b.at_file = (uint32_t)file_text;
  b.cap_n = b.n, b.cap_keys = b.n_keys, b.cap_kw = b.n_kw, b.cap_rest = b.n_rest, b.cap_files = b.n_files;
  b.end_extra = (uint32_t)(extra + b.extra), b.end_file = (uint32_t)extra;
  b.n_keys = 0;
  b.last_item = -1;
  err[0] = '\0';
  bool failed = s5_rules_each(cfg, place_one, &b, err, errlen) < 0;
  if (!failed && (b.n_keys != b.cap_keys || t->n_rules != b.n || b.i_kw != b.n_kw || b.i_rest != b.n_rest)) {
    b.changed = true; /* fewer rules, or of other kinds, than counted */
    snprintf(err, errlen, "[rules]: a rules file changed while it was read");
  }
  if (failed || b.changed) {
    *changed = b.changed;
    free(t), free(b.keys);
    return 0;
  }
  t->n_kw = b.i_kw, t->n_rest = b.i_rest;
  qsort_r(b.keys, b.n_keys, sizeof *b.keys, key_cmp, t);
  if (s5_rules_cancelled()) { /* the walks stop at a line; the sort is the one long step between */
    snprintf(err, errlen, "[rules]: cancelled");
    free(t), free(b.keys);
    return 0;
  }
  size_t names_bytes = 0, pfx_bytes = 0;
  uint32_t n_names = distinct(&b, 0, &names_bytes), n_pfx = distinct(&b, 1, &pfx_bytes);
  uint32_t names_slots = pow2_at_least(n_names), pfx_slots = pow2_at_least(n_pfx);
  size_t names = at;
  at += (size_t)names_slots * 4;
  size_t pfx = at;
  at += (size_t)pfx_slots * 4;
  size_t lens = at;
  at += 2 * 129;
  at = (at + 7) & ~(size_t)7;
  size_t nodes = at;
  at += names_bytes + pfx_bytes;
  if (at > UINT32_MAX) {
    snprintf(err, errlen, "[rules]: %u rules take more than 4 GiB", b.n);
    free(t), free(b.keys);
    return 0;
  }
  if (at <= cap) {
    struct s5_rules *out = mem;
    memcpy(out, t, head);
    memset(AT(out, head), 0, at - head);
    out->magic = RULES_MAGIC;
    out->size = at;
    out->n_ups = cfg->n_upstreams;
    for (unsigned i = 0; i < cfg->n_upstreams && i < S5_UPSTREAMS_MAX; i++)
      memcpy(out->up_names[i], cfg->upstreams[i].name, sizeof out->up_names[i]);
    out->n_groups = cfg->n_groups;
    for (unsigned g = 0; g < cfg->n_groups && g < S5_GROUPS_MAX; g++)
      memcpy(out->group_names[g], cfg->groups[g].name, sizeof out->group_names[g]);
    memcpy(out->conf, cfg->rules.conf, sizeof out->conf);
    out->def_out = cfg->rules.def[0] != '\0' ? s5_rules_outbound(cfg, cfg->rules.def) : S5_OUTBOUND_BALANCE;
    out->names = (uint32_t)names, out->names_mask = names_slots - 1;
    out->pfx = (uint32_t)pfx, out->pfx_mask = pfx_slots - 1;
    for (int f = 0; f < 2; f++) {
      out->lens[f] = (uint32_t)(lens + (size_t)f * 129);
      for (int l = 128; l >= 0; l--)
        if (b.has_len[f][l]) AT(out, out->lens[f])[out->n_lens[f]++] = (uint8_t)l; /* longest first */
    }
    b.t = out;
    uint32_t a = (uint32_t)nodes;
    emit_table(&b, 0, out->names, out->names_mask, &a);
    emit_table(&b, 1, out->pfx, out->pfx_mask, &a);
  }
  free(t), free(b.keys);
  return at;
}

#define BUILD_TRIES 3

size_t s5_rules_build(void *mem, size_t cap, const struct s5_config *cfg, char *err, size_t errlen) {
  for (int i = 1;; i++) {
    bool changed = false;
    size_t need = build_once(mem, cap, cfg, &changed, err, errlen);
    if (!changed) return need;
    if (i == BUILD_TRIES) {
      size_t n = strlen(err);
      snprintf(err + n, errlen - n, " (at each of %d reads)", BUILD_TRIES);
      return 0;
    }
  }
}
