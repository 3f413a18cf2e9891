/* SPDX-License-Identifier: MIT */
/* Free heap back to the kernel after a load (see memtrim.h). */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "base/assert.h"
#include "base/log.h"
#include "ctx/memtrim.h"

/* glibc's own default, what an idle worker's arena keeps of its top. */
#define S5_MEMTRIM_IDLE_THRESHOLD (128 << 10)
/* A free at least this large (glibc's FASTBIN_CONSOLIDATION_THRESHOLD) is
 * what makes malloc look at the top of a thread's arena. */
#define S5_MEMTRIM_PROBE (64 << 10)

/* Whether malloc is glibc's: a sanitizer's allocator (ASan, TSan, MSan)
 * replaces malloc and free but not glibc's introspection and trimming, which
 * then walk arenas nobody uses (mallinfo2() crashed an ASan build); so
 * without glibc's allocator the trim is skipped. Known at build time, and
 * at run time when mallopt() is refused (s5_memtrim_setup). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define S5_MEMTRIM_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define S5_MEMTRIM_SANITIZER 1
#endif
#endif
#ifndef S5_MEMTRIM_SANITIZER
#define S5_MEMTRIM_SANITIZER 0
#endif
static int memtrim_glibc = !S5_MEMTRIM_SANITIZER;

/* Workers of this process in a busy period. Thread mode: every worker
 * shares it, so that only the last one to go idle trims every arena, and
 * never while another is serving a burst (malloc_trim walks and locks every
 * arena, the busy worker's too). Process mode: a worker process's own copy. */
static unsigned memtrim_busy;
/* The threshold is the process's: one worker at a time lowers it. */
static pthread_mutex_t memtrim_lock = PTHREAD_MUTEX_INITIALIZER;

int s5_memtrim_setup(void) {
  if (!memtrim_glibc) {
    s5_debug("memory: built with a sanitizer, whose allocator is not glibc's: no heap trimming");
    return -1;
  }
  if (mallopt(M_TRIM_THRESHOLD, S5_MEMTRIM_BUSY_THRESHOLD) == 1) return 0;
  /* Another allocator refuses mallopt(); it keeps its own heap. */
  memtrim_glibc = 0;
  s5_debug("memory: mallopt(M_TRIM_THRESHOLD, %d) refused, the allocator is not glibc's: no heap trimming",
           S5_MEMTRIM_BUSY_THRESHOLD);
  return -1;
}

int s5_memtrim_went_idle(struct s5_memtrim *m, const struct s5_queue_stats *st, uint64_t now_ms) {
  uint64_t now[4] = {S5_STAT_GET(st, tcp_total), S5_STAT_GET(st, tcp_active), S5_STAT_GET(st, udp_total),
                     S5_STAT_GET(st, udp_active)};
  int moved = memcmp(now, m->seen, sizeof now) != 0;
  memcpy(m->seen, now, sizeof now);
  if (moved) {
    if (!m->busy) __atomic_add_fetch(&memtrim_busy, 1, __ATOMIC_RELAXED);
    m->busy = 1;
    m->moved_ms = now_ms;
    return 0;
  }
  if (!m->busy || now_ms - m->moved_ms < S5_MEMTRIM_PERIOD_MS) return 0;
  m->busy = 0;
  return 1;
}

/* malloc_trim() releases the top of the main arena only; a thread's arena
 * (thread mode: each worker's) gives its top back when a free of
 * S5_MEMTRIM_PROBE or more finds it above the threshold. So, with the
 * threshold lowered for a moment, such a free on this thread. */
static void memtrim_own_arena(void) {
  int r = pthread_mutex_lock(&memtrim_lock);
  if (r != 0) {
    s5_warn("memory: locking the trim: %s", strerror(r));
    return;
  }
  if (mallopt(M_TRIM_THRESHOLD, S5_MEMTRIM_IDLE_THRESHOLD) == 1) {
    void *volatile probe = malloc(S5_MEMTRIM_PROBE); /* volatile: not elided with its free */
    if (probe == NULL) s5_debug("memory: no %d bytes for the trim's probe", S5_MEMTRIM_PROBE);
    free(probe);
    if (mallopt(M_TRIM_THRESHOLD, S5_MEMTRIM_BUSY_THRESHOLD) != 1)
      s5_warn("memory: mallopt(M_TRIM_THRESHOLD, %d) refused after a trim", S5_MEMTRIM_BUSY_THRESHOLD);
  }
  pthread_mutex_unlock(&memtrim_lock);
}

/* The process's resident set in KiB, for the debug line; 0 if unknown. */
static unsigned long memtrim_rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "re");
  if (f == NULL) {
    s5_debug("memory: /proc/self/statm: %s", strerror(errno));
    return 0;
  }
  unsigned long size = 0, resident = 0;
  if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return resident * ((unsigned long)sysconf(_SC_PAGESIZE) / 1024);
}

/* What malloc held and what the trim gave back, so that a figure in a bug
 * report tells the allocator's free heap (fordblks) from growth (in use). */
static void memtrim_logged(int all) {
  struct mallinfo2 mi = mallinfo2();
  unsigned long before = memtrim_rss_kib();
  uint64_t t0 = uv_hrtime();
  memtrim_own_arena();
  if (all) malloc_trim(0);
  uint64_t us = (uv_hrtime() - t0) / 1000;
  s5_debug(
    "memory: idle after a busy period: heap %zu KiB in use, %zu KiB free (%zu KiB mmapped); "
    "RSS %lu -> %lu KiB (%s took %" PRIu64 " us)",
    mi.uordblks / 1024, mi.fordblks / 1024, mi.hblkhd / 1024, before, memtrim_rss_kib(),
    all ? "trimming every arena" : "trimming this worker's arena", us);
}

int s5_memtrim_release(void) {
  unsigned busy = __atomic_fetch_sub(&memtrim_busy, 1, __ATOMIC_RELAXED);
  S5_ASSERT(busy > 0); /* each busy period counted once, released once */
  int all = busy == 1;
  if (!memtrim_glibc) return 0; /* nothing of glibc's to trim or to ask */
  if (s5_log_enabled(S5_LOG_DEBUG)) {
    memtrim_logged(all);
  } else {
    memtrim_own_arena();
    if (all) malloc_trim(0);
  }
  return all;
}

void s5_memtrim_stop(struct s5_memtrim *m) {
  if (m->busy) {
    unsigned busy = __atomic_fetch_sub(&memtrim_busy, 1, __ATOMIC_RELAXED);
    S5_ASSERT(busy > 0);
  }
  m->busy = 0;
}
