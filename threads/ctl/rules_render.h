/* SPDX-License-Identifier: MIT */
/* The [rules] counters (core/shared/rules.h) as text: their part of the
 * stats socket's JSON, of --stats's table, and of the Prometheus document
 * (hits per outbound, and per rule for the RULES_SHOWN rules hit most).
 * They count from the last start or reload. */
#ifndef S5_THREADS_RULES_RENDER_H
#define S5_THREADS_RULES_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "shared/rules.h"

/* Appends ,"rules":{...} at buf + at (as snprintf); t NULL: nothing. */
size_t s5_rules_json(const struct s5_rules *t, char *buf, size_t cap, size_t at);

/* --stats's lines about the rules, from the JSON document (nothing when
 * it has none). */
void s5_rules_table(FILE *out, const char *json);

/* The Prometheus families, into buf (as snprintf). */
size_t s5_rules_prom(const struct s5_rules *t, char *buf, size_t cap);

#endif
