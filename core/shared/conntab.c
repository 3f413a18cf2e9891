/* SPDX-License-Identifier: MIT */
#include "shared/conntab.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "base/assert.h"

struct s5_connq {
  uint64_t req;  /* written by the control loop */
  uint64_t done; /* written by the worker: the request answered */
  uint32_t n;    /* entries of the answer */
  uint64_t over; /* connections beyond S5_CONN_MAX */
  struct s5_conn c[S5_CONN_MAX];
};

static struct s5_connq *lists; /* set before the workers start */
static unsigned nlists;
static uint64_t last_req; /* the control loop's */

int s5_conntab_setup(unsigned queues) {
  size_t len = (size_t)queues * sizeof *lists;
  /* Pages are touched only by answers: an unused list costs nothing. */
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -errno;
  lists = m;
  nlists = queues;
  return 0;
}

struct s5_connq *s5_conntab_queue(unsigned queue) {
  return lists != NULL && queue < nlists ? &lists[queue] : NULL;
}

void s5_conntab_begin(struct s5_connq *q) {
  q->n = 0;
  q->over = 0;
}

uint64_t s5_conntab_pending(const struct s5_connq *q) {
  uint64_t req = __atomic_load_n(&q->req, __ATOMIC_ACQUIRE);
  return req != __atomic_load_n(&q->done, __ATOMIC_RELAXED) ? req : 0;
}

void s5_conntab_put(struct s5_connq *q, const struct s5_conn *c) {
  S5_ASSERT(q->n <= S5_CONN_MAX);
  if (q->n < S5_CONN_MAX) q->c[q->n++] = *c;
  else q->over++;
}

void s5_conntab_done(struct s5_connq *q, uint64_t req) {
  S5_ASSERT(req != 0 && q->n <= S5_CONN_MAX); /* an answer to a request, within its list */
  __atomic_store_n(&q->done, req, __ATOMIC_RELEASE);
}

uint64_t s5_conntab_request(void) {
  uint64_t req = ++last_req;
  /* Only the workers write their lists (a late one may still be writing
   * the answer to an earlier request): each empties its own first. */
  for (unsigned i = 0; i < nlists; i++) __atomic_store_n(&lists[i].req, req, __ATOMIC_RELEASE);
  return req;
}

int s5_conntab_answered(unsigned queue, uint64_t req) {
  return queue < nlists && __atomic_load_n(&lists[queue].done, __ATOMIC_ACQUIRE) == req;
}

unsigned s5_conntab_queues(void) { return nlists; }

const struct s5_conn *s5_conntab_answer(unsigned queue, uint64_t req, uint32_t *n, uint64_t *over) {
  if (!s5_conntab_answered(queue, req)) return NULL;
  S5_ASSERT(lists[queue].n <= S5_CONN_MAX);
  *n = lists[queue].n;
  *over = lists[queue].over;
  return lists[queue].c;
}
