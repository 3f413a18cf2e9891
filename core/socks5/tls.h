/* SPDX-License-Identifier: MIT */
/* TLS to the proxy ([upstream] tls = true): an HTTPS proxy, SOCKS5 inside
 * TLS. OpenSSL in user space: the kernel's TLS (kTLS) is used by nobody
 * here (this kernel has no TLS ULP; docs/upstreams.md has the figures).
 *
 * A TLS connection is a pump that owns the marked TCP socket to the proxy
 * and one end of a socket pair; the proxy client (proxy.c) and after it
 * the relay and the pool read and write the other end as the plain
 * connection, unchanged: what goes in there leaves encrypted, what the
 * proxy sends comes out decrypted. The handshake (TLS 1.2 or later,
 * certificate and name verified, a session resumed when the worker holds
 * one of that upstream) runs on the worker's loop before anything of the
 * proxy's own exchange; done() says how it ended.
 *
 * Lifecycle: s5_tls_start, then done() once (never inside the call) unless
 * s5_tls_detach came first. After a good handshake the pump belongs to
 * itself: it ends when both directions ended (the pair's end closed, the
 * proxy's close_notify or FIN) or on an error, and frees itself. */
#ifndef S5_CORE_SOCKS5_TLS_H
#define S5_CORE_SOCKS5_TLS_H

#include <stddef.h>
#include <uv.h>

struct s5_upstream_cfg;
struct s5_tls;

/* status 0: the handshake is done; < 0: the TCP connect failed (a libuv
 * error, why says so); > 0: the TLS handshake failed (why: what the
 * certificate check or the alert said, naming the upstream). */
typedef void s5_tls_done(void *arg, int status, const char *why);

/* Connects to up's address with its mark and starts the handshake; *plain
 * is the descriptor (non-blocking, close-on-exec) the caller reads and
 * writes in plain. Returns the pump, or NULL with why (nothing to close). */
struct s5_tls *s5_tls_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_tls_done *done, void *arg,
                            int *plain, char *why, size_t cap);

/* During the handshake: done() will not come; the pump closes. */
void s5_tls_detach(struct s5_tls *t);

/* This thread's TLS contexts and sessions freed (tls_ctx.c), at a reload:
 * the next connection builds its context again from the files; those open
 * keep theirs (OpenSSL counts its references). */
void s5_tls_release(void);

/* The worker's loop has ended (its stop closed every handle, the pumps'
 * polls too): this thread's pumps left and its contexts freed. */
void s5_tls_end(void);

#endif
