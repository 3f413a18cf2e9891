/* SPDX-License-Identifier: MIT */
/* Mapped DNS over TCP (RFC 7766): a connection to the resolver's port 53
 * (with [dns] hijack, to port 53 of any address) is terminated here and
 * never reaches the proxy. Each message comes after a 2-byte length; the
 * queries of one connection are answered in order, pipelined or not, by
 * the same function as datagrams (s5_dns_answer(), dns.c).
 *
 * Bounded per connection: the client's unread bytes by a small receive
 * window (reopened only as queries are read), answers by a small send
 * buffer plus a few answers waiting for it; reading stops while those are
 * full, so a client that does not read its answers stops being read. An
 * idle connection is closed, a malformed message closes its connection
 * (after the answers before it), and a worker takes a bounded number.
 *
 * The connections belong to the worker's session table, whose listener
 * hands them their SYN (session.c); lwIP's callbacks drive them. */
#ifndef S5_CORE_DNS_TCP_H
#define S5_CORE_DNS_TCP_H

#include <stdint.h>

#include "dns/dns.h"
#include "lwip/err.h"

struct tcp_pcb;
struct s5_wctx;
struct s5_dns_conn;

/* One worker's DNS connections. */
struct s5_dns_tcp {
  struct s5_wctx *w;
  struct s5_dns_conn *list;
  unsigned count;
};

void s5_dns_tcp_init(struct s5_dns_tcp *t, struct s5_wctx *w);

/* From the listener's SYN callback, for a connection that s5_dns_dest()
 * gave to the resolver: takes pcb over (its arg and callbacks). Returns
 * what that callback returns to lwIP: ERR_OK (the SYN-ACK goes out at
 * once), or ERR_MEM (refused with a RST: too many open, or no memory;
 * counted and logged). */
err_t s5_dns_tcp_accept(struct s5_dns_tcp *t, struct tcp_pcb *pcb, enum s5_dns_dest dest);

/* 1 if pcb is one of these connections: the listener's accept callback,
 * which lwIP calls for them too, leaves them alone. */
int s5_dns_tcp_owns(const struct tcp_pcb *pcb);

/* Resets every connection (the worker stops). */
void s5_dns_tcp_stop(struct s5_dns_tcp *t);

#endif
