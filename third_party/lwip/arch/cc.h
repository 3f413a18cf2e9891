/* SPDX-License-Identifier: MIT */
/* lwIP compiler/platform port for Linux (glibc, GCC/Clang, 32/64-bit).
 *
 * lwip/arch.h includes this file before it falls back to its own defaults,
 * so everything here overrides lwIP's generic definitions. The functions
 * declared here live in the s5_lwip_*.c files next to this header and are
 * compiled into the lwip library itself. */
#ifndef S5_LWIP_ARCH_CC_H
#define S5_LWIP_ARCH_CC_H

#include <endian.h> /* BYTE_ORDER, LITTLE_ENDIAN, BIG_ENDIAN from glibc */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Byte order conversion inline, instead of lwIP's out-of-line def.c
 * functions called for every header field. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define lwip_htons(x) ((uint16_t)__builtin_bswap16((uint16_t)(x)))
#define lwip_htonl(x) ((uint32_t)__builtin_bswap32((uint32_t)(x)))
#endif

/* errno values come from the C library; lwIP must not invent its own. */
#define LWIP_ERRNO_STDINCLUDE 1

/* Random numbers: a per-thread generator (thread-local state, seeded from
 * getrandom()), so workers never share or contend on rand()'s hidden state. */
uint32_t s5_lwip_rand(void);
#define LWIP_RAND() ((u32_t)s5_lwip_rand())

/* Diagnostics go to stderr; lwIP calls LWIP_PLATFORM_DIAG(("fmt", args)). */
void s5_lwip_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define LWIP_PLATFORM_DIAG(x) \
  do {                        \
    s5_lwip_diag x;           \
  } while (0)

/* Only reached when assertions are compiled in (S5_LWIP_ASSERT): a broken
 * invariant inside the stack is not survivable, so report it and abort. */
void s5_lwip_assert(const char *msg, const char *file, int line) __attribute__((noreturn));
#define LWIP_PLATFORM_ASSERT(x) s5_lwip_assert((x), __FILE__, __LINE__)

#endif /* S5_LWIP_ARCH_CC_H */
