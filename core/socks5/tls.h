/* SPDX-License-Identifier: MIT */
/* TLS to the proxy ([upstream] tls = true): an HTTPS proxy, SOCKS5 inside
 * TLS. OpenSSL in user space: the kernel's TLS (kTLS) is used by nobody
 * here (this kernel has no TLS ULP; docs/upstreams.md has the figures).
 *
 * A TLS connection is a pump (pump.h) with the TLS codec: the proxy
 * client (proxy.c) and after it the relay and the pool read and write the
 * pair's other end as the plain connection, unchanged. The handshake (TLS
 * 1.2 or later, certificate and name verified, a session resumed when the
 * worker holds one of that upstream) runs on the worker's loop before
 * anything of the proxy's own exchange; done() says how it ended (> 0:
 * what the certificate check or the alert said, naming the upstream). */
#ifndef S5_CORE_SOCKS5_TLS_H
#define S5_CORE_SOCKS5_TLS_H

#include <stddef.h>
#include <uv.h>

#include "socks5/pump.h"

struct s5_upstream_cfg;

/* Connects to up's address with its mark and starts the handshake (pump.h's s5_pump_start). */
struct s5_pump *s5_tls_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_pump_done *done, void *arg,
                             int *plain, char *why, size_t cap);

/* This thread's TLS contexts and sessions freed (tls_ctx.c), at a reload:
 * the next connection builds its context again from the files; those open
 * keep theirs (OpenSSL counts its references). */
void s5_tls_release(void);

/* The worker's loop has ended (its stop closed every handle, the pumps'
 * polls too): this thread's pumps (s5_pump_end) and its contexts freed. */
void s5_tls_end(void);

#endif
