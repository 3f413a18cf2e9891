/* SPDX-License-Identifier: MIT */
/* S5_ASSERT (core/base/assert.h): a true condition costs nothing and is
 * evaluated once; a false one logs "assertion failed: FILE:LINE: COND" and
 * aborts. And an invariant of real code is live: a flow-table reference
 * removed twice (core/shared/flowtab.c) stops the process at once instead
 * of corrupting the free list. Each failing case runs in a child process;
 * its stderr (where the log goes by default) is read back through a pipe. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/assert.h"
#include "check.h"
#include "shared/flowtab.h"

/* Runs fn in a child with stderr into out; returns its wait status. */
static int in_child(void (*fn)(void), char *out, size_t cap) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fds[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
  out[n] = '\0';
  close(fds[0]);
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

static int evaluated;
static int count_true(void) { return ++evaluated > 0; }

static void assert_false(void) {
  int two = 2;
  S5_ASSERT(two == 3);
}

static void remove_twice(void) {
  struct s5_flowtab *t = s5_flowtab_create(1, 4);
  struct s5_flowq *q = s5_flowtab_queue(t, 0);
  struct s5_flow f;
  memset(&f, 0, sizeof f);
  f.client_port = 1;
  uint32_t ref = s5_flowtab_add(q, &f);
  s5_flowtab_remove(q, ref);
  s5_flowtab_remove(q, ref);
}

int main(void) {
  S5_ASSERT(count_true());
  CHECK(evaluated == 1, "a true condition evaluated once (%d)", evaluated);

  char out[1024];
  int st = in_child(assert_false, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a false condition aborts (status %#x)", st);
  CHECK(strstr(out, "assertion failed: ") != NULL && strstr(out, "test_assert.c:") != NULL &&
          strstr(out, ": two == 3") != NULL,
        "the line names the file, the line and the condition: %s", out);

  st = in_child(remove_twice, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "a reference removed twice aborts (status %#x)", st);
  CHECK(strstr(out, "flowtab.c:") != NULL, "the flow table's invariant named: %s", out);

  printf("%d passed, %d failed\n", passed, failed);
  return check_done();
}
