/* SPDX-License-Identifier: MIT */
/* What the control plane's renderers share: text appended to a buffer
 * sized by a first pass, and the parts that the tables workers share
 * (core/shared/) add to each document. */
#ifndef S5_THREADS_CTL_RENDER_H
#define S5_THREADS_CTL_RENDER_H

#include <stddef.h>
#include <stdio.h>

/* Appends to buf at `at` as snprintf does; returns where the text ends,
 * counting what did not fit (the renderers' sizing pass). */
size_t s5_render_put(char *buf, size_t cap, size_t at, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* A shared table as its part of the three documents; each reads its table
 * itself and adds nothing when there is none. */
struct s5_render_part {
  /* Appends ,"NAME":... to the stats socket's JSON at buf + at (as
   * s5_render_put); returns the end. */
  size_t (*json)(char *buf, size_t cap, size_t at);
  /* --stats's lines, read back from that JSON document. */
  void (*table)(FILE *out, const char *json);
  /* Its Prometheus families, into buf (as snprintf). */
  size_t (*prom)(char *buf, size_t cap);
};

/* The upstreams' health and counters (upstream_render.c, label
 * upstream="NAME"; the table only with two or more) and the [rules] hits
 * (rules_render.c: per outbound, and per rule for the rules hit most;
 * they count from the last start or reload). */
extern const struct s5_render_part s5_upstreams_part, s5_rules_part;

/* Every part, in the order the documents show them (stats_render.c). */
extern const struct s5_render_part *const s5_render_parts[];
extern const size_t s5_render_part_count;

#endif
