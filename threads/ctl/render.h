/* SPDX-License-Identifier: MIT */
/* What the control plane's renderers share: text appended to a buffer
 * sized by a first pass, and the parts that the tables workers share
 * (core/shared/) add to each document. */
#ifndef S5_THREADS_CTL_RENDER_H
#define S5_THREADS_CTL_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ini/config.h"

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

/* The live configuration, for the parts that name what it holds (the
 * groups): the control loop's, which a reload rewrites in place on the
 * same loop. NULL (unit tests, before the daemon sets it): those parts
 * add nothing. */
void s5_render_config(const struct s5_config *cfg);
const struct s5_config *s5_render_cfg(void);

/* A JSON document read back for a table: the number after "name": in the
 * object from p to end (0 when absent), the string (empty when absent). */
uint64_t s5_render_json_num(const char *p, const char *end, const char *name);
void s5_render_json_str(const char *p, const char *end, const char *name, char *out, size_t cap);

/* The upstreams' health and counters (upstream_render.c, label
 * upstream="NAME"; the table only with two or more), the [rules] hits
 * (rules_render.c: per outbound, and per rule for the rules hit most;
 * they count from the last start or reload) and the groups
 * (group_render.c: strategy, the member chosen and since when, each
 * member's state and latency; labels group="G", upstream="M"). */
extern const struct s5_render_part s5_upstreams_part, s5_rules_part, s5_groups_part;

/* Every part, in the order the documents show them (stats_render.c). */
extern const struct s5_render_part *const s5_render_parts[];
extern const size_t s5_render_part_count;

#endif
