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
#include "socks5/pump.h"
#include "socks5/tls_ctx.h"
#include "socks5/tls_seen.h"

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
    s5_tls_seen_ok(c, ssl, t->slot);
    return 0;
  }
  int err = SSL_get_error(ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    t->want_write = err == SSL_ERROR_WANT_WRITE;
    return 1;
  }
  s5_tls_seen_failed(ssl, t->slot, t->up_name, err, errno, why, cap);
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
  s5_tls_seen_ended(t->cx, t->slot, t->up_name, err, errno, !t->heard ? 1 + t->spoke : 0);
  return -1;
}

static int tls_write(struct s5_pump *t, const uint8_t *buf, size_t len) {
  ERR_clear_error();
  int r = SSL_write(t->cx, buf, (int)len);
  if (r > 0) {
    t->spoke = 1;
    return r;
  }
  r = tls_wait(t, r);
  return r == 0 ? 0 : -1;
}

static int tls_read(struct s5_pump *t, uint8_t *buf, size_t cap) {
  /* The bulk phase: a recv takes what the socket holds, up to the read
   * buffer (tls_ctx.c), not a record's header and then its body. Records
   * left whole in it are read when the relay reads next (it always tries
   * before it waits). Not before: the pair's reader waits on the socket. */
  if (t->direct) SSL_set_read_ahead(t->cx, 1);
  ERR_clear_error();
  int r = SSL_read(t->cx, buf, (int)cap);
  if (r > 0) {
    t->heard = 1;
    return r;
  }
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
