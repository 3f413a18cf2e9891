/* SPDX-License-Identifier: MIT */
/* OpenSSL loaded on demand (core/base/ossl.c), in this process's own
 * /proc/self/maps: nothing of OpenSSL is mapped at start (the test links
 * what the daemon links), nor after a configuration that needs neither; a
 * configuration with [sniff] quic maps libcrypto alone, one with an
 * upstream's tls = true libssl too; the key that needed it is named; and
 * the calls, ordinary OpenSSL code, go through the table (a macro of
 * OpenSSL's, SSL_CTX_set_min_proto_version, included). */
#include <stdio.h>
#include <string.h>

#include "base/ossl.h"
#include "ini/config.h"

#include "check.h"

/* 1 if a mapping of this process's names lib (e.g. "libssl.so"). */
static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[1024];
  int found = 0;
  if (f == NULL) {
    CHECK(0, "/proc/self/maps: cannot open");
    return -1;
  }
  while (fgets(line, sizeof line, f) != NULL)
    if (strstr(line, lib) != NULL) found = 1;
  fclose(f);
  return found;
}

static struct s5_config cfg;

int main(void) {
  char what[128], err[512];
  CHECK(mapped("/libcrypto.so") == 0, "libcrypto is mapped at start: the binary links it");
  CHECK(mapped("/libssl.so") == 0, "libssl is mapped at start: the binary links it");
  CHECK(!s5_ossl_loaded(S5_OSSL_CRYPTO) && !s5_ossl_loaded(S5_OSSL_SSL), "loaded before any load");

  /* The defaults: neither TLS to the proxy nor QUIC sniffing. */
  s5_config_defaults(&cfg);
  CHECK(s5_ossl_needed(&cfg, what, sizeof what) == -1, "the defaults need OpenSSL: %s", what);
  CHECK(s5_ossl_load_for(&cfg, err, sizeof err) == 0, "loading for the defaults: %s", err);
  CHECK(mapped("/libcrypto.so") == 0 && mapped("/libssl.so") == 0, "OpenSSL mapped for the defaults");

  /* [sniff] quic: libcrypto alone. */
  cfg.sniff.quic.n = 1;
  cfg.sniff.quic.port[0] = 443;
  CHECK(s5_ossl_needed(&cfg, what, sizeof what) == S5_OSSL_CRYPTO, "[sniff] quic: not libcrypto");
  CHECK(strcmp(what, "[sniff] quic") == 0, "[sniff] quic named as \"%s\"", what);
  CHECK(s5_ossl_load_for(&cfg, err, sizeof err) == 0, "loading for [sniff] quic: %s", err);
  CHECK(mapped("/libcrypto.so") == 1, "[sniff] quic: libcrypto not mapped");
  CHECK(mapped("/libssl.so") == 0, "[sniff] quic: libssl mapped too");
  CHECK(s5_ossl_loaded(S5_OSSL_CRYPTO) && !s5_ossl_loaded(S5_OSSL_SSL), "[sniff] quic: loaded flags");
  EVP_CIPHER *gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
  CHECK(gcm != NULL, "EVP_CIPHER_fetch through the table");
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  CHECK(c != NULL && EVP_EncryptInit_ex2(c, gcm, (const unsigned char *)"0123456789abcdef",
                                         (const unsigned char *)"0123456789ab", NULL) == 1,
        "EVP_EncryptInit_ex2 through the table");
  EVP_CIPHER_CTX_free(c);
  EVP_CIPHER_free(gcm);

  /* A Shadowsocks upstream: libcrypto (its AEAD), the upstream named. */
  cfg.sniff.quic.n = 0;
  cfg.n_upstreams = 2;
  cfg.socks5_section = true;
  snprintf(cfg.upstreams[1].name, sizeof cfg.upstreams[1].name, "ss1");
  cfg.upstreams[1].type = S5_UPSTREAM_SHADOWSOCKS;
  CHECK(s5_ossl_needed(&cfg, what, sizeof what) == S5_OSSL_CRYPTO, "type = shadowsocks: not libcrypto");
  CHECK(strcmp(what, "[upstream ss1] type = shadowsocks") == 0, "shadowsocks named as \"%s\"", what);

  /* An upstream with tls = true: libssl too, the upstream named. */
  snprintf(cfg.upstreams[1].name, sizeof cfg.upstreams[1].name, "https1");
  cfg.upstreams[1].type = S5_UPSTREAM_HTTP;
  cfg.upstreams[1].tls = true;
  CHECK(s5_ossl_needed(&cfg, what, sizeof what) == S5_OSSL_SSL, "tls = true: not libssl");
  CHECK(strcmp(what, "[upstream https1] tls = true") == 0, "tls = true named as \"%s\"", what);
  cfg.upstreams[0].tls = true;
  CHECK(s5_ossl_needed(&cfg, what, sizeof what) == S5_OSSL_SSL && strcmp(what, "[socks5] tls = true") == 0,
        "[socks5] tls = true named as \"%s\"", what);
  CHECK(s5_ossl_load_for(&cfg, err, sizeof err) == 0, "loading for tls = true: %s", err);
  CHECK(mapped("/libssl.so") == 1, "tls = true: libssl not mapped");
  CHECK(s5_ossl_loaded(S5_OSSL_SSL) && s5_ossl_load(S5_OSSL_SSL, err, sizeof err) == 0, "loaded twice");
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  CHECK(ctx != NULL, "SSL_CTX_new through the table");
  CHECK(ctx != NULL && SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) == 1 &&
          SSL_CTX_get_min_proto_version(ctx) == TLS1_3_VERSION,
        "SSL_CTX_ctrl (OpenSSL's macros over it) through the table");
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return check_done();
}
