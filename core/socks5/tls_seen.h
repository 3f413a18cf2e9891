/* SPDX-License-Identifier: MIT */
/* What the TLS connections to the proxies show (tls.c calls these): a
 * handshake's state in the shared table (shared/uptls.h) with one info
 * line when an upstream's state is new or changed; a refusal's cause,
 * counted per upstream, with its fix in the text and, the first time for
 * that upstream and cause, in a warn line. */
#ifndef S5_CORE_SOCKS5_TLS_SEEN_H
#define S5_CORE_SOCKS5_TLS_SEEN_H

#include <stddef.h>

#include "base/ossl.h" /* OpenSSL, loaded on demand */

struct s5_tls_ctx;

/* ssl's handshake with the upstream in slot is done (c: its context, NULL
 * once a reload released it): counted, its state published and logged. */
void s5_tls_seen_ok(struct s5_tls_ctx *c, SSL *ssl, unsigned slot);

/* The handshake failed (err: SSL_get_error's, sys_errno: errno then):
 * why says what, the cause and the fix, naming the upstream. OpenSSL's
 * queue is cleared. */
void s5_tls_seen_failed(SSL *ssl, unsigned slot, const char *up_name, int err, int sys_errno, char *why,
                        size_t cap);

/* An open connection ended in an error. fresh: 0 once the proxy sent
 * data; 1 before, 2 before and after we sent some. Fresh, an alert (2: or
 * a reset, the answer to our bytes) is a refusal (TLS 1.3: the proxy
 * checks our certificate after our handshake ended), counted like a failed
 * handshake (1); anything else is a debug line (0): an idle connection's
 * reset is no refusal. */
int s5_tls_seen_ended(SSL *ssl, unsigned slot, const char *up_name, int err, int sys_errno, int fresh);

#endif
