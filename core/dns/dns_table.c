/* SPDX-License-Identifier: MIT */
/* Shared name <-> address table of the mapped resolver (see dns_table.h).
 *
 * Layout of the one mapping: the header, the hash buckets (entry indices,
 * -1 = empty), then the entries. Entries refer to each other by index; the
 * two pointers in the header point into the mapping itself, which every
 * worker process inherits at the same address (it is made before they
 * fork), so the area means the same everywhere.
 *
 * The lock is a pthread mutex with PTHREAD_PROCESS_SHARED (workers may be
 * processes) and PTHREAD_MUTEX_ROBUST: a worker process killed while it
 * holds the lock must not hang every other worker. The next locker then
 * gets EOWNERDEAD and cannot know how far the dead one got, so it clears
 * the table (names are simply mapped again on their next query; addresses
 * handed out before stop working, which is what an expired cache entry
 * would do too). */
#include "dns/dns_table.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "base/assert.h"
#include "base/clock.h"
#include "dns/dns_msg.h"

struct entry {
  int32_t hnext;      /* next entry in the same bucket */
  int32_t prev, next; /* LRU list: head = most recently used */
  uint8_t used;
  uint8_t len;
  uint64_t used_ms; /* s5_now_ms() of its last answer or connection */
  char name[S5_DNS_NAME_MAX + 1];
};
_Static_assert(S5_DNS_NAME_MAX <= UINT8_MAX, "struct entry: a name's length in a byte");

struct s5_dns_table {
  pthread_mutex_t lock;
  size_t map_len;
  uint32_t first;     /* host order: the address of entry 0 */
  uint8_t first6[16]; /* IPv6 address of entry 0, if pool6 is set */
  int has_pool6;
  uint32_t count;    /* entries */
  uint32_t nbuckets; /* a power of two */
  int32_t head, tail;
  uint64_t reuse_ms;   /* an entry used more recently is not given to another name */
  uint64_t generation; /* +1 whenever an entry is given to a name (the state file's "changed") */
  uint64_t snap_bytes; /* what s5_dns_table_snapshot() writes now: 5 + length per used entry */
  _Atomic uint64_t resets;
  int32_t *buckets;      /* point into this mapping; same address in every */
  struct entry *entries; /* process (forked after the mapping was made) */
};

uint32_t s5_dns_pool_size(unsigned len) {
  if (len < 1 || len > 30) return 0;
  return (uint32_t)((1ull << (32 - len)) - 2);
}

static uint32_t hash_name(const char *s, size_t len) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

static uint32_t get_u32(const uint8_t a[4]) {
  return ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
}

static void put_u32(uint8_t a[4], uint32_t v) {
  a[0] = (uint8_t)(v >> 24);
  a[1] = (uint8_t)(v >> 16);
  a[2] = (uint8_t)(v >> 8);
  a[3] = (uint8_t)v;
}

/* Every entry free and on the LRU list, buckets empty. */
static void table_clear(struct s5_dns_table *t) {
  for (uint32_t i = 0; i < t->nbuckets; i++) t->buckets[i] = -1;
  for (uint32_t i = 0; i < t->count; i++) {
    struct entry *e = &t->entries[i];
    e->hnext = -1;
    /* the list runs from the last entry (head) to entry 0 (tail), so free
       entries are handed out in address order */
    e->next = (int32_t)i - 1;
    e->prev = i + 1 < t->count ? (int32_t)i + 1 : -1;
    e->used = 0;
    e->len = 0;
    e->name[0] = '\0';
  }
  t->head = (int32_t)t->count - 1;
  t->tail = 0;
  t->snap_bytes = 0;
}

static void table_lock(struct s5_dns_table *t) {
  if (pthread_mutex_lock(&t->lock) == EOWNERDEAD) {
    table_clear(t);
    t->generation++;
    atomic_fetch_add(&t->resets, 1);
    pthread_mutex_consistent(&t->lock);
  }
}

static void table_unlock(struct s5_dns_table *t) { pthread_mutex_unlock(&t->lock); }

struct s5_dns_table *s5_dns_table_create(const uint8_t net[4], unsigned len, uint32_t entries) {
  uint32_t pool = s5_dns_pool_size(len);
  if (entries == 0 || entries > pool) {
    errno = EINVAL;
    return NULL;
  }
  uint32_t nbuckets = 1;
  while (nbuckets < entries && nbuckets < (1u << 30)) nbuckets <<= 1;
  size_t hdr = (sizeof(struct s5_dns_table) + 63) & ~(size_t)63;
  size_t bsize = ((size_t)nbuckets * sizeof(int32_t) + 63) & ~(size_t)63;
  size_t map_len = hdr + bsize + (size_t)entries * sizeof(struct entry);
  void *m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  struct s5_dns_table *t = m;
  t->map_len = map_len;
  uint32_t mask = len == 0 ? 0 : 0xffffffffu << (32 - len);
  t->first = (get_u32(net) & mask) + 1;
  t->count = entries;
  t->nbuckets = nbuckets;
  t->buckets = (int32_t *)((uint8_t *)m + hdr);
  t->entries = (struct entry *)((uint8_t *)m + hdr + bsize);
  atomic_init(&t->resets, 0);
  t->reuse_ms = S5_DNS_REUSE_MS;

  pthread_mutexattr_t attr;
  int r = pthread_mutexattr_init(&attr);
  if (r == 0) r = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (r == 0) r = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (r == 0) r = pthread_mutex_init(&t->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (r != 0) {
    munmap(m, map_len);
    errno = r;
    return NULL;
  }
  table_clear(t);
  return t;
}

void s5_dns_table_reuse_ms(struct s5_dns_table *t, uint64_t ms) { t->reuse_ms = ms; }

void s5_dns_table_destroy(struct s5_dns_table *t) {
  if (t == NULL) return;
  pthread_mutex_destroy(&t->lock);
  munmap(t, t->map_len);
}

static void lru_unlink(struct s5_dns_table *t, int32_t i) {
  struct entry *e = &t->entries[i];
  if (e->prev >= 0) t->entries[e->prev].next = e->next;
  else t->head = e->next;
  if (e->next >= 0) t->entries[e->next].prev = e->prev;
  else t->tail = e->prev;
}

static void lru_to_head(struct s5_dns_table *t, int32_t i) {
  if (t->head == i) return;
  lru_unlink(t, i);
  struct entry *e = &t->entries[i];
  e->prev = -1;
  e->next = t->head;
  if (t->head >= 0) t->entries[t->head].prev = i;
  t->head = i;
  if (t->tail < 0) t->tail = i;
}

static void hash_remove(struct s5_dns_table *t, int32_t i) {
  struct entry *e = &t->entries[i];
  int32_t *link = &t->buckets[hash_name(e->name, e->len) & (t->nbuckets - 1)];
  while (*link >= 0 && *link != i) link = &t->entries[*link].hnext;
  S5_ASSERT(*link == i); /* a used entry is in its name's bucket */
  *link = e->hnext;
  e->hnext = -1;
}

/* The entry standing for name, given one if it has none; -1 if len is out
 * of range, S5_DNS_TABLE_FULL if every entry is too recently used. */
static int32_t table_map(struct s5_dns_table *t, const char *name, size_t len) {
  if (len == 0 || len > S5_DNS_NAME_MAX) return -1;
  uint32_t b = hash_name(name, len) & (t->nbuckets - 1);
  table_lock(t);
  int32_t i = t->buckets[b];
  while (i >= 0 && !(t->entries[i].len == len && memcmp(t->entries[i].name, name, len) == 0))
    i = t->entries[i].hnext;
  uint64_t now = s5_now_ms();
  if (i < 0) {
    i = t->tail; /* the least recently used entry, or a free one */
    S5_ASSERT(i >= 0 && (uint32_t)i < t->count);
    struct entry *e = &t->entries[i];
    if (e->used && now - e->used_ms < t->reuse_ms) { /* the oldest is young: all are */
      table_unlock(t);
      return S5_DNS_TABLE_FULL;
    }
    if (e->used) {
      hash_remove(t, i);
      t->snap_bytes -= 5 + (uint64_t)e->len;
    }
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->len = (uint8_t)len;
    e->used = 1;
    e->hnext = t->buckets[b];
    t->buckets[b] = i;
    t->generation++;
    t->snap_bytes += 5 + len;
  }
  t->entries[i].used_ms = now;
  lru_to_head(t, i);
  table_unlock(t);
  return i;
}

int s5_dns_table_map(struct s5_dns_table *t, const char *name, size_t len, uint8_t addr[4]) {
  int32_t i = table_map(t, name, len);
  if (i < 0) return i;
  put_u32(addr, t->first + (uint32_t)i);
  return 0;
}

int s5_dns_table_in_pool(const struct s5_dns_table *t, const uint8_t addr[4]) {
  return get_u32(addr) - t->first < t->count;
}

/* The name of entry i (< count) into name; 0 when it stands for none. */
static int table_name(struct s5_dns_table *t, uint32_t i, char *name, size_t cap) {
  int n = 0;
  table_lock(t);
  struct entry *e = &t->entries[i];
  if (e->used && (size_t)e->len < cap) {
    memcpy(name, e->name, (size_t)e->len + 1);
    n = e->len;
    e->used_ms = s5_now_ms();
    lru_to_head(t, (int32_t)i);
  }
  table_unlock(t);
  return n;
}

int s5_dns_table_name(struct s5_dns_table *t, const uint8_t addr[4], char *name, size_t cap) {
  uint32_t i = get_u32(addr) - t->first;
  if (i >= t->count) return -1;
  return table_name(t, i, name, cap);
}

/* ---- the IPv6 pool: entry i stands for first6 + i as well ---- */

static uint64_t get_u64(const uint8_t *a) {
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v = v << 8 | a[k];
  return v;
}

static void put_u64(uint8_t *a, uint64_t v) {
  for (int k = 7; k >= 0; k--, v >>= 8) a[k] = (uint8_t)v;
}

uint64_t s5_dns_pool6_size(unsigned len) {
  if (len < 8 || len > 120) return 0;
  if (len <= 64) return UINT32_MAX; /* far more than any table holds */
  uint64_t n = (1ull << (128 - len)) - 2;
  return n > UINT32_MAX ? UINT32_MAX : n;
}

int s5_dns_table_pool6(struct s5_dns_table *t, const uint8_t net[16], unsigned len) {
  if (t->count > s5_dns_pool6_size(len)) {
    errno = EINVAL;
    return -1;
  }
  uint8_t a[16];
  for (unsigned k = 0; k < 16; k++) {
    unsigned bits = len > 8 * k ? len - 8 * k : 0;
    a[k] = bits >= 8 ? net[k] : (uint8_t)(net[k] & (0xff00u >> bits));
  }
  /* The host part has at least 8 bits (len <= 120): adding 1 to the low 64
   * bits never carries into the network. */
  put_u64(a + 8, get_u64(a + 8) + 1);
  memcpy(t->first6, a, 16);
  t->has_pool6 = 1;
  return 0;
}

/* Entry index of an IPv6 address, or -1 when it is not one of the pool's. */
static int64_t index6(const struct s5_dns_table *t, const uint8_t addr[16]) {
  if (!t->has_pool6 || memcmp(addr, t->first6, 8) != 0) return -1;
  uint64_t i = get_u64(addr + 8) - get_u64(t->first6 + 8);
  return i < t->count ? (int64_t)i : -1;
}

int s5_dns_table_map6(struct s5_dns_table *t, const char *name, size_t len, uint8_t addr[16]) {
  if (!t->has_pool6) return -1;
  int32_t i = table_map(t, name, len);
  if (i < 0) return i;
  memcpy(addr, t->first6, 8);
  put_u64(addr + 8, get_u64(t->first6 + 8) + (uint64_t)i);
  return 0;
}

int s5_dns_table_name6(struct s5_dns_table *t, const uint8_t addr[16], char *name, size_t cap) {
  int64_t i = index6(t, addr);
  return i < 0 ? -1 : table_name(t, (uint32_t)i, name, cap);
}

int s5_dns_table_in_pool6(const struct s5_dns_table *t, const uint8_t addr[16]) {
  return index6(t, addr) >= 0;
}

uint64_t s5_dns_table_resets(const struct s5_dns_table *t) {
  return atomic_load(&((struct s5_dns_table *)t)->resets);
}

/* ---- the state file's side (dns_state.c): a copy out, entries back in ---- */

uint32_t s5_dns_table_count(const struct s5_dns_table *t) { return t->count; }

uint64_t s5_dns_table_generation(struct s5_dns_table *t) {
  table_lock(t);
  uint64_t g = t->generation;
  table_unlock(t);
  return g;
}

size_t s5_dns_table_snapshot_size(struct s5_dns_table *t) {
  table_lock(t);
  uint64_t n = t->snap_bytes;
  table_unlock(t);
  return (size_t)n;
}

size_t s5_dns_table_snapshot(struct s5_dns_table *t, uint8_t *buf, size_t cap, uint64_t *generation) {
  size_t n = 0;
  table_lock(t);
  if (t->snap_bytes > cap) { /* grew since its size was asked: the caller asks again */
    table_unlock(t);
    return SIZE_MAX;
  }
  for (int32_t i = t->tail; i >= 0; i = t->entries[i].prev) {
    const struct entry *e = &t->entries[i];
    if (!e->used) continue;
    S5_ASSERT(n + 5 + e->len <= cap); /* snap_bytes counts every used entry */
    put_u32(buf + n, (uint32_t)i);
    buf[n + 4] = e->len;
    memcpy(buf + n + 5, e->name, e->len);
    n += 5 + (size_t)e->len;
  }
  if (generation != NULL) *generation = t->generation;
  table_unlock(t);
  return n;
}

int s5_dns_table_restore(struct s5_dns_table *t, uint32_t index, const char *name, size_t len) {
  if (index >= t->count || len == 0 || len > S5_DNS_NAME_MAX) return -1;
  uint32_t b = hash_name(name, len) & (t->nbuckets - 1);
  int r = -1;
  table_lock(t);
  int32_t i = t->buckets[b];
  while (i >= 0 && !(t->entries[i].len == len && memcmp(t->entries[i].name, name, len) == 0))
    i = t->entries[i].hnext;
  struct entry *e = &t->entries[index];
  if (i < 0 && !e->used) { /* neither the name nor the address twice */
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->len = (uint8_t)len;
    e->used = 1;
    e->used_ms = s5_now_ms();
    t->snap_bytes += 5 + len;
    e->hnext = t->buckets[b];
    t->buckets[b] = (int32_t)index;
    lru_to_head(t, (int32_t)index);
    r = 0;
  }
  table_unlock(t);
  return r;
}

void s5_dns_table_reset(struct s5_dns_table *t) {
  table_lock(t);
  table_clear(t);
  t->generation++;
  table_unlock(t);
}
