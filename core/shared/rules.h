/* SPDX-License-Identifier: MIT */
/* [rules] compiled: which outbound a new flow takes, decided once, on its
 * first packet. The rules (ini/rules_syntax.c reads them, files included) become
 * one block of memory without pointers (offsets only), so that it can live
 * in the region shared by every worker, thread or process:
 *
 *   - names (domain:, full:) in a hash table by name; a flow's mapped name
 *     looks up itself and each of its parent names (a.b.c, b.c, c), so the
 *     cost is the number of labels, not the number of rules;
 *   - destination prefixes (dst: without a name) in a hash table by
 *     (length, masked address), looked up once per prefix length present;
 *   - keyword: rules, and rules with neither a name nor a dst:, in short
 *     lists in rule order.
 *
 * Every candidate a lookup finds is checked against all of its matchers,
 * and the lowest rule number wins (first match, as written). Counters of
 * hits per rule and per outbound sit in the block, written by the workers.
 *
 * The region has two halves: a reload compiles into the one no worker
 * uses and publishes its number with the configuration; a reload is
 * refused while a worker still uses the older half (it takes the newer
 * one at its next loop turn). */
#ifndef S5_CORE_SHARED_RULES_H
#define S5_CORE_SHARED_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "ini/config.h"

struct s5_rules; /* one compiled set */

/* The rule number of a flow no rule matched. */
#define S5_RULE_DEFAULT UINT32_MAX

/* A new flow as rules see it. name: its mapped name, or NULL. */
struct s5_flow {
  int family; /* AF_INET or AF_INET6 */
  uint8_t dst[16], src[16];
  uint16_t dport;
  uint8_t proto; /* IPPROTO_TCP or IPPROTO_UDP */
  const char *name;
};

/* A flow from its destination, its source (used when it is of the
 * destination's family; NULL: none), protocol and name (NULL: none). */
void s5_flow_init(struct s5_flow *f, uint8_t proto, const struct sockaddr_storage *dst,
                  const struct sockaddr_storage *src, const char *name);

/* Compiles cfg's rules into mem (cap bytes, zeroed or not). Returns the
 * bytes it needs: when more than cap, nothing was written (call again
 * with room); 0 on an error, with "FILE:LINE: what" in err. */
size_t s5_rules_build(void *mem, size_t cap, const struct s5_config *cfg, char *err, size_t errlen);

/* The outbound of a flow: an index into cfg->upstreams, S5_OUTBOUND_DIRECT,
 * S5_OUTBOUND_BLOCK, S5_OUTBOUND_GROUP + an index into cfg->groups, or
 * S5_OUTBOUND_BALANCE (no rule matched and [rules] default is empty); *rule its rule's number or S5_RULE_DEFAULT. Counts
 * the hit. */
int s5_rules_match(struct s5_rules *t, const struct s5_flow *f, uint32_t *rule);

/* The same without counting (--explain). */
int s5_rules_lookup(const struct s5_rules *t, const struct s5_flow *f, uint32_t *rule);

/* [sniff]: does any rule have a name matcher? */
int s5_rules_named(const struct s5_rules *t);
/* [sniff]: could a name change where f (a flow without one, which took
 * rule and out by its address) goes? 1 when a rule with a name matcher
 * comes before rule, its other matchers take f, and its outbound is
 * another (or, past 4096 such rules looked at, to be safe). */
int s5_rules_by_name(const struct s5_rules *t, const struct s5_flow *f, uint32_t rule, int out);

/* Where rule came from: its file (a rules-file, or the configuration
 * file) and line. */
void s5_rules_where(const struct s5_rules *t, uint32_t rule, const char **file, unsigned *line);

/* Rules worth naming: some, or a default of their own (else every flow
 * takes [balance]'s choice, as without [rules]). */
int s5_rules_configured(const struct s5_rules *t);
/* "FILE:LINE" (the file's base name) of rule, or "default", into buf. */
void s5_rules_label(const struct s5_rules *t, uint32_t rule, char *buf, size_t len);

/* The counters: rules, hits of rule i (S5_RULE_DEFAULT: the default's),
 * hits per outbound (as s5_rules_match returns it). */
uint32_t s5_rules_count(const struct s5_rules *t);
/* An outbound's name: the upstream's or group's, "direct", "block",
 * "balance". */
const char *s5_rules_outbound_name(const struct s5_rules *t, int out);
uint64_t s5_rules_hits(const struct s5_rules *t, uint32_t rule);
int s5_rules_outbound_of(const struct s5_rules *t, uint32_t rule);
uint64_t s5_rules_outbound_hits(const struct s5_rules *t, int outbound);
size_t s5_rules_size(const struct s5_rules *t);

/* The shared region: maps it (before the workers start) and compiles cfg
 * into its first half (cfg->rules_half = 0). 0, -1 with err (a rule file
 * that cannot be read any more, a set too large), or -errno. */
int s5_rules_setup(struct s5_config *cfg, char *err, size_t errlen);
/* A reload (its own thread, threads/daemon/reload.c): next compiled into
 * the half live does not use, its number in next->rules_half. Waits up to
 * 2 s for workers still on that half to take live's. 0, or -1 with err
 * (the configuration then stays as it was). The renderers go on seeing
 * live's set (s5_rules_current) until s5_rules_commit. */
int s5_rules_reload(struct s5_config *next, const struct s5_config *live, char *err, size_t errlen);
/* The control loop publishes cfg: its set is the current one from now on. */
void s5_rules_commit(const struct s5_config *cfg);
/* The set cfg names (NULL before setup: no rules, everything takes the
 * first upstream). */
struct s5_rules *s5_rules_of(const struct s5_config *cfg);
/* The set the live configuration uses (the control loop's renderers; NULL
 * without the region). Its counters start at zero with each reload. */
struct s5_rules *s5_rules_current(void);
/* Worker q took cfg: it uses cfg's half from now on. */
void s5_rules_taken(unsigned q, const struct s5_config *cfg);
/* Worker q died (process mode): it uses no half until its replacement
 * takes one. */
void s5_rules_released(unsigned q);

#endif
