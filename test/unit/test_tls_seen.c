/* SPDX-License-Identifier: MIT */
/* core/socks5/tls_seen.c: a refused TLS handshake's cause, from real
 * OpenSSL handshakes over a socket pair against a server of each kind:
 * one offering only TLS 1.1 (version), a plain one (not_tls), one wanting
 * a client certificate under TLS 1.2 (alert in the handshake) and 1.3
 * (alert after it: s5_tls_seen_ended), a reset (reset); each counted once
 * in the shared table; a good handshake's state published once. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "shared/uptls.h"
#include "socks5/tls_ctx.h"
#include "socks5/tls_seen.h"

static EVP_PKEY *key;
static X509 *cert;

/* A self-signed certificate for the servers (the client does not verify). */
static void make_cert(void) {
  key = EVP_EC_gen("P-256");
  cert = X509_new();
  CHECK(key != NULL && cert != NULL, "key and certificate");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             (const unsigned char *)"proxy.test", -1, -1, 0);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  CHECK(X509_sign(cert, key, EVP_sha256()) > 0, "X509_sign");
}

static SSL_CTX *server_ctx(int max_version, int want_cert) {
  SSL_CTX *s = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(s, cert);
  SSL_CTX_use_PrivateKey(s, key);
  if (max_version == TLS1_1_VERSION) {
    SSL_CTX_set_security_level(s, 0);
    SSL_CTX_set_min_proto_version(s, TLS1_VERSION);
    SSL_CTX_set_cipher_list(s, "DEFAULT@SECLEVEL=0");
  }
  SSL_CTX_set_max_proto_version(s, max_version);
  if (want_cert) SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  return s;
}

/* The client as tls_ctx.c makes it (TLS 1.2 at least), not verifying. */
static SSL *client_ssl(int fd) {
  SSL_CTX *c = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL *ssl = SSL_new(c);
  SSL_CTX_free(c); /* the SSL holds it */
  SSL_set_fd(ssl, fd);
  return ssl;
}

/* Both ends' handshakes in turn until the client's ends: its SSL_connect. */
static int handshake(SSL *cl, SSL *sv, int *err) {
  for (int turn = 0; turn < 100; turn++) {
    ERR_clear_error();
    int r = SSL_connect(cl);
    *err = SSL_get_error(cl, r);
    if (r == 1 || (*err != SSL_ERROR_WANT_READ && *err != SSL_ERROR_WANT_WRITE)) return r;
    if (sv != NULL) {
      int e = SSL_accept(sv);
      if (e <= 0 && SSL_get_error(sv, e) != SSL_ERROR_WANT_READ) ERR_clear_error(); /* its refusal went out */
    }
  }
  return -1;
}

static void pair(int fd[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fd) == 0, "socketpair");
  fcntl(fd[0], F_SETFL, O_NONBLOCK);
  fcntl(fd[1], F_SETFL, O_NONBLOCK);
}

/* A handshake against server ctx s (NULL: plain bytes from the other end). */
static void refused(SSL_CTX *s, const char *want, const char *text, enum s5_tls_cause cause) {
  int fd[2], err;
  pair(fd);
  SSL *cl = client_ssl(fd[0]), *sv = NULL;
  if (s != NULL) {
    sv = SSL_new(s);
    SSL_set_fd(sv, fd[1]);
  } else CHECK(write(fd[1], "HTTP/1.1 400 Bad Request\r\n\r\n", 28) == 28, "the plain answer");
  int r = handshake(cl, sv, &err);
  char why[400];
  uint64_t before = s5_uptab()->u[0].tls_failed[cause];
  CHECK(r != 1, "%s: refused", want);
  s5_tls_seen_failed(cl, 0, "up", err, errno, why, sizeof why);
  CHECK(strstr(why, want) != NULL && strstr(why, text) != NULL, "%s: %s", want, why);
  CHECK(s5_uptab()->u[0].tls_failed[cause] == before + 1, "%s: counted", want);
  SSL_free(cl);
  SSL_free(sv);
  close(fd[0]);
  close(fd[1]);
}

/* TLS 1.3: our handshake ends, the proxy's refusal comes with the first read. */
static void refused_after(void) {
  int fd[2], err;
  pair(fd);
  SSL_CTX *s = server_ctx(TLS1_3_VERSION, 1);
  SSL *cl = client_ssl(fd[0]), *sv = SSL_new(s);
  SSL_set_fd(sv, fd[1]);
  CHECK(handshake(cl, sv, &err) == 1, "TLS 1.3: our handshake ends");
  static struct s5_tls_ctx c = {.up_name = "up", .name = "10.0.0.1"};
  s5_tls_seen_ok(&c, cl, 0);
  char buf[64];
  int r = -1;
  for (int turn = 0; turn < 100 && r <= 0; turn++) {
    SSL_accept(sv); /* reads our certificate message (none): its alert */
    ERR_clear_error();
    r = SSL_read(cl, buf, sizeof buf);
    err = SSL_get_error(cl, r);
    if (err != SSL_ERROR_WANT_READ) break;
  }
  uint64_t before = s5_uptab()->u[0].tls_failed[S5_TLS_ALERT];
  CHECK(s5_tls_seen_ended(cl, 0, "up", err, errno, 1) == 1, "the alert after the handshake: a refusal");
  CHECK(s5_tls_seen_ended(cl, 0, "up", SSL_ERROR_SYSCALL, ECONNRESET, 0) == 0, "a reset after data: not one");
  CHECK(s5_tls_seen_ended(cl, 0, "up", SSL_ERROR_SYSCALL, ECONNRESET, 1) == 0,
        "an idle connection's reset: not one");
  CHECK(s5_tls_seen_ended(cl, 0, "up", SSL_ERROR_SYSCALL, ECONNRESET, 2) == 1,
        "a reset answering our bytes: one");
  CHECK(s5_uptab()->u[0].tls_failed[S5_TLS_ALERT] == before + 1, "counted as alert");
  SSL_free(cl);
  SSL_free(sv);
  SSL_CTX_free(s);
  close(fd[0]);
  close(fd[1]);
}

int main(void) {
  char e[200];
  if (s5_ossl_load(S5_OSSL_SSL, e, sizeof e) !=
      0) { /* as the daemon at start; the servers' own calls are linked */
    fprintf(stderr, "%s\n", e);
    return 1;
  }
  static struct s5_config cfg;
  cfg.n_upstreams = 1;
  snprintf(cfg.upstreams[0].name, sizeof cfg.upstreams[0].name, "up");
  CHECK(s5_uptab_setup(&cfg) == 0, "the shared table");
  make_cert();
  SSL_CTX *old = server_ctx(TLS1_1_VERSION, 0), *cert12 = server_ctx(TLS1_2_VERSION, 1);
  refused(old, "[version]", "enable TLS 1.2 or 1.3", S5_TLS_VERSION);
  refused(NULL, "[not_tls]", "set tls = false", S5_TLS_NOT_TLS);
  refused(cert12, "alert handshake failure [alert]", "client certificate (tls-cert-file", S5_TLS_ALERT);
  refused_after();
  /* a reset in the handshake: SSL_ERROR_SYSCALL with the socket's errno, nothing queued */
  int fd[2];
  pair(fd);
  SSL *cl = client_ssl(fd[0]);
  char why[400];
  s5_tls_seen_failed(cl, 0, "up", SSL_ERROR_SYSCALL, ECONNRESET, why, sizeof why);
  CHECK(strstr(why, "reset the connection (Connection reset by peer) [reset]") != NULL, "%s", why);
  SSL_free(cl);
  close(fd[0]);
  close(fd[1]);
  struct s5_up_tls st;
  s5_uptab_tls_read(&s5_uptab()->u[0], &st);
  CHECK(st.version == TLS1_3_VERSION && st.cipher >> 8 == 0x13 && !st.verified &&
          strcmp(st.name, "10.0.0.1") == 0,
        "the good handshake's state: %x %x %d %s", st.version, st.cipher, st.verified, st.name);
  SSL_CTX_free(old);
  SSL_CTX_free(cert12);
  X509_free(cert);
  EVP_PKEY_free(key);
  return check_done();
}
