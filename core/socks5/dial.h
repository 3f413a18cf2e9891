/* SPDX-License-Identifier: MIT */
/* Opening a connection for the proxy client (proxy.c), knowing nothing of
 * the exchange: a TCP socket with a mark, adopted by a libuv handle; and
 * for [rules]' direct outbound, a destination resolved by the system
 * resolver on libuv's thread pool (uv_getaddrinfo), never on the loop. */
#ifndef S5_CORE_SOCKS5_DIAL_H
#define S5_CORE_SOCKS5_DIAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

/* sock's socket (initialised with its family: uv_tcp_init_ex, which opens
 * it non-blocking without a further call) with SO_MARK mark (0: none) and
 * TCP_NODELAY, ready to connect. peer names the far end in why. Returns
 * 0, or < 0 with why. */
int s5_dial_prepare(uv_tcp_t *sock, uint32_t mark, const char *peer, char *why, size_t cap);

/* A second descriptor of warm's connection (a pooled one), adopted by
 * sock (initialised, not yet open). Returns 0, or < 0 with why. */
int s5_dial_adopt(uv_tcp_t *sock, const uv_tcp_t *warm, char *why, size_t cap);

/* A destination being resolved: allocated for the lookup alone. */
struct s5_dial_lookup;

/* The answer: to is the first address (the port of the request), text the
 * name it was resolved from; or to is NULL and text says why there is none. */
typedef void s5_dial_resolved(void *arg, const struct sockaddr_storage *to, const char *text);

struct s5_config;

/* Resolves name (or, empty, addr as a numeric host) with addr's port: a
 * stream's in any family, a datagram's in addr's family (its replies come
 * back there); at cfg's [rules] resolver with direct's mark when there is
 * one, else with the system resolver (resolve.c). cb follows from the
 * loop, never inside this call, unless s5_dial_cancel comes first.
 * Returns 0 with *out set, or < 0 with why. */
int s5_dial_resolve(uv_loop_t *loop, const struct s5_config *cfg, const struct sockaddr_storage *addr,
                    const char *name, int datagram, s5_dial_resolved *cb, void *arg,
                    struct s5_dial_lookup **out, char *why, size_t cap);

/* A DNS reply to query id of qtype (1 A, 28 AAAA) from [rules] resolver:
 * 1 with its first such address in *to (with port), 0 with none (*rcode
 * says why), -1 when it is not that answer (another id, not a reply,
 * truncated or malformed: bounds-checked, fuzzed by fuzz_dns). */
int s5_dial_dns_answer(const uint8_t *m, size_t len, uint16_t id, uint16_t qtype, uint16_t port,
                       struct sockaddr_storage *to, int *rcode);

/* The lookup's callback will not come (it frees the lookup itself). */
void s5_dial_cancel(struct s5_dial_lookup *l);

/* 1 when a direct connection to `to` would come back into our own device
 * whatever its mark: `to` is inside the device's prefixes (its connected
 * routes) or a mapped DNS network; why then says which (name: what `to`
 * was resolved from, or empty). 0 when the device is in another network
 * namespace than our sockets. */
int s5_dial_loops(const struct s5_config *cfg, const struct sockaddr_storage *to, const char *name, char *why,
                  size_t cap);

#endif
