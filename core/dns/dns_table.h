/* SPDX-License-Identifier: MIT */
/* The name <-> address table of the mapped resolver, shared by every worker
 * of one s5tund: a fixed-size area mapped MAP_SHARED | MAP_ANONYMOUS before
 * the workers start, so threads and forked worker processes see the same
 * table, guarded by a process-shared robust mutex.
 *
 * Entry i always stands for pool address first + i, and with an IPv6 pool
 * also for first6 + i (one entry per name, both families), so an address
 * finds its name without a search; names find their entry through a hash table
 * of entry indices. When every entry is in use, the least recently used one
 * (by a query or a connection) is given to the new name. */
#ifndef S5_CORE_DNS_TABLE_H
#define S5_CORE_DNS_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct s5_dns_table;

/* The TTL of every mapped answer (seconds), and how long after its last
 * answer or connection an entry stays its name's before another name may
 * take it: the TTL and a minute more for clients that keep answers past it
 * (browsers' own caches hold them up to a minute, Java's 30 s). A client
 * that still holds an address can thus never reach another name with it. */
#define S5_DNS_TTL 1
#define S5_DNS_REUSE_MS ((S5_DNS_TTL + 60) * 1000ull)

/* Usable addresses of an IPv4 pool of prefix length len: every address but
 * the network's first and last (those look like network/broadcast
 * addresses to some software). 0 if len is out of 1..30. */
uint32_t s5_dns_pool_size(unsigned len);

/* Maps a table of `entries` names for the pool net/len (net in network
 * order; host bits are ignored). entries must be 1..s5_dns_pool_size(len).
 * Returns NULL with errno set on failure. */
struct s5_dns_table *s5_dns_table_create(const uint8_t net[4], unsigned len, uint32_t entries);
void s5_dns_table_destroy(struct s5_dns_table *t);

/* The address standing for name (len bytes of lowercase text, 1..253),
 * giving the name an entry if it has none. Marks it most recently used.
 * Writes the address (network order) into addr. Returns 0, -1 if len is
 * out of range, or S5_DNS_TABLE_FULL when the name has no entry and every
 * entry was used within the reuse age (none may be given away). */
#define S5_DNS_TABLE_FULL (-2)
int s5_dns_table_map(struct s5_dns_table *t, const char *name, size_t len, uint8_t addr[4]);

/* The name addr (network order) stands for, NUL-terminated into name
 * (cap >= 254 always suffices); marks it most recently used. Returns the
 * name's length, 0 when addr is in the pool but stands for no name (never
 * given out, or recycled since), -1 when addr is not in the pool. */
int s5_dns_table_name(struct s5_dns_table *t, const uint8_t addr[4], char *name, size_t cap);

/* The reuse age (S5_DNS_REUSE_MS by default; tests set it short). */
void s5_dns_table_reuse_ms(struct s5_dns_table *t, uint64_t ms);

/* 1 if addr (network order) is one of the pool's addresses. No lock taken. */
int s5_dns_table_in_pool(const struct s5_dns_table *t, const uint8_t addr[4]);

/* Usable addresses of an IPv6 pool of prefix length len (8..120; capped at
 * 2^32 - 1, more than any table holds); 0 if len is out of range. */
uint64_t s5_dns_pool6_size(unsigned len);

/* Gives the table's entries IPv6 addresses too, from net/len (16 bytes,
 * host bits ignored; the first and last address are skipped, as for IPv4).
 * Before the workers start. Returns 0, or -1 (EINVAL) when the pool is
 * smaller than the table. */
int s5_dns_table_pool6(struct s5_dns_table *t, const uint8_t net[16], unsigned len);

/* As s5_dns_table_map() and s5_dns_table_name(), for the IPv6 pool; both
 * return -1 when there is none. A name's IPv6 address is entry i's, like
 * its IPv4 one. */
int s5_dns_table_map6(struct s5_dns_table *t, const char *name, size_t len, uint8_t addr[16]);
int s5_dns_table_name6(struct s5_dns_table *t, const uint8_t addr[16], char *name, size_t cap);
int s5_dns_table_in_pool6(const struct s5_dns_table *t, const uint8_t addr[16]);

/* Times the table was found with its lock's owner dead and was cleared. */
uint64_t s5_dns_table_resets(const struct s5_dns_table *t);

/* For the state file (dns_state.c). */
uint32_t s5_dns_table_count(const struct s5_dns_table *t);

/* Grows by one whenever an entry is given to a name (or the table is
 * cleared): a state file written at generation g is current while it stays g. */
uint64_t s5_dns_table_generation(struct s5_dns_table *t);

/* Copies the used entries, least recently used first, into buf as records
 * of [entry index, 4 bytes big-endian][name length, 1 byte][name], holding
 * the lock only for the copy; *generation (may be NULL) gets the table's
 * generation at that moment. Returns the bytes written, or SIZE_MAX when
 * they would be more than cap (the table grew since
 * s5_dns_table_snapshot_size() said how many there are now). */
#define S5_DNS_SNAP_ENTRY_MAX (5 + 253)
size_t s5_dns_table_snapshot_size(struct s5_dns_table *t);
size_t s5_dns_table_snapshot(struct s5_dns_table *t, uint8_t *buf, size_t cap, uint64_t *generation);

/* Gives entry index (< count, free) to name (1..253 bytes) as if it had
 * just been used: the most recently used one now. Before the workers
 * start. Returns 0, or -1 when index is out of range or in use, or the
 * name already has an entry. */
int s5_dns_table_restore(struct s5_dns_table *t, uint32_t index, const char *name, size_t len);

/* Every entry free again (a state file found bad halfway). */
void s5_dns_table_reset(struct s5_dns_table *t);

#endif
