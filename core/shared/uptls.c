/* SPDX-License-Identifier: MIT */
/* The upstreams' TLS state in the shared table (see uptls.h). */
#include "shared/uptls.h"

#include <stdio.h>
#include <string.h>

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

#define NAME_WORDS (sizeof((struct s5_up_slot *)0)->tls_name / sizeof(uint64_t))

/* FNV-1a, 30 bits: the name's check in the state word. */
static uint64_t name_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s != '\0'; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h & 0x3fffffffu;
}

/* version 16 bits, cipher 16, verified 1, set 1 (never 0), the name's hash 30 */
static uint64_t pack(unsigned version, unsigned cipher, int verified, const char *name) {
  return (uint64_t)(version & 0xffff) | (uint64_t)(cipher & 0xffff) << 16 | (uint64_t)(verified != 0) << 32 |
         1ull << 33 | name_hash(name) << 34;
}

int s5_uptab_tls_state(struct s5_uptab *t, unsigned i, unsigned version, unsigned cipher, int verified,
                       const char *name) {
  struct s5_up_slot *u = &t->u[i];
  uint64_t words[NAME_WORDS] = {0};
  memcpy(words, name, strnlen(name, sizeof words - 1)); /* as much as the table holds */
  uint64_t want = pack(version, cipher, verified, (const char *)words), cur = LOAD(&u->tls_info);
  if (cur == want) return 0; /* the usual case: nothing written */
  do {
    for (size_t k = 0; k < NAME_WORDS; k++) STORE(&u->tls_name[k], words[k]);
    if (__atomic_compare_exchange_n(&u->tls_info, &cur, want, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return 1;
  } while (cur != want); /* another worker's state came between: ours again, unless it is ours */
  return 0;
}

void s5_uptab_tls_read(const struct s5_up_slot *u, struct s5_up_tls *out) {
  memset(out, 0, sizeof *out);
  for (int tries = 0; tries < 4; tries++) {
    uint64_t info = __atomic_load_n(&u->tls_info, __ATOMIC_ACQUIRE), words[NAME_WORDS];
    if (info == 0) return;
    for (size_t k = 0; k < NAME_WORDS; k++) words[k] = LOAD(&u->tls_name[k]);
    memcpy(out->name, words, sizeof out->name - 1);
    out->name[sizeof out->name - 1] = '\0';
    out->version = info & 0xffff;
    out->cipher = (info >> 16) & 0xffff;
    out->verified = (info >> 32) & 1;
    if (name_hash(out->name) == info >> 34 && LOAD(&u->tls_info) == info) return;
  }
  out->name[0] = '\0'; /* writers changing it all the while */
}

uint64_t s5_uptab_tls_failed(struct s5_uptab *t, unsigned i, enum s5_tls_cause cause) {
  return ADD(&t->u[i].tls_failed[cause], 1);
}

const char *s5_tls_cause_name(enum s5_tls_cause c) {
  static const char *const names[S5_TLS_CAUSES] = {"name",    "ca",    "expired", "certificate", "alert",
                                                   "version", "reset", "not_tls", "other"};
  return (unsigned)c < S5_TLS_CAUSES ? names[c] : "other";
}

const char *s5_tls_version_name(unsigned version, char *buf, size_t cap) {
  if (version == 0) return "";
  if (version == 0x0303) return "TLSv1.2";
  if (version == 0x0304) return "TLSv1.3";
  snprintf(buf, cap, "0x%04X", version);
  return buf;
}

const char *s5_tls_cipher_name(unsigned cipher, char *buf, size_t cap) {
  static const struct {
    unsigned id;
    const char *name;
  } suites[] = {
    {0x1301, "TLS_AES_128_GCM_SHA256"},        {0x1302, "TLS_AES_256_GCM_SHA384"},
    {0x1303, "TLS_CHACHA20_POLY1305_SHA256"},  {0xC02B, "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {0xC02C, "ECDHE-ECDSA-AES256-GCM-SHA384"}, {0xC02F, "ECDHE-RSA-AES128-GCM-SHA256"},
    {0xC030, "ECDHE-RSA-AES256-GCM-SHA384"},   {0xCCA8, "ECDHE-RSA-CHACHA20-POLY1305"},
    {0xCCA9, "ECDHE-ECDSA-CHACHA20-POLY1305"}, {0x009E, "DHE-RSA-AES128-GCM-SHA256"},
    {0x009F, "DHE-RSA-AES256-GCM-SHA384"},
  };
  for (size_t k = 0; k < sizeof suites / sizeof suites[0]; k++)
    if (suites[k].id == cipher) return suites[k].name;
  snprintf(buf, cap, "0x%04X", cipher);
  return buf;
}
