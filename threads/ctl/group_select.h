/* SPDX-License-Identifier: MIT */
/* [group] strategy = select: the operator's live choice of a group's
 * member (`s5tund --select GROUP MEMBER [SOCKET]`, over the stats
 * socket), and what a reload does with it. The choice lives in the shared
 * health table (core/shared/uptab.h, t->g[g].chosen), carried over a
 * reload by the group's name; new flows follow it at once, open ones keep
 * the upstream they have. */
#ifndef S5_THREADS_CTL_GROUP_SELECT_H
#define S5_THREADS_CTL_GROUP_SELECT_H

#include <stddef.h>

#include "ini/config.h"
#include "shared/uptab.h"

/* The control loop: group `group` of the live cfg takes `member` from now
 * on. Checked against cfg: a known group, of strategy select, member one
 * of its members. Returns 0 with what changed in msg ("group G: M selected
 * (was OLD)", logged at info), or -1 with why not in msg. */
int s5_group_select(struct s5_uptab *t, const struct s5_config *cfg, const char *group, const char *member,
                    char *msg, size_t len);

/* A reload, after s5_uptab_assign(t, next) and before next is published:
 * a select group whose `selected` (or strategy) next changes takes the
 * configuration's member (the live choice is dropped, logged at info);
 * otherwise the live choice stays. A live choice that is no longer a
 * member is ignored by s5_uptab_group_member (the configuration's then). */
void s5_group_reloaded(struct s5_uptab *t, const struct s5_config *live, const struct s5_config *next);

/* "failover", "round-robin", "least-connections", "hash", "fastest", "select". */
const char *s5_group_strategy_name(enum s5_balance s);

#endif
