/* SPDX-License-Identifier: MIT */
/* The upstreams' shared health and counters (core/shared/uptab.h) as
 * text: their part of the stats socket's JSON, of --stats's table and of
 * the Prometheus document (label upstream="NAME"). */
#ifndef S5_THREADS_UPSTREAM_RENDER_H
#define S5_THREADS_UPSTREAM_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "shared/uptab.h"

/* Appends ,"no_upstream":N,"upstreams":[{...},...] at buf + at (as
 * snprintf, counting what did not fit); t NULL: nothing. Returns the end. */
size_t s5_upstreams_json(const struct s5_uptab *t, char *buf, size_t cap, size_t at);

/* --stats's table of the upstreams, from the JSON document (nothing when
 * it has fewer than two). */
void s5_upstreams_table(FILE *out, const char *json);

/* The Prometheus families, into buf (as snprintf). */
size_t s5_upstreams_prom(const struct s5_uptab *t, char *buf, size_t cap);

#endif
