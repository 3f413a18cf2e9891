/* SPDX-License-Identifier: MIT */
#include "shared/config_slot.h"

#include "base/assert.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

struct slot {
  uint64_t seq; /* even: stable; odd: being written; 0: nothing yet */
  struct s5_config cfg;
};

static struct slot *slot; /* set once before the workers start */

int s5_config_slot_setup(void) {
  void *m = mmap(NULL, sizeof *slot, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -errno;
  slot = m;
  return 0;
}

void s5_config_slot_publish(const struct s5_config *cfg) {
  if (slot == NULL) return;
  uint64_t seq = __atomic_load_n(&slot->seq, __ATOMIC_RELAXED);
  S5_ASSERT((seq & 1) == 0); /* one writer, the control loop: never inside twice */
  __atomic_store_n(&slot->seq, seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  /* Byte by byte through relaxed atomics: readers copy concurrently, and
   * the sequence counter tells them to discard a torn copy. */
  const unsigned char *src = (const unsigned char *)cfg;
  unsigned char *dst = (unsigned char *)&slot->cfg;
  for (size_t i = 0; i < sizeof *cfg; i++) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
  __atomic_store_n(&slot->seq, seq + 2, __ATOMIC_RELEASE);
}

int s5_config_slot_take(uint64_t *gen, struct s5_config *out) {
  if (slot == NULL) return 0;
  for (;;) {
    uint64_t before = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
    if (before == 0 || before == *gen) return 0;
    if (before & 1) continue; /* the writer is inside: it is quick */
    const unsigned char *src = (const unsigned char *)&slot->cfg;
    unsigned char *dst = (unsigned char *)out;
    for (size_t i = 0; i < sizeof *out; i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == before) {
      *gen = before;
      return 1;
    }
  }
}
