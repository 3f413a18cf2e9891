/* SPDX-License-Identifier: MIT */
/* The request side of the metrics endpoint's HTTP/1.1 (RFC 9112): a parser
 * of a request head (request line and header fields), with no I/O, so that
 * it can be fuzzed alone (test/fuzz/fuzz_http.c). The endpoint serves two
 * paths with GET and closes every connection after one answer, so the parser
 * only has to tell a well-formed GET /metrics or GET / from everything else
 * and say which 4xx the rest gets.
 *
 * Written here rather than taken from a library (docs/operations.md, Prometheus):
 * libmicrohttpd (Debian) runs its own threads or owns accepting, limits and
 * timeouts; llhttp is a whole HTTP/1.1 message parser with callbacks. This
 * is a GET head without a body, answered from the control loop's poll(),
 * in about a hundred lines. */
#ifndef S5_THREADS_HTTP_H
#define S5_THREADS_HTTP_H

#include <stddef.h>

/* Largest request head read: the request line and every header field. */
#define S5_HTTP_HEAD_MAX 8192

enum s5_http_result {
  S5_HTTP_NEED_MORE = 0, /* no answer yet: the head is not complete */
  S5_HTTP_OK = 200,      /* GET /metrics or GET / (a query string is ignored) */
  S5_HTTP_BAD_REQUEST = 400,
  S5_HTTP_NOT_FOUND = 404,
  S5_HTTP_METHOD_NOT_ALLOWED = 405,
  S5_HTTP_URI_TOO_LONG = 414,      /* no end of the request line within the cap */
  S5_HTTP_HEADERS_TOO_LARGE = 431, /* no end of the header section within the cap */
};

/* Judges the first len bytes received on a connection; cap is the most that
 * will ever be read (at most S5_HTTP_HEAD_MAX). Reading stops at the first
 * answer that is not S5_HTTP_NEED_MORE, and that answer never changes when
 * more bytes follow: a line is judged as soon as its LF is in, and the cap
 * gives 414 or 431 once len reaches it. NEED_MORE is only returned for
 * len < cap. Bytes after the head (a body, a second request) are ignored:
 * the connection is closed after the answer. */
enum s5_http_result s5_http_parse(const char *buf, size_t len, size_t cap);

/* The reason phrase of a result ("OK", "Not Found", ...). */
const char *s5_http_reason(enum s5_http_result r);

#endif
