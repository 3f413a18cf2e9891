/* SPDX-License-Identifier: MIT */
/* The layout of a compiled [rules] set, shared by its builder
 * (rules_build.c) and its readers (rules.c). Offsets, never pointers: the
 * set lives in memory mapped at different addresses in each process. */
#ifndef S5_CORE_SHARED_RULES_BLOCK_H
#define S5_CORE_SHARED_RULES_BLOCK_H

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

#include "shared/rules.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

#define RULES_MAGIC 0x53355255u
#define OUTBOUNDS (S5_UPSTREAMS_MAX + 3 + S5_GROUPS_MAX) /* the upstreams, direct, block, balance, groups */
#define F_SRC 1u
#define F_DST 2u
#define F_KIND_SHIFT 2 /* name kind in bits 2-3 */

struct crule { /* one rule, 24 bytes */
  int16_t out;
  uint8_t proto, flags;
  uint16_t port_lo, port_hi;
  uint16_t file; /* 0: the configuration file; else files[file - 1] */
  uint16_t dst_len, src_len;
  uint16_t pad;
  uint32_t line;
  uint32_t extra; /* offset: dst[16] if F_DST, src[16] if F_SRC, then the name if any */
};

struct s5_rules {
  uint32_t magic, n_rules;
  uint64_t size;
  int32_t def_out;
  uint32_t rules, hits;          /* struct crule[n], uint64_t[n] */
  uint32_t names, names_mask;    /* uint32_t slots -> struct node */
  uint32_t pfx, pfx_mask;        /* uint32_t slots -> struct node (key: len, family, address) */
  uint32_t lens[2], n_lens[2];   /* uint8_t lengths present, per family (v4, v6) */
  uint32_t kw, n_kw;             /* uint32_t rule numbers of keyword: rules */
  uint32_t rest, n_rest;         /* uint32_t rule numbers with neither a name nor a dst: */
  uint32_t files, n_files;       /* uint32_t offsets of their paths */
  uint32_t first_named, n_named; /* the first rule with a name (domain:, full:, keyword:), how many */
  uint64_t out_hits[OUTBOUNDS], def_hits;
  uint32_t n_ups; /* the upstreams the outbounds index, by name */
  char up_names[S5_UPSTREAMS_MAX][32];
  uint32_t n_groups; /* the groups (S5_OUTBOUND_GROUP + index), by name */
  char group_names[S5_GROUPS_MAX][32];
  char conf[256]; /* the configuration file (the inline rules' file) */
};

/* A hash node: its key, then its rules' numbers, ascending. */
struct node {
  uint64_t hash;
  uint32_t n, key_len;
  /* uint32_t rule[n]; then the key's bytes */
};

#define AT(t, off) ((uint8_t *)(t) + (off))
#define CAT(t, off) ((const uint8_t *)(t) + (off))

static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ull;
}
#define HASH0 0xcbf29ce484222325ull

static inline int out_index(int out) {
  if (out >= S5_OUTBOUND_GROUP) return S5_UPSTREAMS_MAX + 3 + (out - S5_OUTBOUND_GROUP);
  return out >= S5_OUTBOUND_DIRECT ? S5_UPSTREAMS_MAX + (out - S5_OUTBOUND_DIRECT) : out;
}

/* The key of a prefix in its table: length, family, masked address. */
static inline size_t pfx_key(uint8_t key[18], int v6, unsigned len, const uint8_t *addr) {
  memset(key, 0, 18);
  key[0] = (uint8_t)len;
  key[1] = (uint8_t)v6;
  for (unsigned i = 0; i < len / 8; i++) key[2 + i] = addr[i];
  if (len % 8) key[2 + len / 8] = addr[len / 8] & (uint8_t)(0xff00u >> (len % 8));
  return 2 + (v6 ? 16 : 4);
}

#endif
