/* SPDX-License-Identifier: MIT */
/* What the control plane's renderers (stats, upstreams, rules, metrics)
 * share: text appended to a buffer sized by a first pass. */
#ifndef S5_THREADS_CTL_RENDER_H
#define S5_THREADS_CTL_RENDER_H

#include <stddef.h>

/* Appends to buf at `at` as snprintf does; returns where the text ends,
 * counting what did not fit (the renderers' sizing pass). */
size_t s5_render_put(char *buf, size_t cap, size_t at, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

#endif
