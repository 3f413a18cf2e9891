/* SPDX-License-Identifier: MIT */
/* Between the proxy client's two files: proxy.c (the exchange) and
 * proxy_conn.c (its socket: opened with its mark, connected to the
 * upstream or, for [rules]' direct outbound, to the destination itself,
 * after resolving a mapped name). Not for the client's users. */
#ifndef S5_CORE_PROXY_INTERNAL_H
#define S5_CORE_PROXY_INTERNAL_H

#include <stddef.h>
#include <sys/socket.h>

#include "socks5/proxy.h"

/* The client a handle or request is a member of (sock.data is the relay's). */
#define S5_PROXY_OF(ptr, member) ((struct s5_proxy *)((char *)(ptr)-offsetof(struct s5_proxy, member)))

/* p->sock initialised: from here on it must be closed. */
int s5__proxy_sock_init(struct s5_proxy *p, char *why, size_t cap);
/* A new connection to addr (the upstream's, or direct's destination):
 * s5__proxy_connected follows. Returns 0 or < 0 with why. */
int s5__proxy_connect(struct s5_proxy *p, const struct sockaddr_storage *addr, char *why, size_t cap);
/* [rules] direct: the destination (its mapped name resolved first, off
 * the loop), then s5__proxy_connect. Returns 0 or < 0 with why. */
int s5__proxy_direct(struct s5_proxy *p, char *why, size_t cap);
/* [rules] direct for UDP: no connection; the destination to (resolved) is
 * the relay: connected, then granted with it as BND (proxy.c). */
void s5__proxy_direct_datagrams(struct s5_proxy *p, const struct sockaddr_storage *to);
/* A resolution in flight is cancelled (from s5_proxy_close). */
void s5__proxy_direct_cancel(struct s5_proxy *p);

void s5__proxy_connected(uv_connect_t *req, int status);
void s5__proxy_timed_out(uv_timer_t *timer);
/* A failure while connecting (direct: the resolution), counted. */
void s5__proxy_connect_failed(struct s5_proxy *p, const char *why);

#endif
