/* SPDX-License-Identifier: MIT */
/* HTTP CONNECT (RFC 9110 section 9.3.6) client messages: pure encoding and
 * parsing, no I/O, like socks5.h, whose statuses they return.
 *
 * The request: "CONNECT host:port HTTP/1.1", Host, and Proxy-Authorization
 * Basic (RFC 7617) when a user is given; an IPv6 literal in brackets, a
 * mapped name as the name.
 *
 * The response is read as a stream, byte by byte state, so that a header of
 * any length up to S5_HTTP_HEADER_MAX costs no buffer: only the status
 * line's start is kept, for the log. Interim 1xx responses are skipped; a
 * 2xx ends the header (at its blank line) and the tunnel begins with the
 * next byte; anything else is a failure. */
#ifndef S5_CORE_HTTP_CONNECT_H
#define S5_CORE_HTTP_CONNECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Header bytes (every response's, 1xx included) read at most. */
#define S5_HTTP_HEADER_MAX (16u * 1024)
/* The longest request: a 255-byte name twice, 255-byte user and password
 * in base64. */
#define S5_HTTP_REQUEST_MAX 1600

/* The request into buf: its length, or S5_SOCKS5_TOO_LONG. host is a name,
 * or NULL for dst (an IPv4 or IPv6 sockaddr); user NULL or empty: no
 * Proxy-Authorization. */
int s5_http_write_connect(uint8_t *buf, size_t cap, const char *host, const struct sockaddr *dst,
                          uint16_t port, const char *user, const char *pass);

struct s5_http_reply {
  uint32_t seen;   /* header bytes so far */
  uint16_t status; /* of the response being read, 0 until its status line ended */
  uint8_t state;   /* where in the response */
  uint8_t line_len;
  uint8_t field_len;
  char line[80];    /* the status line's start, for the log (NUL-terminated) */
  char field[40];   /* a header line's start: enough for Proxy-Authenticate's scheme */
  char schemes[32]; /* the schemes the Proxy-Authenticate headers offered, ", " between (a 407's) */
};

void s5_http_reply_init(struct s5_http_reply *r);

/* Feeds len bytes. Sets *used to the bytes taken and returns:
 *   S5_SOCKS5_NEED_MORE   all taken, the header goes on;
 *   > 0 (the status)      a 2xx header ended after *used bytes: the rest is the tunnel's;
 *   S5_SOCKS5_REFUSED     a final status other than 2xx (r->status, r->line);
 *   S5_SOCKS5_AUTH_FAILED 407 (r->schemes: the authentication schemes it offered);
 *   S5_SOCKS5_BAD_MESSAGE not an HTTP status line, a NUL or bare CR in the header;
 *   S5_SOCKS5_TOO_LONG    more than S5_HTTP_HEADER_MAX header bytes. */
int s5_http_reply_feed(struct s5_http_reply *r, const uint8_t *buf, size_t len, size_t *used);

#endif
