/* SPDX-License-Identifier: MIT */
/* S5_ASSERT(cond): an invariant the code relies on (a handle count, a
 * state transition, buffer accounting). Always on, release builds too: a
 * broken invariant logs file, line and the condition, then aborts, so that
 * the fuzzers and the sanitizer runs stop at the first wrong state instead
 * of at the memory error it causes later, and a production daemon is
 * restarted (process mode: the worker) rather than carrying on with a
 * corrupt session table. The condition is evaluated once and must have no
 * side effects; it costs one predictable branch. */
#ifndef S5_CORE_ASSERT_H
#define S5_CORE_ASSERT_H

#define S5_ASSERT(cond)                                                          \
  do {                                                                           \
    if (__builtin_expect(!(cond), 0)) s5_assert_fail(__FILE__, __LINE__, #cond); \
  } while (0)

/* Logs "assertion failed: FILE:LINE: COND" at error and aborts. */
_Noreturn void s5_assert_fail(const char *file, int line, const char *cond);

#endif
