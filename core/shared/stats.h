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

/* Every counter, once: its name; GAUGE for what is open now, COUNT for
 * what happened since the start; and what it means (Prometheus's # HELP,
 * in the man page's words). The struct, the JSON and the table
 * (threads/ctl/stats_render.c) and the metrics (threads/ctl/metrics.c)
 * all come from here. */
/* clang-format off */
#define S5_STATS_COUNTERS(X) \
  X(tun_rx_packets, COUNT, "Packets read from the TUN device (what clients sent).") \
  X(tun_rx_bytes, COUNT, "Bytes read from the TUN device.") \
  X(tun_tx_packets, COUNT, "Packets written to the TUN device.") \
  X(tun_tx_bytes, COUNT, "Bytes written to the TUN device.") \
  X(tcp_active, GAUGE, "TCP sessions open now.") \
  X(tcp_total, COUNT, "TCP sessions since start.") \
  X(tcp_handshake_timeout, COUNT, "TCP sessions whose client never completed its handshake.") \
  X(udp_active, GAUGE, "UDP associations open now.") \
  X(udp_total, COUNT, "UDP associations since start.") \
  X(udp_upstream_down, COUNT, "UDP associations ended because their upstream went down (new ones take another).") \
  X(udp_coalesce_waits, COUNT, "Waits of [session] udp-coalesce before reading relays again.") \
  X(dns_hijacked, COUNT, "DNS queries to port 53 of another address answered by the mapped resolver ([dns] hijack).") \
  X(dns_pool_full, COUNT, "DNS queries answered SERVFAIL: every mapped address was answered too recently to be given to another name.") \
  X(dns_tcp_limited, COUNT, "DNS connections over TCP refused (too many from one address) or reset (a message not whole within 5 s).") \
  X(mem_trims, COUNT, "Times free heap was handed back to the kernel when the worker went idle after a load.") \
  X(bytes_to_proxy, COUNT, "Payload bytes sent to the proxy (SOCKS5 handshakes not included).") \
  X(bytes_from_proxy, COUNT, "Payload bytes received from the proxy (SOCKS5 handshakes not included).") \
  X(socks5_connect_failed, COUNT, "Sessions that could not connect to the proxy.") \
  X(socks5_auth_failed, COUNT, "Sessions whose authentication the proxy refused.") \
  X(socks5_refused, COUNT, "Sessions whose CONNECT or UDP ASSOCIATE the proxy refused.") \
  X(socks5_bad_reply, COUNT, "Sessions whose proxy answered something that is not SOCKS5.") \
  X(socks5_timeout, COUNT, "Sessions that reached [session] connect-timeout at the proxy.") \
  X(pool_hits, COUNT, "Sessions that took a warm pooled proxy connection ([socks5] pool).") \
  X(pool_misses, COUNT, "Sessions that found the pool empty and connected fresh.") \
  X(pool_recycled, COUNT, "Pooled connections closed unused: past their age, closed by the proxy, dead when taken, or flushed by a reload.") \
  X(pool_retried, COUNT, "Sessions whose pooled connection died before the CONNECT reply, retried on a fresh one.") \
  X(pool_failed, COUNT, "Pool warm-ups that failed (connect, greeting, authentication); the pool backs off.") \
  X(drop_tun_write, COUNT, "Packets that could not be written to the TUN device.") \
  X(drop_max_sessions, COUNT, "SYNs refused at [session] max-sessions.") \
  X(drop_draining, COUNT, "SYNs refused while the worker drains before a stop.") \
  X(drop_no_memory, COUNT, "SYNs refused for want of memory.") \
  X(drop_udp, COUNT, "UDP datagrams dropped.") \
  X(drop_dns, COUNT, "DNS queries dropped.") \
  X(drop_icmp, COUNT, "ICMP echo requests dropped.") \
  X(drop_proxy_loop, COUNT, "Connections refused because they would loop into the device (to the proxy itself, or direct into its prefix).") \
  X(restarts, COUNT, "Worker restarts (process mode).") \
  X(tun_errors, COUNT, "Errors reading or writing the TUN queue.") \
  X(tcp_reset_dead_worker, COUNT, "TCP clients of a dead worker that the supervisor reset (process mode).") \
  X(tcp_untracked, COUNT, "TCP sessions not tracked for a reset after a worker death (the queue's flow table was full).") \
  X(sniff_tls, COUNT, "TCP sessions routed by the server_name of their TLS ClientHello ([sniff]).") \
  X(sniff_http, COUNT, "TCP sessions routed by the Host of their HTTP request ([sniff]).") \
  X(sniff_quic, COUNT, "UDP associations routed by the server_name of their QUIC Initials' ClientHello ([sniff]).") \
  X(sniff_timeout, COUNT, "Sniffed TCP sessions and UDP associations with no name within [sniff] timeout: routed by address.") \
  X(sniff_none, COUNT, "Sniffed TCP sessions and UDP associations whose first bytes held no name: routed by address.") \
  X(sniff_skipped, COUNT, "TCP sessions and UDP associations not sniffed: their destination failed to sniff 5 times (10 minutes).") \
  X(session_log_dropped, COUNT, "Session log lines left out over [log] sessions-max-per-second.")
/* clang-format on */

struct s5_queue_stats {
#define S5_STATS_FIELD(name, kind, help) uint64_t name;
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
#define S5_STATS_ALIGNED(name, kind, help) \
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
