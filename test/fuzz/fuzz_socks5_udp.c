/* SPDX-License-Identifier: MIT */
/* Fuzz target: SOCKS5 UDP ASSOCIATE (core/socks5/socks5_udp.c): the header in
 * front of every datagram the relay sends back (the input is one such
 * datagram), the UDP ASSOCIATE reply with its bound address (the input as
 * bytes from the control connection), and the encoders fed with what the
 * parsers returned.
 *
 * Checks beyond memory errors: the header length never exceeds the
 * datagram; a parsed header, written back with s5_socks5_udp_header_write(),
 * gives the same bytes (but RSV, which is not checked); a name is 1..255
 * bytes, NUL-terminated; the reply parser is a well-behaved streaming
 * parser (NEED_MORE until one final answer, see fuzz_socks5.c). */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz_check.h"
#include "socks5/socks5_udp.h"

static void check_addr(const struct s5_socks5_addr *a) {
  FUZZ_CHECK(a->family == AF_INET || a->family == AF_INET6 || a->family == AF_UNSPEC, "family %d", a->family);
  if (a->family == AF_UNSPEC) {
    FUZZ_CHECK(a->name_len >= 1, "empty name");
    FUZZ_CHECK(a->name[a->name_len] == '\0', "name not terminated");
  }
}

static void check_header(const uint8_t *data, size_t len) {
  uint8_t *dgram = fuzz_dup(data, len);
  struct s5_socks5_addr src;
  int n = s5_socks5_udp_header_parse(dgram, len, &src);
  if (n < 0) {
    FUZZ_CHECK(n == S5_SOCKS5_BAD_MESSAGE || n == S5_SOCKS5_FRAGMENTED, "status %d", n);
    FUZZ_CHECK(n != S5_SOCKS5_FRAGMENTED || (len >= 3 && data[2] != 0), "FRAGMENTED with FRAG 0");
    free(dgram);
    return;
  }
  FUZZ_CHECK(n >= 8 && (size_t)n <= len && n <= S5_SOCKS5_UDP_HDR_MAX, "header of %d bytes out of %zu", n,
             len);
  FUZZ_CHECK(data[2] == 0, "FRAG %u accepted", data[2]);
  check_addr(&src);

  /* Round trip: into a buffer of exactly the header's size, and one byte
   * short of it (must refuse, not overflow). */
  uint8_t *out = malloc((size_t)n);
  if (out == NULL) abort();
  int w = s5_socks5_udp_header_write(out, (size_t)n, &src);
  FUZZ_CHECK(w == n, "rewritten header %d bytes, parsed %d", w, n);
  FUZZ_CHECK(out[0] == 0 && out[1] == 0 && memcmp(out + 2, data + 2, (size_t)n - 2) == 0,
             "rewritten header differs");
  w = s5_socks5_udp_header_write(out, (size_t)n - 1, &src);
  FUZZ_CHECK(w == S5_SOCKS5_TOO_LONG, "short buffer: %d", w);
  free(out);
  free(dgram);
}

static void check_reply(const uint8_t *msg, size_t len) {
  if (len > S5_SOCKS5_MAX_MSG) len = S5_SOCKS5_MAX_MSG; /* udp.c's receive buffer */
  int final = S5_SOCKS5_NEED_MORE;
  for (size_t m = 0; m <= len; m++) {
    uint8_t *buf = fuzz_dup(msg, m);
    uint8_t rep = 0;
    struct s5_socks5_addr bnd;
    int r = s5_socks5_parse_reply_addr(buf, m, &rep, &bnd);
    free(buf);
    FUZZ_CHECK(r <= (int)m, "reply of %d bytes out of %zu", r, m);
    if (r > 0 || r == S5_SOCKS5_REFUSED) check_addr(&bnd);
    if (r == S5_SOCKS5_REFUSED) FUZZ_CHECK(rep != 0, "REFUSED with REP 0");
    if (final != S5_SOCKS5_NEED_MORE) FUZZ_CHECK(r == final, "%d, then %d at %zu bytes", final, r, m);
    else if (r != S5_SOCKS5_NEED_MORE) final = r;
    if (r > 0) {
      /* What udp.c does next: UDP ASSOCIATE naming that address. */
      uint8_t req[S5_SOCKS5_MAX_MSG];
      struct sockaddr_storage ss;
      memset(&ss, 0, sizeof ss);
      if (bnd.family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, bnd.ip, 4);
        sin->sin_port = htons(bnd.port);
      } else if (bnd.family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, bnd.ip, 16);
        sin6->sin6_port = htons(bnd.port);
      }
      int w = s5_socks5_write_udp_associate(req, sizeof req, (struct sockaddr *)&ss);
      if (bnd.family == AF_UNSPEC) FUZZ_CHECK(w == S5_SOCKS5_BAD_MESSAGE, "associate by name: %d", w);
      else FUZZ_CHECK(w == (bnd.family == AF_INET ? 10 : 22) && req[1] == 3, "associate: %d", w);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_header(data, size);
  check_reply(data, size);
  return 0;
}
