/* SPDX-License-Identifier: MIT */
/* Unit test of the published configuration (core/shared/config_slot.c):
 * nothing before the first publish, one take per generation, and its
 * seqlock under fire: a writer thread publishes thousands of generations
 * while reader threads, and a forked reader process (the slot is shared
 * memory, as for process mode's workers), take them. Every byte of
 * generation k is the same value, derived from k, so a reader that copied
 * across two generations (a torn copy) sees bytes that differ, or a value
 * that is not its generation's. Readers also see generations only grow,
 * and the last one once the writer is done. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared/config_slot.h"

#include "check.h"

#define PUBLISHES 1500
#define READERS 2     /* threads; one more in a forked process */
#define SYNC_EVERY 25 /* publishes between waits for every reader */

/* Shared with the forked reader: the writer's flag and every reader's tally. */
struct reader {
  unsigned takes, torn, backwards;
  _Atomic uint64_t last;
};
static struct shared {
  _Atomic int writer_done;
  struct reader r[READERS + 1];
} * sh;

/* Generation gen (the slot's counter: two per publish) is publish gen / 2. */
static unsigned char fill_of(uint64_t gen) { return (unsigned char)((gen / 2) % 251 + 1); }

static void publish(unsigned k) {
  static struct s5_config cfg;
  memset(&cfg, (int)fill_of(2 * (uint64_t)k), sizeof cfg);
  s5_config_slot_publish(&cfg);
}

/* A copy is whole: every byte the one its generation wrote. */
static int whole(const struct s5_config *c, uint64_t gen) {
  const unsigned char *b = (const unsigned char *)c;
  unsigned char want = fill_of(gen);
  for (size_t i = 0; i < sizeof *c; i++)
    if (b[i] != want) return 0;
  return 1;
}

/* Takes until the writer is done, then once more (the last generation). */
static void read_loop(struct reader *r) {
  struct s5_config *out = malloc(sizeof *out);
  uint64_t gen = 0;
  int done = 0;

  if (out == NULL) return;
  for (;;) {
    if (s5_config_slot_take(&gen, out)) {
      r->takes++;
      if (!whole(out, gen)) r->torn++;
      if (gen <= r->last) r->backwards++;
      r->last = gen;
    }
    if (done) break;
    done = sh->writer_done;
  }
  free(out);
}

static void *reader_main(void *arg) {
  read_loop(arg);
  return NULL;
}

static void test_first(void) {
  static struct s5_config out;
  uint64_t gen = 0;

  CHECK(s5_config_slot_take(&gen, &out) == 0 && gen == 0, "a take before any publish");
  publish(1);
  CHECK(s5_config_slot_take(&gen, &out) == 1, "the first publish is taken");
  CHECK(gen == 2, "generation %llu after one publish, want 2", (unsigned long long)gen);
  CHECK(whole(&out, gen), "the first copy is whole");
  CHECK(s5_config_slot_take(&gen, &out) == 0, "the same generation is not taken twice");
}

static void test_concurrent(void) {
  pthread_t rt[READERS];
  int status = 0;
  pid_t child = fork();

  if (child < 0) {
    CHECK(0, "fork: %s", strerror(errno));
    return;
  }
  if (child == 0) { /* a worker process of process mode */
    read_loop(&sh->r[READERS]);
    _exit(0);
  }
  for (int i = 0; i < READERS; i++) pthread_create(&rt[i], NULL, reader_main, &sh->r[i]);
  for (unsigned k = 2; k <= PUBLISHES; k++) {
    publish(k);
    /* Now and then every reader catches up, so that each one takes many
     * generations, not only the few it can copy whole in between. */
    if (k % SYNC_EVERY == 0)
      for (int i = 0; i <= READERS; i++)
        while (sh->r[i].last < 2 * (uint64_t)k) sched_yield();
  }
  sh->writer_done = 1;
  for (int i = 0; i < READERS; i++) pthread_join(rt[i], NULL);
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status), "the reader process ended");
  for (int i = 0; i <= READERS; i++) {
    const struct reader *r = &sh->r[i];
    const char *who = i < READERS ? "thread" : "process";
    printf("reader %d (%s): %u generations taken of %d\n", i, who, r->takes, PUBLISHES);
    CHECK(r->torn == 0, "reader %d (%s): %u torn copies", i, who, r->torn);
    CHECK(r->backwards == 0, "reader %d (%s): a generation went back %u times", i, who, r->backwards);
    CHECK(r->takes >= PUBLISHES / SYNC_EVERY, "reader %d (%s): %u generations taken, want at least %d", i,
          who, r->takes, PUBLISHES / SYNC_EVERY);
    CHECK(r->last == 2 * (uint64_t)PUBLISHES, "reader %d (%s): last generation %llu, want %llu", i, who,
          (unsigned long long)r->last, 2ULL * PUBLISHES);
  }
}

int main(void) {
  int r = s5_config_slot_setup();
  CHECK(r == 0, "s5_config_slot_setup: %s", strerror(-r));
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(sh != MAP_FAILED, "mmap: %s", strerror(errno));
  if (r != 0 || sh == MAP_FAILED) return check_done();
  test_first();
  test_concurrent();
  return check_done();
}
