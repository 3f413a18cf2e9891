/* SPDX-License-Identifier: MIT */
/* SOCKS4 and SOCKS4a client messages: pure encoding and parsing, no I/O,
 * like socks5.h, whose statuses they return. SOCKS4 carries an IPv4
 * destination and a user id; 4a a host name in its place (the proxy
 * resolves it). Neither can carry an IPv6 destination. */
#ifndef S5_CORE_SOCKS4_H
#define S5_CORE_SOCKS4_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The reply: VN CD DSTPORT DSTIP. */
#define S5_SOCKS4_REPLY_LEN 8

/* CONNECT to an IPv4 address with user id user (may be empty): the byte
 * count, or S5_SOCKS5_TOO_LONG, or S5_SOCKS5_BAD_MESSAGE for another
 * family. */
int s5_socks4_write_connect(uint8_t *buf, size_t cap, const struct sockaddr *dst, const char *user);
/* SOCKS4a CONNECT to a host name (1..255 bytes). */
int s5_socks4_write_connect_name(uint8_t *buf, size_t cap, const char *name, uint16_t port, const char *user);

/* The reply: S5_SOCKS4_REPLY_LEN when granted (CD 90), S5_SOCKS5_NEED_MORE,
 * S5_SOCKS5_BAD_VERSION (VN neither 0 nor 4), S5_SOCKS5_REFUSED (CD 91,
 * *cd set) or S5_SOCKS5_AUTH_FAILED (92, 93: the identd check; *cd set),
 * S5_SOCKS5_BAD_MESSAGE for any other CD. */
int s5_socks4_parse_reply(const uint8_t *buf, size_t len, uint8_t *cd);

/* Short text for a CD code, for logs. */
const char *s5_socks4_strcd(uint8_t cd);

#endif
