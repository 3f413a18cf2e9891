/* SPDX-License-Identifier: MIT */
/* What differs between the types of upstream proxy (SOCKS5, SOCKS4/4a,
 * HTTP CONNECT) for the client in proxy.c: the CONNECT request for a
 * destination, and the words for what went wrong. No I/O. */
#ifndef S5_CORE_UPSTREAM_H
#define S5_CORE_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/addr.h"
#include "ini/config.h"
#include "shared/uptab.h"
#include "socks5/http_connect.h"
#include "socks5/socks5_udp.h"

/* The CONNECT for up's type into buf (cap >= S5_HTTP_REQUEST_MAX): its
 * length, or < 0 with why (a static text): SOCKS4 cannot carry IPv6. */
int s5_upstream_write_connect(const struct s5_upstream_cfg *up, const struct s5_target *t, uint8_t *buf,
                              size_t cap, const char **why);

/* One reply to the request, of up's type, at the start of in[*len]: its
 * length, or a negative s5_socks5_status (S5_SOCKS5_NEED_MORE: not whole
 * yet). rep gets SOCKS5's REP or SOCKS4's CD; with bnd (an ASSOCIATE) the
 * reply is read whole, for its bound address. An HTTP response is read as
 * a stream: what came of its header is consumed (*len set to 0). */
int s5_upstream_parse_reply(const struct s5_upstream_cfg *up, struct s5_http_reply *http, const uint8_t *in,
                            uint16_t *len, uint8_t *rep, struct s5_socks5_addr *bnd);

/* A refused request (status S5_SOCKS5_REFUSED; rep, or http: an HTTP
 * upstream's status) in words that say the proxy itself is broken rather
 * than the destination: S5_BROKEN_EACH, every time (HTTP 403: it refuses
 * us); S5_BROKEN_DISTINCT, when several destinations hear it (HTTP 5xx but
 * 502 and 504, SOCKS5 general failure: words some proxies also use for one
 * destination's trouble); 0, the destination's own answer (SOCKS5 0x02 to
 * 0x08, SOCKS4, HTTP 502, 504 and other 4xx), which the next upstream would
 * hear too. */
enum { S5_BROKEN_EACH = 1, S5_BROKEN_DISTINCT = 2 };
int s5_upstream_broken(const struct s5_upstream_cfg *up, int status, uint8_t rep, uint16_t http);

/* Whose fault a failed exchange was, as the upstream's health counts it
 * (connecting: the TCP connection to the proxy failed); *every for
 * S5_UP_REFUSING: S5_BROKEN_EACH. A timeout is the client's to say. */
enum s5_up_cause s5_upstream_cause(const struct s5_upstream_cfg *up, int status, uint8_t rep, uint16_t http,
                                   int connecting, int *every);

/* The first upstream that can carry UDP (SOCKS5 or Shadowsocks with udp = associate), NULL
 * when none can (datagrams then get ICMP port unreachable, unless [rules]
 * send them direct). Which one an association takes is its route's. */
/* 1 if up carries UDP: SOCKS5 with udp = associate, not over TLS (its datagrams would be in clear);
 * Shadowsocks with udp = associate (its UDP relay, each datagram sealed). */
int s5_upstream_udp(const struct s5_upstream_cfg *up);

/* 1 if up's connection is a pump's plain end (pump.h): tls = true, or type = shadowsocks. */
static inline int s5_upstream_pumped(const struct s5_upstream_cfg *up) {
  return up->tls || up->type == S5_UPSTREAM_SHADOWSOCKS;
}

const struct s5_upstream_cfg *s5_upstream_for_udp(const struct s5_config *cfg);

/* At start-up: one line per upstream, and what becomes of UDP when no
 * upstream can carry it. */
void s5_upstreams_log(const struct s5_config *cfg);

/* "SOCKS5", "SOCKS4", "HTTP CONNECT": for log lines. */
const char *s5_upstream_proto(const struct s5_upstream_cfg *up);

/* Why the exchange failed on what the proxy answered (status an
 * s5_socks5_status; rep SOCKS5's REP or SOCKS4's CD; http the response
 * read for an HTTP upstream), naming req (e.g. "CONNECT") and, for SOCKS5,
 * the exchange hs (e.g. "SOCKS5 handshake"). */
void s5_upstream_why(const struct s5_upstream_cfg *up, const char *req, const char *hs, int status,
                     uint8_t rep, const struct s5_http_reply *http, char *why, size_t cap);

#endif
