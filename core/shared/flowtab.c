/* SPDX-License-Identifier: MIT */
/* The shared per-queue tables of live TCP flows (see flowtab.h), and the
 * bare ACK the supervisor sends to the clients of a dead worker.
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

#define S5_FLOW_NONE 0xffffffffu

struct s5_flowq {
  uint32_t cap;
  uint32_t top;       /* slots [0, top) have been used since the last take */
  uint32_t free_head; /* a free slot below top, or S5_FLOW_NONE */
  uint32_t pad;
  struct s5_flow slot[];
};

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

/* ---------------------------------------------------------------- the probe */

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}

/* The ones' complement sum of len bytes (big-endian 16-bit words), unfolded. */
static uint32_t sum16(const uint8_t *p, size_t len, uint32_t sum) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t)p[i] << 8 | p[i + 1];
  if (len & 1) sum += (uint32_t)p[len - 1] << 8;
  return sum;
}

static uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

size_t s5_flow_probe(const struct s5_flow *f, uint32_t seq, uint32_t ack, uint8_t flags, uint8_t *buf,
                     size_t cap) {
  size_t alen = f->v6 ? 16 : 4, ip_len = f->v6 ? 40 : 20, len = ip_len + 20;
  if (cap < len) return 0;
  memset(buf, 0, len);
  uint8_t *ip = buf, *tcp = buf + ip_len;
  if (f->v6) {
    ip[0] = 0x60;
    put16(ip + 4, 20); /* payload length */
    ip[6] = 6;         /* TCP */
    ip[7] = 64;        /* hop limit */
    memcpy(ip + 8, f->remote, 16);
    memcpy(ip + 24, f->client, 16);
  } else {
    ip[0] = 0x45;
    put16(ip + 2, (uint16_t)len);
    put16(ip + 6, 0x4000); /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, f->remote, 4);
    memcpy(ip + 16, f->client, 4);
    put16(ip + 10, fold(sum16(ip, 20, 0)));
  }
  put16(tcp, f->remote_port);
  put16(tcp + 2, f->client_port);
  put32(tcp + 4, seq);
  put32(tcp + 8, flags & S5_TCP_ACK ? ack : 0);
  tcp[12] = 5 << 4; /* header length: 20 bytes */
  tcp[13] = flags;
  put16(tcp + 14, flags & S5_TCP_RST ? 0 : 0xffff); /* window */
  /* pseudo-header: both addresses, protocol, TCP length */
  uint32_t sum = sum16(f->remote, alen, 0);
  sum = sum16(f->client, alen, sum);
  sum += 6 + 20;
  put16(tcp + 16, fold(sum16(tcp, 20, sum)));
  return len;
}
