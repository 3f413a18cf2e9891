/* SPDX-License-Identifier: MIT */
/* The configuration a reload publishes (SIGHUP): one slot in memory shared
 * by the control loop, its only writer, and every worker, thread or forked
 * process (mapped before they start, like the stats area). A sequence
 * counter guards it: odd while the writer is inside, bumped by two per
 * reload, so a reader copies the whole struct and tries again if the
 * counter moved meanwhile; nobody ever waits for a lock. */
#ifndef S5_CORE_CONFIG_SLOT_H
#define S5_CORE_CONFIG_SLOT_H

#include <stdint.h>

#include "ini/config.h"

/* Maps the slot; before any worker starts. Returns 0 or -errno. */
int s5_config_slot_setup(void);

/* The control loop: publishes cfg as the next generation. */
void s5_config_slot_publish(const struct s5_config *cfg);

/* A worker: when the slot holds a generation other than *gen (0 = none
 * taken yet), copies it into out, sets *gen and returns 1; 0 when there is
 * nothing new (or nothing published, or no slot). */
int s5_config_slot_take(uint64_t *gen, struct s5_config *out);

#endif
