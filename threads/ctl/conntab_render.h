/* SPDX-License-Identifier: MIT */
/* --connections' table and JSON, from the shared connection lists. */
#ifndef S5_THREADS_CONNTAB_RENDER_H
#define S5_THREADS_CONNTAB_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "shared/conntab.h"

/* Writes the lists answered to req as a table (json: a JSON array), newest
 * first; queues that did not answer are named. now_ms: s5_now_ms(). */
void s5_conntab_render(FILE *out, uint64_t req, int json, uint64_t now_ms);

#endif
