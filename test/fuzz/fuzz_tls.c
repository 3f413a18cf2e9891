/* SPDX-License-Identifier: MIT */
/* Fuzz target: TLS to the proxy, the handshake (core/socks5/tls.c over
 * pump.c, with tls_ctx.c's context and session cache and tls_seen.c's
 * causes): a real pump connects to a listener of the harness on
 * 127.0.0.1, which answers each flight of the client with the input's
 * next flight, then ends its stream. Hostile server bytes in every
 * handshake state: before and inside the ServerHello, the certificate
 * (verified against FUZZ_CA, which signed the recorded seeds' one, or not
 * verified), the key exchange, the records after it.
 *
 * Input: a flags byte (1: tls-verify = false; 2: the server's end is a
 * reset, else a FIN), then flights [length, 2 bytes big-endian][bytes]
 * (fewer bytes when the input ends). Seeds: record_tls.py, a real
 * server's flights for TLS 1.3 and 1.2.
 *
 * S5_FUZZ_TRACE=1 prints each input's outcome, S5_FUZZ_LOG=1 s5tund's log.
 *
 * Promises checked: the pump's done() comes exactly once, at the latest
 * once the server ended its stream (no handshake waits forever on a
 * server that is gone), never with EBADF (what libuv says for any POLLERR:
 * the socket's own error names a reset); a codec failure names the
 * upstream and a cause (tls_seen.c's "[cause]"); then every handle of the
 * pump closes (nothing left on the loop). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "fuzz_check.h"
#include "base/log.h"
#include "ini/config.h"
#include "socks5/tls.h"

/* The CA of the recorded seeds (record_tls.py): EC P-256, valid to 2126. */
static const char FUZZ_CA[] =
  "-----BEGIN CERTIFICATE-----\n"
  "MIIBiTCCAS+gAwIBAgIUTpP7gJa8vvaFzjgyOgVVuHMsV4MwCgYIKoZIzj0EAwIw\n"
  "GTEXMBUGA1UEAwwOczV0dW5kIGZ1enogQ0EwIBcNMjYxMjA2MDYxNTA3WhgPMjEy\n"
  "NjExMTIwNjE1MDdaMBkxFzAVBgNVBAMMDnM1dHVuZCBmdXp6IENBMFkwEwYHKoZI\n"
  "zj0CAQYIKoZIzj0DAQcDQgAEIhlplGN76Kji6xTQCgxtr81HCAz/aDNZKWCySjxJ\n"
  "EoAKrQdd1seiZdjZjixbuSlBub852VG3nXfIAn12WPb9v6NTMFEwHQYDVR0OBBYE\n"
  "FLcHFunRK1nM6rS/5PoYHj10rJzEMB8GA1UdIwQYMBaAFLcHFunRK1nM6rS/5PoY\n"
  "Hj10rJzEMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAOr0mLsr\n"
  "ZvQUqAzIQCK61yjs3HY+aQTJKjyYLA0kzZgJAiAprbb2aig+BiEbBdPhf0NrFbSV\n"
  "P4xm8jSv0XBOTivRIQ==\n"
  "-----END CERTIFICATE-----\n";

static uv_loop_t loop;
static struct s5_upstream_cfg up;
static int lfd = -1;

struct outcome {
  int calls, status;
  char why[600];
};

static void on_done(void *arg, int status, const char *why) {
  struct outcome *o = arg;
  o->calls++;
  o->status = status;
  snprintf(o->why, sizeof o->why, "%s", why != NULL ? why : "");
}

static void setup(void) {
  static int ready;
  if (ready) return;
  ready = 1;
  const char *log = getenv("S5_FUZZ_LOG");
  s5_log_level = log != NULL && *log != '\0' && *log != '0' ? S5_LOG_DEBUG : S5_LOG_ERROR;
  FUZZ_CHECK(uv_loop_init(&loop) == 0, "uv_loop_init");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 16) == 0 &&
               getsockname(lfd, (struct sockaddr *)&a, &alen) == 0,
             "listener: %s", strerror(errno));
  char ca[] = "/tmp/fuzz_tls_ca.XXXXXX";
  int fd = mkstemp(ca);
  FUZZ_CHECK(fd >= 0 && write(fd, FUZZ_CA, sizeof FUZZ_CA - 1) == (ssize_t)(sizeof FUZZ_CA - 1),
             "the CA file");
  close(fd);
  snprintf(up.name, sizeof up.name, "fuzz");
  up.type = S5_UPSTREAM_SOCKS5;
  up.tls = true;
  snprintf(up.tls_ca_file, sizeof up.tls_ca_file, "%s", ca);
  memcpy(&up.addr, &a, sizeof a);
  up.addrlen = sizeof a;
}

/* A flight that starts with a ServerHello echoes the legacy session id of
 * this run's ClientHello (TLS 1.3 requires it), when both are 32 bytes:
 * so that a recorded ServerHello is taken and the fuzzer reaches what
 * follows it. Offsets: record header 5, handshake header 4, version 2,
 * random 32, then the id's length and the id. */
static void echo_session_id(uint8_t *f, size_t len, const uint8_t *ch, size_t ch_len) {
  const size_t at = 5 + 4 + 2 + 32;
  if (len < at + 33 || ch_len < at + 33 || f[0] != 0x16 || f[5] != 2 || ch[0] != 0x16 || ch[5] != 1) return;
  if (f[at] == 32 && ch[at] == 32) memcpy(f + at + 1, ch + at + 1, 32);
}

/* Runs the loop until it has nothing ready (a few passes: readiness on
 * the loopback is immediate). */
static void spin(void) {
  for (int i = 0; i < 4; i++) uv_run(&loop, UV_RUN_NOWAIT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  setup();
  uint8_t flags = data[0];
  up.tls_verify = !(flags & 1);
  struct outcome o = {0};
  char why[300];
  int plain = -1;
  struct s5_pump *p = s5_tls_start(&loop, &up, on_done, &o, &plain, why, sizeof why);
  FUZZ_CHECK(p != NULL, "s5_tls_start: %s", why);
  int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  FUZZ_CHECK(c >= 0, "accept: %s", strerror(errno));
  size_t i = 1, hello_len = 0;
  int ended = 0;
  static uint8_t hello[16384], flight[65536], sink[16384];
  for (int after = 0; o.calls == 0 && after < 32;) { /* every flight, then 32 turns after the end */
    spin();
    for (ssize_t n; (n = recv(c, sink, sizeof sink, 0)) > 0;) /* the client's flight; its first kept */
      if (hello_len == 0) memcpy(hello, sink, (size_t)n), hello_len = (size_t)n;
    if (o.calls != 0) break;
    if (i + 2 <= size) { /* the next flight */
      size_t len = (size_t)data[i] << 8 | data[i + 1];
      i += 2;
      if (len > size - i) len = size - i;
      memcpy(flight, data + i, len);
      echo_session_id(flight, len, hello, hello_len);
      for (size_t off = 0; off < len;) {
        ssize_t n = send(c, flight + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) break; /* the client gone, or its buffer full: the rest is dropped */
        off += (size_t)n;
      }
      i += len;
    } else if (!ended) { /* the server's end */
      if (flags & 2) {
        struct linger l = {1, 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        close(c);
        c = -1;
      } else shutdown(c, SHUT_WR);
      ended = 1;
    } else after++;
  }
  if (getenv("S5_FUZZ_TRACE") != NULL) fprintf(stderr, "fuzz_tls: status %d: %s\n", o.status, o.why);
  FUZZ_CHECK(o.calls == 1, "done() came %d times after the server's %s", o.calls, ended ? "end" : "flights");
  FUZZ_CHECK(o.status != UV_EBADF, "the server's end named as libuv's POLLERR (EBADF): %s", o.why);
  if (o.status > 0)
    FUZZ_CHECK(strstr(o.why, "upstream fuzz") != NULL && strchr(o.why, '[') != NULL,
               "a failure without the upstream or its cause: %s", o.why);
  close(plain); /* after a handshake done, the pump's: it ends with both ends */
  if (c >= 0) close(c);
  int left = 1;
  for (int n = 0; n < 200 && left; n++) left = uv_run(&loop, UV_RUN_NOWAIT);
  FUZZ_CHECK(!left, "the pump's handles still open after both ends closed");
  return 0;
}
