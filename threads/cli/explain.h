/* SPDX-License-Identifier: MIT */
/* s5tund --config FILE --explain DST:PORT [--name NAME] [--src ADDR]
 * [--proto tcp|udp]: which [rules] rule a flow would meet and where it
 * would go, from the configuration alone (no daemon needed). */
#ifndef S5_THREADS_EXPLAIN_H
#define S5_THREADS_EXPLAIN_H

#include <stdio.h>

#include "ini/config.h"

/* Prints "rule FILE:LINE" (or "rule default") and "outbound NAME" to out;
 * returns the exit status (0, or 1 when the rules cannot be compiled). */
int s5_explain(const struct s5_config *cfg, const struct s5_explain *e, FILE *out);

#endif
