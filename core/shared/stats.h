/* SPDX-License-Identifier: MIT */
/* Per-queue counters in one memory area shared by every worker and the
 * supervisor: MAP_SHARED, created before the workers start, so it serves
 * threads and forked processes alike. Each counter has exactly one writer
 * (its queue's worker; restarts, pid and tcp_reset_dead_worker: the
 * supervisor), which updates it
 * with a plain relaxed store; readers load it relaxed. No locks, no
 * read-modify-write on the hot path. */
#ifndef S5_CORE_STATS_H
#define S5_CORE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Every counter, once: the struct, the JSON and the table (threads/ctl/stats_render.c) come from here.
 * Grouped by what they count (clang-format would put one per line). */
/* clang-format off */
#define S5_STATS_COUNTERS(X)                                                   \
  X(tun_rx_packets) X(tun_rx_bytes) X(tun_tx_packets) X(tun_tx_bytes)          \
  X(tcp_active) X(tcp_total) X(tcp_handshake_timeout)                          \
  X(udp_active) X(udp_total) X(udp_coalesce_waits) X(dns_hijacked)              \
  X(dns_pool_full) X(dns_tcp_limited)                                          \
  X(mem_trims)                                                                  \
  X(bytes_to_proxy) X(bytes_from_proxy)                                        \
  X(socks5_connect_failed) X(socks5_auth_failed) X(socks5_refused)             \
  X(socks5_bad_reply) X(socks5_timeout)                                        \
  X(pool_hits) X(pool_misses) X(pool_recycled) X(pool_retried) X(pool_failed)  \
  X(drop_tun_write) X(drop_max_sessions) X(drop_draining) X(drop_no_memory)    \
  X(drop_udp) X(drop_dns) X(drop_icmp) X(drop_proxy_loop) X(restarts)          \
  X(tun_errors) X(tcp_reset_dead_worker) X(tcp_untracked) X(session_log_dropped)
/* clang-format on */

struct s5_queue_stats {
#define S5_STATS_FIELD(name) uint64_t name;
  S5_STATS_COUNTERS(S5_STATS_FIELD)
#undef S5_STATS_FIELD
  uint64_t heartbeat_ms;        /* CLOCK_MONOTONIC ms when the worker's loop last turned */
  int32_t pid;                  /* the worker's process */
  uint32_t ready;               /* the worker is serving */
  uint32_t tun_failing;         /* its TUN queue failed and is not read until it recovers */
} __attribute__((aligned(64))); /* a cache line or more each: no false sharing */

/* Every counter is a naturally aligned uint64_t, so that the relaxed atomic
 * loads and stores below are single instructions on every 64-bit target
 * (and tear-free reads for the supervisor and the stats socket); a queue's
 * counters start on a cache line of their own. */
#define S5_STATS_ALIGNED(name) \
  _Static_assert(offsetof(struct s5_queue_stats, name) % sizeof(uint64_t) == 0, #name);
S5_STATS_COUNTERS(S5_STATS_ALIGNED)
#undef S5_STATS_ALIGNED
_Static_assert(sizeof(struct s5_queue_stats) % 64 == 0, "struct s5_queue_stats: whole cache lines");

struct s5_stats_area {
  uint32_t queues;
  uint64_t started_unix;
  uint64_t reloads;          /* configuration reloads applied (SIGHUP); written by the control loop */
  uint64_t reload_failures;  /* reloads refused: the file did not load or check */
  uint64_t last_reload_unix; /* time of the last applied reload, 0 = none */
  uint64_t
    tun_tx_dropped; /* the device's transmit drops since the start (its queue was full); control loop */
  struct s5_queue_stats q[];
};
_Static_assert(offsetof(struct s5_stats_area, q) % 64 == 0, "the queues' counters start on a cache line");

#define S5_STAT_ADD(st, field, n) \
  __atomic_store_n(&(st)->field, (st)->field + (uint64_t)(n), __ATOMIC_RELAXED)
#define S5_STAT_SUB(st, field, n) \
  __atomic_store_n(&(st)->field, (st)->field - (uint64_t)(n), __ATOMIC_RELAXED)
#define S5_STAT_SET(st, field, v) __atomic_store_n(&(st)->field, (v), __ATOMIC_RELAXED)
#define S5_STAT_GET(st, field) __atomic_load_n(&(st)->field, __ATOMIC_RELAXED)

/* Maps the shared area for `queues` queues. Returns NULL (errno set) on failure. */
struct s5_stats_area *s5_stats_create(unsigned queues);

/* Copies queue i's counters (i == queues: the sum over all queues). */
void s5_stats_read(const struct s5_stats_area *a, unsigned i, struct s5_queue_stats *out);

#endif
