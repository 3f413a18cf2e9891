/* SPDX-License-Identifier: MIT */
/* SOCKS5 client messages (RFC 1928, RFC 1929): pure encoding and parsing,
 * no I/O, so that the session code and the fuzzers share one implementation. */
#ifndef S5_CORE_SOCKS5_H
#define S5_CORE_SOCKS5_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Largest message the client ever sends or the server ever replies with. */
#define S5_SOCKS5_MAX_MSG 600

enum s5_socks5_status {
  S5_SOCKS5_OK = 0,
  S5_SOCKS5_NEED_MORE = -1,   /* a prefix of a valid message: read more */
  S5_SOCKS5_BAD_VERSION = -2, /* VER is not 5 (or 1 for the auth reply) */
  S5_SOCKS5_NO_METHOD = -3,   /* server chose 0xFF or a method we did not offer */
  S5_SOCKS5_AUTH_FAILED = -4, /* RFC 1929 status != 0 */
  S5_SOCKS5_REFUSED = -5,     /* CONNECT reply REP != 0; *rep says why */
  S5_SOCKS5_BAD_MESSAGE = -6, /* malformed: bad ATYP, bad length (RSV is not checked) */
  S5_SOCKS5_TOO_LONG = -7,    /* a field does not fit (username > 255, ...) */
};

enum s5_socks5_method { S5_SOCKS5_METHOD_NONE = 0x00, S5_SOCKS5_METHOD_USERPASS = 0x02 };

/* Every reply starts with a version byte: S5_SOCKS5_NEED_MORE until it is
 * in, S5_SOCKS5_BAD_VERSION when it is not ver, S5_SOCKS5_NEED_MORE again
 * while fewer than need bytes are in, 0 once they are. */
int s5_socks5_head(const uint8_t *buf, size_t len, uint8_t ver, size_t need);

/* Client requests: each writes into buf (capacity cap) and returns the byte
 * count, or a negative s5_socks5_status when it does not fit. */

/* Greeting: offers "no auth", or only "username/password" when with_auth. */
int s5_socks5_write_greeting(uint8_t *buf, size_t cap, int with_auth);
/* RFC 1929 request; user and pass are 1..255 bytes. */
int s5_socks5_write_auth(uint8_t *buf, size_t cap, const char *user, const char *pass);
/* CONNECT to an IPv4 or IPv6 address (sockaddr_in / sockaddr_in6). */
int s5_socks5_write_connect(uint8_t *buf, size_t cap, const struct sockaddr *dst);
/* CONNECT to a domain name (ATYP 3), name 1..255 bytes. */
int s5_socks5_write_connect_name(uint8_t *buf, size_t cap, const char *name, uint16_t port);

/* Server replies: each looks at the first len bytes of buf and returns the
 * length of the complete reply (> 0), S5_SOCKS5_NEED_MORE, or an error. */

/* Method selection; offered_auth tells which method we offered. */
int s5_socks5_parse_method(const uint8_t *buf, size_t len, int offered_auth);
/* RFC 1929 status. */
int s5_socks5_parse_auth(const uint8_t *buf, size_t len);
/* CONNECT reply; on S5_SOCKS5_REFUSED, *rep is the server's REP code. The
 * bound address is validated but not returned (s5tund has no use for it). */
int s5_socks5_parse_reply(const uint8_t *buf, size_t len, uint8_t *rep);

/* Short text for a status or REP code, for logs. */
const char *s5_socks5_strerror(int status);
const char *s5_socks5_strrep(uint8_t rep);

#endif
