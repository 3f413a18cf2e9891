/* SPDX-License-Identifier: MIT */
/* The worker's TLS contexts (tls_ctx.h): one SSL_CTX per upstream's TLS
 * settings on each worker thread (or process), built at its first
 * connection, with the last session the proxy gave for resumption. */
#include "socks5/tls_ctx.h"
#include "socks5/tls.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "ini/config.h"
#include "ini/sockaddr.h"

#define TLS_CTX_MAX 16
#define TLS_READ_BUF (32 * 1024) /* two records per recv at most */

static __thread struct s5_tls_ctx *cache[TLS_CTX_MAX];
static __thread unsigned cache_next;

/* What makes two upstreams' contexts the same. */
static void ctx_key(const struct s5_upstream_cfg *up, char *key, size_t cap) {
  char a[S5_SOCKADDR_STRLEN];
  snprintf(key, cap, "%s|%s|%s|%s|%s|%s|%d", up->name, s5_sockaddr_str(&up->addr, a, sizeof a),
           up->tls_server_name, up->tls_ca_file, up->tls_cert_file, up->tls_key_file, up->tls_verify);
}

void s5_tls_error_text(char *out, size_t cap) {
  unsigned long e = ERR_get_error();
  if (e == 0) {
    snprintf(out, cap, "no reason given");
    return;
  }
  ERR_error_string_n(e, out, cap);
  ERR_clear_error();
}

/* TLS 1.3 gives its session after the handshake: kept for the next connection. */
static int ctx_new_session(SSL *ssl, SSL_SESSION *sess) {
  struct s5_tls_ctx *c = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
  if (c == NULL) return 0;
  if (c->sess != NULL) SSL_SESSION_free(c->sess);
  c->sess = sess;
  return 1; /* ours now */
}

static void ctx_free(struct s5_tls_ctx *c) {
  if (c == NULL) return;
  SSL_CTX_set_app_data(c->ctx, NULL); /* SSLs still open may hold the SSL_CTX */
  SSL_CTX_free(c->ctx);
  if (c->sess != NULL) SSL_SESSION_free(c->sess);
  free(c);
}

static int ctx_fail(struct s5_tls_ctx *c, const char *what, const char *file, char *why, size_t cap) {
  char e[200];
  s5_tls_error_text(e, sizeof e);
  snprintf(why, cap, "TLS to upstream %s: %s%s%s: %s", c->up_name, what, file[0] ? " " : "", file, e);
  return -1;
}

static int ctx_build(struct s5_tls_ctx *c, const struct s5_upstream_cfg *up, char *why, size_t cap) {
  c->ctx = SSL_CTX_new(TLS_client_method());
  if (c->ctx == NULL) return ctx_fail(c, "SSL_CTX_new", "", why, cap);
  SSL_CTX_set_app_data(c->ctx, c);
  if (SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION) != 1)
    return ctx_fail(c, "TLS 1.2 as the least version", "", why, cap);
  SSL_CTX_set_verify(c->ctx, up->tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
  int r = up->tls_ca_file[0] != '\0' ? SSL_CTX_load_verify_locations(c->ctx, up->tls_ca_file, NULL)
                                     : SSL_CTX_set_default_verify_paths(c->ctx);
  if (r != 1) return ctx_fail(c, "loading CAs", up->tls_ca_file, why, cap);
  if (up->tls_cert_file[0] != '\0') {
    if (SSL_CTX_use_certificate_chain_file(c->ctx, up->tls_cert_file) != 1)
      return ctx_fail(c, "client certificate", up->tls_cert_file, why, cap);
    if (SSL_CTX_use_PrivateKey_file(c->ctx, up->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c->ctx) != 1)
      return ctx_fail(c, "client key", up->tls_key_file, why, cap);
  }
  SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(c->ctx, ctx_new_session);
  SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
  SSL_CTX_set_default_read_buffer_len(c->ctx, TLS_READ_BUF); /* read-ahead's (tls.c) */
  /* AES-128-GCM first: as safe here, and cheaper than AES-256 on the bulk path. */
  if (SSL_CTX_set_ciphersuites(
        c->ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") != 1)
    return ctx_fail(c, "TLS 1.3 cipher suites", "", why, cap);
  return 0;
}

void s5_tls_release(void) {
  for (unsigned i = 0; i < TLS_CTX_MAX; i++) {
    ctx_free(cache[i]);
    cache[i] = NULL;
  }
}

struct s5_tls_ctx *s5_tls_ctx_get(const struct s5_upstream_cfg *up, char *why, size_t cap) {
  /* Loaded by the main process when a configuration with tls came; here
   * too for a worker process forked before the reload that brought it. */
  char e[300];
  if (s5_ossl_load(S5_OSSL_SSL, e, sizeof e) != 0) {
    snprintf(why, cap, "TLS to upstream %s: %s", up->name, e);
    return NULL;
  }
  char key[sizeof cache[0]->key];
  ctx_key(up, key, sizeof key);
  for (unsigned i = 0; i < TLS_CTX_MAX; i++)
    if (cache[i] != NULL && strcmp(cache[i]->key, key) == 0) return cache[i];
  struct s5_tls_ctx *c = calloc(1, sizeof *c);
  if (c == NULL) {
    snprintf(why, cap, "TLS to upstream %s: out of memory", up->name);
    return NULL;
  }
  snprintf(c->key, sizeof c->key, "%s", key);
  snprintf(c->up_name, sizeof c->up_name, "%s", up->name);
  if (ctx_build(c, up, why, cap) != 0) {
    if (c->ctx == NULL) free(c);
    else ctx_free(c);
    return NULL;
  }
  /* the oldest goes when a reload brought more than the table holds */
  unsigned slot = cache_next++ % TLS_CTX_MAX;
  ctx_free(cache[slot]);
  cache[slot] = c;
  return c;
}

int s5_tls_ctx_ssl(struct s5_tls_ctx *c, const struct s5_upstream_cfg *up, SSL **out, char *why, size_t cap) {
  SSL *ssl = SSL_new(c->ctx);
  if (ssl == NULL) return ctx_fail(c, "SSL_new", "", why, cap);
  char a[S5_SOCKADDR_STRLEN];
  const char *name =
    up->tls_server_name[0] != '\0' ? up->tls_server_name : s5_sockaddr_host(&up->addr, a, sizeof a);
  unsigned char bin[16];
  int ip = inet_pton(AF_INET, name, bin) == 1 || inet_pton(AF_INET6, name, bin) == 1;
  int r = 1;
  if (up->tls_verify)
    r = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) : SSL_set1_host(ssl, name);
  if (r == 1 && !ip) r = SSL_set_tlsext_host_name(ssl, name); /* SNI names a host, never an address */
  if (r == 1 && c->sess != NULL) r = SSL_set_session(ssl, c->sess);
  if (r != 1) {
    SSL_free(ssl);
    return ctx_fail(c, "setting the name", name, why, cap);
  }
  snprintf(c->name, sizeof c->name, "%s", name);
  *out = ssl;
  return 0;
}

int s5_tls_pair_check(const char *cert, const char *key, char *err, size_t errlen) {
  char e[200];
  if (s5_ossl_load(S5_OSSL_SSL, e, sizeof e) != 0) { /* parsing comes before start's load */
    snprintf(err, errlen, "%s: checking it needs %s (%s)", key, S5_OSSL_LIBSSL, e);
    return -1;
  }
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  const char *what = ctx == NULL                                                    ? "SSL_CTX_new"
                     : SSL_CTX_use_certificate_chain_file(ctx, cert) != 1           ? "reading tls-cert-file"
                     : SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ? "reading the key"
                     : SSL_CTX_check_private_key(ctx) != 1
                       ? "the key does not match tls-cert-file's certificate"
                       : NULL;
  SSL_CTX_free(ctx);
  if (what == NULL) return 0;
  if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) /* reading it compares them */
    what = "the key does not match tls-cert-file's certificate";
  s5_tls_error_text(e, sizeof e);
  snprintf(err, errlen, "%s: %s (%s)", key, what, e);
  return -1;
}
