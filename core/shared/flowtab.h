/* SPDX-License-Identifier: MIT */
/* Process mode: the live TCP flows of every queue, in memory shared with the
 * supervisor, so that when a worker dies the supervisor knows whom to reset
 * (threads/recovery/flowreset.c). Created before the first fork (MAP_SHARED), like
 * the stats area.
 *
 * One table per queue, one writer: the queue's worker, which fills a slot
 * once when a session's SYN-ACK goes out and frees it when the session
 * ends; nothing per packet. The supervisor reads a table while its worker
 * is dead (s5_flowtab_take: no race at all), and the tables of live
 * workers only to skip a 4-tuple that is live again (s5_flowtab_each: a
 * slot's used flag is stored last with release, loaded with acquire).
 *
 * A slot is 44 bytes; a table has max-sessions slots (or
 * S5_FLOWTAB_DEFAULT when that is unlimited). Pages are touched only as
 * slots are used (free slots are reused first), so an idle table costs no
 * memory. A session that finds its table full is not tracked (counted in
 * tcp_untracked): its client is not reset if the worker dies. */
#ifndef S5_CORE_FLOWTAB_H
#define S5_CORE_FLOWTAB_H

#include <stddef.h>
#include <stdint.h>

#define S5_FLOWTAB_DEFAULT (1u << 16) /* slots per queue with max-sessions = 0 */
#define S5_FLOWTAB_MAX (1u << 20)

struct s5_flow {
  uint8_t client[16];                /* the client (the TUN side); IPv4 in the first 4 bytes */
  uint8_t remote[16];                /* the address it connected to */
  uint16_t client_port, remote_port; /* host order */
  uint8_t v6;
  uint8_t used; /* everything above is the key */
  uint16_t pad;
  uint32_t next_free; /* the worker's free list */
};
#define S5_FLOW_KEY_LEN offsetof(struct s5_flow, used)

struct s5_flowq;   /* one queue's table */
struct s5_flowtab; /* all of them */

/* Maps tables for `queues` queues with `slots` slots each. NULL (errno set) on failure. */
struct s5_flowtab *s5_flowtab_create(unsigned queues, uint32_t slots);
void s5_flowtab_free(struct s5_flowtab *t);
struct s5_flowq *s5_flowtab_queue(struct s5_flowtab *t, unsigned queue);

/* Worker: records f (key fields set, the rest zero). Returns a reference
 * for s5_flowtab_remove, or 0 when the table is full. */
uint32_t s5_flowtab_add(struct s5_flowq *q, const struct s5_flow *f);
void s5_flowtab_remove(struct s5_flowq *q, uint32_t ref);

/* Slots [0, top) may be in use: a bound for s5_flowtab_take's max. */
uint32_t s5_flowtab_top(const struct s5_flowq *q);

/* Supervisor, with the queue's worker dead and its replacement not yet
 * started: copies up to max used slots to out, empties the table for the
 * replacement. Returns the number of used slots (may exceed max). */
size_t s5_flowtab_take(struct s5_flowq *q, struct s5_flow *out, size_t max);

/* Supervisor: calls fn for each used slot of a table a live worker may be
 * writing (a slot filled meanwhile may be missed). */
void s5_flowtab_each(const struct s5_flowq *q, void (*fn)(const struct s5_flow *f, void *arg), void *arg);

/* Orders flows by key (for qsort/bsearch). */
int s5_flow_cmp(const void *a, const void *b);

#endif
