/* SPDX-License-Identifier: MIT */
/* The OpenSSL functions s5tund calls, one line each (base/ossl.h):
 * S5_OSSL_FN(LIB, name), LIB the library that exports it (SSL: libssl.so.3,
 * CRYPTO: libcrypto.so.3), name the exported symbol itself. Many of
 * OpenSSL's documented "functions" are macros over another (e.g.
 * SSL_CTX_set_mode and SSL_CTX_set_min_proto_version are SSL_CTX_ctrl,
 * SSL_CTX_get_app_data is SSL_CTX_get_ex_data): list what they expand to.
 * A name used but missing here is an undefined reference at link time,
 * since the binary does not link OpenSSL; `nm -D --defined-only
 * /usr/lib/x86_64-linux-gnu/libssl.so.3` tells which library has it.
 * Kept in order by library, then name. No include guard: each user defines
 * S5_OSSL_FN, includes this, and undefines it. */

/* libcrypto: errors, QUIC's Initial keys (core/sniff/sniff_quic.c), certificates */
S5_OSSL_FN(CRYPTO, ERR_clear_error)
S5_OSSL_FN(CRYPTO, ERR_error_string_n)
S5_OSSL_FN(CRYPTO, ERR_get_error)
S5_OSSL_FN(CRYPTO, ERR_peek_error)
S5_OSSL_FN(CRYPTO, EVP_CIPHER_CTX_ctrl)
S5_OSSL_FN(CRYPTO, EVP_CIPHER_CTX_free)
S5_OSSL_FN(CRYPTO, EVP_CIPHER_CTX_new)
S5_OSSL_FN(CRYPTO, EVP_CIPHER_CTX_set_padding)
S5_OSSL_FN(CRYPTO, EVP_CIPHER_fetch)
S5_OSSL_FN(CRYPTO, EVP_DecryptFinal_ex)
S5_OSSL_FN(CRYPTO, EVP_DecryptInit_ex2)
S5_OSSL_FN(CRYPTO, EVP_DecryptUpdate)
S5_OSSL_FN(CRYPTO, EVP_EncryptInit_ex2)
S5_OSSL_FN(CRYPTO, EVP_EncryptUpdate)
S5_OSSL_FN(CRYPTO, EVP_MAC_CTX_dup)
S5_OSSL_FN(CRYPTO, EVP_MAC_CTX_free)
S5_OSSL_FN(CRYPTO, EVP_MAC_CTX_new)
S5_OSSL_FN(CRYPTO, EVP_MAC_CTX_set_params)
S5_OSSL_FN(CRYPTO, EVP_MAC_fetch)
S5_OSSL_FN(CRYPTO, EVP_MAC_final)
S5_OSSL_FN(CRYPTO, EVP_MAC_free)
S5_OSSL_FN(CRYPTO, EVP_MAC_init)
S5_OSSL_FN(CRYPTO, EVP_MAC_update)
S5_OSSL_FN(CRYPTO, OSSL_PARAM_construct_end)
S5_OSSL_FN(CRYPTO, OSSL_PARAM_construct_utf8_string)
S5_OSSL_FN(CRYPTO, X509_VERIFY_PARAM_set1_ip_asc)
S5_OSSL_FN(CRYPTO, X509_verify_cert_error_string)

/* libssl: TLS to the proxy (core/socks5/tls.c, tls_ctx.c) */
S5_OSSL_FN(SSL, SSL_CIPHER_get_name)
S5_OSSL_FN(SSL, SSL_CTX_check_private_key)
S5_OSSL_FN(SSL, SSL_CTX_ctrl)
S5_OSSL_FN(SSL, SSL_CTX_free)
S5_OSSL_FN(SSL, SSL_CTX_get_ex_data)
S5_OSSL_FN(SSL, SSL_CTX_load_verify_locations)
S5_OSSL_FN(SSL, SSL_CTX_new)
S5_OSSL_FN(SSL, SSL_CTX_sess_set_new_cb)
S5_OSSL_FN(SSL, SSL_CTX_set_ciphersuites)
S5_OSSL_FN(SSL, SSL_CTX_set_default_verify_paths)
S5_OSSL_FN(SSL, SSL_CTX_set_ex_data)
S5_OSSL_FN(SSL, SSL_CTX_set_verify)
S5_OSSL_FN(SSL, SSL_CTX_use_PrivateKey_file)
S5_OSSL_FN(SSL, SSL_CTX_use_certificate_chain_file)
S5_OSSL_FN(SSL, SSL_SESSION_free)
S5_OSSL_FN(SSL, SSL_connect)
S5_OSSL_FN(SSL, SSL_ctrl)
S5_OSSL_FN(SSL, SSL_free)
S5_OSSL_FN(SSL, SSL_get0_param)
S5_OSSL_FN(SSL, SSL_get_SSL_CTX)
S5_OSSL_FN(SSL, SSL_get_current_cipher)
S5_OSSL_FN(SSL, SSL_get_error)
S5_OSSL_FN(SSL, SSL_get_verify_mode)
S5_OSSL_FN(SSL, SSL_get_verify_result)
S5_OSSL_FN(SSL, SSL_get_version)
S5_OSSL_FN(SSL, SSL_new)
S5_OSSL_FN(SSL, SSL_read)
S5_OSSL_FN(SSL, SSL_session_reused)
S5_OSSL_FN(SSL, SSL_set1_host)
S5_OSSL_FN(SSL, SSL_set_fd)
S5_OSSL_FN(SSL, SSL_set_session)
S5_OSSL_FN(SSL, SSL_shutdown)
S5_OSSL_FN(SSL, SSL_write)
S5_OSSL_FN(SSL, TLS_client_method)
