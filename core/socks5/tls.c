/* SPDX-License-Identifier: MIT */
/* See tls.h: the TLS codec of a pump (pump.c): OpenSSL's handshake, then
 * records each way over the marked TCP socket to the proxy. */
#include "socks5/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"
#include "ini/config.h"
#include "shared/uptab.h"
#include "socks5/pump.h"
#include "socks5/tls_ctx.h"

/* Why the handshake failed: the certificate check's verdict, else OpenSSL's (an alert, a protocol error). */
static void tls_why(struct s5_pump *t, SSL *ssl, int err, char *why, size_t cap) {
  long v = SSL_get_verify_result(ssl);
  char e[200];
  if (v != X509_V_OK) snprintf(e, sizeof e, "certificate refused: %s", X509_verify_cert_error_string(v));
  else if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
    snprintf(e, sizeof e, "the proxy closed the connection (%s)", errno != 0 ? strerror(errno) : "EOF");
  else s5_tls_error_text(e, sizeof e);
  ERR_clear_error();
  snprintf(why, cap, "TLS handshake with upstream %s failed: %s", t->up_name, e);
}

static int tls_handshake(struct s5_pump *t, char *why, size_t cap) {
  SSL *ssl = t->cx;
  if (SSL_get_fd(ssl) < 0 && SSL_set_fd(ssl, t->net) != 1) {
    snprintf(why, cap, "TLS to upstream %s: SSL_set_fd failed", t->up_name);
    return -1;
  }
  ERR_clear_error();
  int r = SSL_connect(ssl);
  if (r == 1) {
    struct s5_tls_ctx *c = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (c != NULL) s5_tls_ctx_handshaken(c, ssl);
    if (s5_uptab() != NULL) s5_uptab_count_tls(s5_uptab(), t->slot, SSL_session_reused(ssl));
    return 0;
  }
  int err = SSL_get_error(ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    t->want_write = err == SSL_ERROR_WANT_WRITE;
    return 1;
  }
  tls_why(t, ssl, err, why, cap);
  return -1;
}

/* An SSL_read or SSL_write that did not go: 0 to wait (want_write set as
 * asked), -S5_PUMP_EOF for the proxy's end (close_notify or FIN), -1 for an error. */
static int tls_wait(struct s5_pump *t, int r) {
  int err = SSL_get_error(t->cx, r);
  if (err == SSL_ERROR_WANT_WRITE) t->want_write = 1;
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return 0;
  if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && r == 0))
    return -S5_PUMP_EOF;
  char e[200];
  s5_tls_error_text(e, sizeof e);
  s5_debug("upstream %s: TLS connection ended: %s", t->up_name,
           err == SSL_ERROR_SYSCALL ? strerror(errno) : e);
  return -1;
}

static int tls_write(struct s5_pump *t, const uint8_t *buf, size_t len) {
  ERR_clear_error();
  int r = SSL_write(t->cx, buf, (int)len);
  if (r > 0) return r;
  r = tls_wait(t, r);
  return r == 0 ? 0 : -1;
}

static int tls_read(struct s5_pump *t, uint8_t *buf, size_t cap) {
  ERR_clear_error();
  int r = SSL_read(t->cx, buf, (int)cap);
  if (r > 0) return r;
  return tls_wait(t, r);
}

static void tls_shutdown(struct s5_pump *t) {
  ERR_clear_error();
  SSL_shutdown(t->cx); /* close_notify; the pump's FIN follows */
}

static void tls_free(void *cx) { SSL_free(cx); }

static const struct s5_pump_codec tls_codec = {tls_handshake, tls_write, tls_read, tls_shutdown, tls_free};

struct s5_pump *s5_tls_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_pump_done *done, void *arg,
                             int *plain, char *why, size_t cap) {
  struct s5_tls_ctx *c = s5_tls_ctx_get(up, why, cap);
  SSL *ssl = NULL;
  if (c == NULL || s5_tls_ctx_ssl(c, up, &ssl, why, cap) != 0) return NULL;
  return s5_pump_start(loop, up, &tls_codec, ssl, done, arg, plain, why, cap);
}

void s5_tls_end(void) {
  s5_pump_end(); /* every pump, TLS or not: one list */
  s5_tls_release();
}
