/* SPDX-License-Identifier: MIT */
/* The worker's TLS contexts for tls.c: per thread (a worker's), one
 * SSL_CTX for each upstream's TLS settings (TLS 1.2+, the CAs, the client
 * certificate), built at its first connection after the start or a reload
 * (at most 16; the oldest goes), with the last session the proxy gave,
 * which the next connection resumes. */
#ifndef S5_CORE_SOCKS5_TLS_CTX_H
#define S5_CORE_SOCKS5_TLS_CTX_H

#include <stddef.h>

#include "base/ossl.h" /* OpenSSL, loaded on demand */

struct s5_upstream_cfg;

struct s5_tls_ctx {
  char key[1400];   /* the settings that made it */
  char up_name[32]; /* for the log */
  char name[256];   /* the name (or address) verified */
  SSL_CTX *ctx;
  SSL_SESSION *sess;                 /* the last session given, or NULL */
  unsigned long handshakes, resumed; /* this worker's (tls_seen.c) */
};

/* up's context on this thread, built if new. NULL with why (naming the
 * upstream and the file) when it cannot be. */
struct s5_tls_ctx *s5_tls_ctx_get(const struct s5_upstream_cfg *up, char *why, size_t cap);

/* A client SSL of c for up: the name to verify and send (SNI), the session to resume. */
int s5_tls_ctx_ssl(struct s5_tls_ctx *c, const struct s5_upstream_cfg *up, SSL **out, char *why, size_t cap);

/* Whether the client certificate in cert and the key in key (PEM files)
 * belong together: 0, or -1 with what is wrong (ini's
 * s5_config_tls_pair_check, set by the daemon). */
int s5_tls_pair_check(const char *cert, const char *key, char *err, size_t errlen);

/* OpenSSL's first queued error as text (the queue cleared). */
void s5_tls_error_text(char *out, size_t cap);

#endif
