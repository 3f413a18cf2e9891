/* SPDX-License-Identifier: MIT */
/* What the TLS connections to the proxies show (tls_seen.h): a handshake's
 * state in the shared table and the log, a refusal's cause and its fix. */
#include "socks5/tls_seen.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "shared/uptls.h"
#include "socks5/tls_ctx.h"

void s5_tls_seen_ok(struct s5_tls_ctx *c, SSL *ssl, unsigned slot) {
  int resumed = SSL_session_reused(ssl), verified = SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE;
  struct s5_uptab *t = s5_uptab();
  if (t != NULL) s5_uptab_count_tls(t, slot, resumed);
  if (c == NULL) return; /* a reload released its context: nothing more to say */
  c->handshakes++;
  c->resumed += resumed != 0;
  const char *peer = verified ? SSL_get0_peername(ssl) : NULL; /* the certificate's name that matched */
  const char *name = peer != NULL ? peer : c->name;            /* else the address checked */
  const SSL_CIPHER *cs = SSL_get_current_cipher(ssl);
  unsigned suite = cs != NULL ? SSL_CIPHER_get_protocol_id(cs) : 0;
  int changed = t != NULL && s5_uptab_tls_state(t, slot, (unsigned)SSL_version(ssl), suite, verified, name);
  /* info when the upstream's state is new or changed (one worker says it), else debug */
  s5_log(changed ? S5_LOG_INFO : S5_LOG_DEBUG,
         "upstream %s: TLS %s %s, %s %s%s (%lu handshakes, %lu resumed)", c->up_name, SSL_get_version(ssl),
         SSL_get_cipher_name(ssl), verified ? "verified" : "NOT verified (tls-verify = false):", name,
         resumed ? ", session resumed" : "", c->handshakes, c->resumed);
}

static enum s5_tls_cause verify_cause(long v) {
  switch (v) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: return S5_TLS_NAME;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_UNTRUSTED: return S5_TLS_CA;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID: return S5_TLS_EXPIRED;
    default: return S5_TLS_CERT;
  }
}

/* The alert the proxy sent, from OpenSSL's queue (its reasons are
 * SSL_AD_REASON_OFFSET + the alert), or -1; *first: the first error. */
static int alert_received(unsigned long *first, int *reason) {
  int alert = -1;
  unsigned long e;
  *first = 0, *reason = 0;
  while ((e = ERR_get_error()) != 0) {
    if (*first == 0) *first = e;
    int r = ERR_GET_REASON(e);
    if (ERR_GET_LIB(e) != ERR_LIB_SSL) continue;
    if (r >= SSL_AD_REASON_OFFSET && r < SSL_AD_REASON_OFFSET + 256) alert = r - SSL_AD_REASON_OFFSET;
    else if (*reason == 0) *reason = r;
  }
  return alert;
}

/* OpenSSL names TLS 1.2's alerts; TLS 1.3's new ones are "unknown" there. */
static const char *alert_name(int alert) {
  switch (alert) {
    case SSL_AD_MISSING_EXTENSION: return "missing extension";
    case SSL_AD_CERTIFICATE_REQUIRED: return "certificate required";
    case SSL_AD_NO_APPLICATION_PROTOCOL: return "no application protocol";
    default: return SSL_alert_desc_string_long(alert);
  }
}

static const char *alert_fix(int alert) {
  switch (alert) {
    case SSL_AD_CERTIFICATE_REQUIRED:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
      return "the proxy wants a client certificate it trusts: set tls-cert-file and tls-key-file";
    case SSL_AD_UNRECOGNIZED_NAME: return "set tls-server-name to a name the proxy serves";
    case SSL_AD_HANDSHAKE_FAILURE: /* TLS 1.2's word for a missing client certificate too */
      return "the proxy wants a client certificate (tls-cert-file, tls-key-file), or has no cipher suite in "
             "common: see its log";
    case SSL_AD_INSUFFICIENT_SECURITY:
      return "no cipher suite or group in common: see the proxy's TLS settings";
    default: return "see the proxy's log";
  }
}

/* The cause, what happened and its fix, from the certificate check's
 * verdict, the alert received, OpenSSL's reason or the socket's error. */
static enum s5_tls_cause classify(SSL *ssl, int err, int sys_errno, char *what, size_t cap,
                                  const char **fix) {
  /* the chain's verdict is kept with tls-verify = false too: then it refused nothing */
  long v = SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE ? SSL_get_verify_result(ssl) : X509_V_OK;
  unsigned long first;
  int reason, alert = alert_received(&first, &reason);
  static const char *const fixes[S5_TLS_CAUSES] = {
    [S5_TLS_NAME] = "the certificate is for another name: set tls-server-name to a name it carries",
    [S5_TLS_CA] = "set tls-ca-file to the CA that signed the proxy's certificate",
    [S5_TLS_EXPIRED] = "renew the proxy's certificate (or set this host's clock right)",
    [S5_TLS_CERT] = "fix the proxy's certificate chain or tls-ca-file",
    [S5_TLS_VERSION] = "the proxy offers only TLS below 1.2: enable TLS 1.2 or 1.3 on it",
    [S5_TLS_RESET] =
      "is the port the proxy's TLS port, and does it want a client certificate "
      "(tls-cert-file)? See its log",
    [S5_TLS_NOT_TLS] = "the port does not speak TLS: set tls = false, or the proxy's TLS port",
    [S5_TLS_OTHER] = "see the proxy's log",
  };
  enum s5_tls_cause c = S5_TLS_OTHER;
  if (v != X509_V_OK) {
    snprintf(what, cap, "certificate refused: %s", X509_verify_cert_error_string(v));
    c = verify_cause(v);
  } else if (alert >= 0) {
    snprintf(what, cap, "the proxy sent alert %s", alert_name(alert));
    c = alert == SSL_AD_PROTOCOL_VERSION ? S5_TLS_VERSION : S5_TLS_ALERT;
  } else if (reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_NO_PROTOCOLS_AVAILABLE) {
    snprintf(what, cap, "the proxy's protocol version is refused (%s)", ERR_reason_error_string(first));
    c = S5_TLS_VERSION;
  } else if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
    snprintf(what, cap, "the proxy's answer is not TLS (%s)", ERR_reason_error_string(first));
    c = S5_TLS_NOT_TLS;
  } else if (err == SSL_ERROR_SYSCALL && first == 0) {
    snprintf(what, cap, "the proxy %s the connection (%s)", sys_errno == 0 ? "closed" : "reset",
             sys_errno != 0 ? strerror(sys_errno) : "EOF");
    c = S5_TLS_RESET;
  } else if (first != 0) ERR_error_string_n(first, what, cap);
  else snprintf(what, cap, "no reason given");
  ERR_clear_error();
  *fix = c == S5_TLS_ALERT ? alert_fix(alert) : fixes[c];
  return c;
}

/* Counted; the first of its cause for the upstream (all workers) at warn. */
static void seen_failed(unsigned slot, enum s5_tls_cause c, const char *why) {
  struct s5_uptab *t = s5_uptab();
  uint64_t n = t != NULL ? s5_uptab_tls_failed(t, slot, c) : 0;
  if (n == 1)
    s5_warn("%s (the first; each one is counted in --stats as tls_failed_%s)", why, s5_tls_cause_name(c));
}

void s5_tls_seen_failed(SSL *ssl, unsigned slot, const char *up_name, int err, int sys_errno, char *why,
                        size_t cap) {
  char what[200];
  const char *fix;
  enum s5_tls_cause c = classify(ssl, err, sys_errno, what, sizeof what, &fix);
  snprintf(why, cap, "TLS handshake with upstream %s failed: %s [%s]: %s", up_name, what,
           s5_tls_cause_name(c), fix);
  seen_failed(slot, c, why);
}

int s5_tls_seen_ended(SSL *ssl, unsigned slot, const char *up_name, int err, int sys_errno, int fresh) {
  char what[200], why[400];
  const char *fix;
  enum s5_tls_cause c = classify(ssl, err, sys_errno, what, sizeof what, &fix);
  if (!fresh || (c != S5_TLS_ALERT && c != S5_TLS_VERSION && (c != S5_TLS_RESET || fresh < 2))) {
    s5_debug("upstream %s: TLS connection ended: %s", up_name, what);
    return 0;
  }
  /* TLS 1.3: the proxy checks our certificate after our handshake ended */
  snprintf(why, sizeof why, "TLS connection with upstream %s refused: %s [%s]: %s", up_name, what,
           s5_tls_cause_name(c), fix);
  s5_debug("%s", why);
  seen_failed(slot, c, why);
  return 1;
}
