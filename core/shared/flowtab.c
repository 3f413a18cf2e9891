/* SPDX-License-Identifier: MIT */
/* The shared per-queue tables of live TCP flows (see flowtab.h). The
 * segments the supervisor sends to the clients of a dead worker are built
 * in threads/recovery/flowprobe.c.
 *
 * Layout: one mapping; per queue a header (the worker's high-water mark and
 * free list) and its slots. Only indices are stored, never pointers. A
 * slot is taken from the free list first, then from above the high-water
 * mark, so the slots in use stay low and the supervisor scans [0, top). */
#include "shared/flowtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/assert.h"

#define S5_FLOW_NONE 0xffffffffu

/* The key is compared and copied as bytes (s5_flow_cmp, memcpy of
 * S5_FLOW_KEY_LEN): its fields must lie in that order with no padding,
 * which would hold garbage, and a slot must be the 44 bytes flowtab.h
 * promises (the supervisor and the workers map the same layout). */
_Static_assert(offsetof(struct s5_flow, remote) == 16 && offsetof(struct s5_flow, client_port) == 32 &&
                 offsetof(struct s5_flow, remote_port) == 34 && offsetof(struct s5_flow, v6) == 36,
               "struct s5_flow: the key's fields in order, without padding");
_Static_assert(S5_FLOW_KEY_LEN == 37 && sizeof(struct s5_flow) == 44,
               "struct s5_flow: 37-byte key, 44-byte slot");

struct s5_flowq {
  uint32_t cap;
  uint32_t top;       /* slots [0, top) have been used since the last take */
  uint32_t free_head; /* a free slot below top, or S5_FLOW_NONE */
  uint32_t pad;
  struct s5_flow slot[];
};
_Static_assert(offsetof(struct s5_flowq, slot) == 16, "struct s5_flowq: a 16-byte header before the slots");

struct s5_flowtab {
  void *map;
  size_t map_len, stride;
  unsigned queues;
};

static size_t queue_size(uint32_t slots) {
  size_t n = sizeof(struct s5_flowq) + (size_t)slots * sizeof(struct s5_flow);
  return (n + 4095) & ~(size_t)4095;
}

static void queue_reset(struct s5_flowq *q) {
  __atomic_store_n(&q->top, 0, __ATOMIC_RELEASE);
  q->free_head = S5_FLOW_NONE;
}

struct s5_flowtab *s5_flowtab_create(unsigned queues, uint32_t slots) {
  if (queues == 0 || slots == 0 || slots > S5_FLOWTAB_MAX) {
    errno = EINVAL;
    return NULL;
  }
  struct s5_flowtab *t = calloc(1, sizeof *t);
  if (t == NULL) return NULL;
  t->stride = queue_size(slots);
  t->map_len = t->stride * queues;
  t->queues = queues;
  t->map = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (t->map == MAP_FAILED) {
    int e = errno;
    free(t);
    errno = e;
    return NULL;
  }
  for (unsigned i = 0; i < queues; i++) {
    struct s5_flowq *q = s5_flowtab_queue(t, i);
    q->cap = slots;
    queue_reset(q);
  }
  return t;
}

void s5_flowtab_free(struct s5_flowtab *t) {
  if (t == NULL) return;
  munmap(t->map, t->map_len);
  free(t);
}

struct s5_flowq *s5_flowtab_queue(struct s5_flowtab *t, unsigned queue) {
  if (t == NULL || queue >= t->queues) return NULL;
  return (struct s5_flowq *)((uint8_t *)t->map + t->stride * queue);
}

uint32_t s5_flowtab_add(struct s5_flowq *q, const struct s5_flow *f) {
  uint32_t i = q->free_head;
  if (i != S5_FLOW_NONE) {
    S5_ASSERT(i < q->top && !q->slot[i].used); /* the free list holds free slots below top */
    q->free_head = q->slot[i].next_free;
  } else {
    i = q->top;
    if (i >= q->cap) return 0;
    __atomic_store_n(&q->top, i + 1, __ATOMIC_RELEASE);
  }
  struct s5_flow *s = &q->slot[i];
  memcpy(s, f, S5_FLOW_KEY_LEN);
  __atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
  return i + 1;
}

void s5_flowtab_remove(struct s5_flowq *q, uint32_t ref) {
  if (ref == 0 || ref > q->cap) return;
  struct s5_flow *s = &q->slot[ref - 1];
  S5_ASSERT(s->used && ref <= q->top); /* a reference is removed once */
  __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
  s->next_free = q->free_head;
  q->free_head = ref - 1;
}

uint32_t s5_flowtab_top(const struct s5_flowq *q) {
  uint32_t top = __atomic_load_n(&q->top, __ATOMIC_ACQUIRE);
  return top > q->cap ? q->cap : top;
}

size_t s5_flowtab_take(struct s5_flowq *q, struct s5_flow *out, size_t max) {
  uint32_t top = s5_flowtab_top(q); /* a dead worker's header is trusted no further */
  size_t n = 0;
  for (uint32_t i = 0; i < top; i++) {
    if (!q->slot[i].used) continue;
    if (n < max) {
      memset(&out[n], 0, sizeof out[n]);
      memcpy(&out[n], &q->slot[i], S5_FLOW_KEY_LEN);
    }
    n++;
  }
  memset(q->slot, 0, (size_t)top * sizeof q->slot[0]);
  queue_reset(q);
  return n;
}

void s5_flowtab_each(const struct s5_flowq *q, void (*fn)(const struct s5_flow *f, void *arg), void *arg) {
  uint32_t top = s5_flowtab_top(q);
  for (uint32_t i = 0; i < top; i++) {
    if (!__atomic_load_n(&q->slot[i].used, __ATOMIC_ACQUIRE)) continue;
    struct s5_flow f;
    memset(&f, 0, sizeof f);
    memcpy(&f, &q->slot[i], S5_FLOW_KEY_LEN);
    fn(&f, arg);
  }
}

int s5_flow_cmp(const void *a, const void *b) { return memcmp(a, b, S5_FLOW_KEY_LEN); }
