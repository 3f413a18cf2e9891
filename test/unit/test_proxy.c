/* SPDX-License-Identifier: MIT */
/* The SOCKS5 client (core/socks5/proxy.c) against a scripted SOCKS5 server on
 * 127.0.0.1 in the same libuv loop: what the client sends, what it makes
 * of each reply (granted with the bound address, refused with REP as its
 * own field, authentication failed, no UDP ASSOCIATE, the connection lost
 * after a granted ASSOCIATE, nobody listening, nobody answering), which
 * counter moves, and that every handle is closed (ops->closed once, the
 * loop closes cleanly). The pool's steps too: a WARM client greets and
 * authenticates and stops before the request; a session's client adopts
 * its socket and sends only the CONNECT; one that finds it dead retries
 * once on a fresh connection; a Shadowsocks one (test_ss_warm). Nothing
 * leaves loopback. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "check.h"
#include "socks5/proxy.h"
#include "socks5/pump.h"
#include "socks5/ss_aead.h"
#include "ctx/wctx.h"

/* One case: what the server answers to each message it reads (len 0: it
 * closes the connection instead), and what the client reported. */
struct reply {
  const char *bytes;
  size_t len;
};

struct run {
  const struct reply *script;
  unsigned nscript, next;
  uv_tcp_t server, conn;
  int conn_open;
  uint8_t got[36864]; /* all the client sent */
  size_t got_len;

  struct s5_proxy proxy;
  int results, closed, connected;
  struct s5_proxy_result last;
  char why[200];
  int close_after_result; /* the owner closes at once, as sessions do on failure */
  int close_after_script; /* the server closes once it wrote its last reply */
};

static struct s5_wctx w; /* the client's loop and counters (w.loop, w.stats) */
#define L (&w.loop)      /* the server runs on it too */
static struct s5_queue_stats st;
static struct s5_config cfg;

/* ---------------------------------------------------------------- the server */

static void conn_closed(uv_handle_t *h) { (void)h; }

static void server_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct run *r = h->data;
  (void)suggested;
  *buf = uv_buf_init((char *)r->got + r->got_len, (unsigned)(sizeof r->got - r->got_len));
}

static void server_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  struct run *r = s->data;
  (void)buf;
  if (n < 0) {
    if (r->conn_open) uv_close((uv_handle_t *)&r->conn, conn_closed);
    r->conn_open = 0;
    return;
  }
  if (n == 0) return;
  r->got_len += (size_t)n;
  if (r->next >= r->nscript) return;
  const struct reply *rp = &r->script[r->next++];
  if (rp->len == 0) {
    uv_close((uv_handle_t *)&r->conn, conn_closed);
    r->conn_open = 0;
    return;
  }
  uv_buf_t b = uv_buf_init((char *)rp->bytes, (unsigned)rp->len);
  CHECK(uv_try_write(s, &b, 1) == (int)rp->len, "server write");
  if (r->close_after_script && r->next == r->nscript) {
    uv_close((uv_handle_t *)&r->conn, conn_closed);
    r->conn_open = 0;
  }
}

static void server_accept(uv_stream_t *srv, int status) {
  struct run *r = srv->data;
  CHECK(status == 0, "accept: %s", status == 0 ? "" : uv_strerror(status)); /* (uv_strerror(0) allocates) */
  uv_tcp_init(L, &r->conn);
  r->conn.data = r;
  r->conn_open = 1;
  CHECK(uv_accept(srv, (uv_stream_t *)&r->conn) == 0, "uv_accept");
  uv_read_start((uv_stream_t *)&r->conn, server_alloc, server_read);
}

/* Listens on 127.0.0.1, any port; the proxy address becomes that. */
static void server_start(struct run *r) {
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  uv_tcp_init(L, &r->server);
  r->server.data = r;
  CHECK(uv_tcp_bind(&r->server, (struct sockaddr *)&sin, 0) == 0, "bind");
  CHECK(uv_listen((uv_stream_t *)&r->server, 4, server_accept) == 0, "listen");
  int len = sizeof cfg.socks5.addr;
  uv_tcp_getsockname(&r->server, (struct sockaddr *)&cfg.socks5.addr, &len);
}

/* ---------------------------------------------------------------- the owner */

static int owner_request(void *owner, uint8_t *buf, size_t cap) {
  struct run *r = owner;
  if (r->proxy.ops->cmd == S5_PROXY_CONNECT)
    return s5_socks5_write_connect_name(buf, cap, "target.test", 7000);
  struct sockaddr_in from = {.sin_family = AF_INET};
  return s5_socks5_write_udp_associate(buf, cap, (struct sockaddr *)&from);
}

static int owner_connected(void *owner) {
  ((struct run *)owner)->connected++;
  return 0;
}

static void owner_result(void *owner, const struct s5_proxy_result *res) {
  struct run *r = owner;
  r->results++;
  r->last = *res;
  snprintf(r->why, sizeof r->why, "%s", res->why != NULL ? res->why : "");
  if (res->outcome == S5_PROXY_GRANTED && r->proxy.ops->cmd == S5_PROXY_ASSOCIATE) {
    /* The server ends the association now: the client must say so. */
    uv_close((uv_handle_t *)&r->conn, conn_closed);
    r->conn_open = 0;
    return;
  }
  if (r->close_after_result || res->outcome != S5_PROXY_GRANTED) s5_proxy_close(&r->proxy, 1);
}

static void owner_closed(void *owner) { ((struct run *)owner)->closed++; }

static const struct s5_proxy_ops connect_ops = {
  .cmd = S5_PROXY_CONNECT, .request = owner_request, .result = owner_result, .closed = owner_closed};
static const struct s5_proxy_ops associate_ops = {.cmd = S5_PROXY_ASSOCIATE,
                                                  .request = owner_request,
                                                  .connected = owner_connected,
                                                  .result = owner_result,
                                                  .closed = owner_closed};

static int target_v6; /* the next target is an IPv6 address, not a name */

static struct s5_target tgt; /* the owner's destination, for the ops below */

static const struct s5_target *owner_target(void) {
  memset(&tgt, 0, sizeof tgt);
  if (target_v6) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&tgt.addr;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(7000);
    inet_pton(AF_INET6, "2001:db8::7", &sin6->sin6_addr);
    return &tgt;
  }
  struct sockaddr_in *sin = (struct sockaddr_in *)&tgt.addr;
  sin->sin_family = AF_INET;
  sin->sin_port = htons(7000);
  snprintf(tgt.name, sizeof tgt.name, "target.test");
  return &tgt;
}

/* Runs one exchange to its end: the client reported, then everything closed. */
static void run(struct run *r, const struct s5_proxy_ops *ops, int listen) {
  memset(&st, 0, sizeof st);
  if (listen) server_start(r);
  s5_proxy_init(&r->proxy, &w, &cfg, ops, r);
  if (ops->request == NULL) s5_proxy_use(&r->proxy, &cfg.socks5, owner_target());
  char why[160];
  CHECK(s5_proxy_start(&r->proxy, why, sizeof why) == 0, "start: %s", why);
  while (r->results == 0 ||
         (r->last.outcome == S5_PROXY_GRANTED && ops->cmd == S5_PROXY_ASSOCIATE && r->results == 1))
    uv_run(L, UV_RUN_ONCE);
  s5_proxy_close(&r->proxy, 0);
  if (r->conn_open) uv_close((uv_handle_t *)&r->conn, conn_closed);
  r->conn_open = 0;
  if (listen) uv_close((uv_handle_t *)&r->server, NULL);
  uv_run(L, UV_RUN_DEFAULT);
  CHECK(r->closed == 1, "ops->closed called %d times", r->closed);
}

/* ---------------------------------------------------------------- cases */

#define R(s) \
  { s, sizeof s - 1 }
#define CLOSE \
  { NULL, 0 }

static void test_connect_granted(void) {
  static const struct reply script[] = {R("\x05\x00"), R("\x05\x00\x00\x01\x7f\x00\x00\x01\x1f\x90"
                                                         "early")};
  struct run r = {.script = script, .nscript = 2, .close_after_result = 1};
  run(&r, &connect_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_GRANTED, "CONNECT: outcome %d (%s)", r.last.outcome, r.why);
  CHECK(r.proxy.in_len == 5 && memcmp(r.proxy.in, "early", 5) == 0, "the target's first bytes kept (%u)",
        r.proxy.in_len);
  static const uint8_t want[] =
    "\x05\x01\x00"
    "\x05\x01\x00\x03\x0btarget.test\x1b\x58";
  CHECK(r.got_len == sizeof want - 1 && memcmp(r.got, want, sizeof want - 1) == 0,
        "greeting and CONNECT as sent (%zu bytes)", r.got_len);
  CHECK(st.socks5_refused + st.socks5_bad_reply + st.socks5_auth_failed + st.socks5_timeout +
            st.socks5_connect_failed ==
          0,
        "no failure counted");
}

static void test_connect_refused(void) {
  static const struct reply script[] = {R("\x05\x00"), R("\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")};
  struct run r = {.script = script, .nscript = 2};
  run(&r, &connect_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_FAILED && r.last.status == S5_SOCKS5_REFUSED && r.last.rep == 5,
        "refused: outcome %d status %d rep %u", r.last.outcome, r.last.status, r.last.rep);
  CHECK(strncmp(r.why, "proxy refused CONNECT: ", 23) == 0, "why: %s", r.why);
  CHECK(st.socks5_refused == 1, "socks5_refused %llu", (unsigned long long)st.socks5_refused);
}

static void test_auth(void) {
  snprintf(cfg.socks5.username, sizeof cfg.socks5.username, "user");
  snprintf(cfg.socks5.password, sizeof cfg.socks5.password, "secret");
  static const struct reply ok[] = {R("\x05\x02"), R("\x01\x00"),
                                    R("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")};
  struct run r = {.script = ok, .nscript = 3, .close_after_result = 1};
  run(&r, &connect_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_GRANTED, "with auth: outcome %d (%s)", r.last.outcome, r.why);
  CHECK(r.got_len > 4 && memcmp(r.got,
                                "\x05\x01\x02"
                                "\x01\x04user\x06secret",
                                3 + 13) == 0,
        "greeting offers username/password, then the credentials");
  static const struct reply bad[] = {R("\x05\x02"), R("\x01\x01")};
  struct run r2 = {.script = bad, .nscript = 2};
  run(&r2, &connect_ops, 1);
  CHECK(r2.last.outcome == S5_PROXY_FAILED && r2.last.status == S5_SOCKS5_AUTH_FAILED,
        "bad credentials: %d %d", r2.last.outcome, r2.last.status);
  CHECK(strcmp(r2.why, "proxy rejected the username/password") == 0, "why: %s", r2.why);
  CHECK(st.socks5_auth_failed == 1, "socks5_auth_failed %llu", (unsigned long long)st.socks5_auth_failed);
  cfg.socks5.username[0] = cfg.socks5.password[0] = '\0';
}

static void test_associate(void) {
  static const struct reply script[] = {R("\x05\x00"), R("\x05\x00\x00\x01\x7f\x00\x00\x01\x13\x88")};
  struct run r = {.script = script, .nscript = 2};
  run(&r, &associate_ops, 1);
  CHECK(r.connected == 1, "ops->connected called %d times", r.connected);
  CHECK(r.results == 2 && r.last.outcome == S5_PROXY_LOST, "granted, then lost: %d results, outcome %d",
        r.results, r.last.outcome);
  CHECK(strcmp(r.why, "proxy closed the control connection") == 0, "why: %s", r.why);
  CHECK(r.got_len == 3 + 10 && r.got[3] == 5 && r.got[4] == 3, "greeting, then UDP ASSOCIATE");

  static const struct reply none[] = {R("\x05\x00"), CLOSE};
  struct run r2 = {.script = none, .nscript = 2};
  run(&r2, &associate_ops, 1);
  CHECK(r2.last.outcome == S5_PROXY_NO_ASSOCIATE, "closed on ASSOCIATE: outcome %d (%s)", r2.last.outcome,
        r2.why);
  CHECK(st.socks5_refused == 1, "counted as socks5_refused (%llu)", (unsigned long long)st.socks5_refused);
}

static void test_garbage_and_eof(void) {
  static const struct reply garbage[] = {R("\x04\x00")};
  struct run r = {.script = garbage, .nscript = 1};
  run(&r, &connect_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_FAILED && r.last.status == S5_SOCKS5_BAD_VERSION, "bad version: %d %d",
        r.last.outcome, r.last.status);
  CHECK(strncmp(r.why, "SOCKS5 handshake failed: ", 25) == 0, "why: %s", r.why);
  CHECK(st.socks5_bad_reply == 1, "socks5_bad_reply %llu", (unsigned long long)st.socks5_bad_reply);

  static const struct reply eof[] = {CLOSE};
  struct run r2 = {.script = eof, .nscript = 1};
  run(&r2, &connect_ops, 1);
  CHECK(strcmp(r2.why, "proxy closed the connection during the SOCKS5 handshake") == 0, "why: %s", r2.why);
}

static void test_nobody(void) {
  /* A port nobody listens on: the one a server just had. */
  struct run tmp = {0};
  server_start(&tmp);
  uv_close((uv_handle_t *)&tmp.server, NULL);
  uv_run(L, UV_RUN_DEFAULT);
  struct run r = {0};
  run(&r, &associate_ops, 0);
  CHECK(r.last.outcome == S5_PROXY_FAILED && r.last.level == S5_LOG_WARN, "refused connection: %d level %d",
        r.last.outcome, r.last.level);
  CHECK(strncmp(r.why, "proxy connection for UDP failed: ", 33) == 0, "why: %s", r.why);
  CHECK(st.socks5_connect_failed == 1, "socks5_connect_failed %llu",
        (unsigned long long)st.socks5_connect_failed);
  CHECK(r.connected == 0, "ops->connected without a connection");
}

static void test_silent(void) {
  struct run r = {.nscript = 0}; /* accepts, reads, never answers */
  run(&r, &connect_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_FAILED && r.last.level == S5_LOG_WARN, "silent proxy: outcome %d level %d",
        r.last.outcome, r.last.level);
  CHECK(strcmp(r.why, "no answer from the proxy within connect-timeout") == 0, "why: %s", r.why);
  CHECK(st.socks5_timeout == 1, "socks5_timeout %llu", (unsigned long long)st.socks5_timeout);
}

static const struct s5_proxy_ops warm_ops = {
  .cmd = S5_PROXY_WARM, .request = owner_request, .result = owner_result, .closed = owner_closed};

/* The adopter closed, then the warm client's server: each closed once. */
static void adopted_end(struct run *r, struct run *a) {
  s5_proxy_close(&a->proxy, 0);
  if (r->conn_open) uv_close((uv_handle_t *)&r->conn, conn_closed);
  r->conn_open = 0;
  uv_close((uv_handle_t *)&r->server, NULL);
  uv_run(L, UV_RUN_DEFAULT);
  CHECK(r->closed == 1 && a->closed == 1, "ops->closed: warm %d, adopter %d", r->closed, a->closed);
}

/* A WARM client greeted (and authenticated) on r's server, then adopted by
 * a CONNECT client in a; runs until a has its result. */
static void warm_and_adopt(struct run *r, struct run *a) {
  memset(&st, 0, sizeof st);
  server_start(r);
  s5_proxy_init(&r->proxy, &w, &cfg, &warm_ops, r);
  char why[160];
  CHECK(s5_proxy_start(&r->proxy, why, sizeof why) == 0, "warm start: %s", why);
  while (r->results == 0) uv_run(L, UV_RUN_ONCE);
  CHECK(r->last.outcome == S5_PROXY_GRANTED, "warm: outcome %d (%s)", r->last.outcome, r->why);
  a->script = r->script; /* the same server: its replies go on */
  s5_proxy_init(&a->proxy, &w, &cfg, &connect_ops, a);
  CHECK(s5_proxy_adopt(&a->proxy, &r->proxy, why, sizeof why) == 0, "adopt: %s", why);
  s5_proxy_close(&r->proxy, 0); /* as the pool does: the socket stays the adopter's */
  while (a->results == 0) uv_run(L, UV_RUN_ONCE);
  adopted_end(r, a);
}

static void test_warm_adopted(void) {
  snprintf(cfg.socks5.username, sizeof cfg.socks5.username, "user");
  snprintf(cfg.socks5.password, sizeof cfg.socks5.password, "secret");
  static const struct reply script[] = {R("\x05\x02"), R("\x01\x00"),
                                        R("\x05\x00\x00\x01\x7f\x00\x00\x01\x1f\x90")};
  struct run r = {.script = script, .nscript = 3}, a = {0};
  warm_and_adopt(&r, &a);
  CHECK(a.last.outcome == S5_PROXY_GRANTED, "adopted CONNECT: outcome %d (%s)", a.last.outcome, a.why);
  static const uint8_t want[] =
    "\x05\x01\x02"
    "\x01\x04user\x06secret"
    "\x05\x01\x00\x03\x0btarget.test\x1b\x58";
  CHECK(r.got_len == sizeof want - 1 && memcmp(r.got, want, sizeof want - 1) == 0,
        "greeting and auth by the warm client, the CONNECT alone by the adopter, one connection (%zu bytes)",
        r.got_len);
  CHECK(st.socks5_refused + st.socks5_bad_reply + st.socks5_auth_failed + st.pool_retried == 0,
        "nothing counted");
  cfg.socks5.username[0] = cfg.socks5.password[0] = '\0';
}

static void test_warm_failure_not_counted(void) {
  static const struct reply bad[] = {R("\x05\xff")}; /* no acceptable method */
  struct run r = {.script = bad, .nscript = 1};
  run(&r, &warm_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_FAILED, "warm, no method: outcome %d", r.last.outcome);
  CHECK(st.socks5_auth_failed == 0, "a warm-up's failure is the pool's to count (socks5_auth_failed %llu)",
        (unsigned long long)st.socks5_auth_failed);
}

static void test_adopted_dead_retried(void) {
  /* The server closes the pooled connection when the CONNECT comes (as if
   * its idle close crossed it), then serves a fresh one. */
  static const struct reply script[] = {R("\x05\x00"), CLOSE, R("\x05\x00"),
                                        R("\x05\x00\x00\x01\x7f\x00\x00\x01\x1f\x90")};
  struct run r = {.script = script, .nscript = 4}, a = {0};
  warm_and_adopt(&r, &a);
  CHECK(a.results == 1 && a.last.outcome == S5_PROXY_GRANTED,
        "retried on a fresh connection: %d results, outcome %d (%s)", a.results, a.last.outcome, a.why);
  CHECK(st.pool_retried == 1, "pool_retried %llu", (unsigned long long)st.pool_retried);
  CHECK(st.socks5_bad_reply == 0, "the dead pooled connection is no failure (socks5_bad_reply %llu)",
        (unsigned long long)st.socks5_bad_reply);
}

/* ---------------------------------------------------------------- other upstream types */

static const struct s5_proxy_ops target_ops = {
  .cmd = S5_PROXY_CONNECT, .result = owner_result, .closed = owner_closed};
static const struct s5_proxy_ops target_warm_ops = {
  .cmd = S5_PROXY_WARM, .result = owner_result, .closed = owner_closed};

static void test_http(void) {
  cfg.socks5.type = S5_UPSTREAM_HTTP;
  snprintf(cfg.socks5.username, sizeof cfg.socks5.username, "Aladdin");
  snprintf(cfg.socks5.password, sizeof cfg.socks5.password, "open sesame");
  static const struct reply ok[] = {
    R("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 Connection established\r\n\r\n"
      "early")};
  struct run r = {.script = ok, .nscript = 1, .close_after_result = 1};
  run(&r, &target_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_GRANTED, "HTTP CONNECT: outcome %d (%s)", r.last.outcome, r.why);
  CHECK(r.proxy.in_len == 5 && memcmp(r.proxy.in, "early", 5) == 0, "the tunnel's first bytes kept (%u)",
        r.proxy.in_len);
  static const char want[] =
    "CONNECT target.test:7000 HTTP/1.1\r\nHost: target.test:7000\r\n"
    "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n";
  CHECK(r.got_len == sizeof want - 1 && memcmp(r.got, want, sizeof want - 1) == 0,
        "the CONNECT as sent: %.*s", (int)r.got_len, r.got);

  static const struct reply auth[] = {
    R("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\n"
      "Content-Length: 4\r\n\r\nbody")};
  struct run r2 = {.script = auth, .nscript = 1};
  run(&r2, &target_ops, 1);
  CHECK(r2.last.outcome == S5_PROXY_FAILED && r2.last.status == S5_SOCKS5_AUTH_FAILED &&
          r2.last.level == S5_LOG_WARN,
        "407: outcome %d status %d level %d", r2.last.outcome, r2.last.status, r2.last.level);
  CHECK(
    strcmp(r2.why,
           "proxy answered CONNECT with \"HTTP/1.1 407 Proxy Authentication Required\" (check username and "
           "password)") == 0,
    "why: %s", r2.why);
  CHECK(st.socks5_auth_failed == 1, "socks5_auth_failed %llu", (unsigned long long)st.socks5_auth_failed);

  static const struct reply cut[] = {R("HTTP/1.1 200 OK\r\nVia: x\r\n")};
  struct run r3 = {.script = cut, .nscript = 1, .close_after_script = 1};
  run(&r3, &target_ops, 1);
  CHECK(strcmp(r3.why, "proxy closed the connection during the HTTP CONNECT response") == 0, "why: %s",
        r3.why);
  CHECK(st.socks5_bad_reply == 1, "socks5_bad_reply %llu", (unsigned long long)st.socks5_bad_reply);
  cfg.socks5.username[0] = cfg.socks5.password[0] = '\0';
  cfg.socks5.type = S5_UPSTREAM_SOCKS5;
}

/* An HTTP upstream's pooled connection is the bare TCP connection: the
 * WARM client is ready once connected, the adopter sends the CONNECT. */
static void test_http_warm(void) {
  cfg.socks5.type = S5_UPSTREAM_HTTP;
  static const struct reply script[] = {R("HTTP/1.0 200 OK\r\n\r\n")};
  struct run r = {.script = script, .nscript = 1}, a = {0};
  memset(&st, 0, sizeof st);
  server_start(&r);
  s5_proxy_init(&r.proxy, &w, &cfg, &target_warm_ops, &r);
  s5_proxy_use(&r.proxy, &cfg.socks5, owner_target());
  char why[160];
  CHECK(s5_proxy_start(&r.proxy, why, sizeof why) == 0, "warm start: %s", why);
  while (r.results == 0) uv_run(L, UV_RUN_ONCE);
  CHECK(r.last.outcome == S5_PROXY_GRANTED && r.got_len == 0, "warm HTTP: ready with nothing sent (%zu)",
        r.got_len);
  s5_proxy_init(&a.proxy, &w, &cfg, &target_ops, &a);
  s5_proxy_use(&a.proxy, &cfg.socks5, owner_target());
  CHECK(s5_proxy_adopt(&a.proxy, &r.proxy, why, sizeof why) == 0, "adopt: %s", why);
  s5_proxy_close(&r.proxy, 0);
  while (a.results == 0) uv_run(L, UV_RUN_ONCE);
  CHECK(a.last.outcome == S5_PROXY_GRANTED, "adopted HTTP CONNECT: %d (%s)", a.last.outcome, a.why);
  CHECK(r.got_len > 8 && memcmp(r.got, "CONNECT ", 8) == 0, "the CONNECT on the pooled connection");
  s5_proxy_close(&a.proxy, 0);
  if (r.conn_open) uv_close((uv_handle_t *)&r.conn, conn_closed);
  r.conn_open = 0;
  uv_close((uv_handle_t *)&r.server, NULL);
  uv_run(L, UV_RUN_DEFAULT);
  CHECK(r.closed == 1 && a.closed == 1, "ops->closed: warm %d, adopter %d", r.closed, a.closed);
  cfg.socks5.type = S5_UPSTREAM_SOCKS5;
}

static void test_socks4(void) {
  cfg.socks5.type = S5_UPSTREAM_SOCKS4;
  snprintf(cfg.socks5.username, sizeof cfg.socks5.username, "id");
  static const struct reply ok[] = {R("\x00\x5a\x00\x00\x00\x00\x00\x00")};
  struct run r = {.script = ok, .nscript = 1, .close_after_result = 1};
  run(&r, &target_ops, 1);
  CHECK(r.last.outcome == S5_PROXY_GRANTED, "SOCKS4a CONNECT: %d (%s)", r.last.outcome, r.why);
  CHECK(
    r.got_len == 8 + 3 + 12 && memcmp(r.got, "\x04\x01\x1b\x58\x00\x00\x00\x01id\0target.test\0", 23) == 0,
    "SOCKS4a request as sent (%zu)", r.got_len);
  static const struct reply no[] = {R("\x00\x5b\x00\x00\x00\x00\x00\x00")};
  struct run r2 = {.script = no, .nscript = 1};
  run(&r2, &target_ops, 1);
  CHECK(r2.last.status == S5_SOCKS5_REFUSED && strcmp(r2.why,
                                                      "proxy refused CONNECT: request rejected or failed "
                                                      "(SOCKS4 91)") == 0,
        "91: %s", r2.why);
  /* IPv6: refused before any connection, saying why. */
  target_v6 = 1;
  struct run r3 = {0};
  s5_proxy_init(&r3.proxy, &w, &cfg, &target_ops, &r3);
  s5_proxy_use(&r3.proxy, &cfg.socks5, owner_target());
  char why[160] = "";
  CHECK(s5_proxy_start(&r3.proxy, why, sizeof why) < 0 &&
          strstr(why, "SOCKS4 upstream cannot carry an IPv6") != NULL,
        "IPv6 to SOCKS4: %s", why);
  s5_proxy_close(&r3.proxy, 0);
  uv_run(L, UV_RUN_DEFAULT);
  CHECK(r3.closed == 1, "closed once");
  target_v6 = 0;
  cfg.socks5.username[0] = '\0';
  cfg.socks5.type = S5_UPSTREAM_SOCKS5;
}

/* A Shadowsocks upstream's pooled connection (type = shadowsocks): the
 * WARM client is ready once connected, with nothing sent; the adopter is
 * granted on the loop's next turn, never inside s5_proxy_adopt (a
 * session's SYN is still lwIP's then), and its target goes out as the
 * first chunk behind this connection's own salt. One whose server hung up
 * meanwhile is not used: a fresh connection instead (pool_retried). */
static void ss_warm(struct run *r) {
  char why[160];
  server_start(r);
  s5_proxy_init(&r->proxy, &w, &cfg, &target_warm_ops, r);
  s5_proxy_use(&r->proxy, &cfg.socks5, owner_target());
  CHECK(s5_proxy_start(&r->proxy, why, sizeof why) == 0, "warm start: %s", why);
  while (r->results == 0) uv_run(L, UV_RUN_ONCE);
  CHECK(r->last.outcome == S5_PROXY_GRANTED, "warm Shadowsocks: %d (%s)", r->last.outcome, r->why);
  for (int i = 0; i < 20; i++) uv_run(L, UV_RUN_NOWAIT);
  CHECK(r->conn_open && r->got_len == 0, "warm Shadowsocks: connected, nothing sent (%zu bytes)", r->got_len);
}

/* a adopts r's connection; runs until the server got the salt and the
 * first chunk (16 + 2 + 16 + the target's 15 + 16 bytes, aes-128-gcm). */
static void ss_adopt(struct run *r, struct run *a) {
  char why[160];
  s5_proxy_init(&a->proxy, &w, &cfg, &target_ops, a);
  s5_proxy_use(&a->proxy, &cfg.socks5, owner_target());
  CHECK(s5_proxy_adopt(&a->proxy, &r->proxy, why, sizeof why) == 0, "adopt: %s", why);
  CHECK(a->results == 0, "granted inside s5_proxy_adopt");
  s5_proxy_close(&r->proxy, 0); /* as the pool does */
  while (a->results == 0) uv_run(L, UV_RUN_ONCE);
  CHECK(a->last.outcome == S5_PROXY_GRANTED, "adopted Shadowsocks: %d (%s)", a->last.outcome, a->why);
  for (int i = 0; i < 400 && r->got_len < 65; i++) { /* at most 2 s: nothing may come (a dead one) */
    uv_run(L, UV_RUN_NOWAIT);
    usleep(5000);
  }
  CHECK(r->got_len == 65, "the salt and the target's chunk on the pooled connection (%zu bytes)", r->got_len);
}

static void bulk_ready(void *arg, int readable) { (void)arg, (void)readable; }

/* The bulk phase (s5_pump_direct, as the relay takes it over): 32,768
 * bytes written in pieces of 8 KiB reach the server as two whole chunks
 * and one of the rest (256 bytes); not as a whole chunk and a small one
 * per 16 KiB the pump holds, each costing the server one more open. */
static void ss_bulk(struct run *r, struct run *a) {
  static uint8_t data[32768], plain[sizeof data + 64];
  struct s5_pump *pu = a->proxy.pump;
  uv_os_fd_t fd;
  CHECK(uv_fileno((uv_handle_t *)&a->proxy.sock, &fd) == 0, "the pump's plain end");
  uv_read_stop((uv_stream_t *)&a->proxy.sock);
  CHECK(shutdown(fd, SHUT_WR) == 0, "the plain end's half-close");
  CHECK(s5_pump_direct(pu, bulk_ready, NULL) == 0, "direct");
  for (int i = 0; i < 200 && !pu->pair_eof; i++) uv_run(L, UV_RUN_ONCE);
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7);
  size_t done = 0, want = r->got_len + sizeof data + 3 * (2 + 2 * S5_SS_TAG);
  for (int i = 0; i < 4000 && r->got_len < want; i++) {
    uv_buf_t b[4];
    int n = 0;
    for (size_t o = done; o < sizeof data && n < 4; n++, o += 8192 - o % 8192)
      b[n] = uv_buf_init((char *)data + o, (unsigned)(8192 - o % 8192));
    long t = n > 0 ? s5_pump_writev(pu, b, n) : 0;
    CHECK(t >= 0, "s5_pump_writev");
    done += (size_t)t;
    uv_run(L, UV_RUN_NOWAIT);
  }
  CHECK(done == sizeof data && r->got_len == want, "the server got %zu bytes, %zu expected", r->got_len,
        want);
  static struct s5_ss_dec d;
  uint8_t key[S5_SS_KEY_MAX];
  s5_ss_password_key(S5_SS_AES_128_GCM, cfg.socks5.password, key);
  s5_ss_dec_init(&d, S5_SS_AES_128_GCM, key);
  memcpy(d.in, r->got, r->got_len);
  d.in_len = r->got_len;
  size_t sizes[8], k = 0, got = 0, n;
  while (k < 8 && s5_ss_decode(&d, plain + got, S5_SS_SEAL_MAX, &n) == S5_SS_OK && n > 0) /* a chunk a call */
    sizes[k++] = n, got += n;
  s5_ss_dec_free(&d);
  CHECK(k == 4 && sizes[1] == S5_SS_SEAL_MAX && sizes[2] == S5_SS_SEAL_MAX && sizes[3] == 256,
        "chunks: %zu (%zu, %zu, %zu, %zu)", k, sizes[0], k > 1 ? sizes[1] : 0, k > 2 ? sizes[2] : 0,
        k > 3 ? sizes[3] : 0);
  CHECK(got == sizes[0] + sizeof data && memcmp(plain + sizes[0], data, sizeof data) == 0,
        "the bytes, in order");
}

static void test_ss_warm(void) {
  cfg.socks5.type = S5_UPSTREAM_SHADOWSOCKS;
  cfg.socks5.ss_method = S5_SS_AES_128_GCM;
  snprintf(cfg.socks5.password, sizeof cfg.socks5.password, "pool-test");
  memset(&st, 0, sizeof st);
  struct run r1 = {0}, a1 = {0}, r2 = {0}, a2 = {0};
  ss_warm(&r1);
  ss_adopt(&r1, &a1);
  ss_bulk(&r1, &a1);
  adopted_end(&r1, &a1);
  ss_warm(&r2);
  ss_adopt(&r2, &a2);
  adopted_end(&r2, &a2);
  CHECK(memcmp(r1.got, r2.got, 16) != 0, "two pooled connections, one salt");
  CHECK(st.pool_retried == 0, "pool_retried %llu", (unsigned long long)st.pool_retried);

  /* The server closes the warm connection; the pump passes its end on. */
  struct run r3 = {0}, a3 = {0};
  ss_warm(&r3);
  uv_read_stop((uv_stream_t *)&r3.proxy.sock); /* the pool would drop it at its EOF: adopted all the same */
  uv_close((uv_handle_t *)&r3.conn, conn_closed);
  r3.conn_open = 0;
  uv_os_fd_t fd;
  char b;
  CHECK(uv_fileno((uv_handle_t *)&r3.proxy.sock, &fd) == 0, "the warm client's socket");
  for (int i = 0; i < 200 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0; i++) uv_run(L, UV_RUN_ONCE);
  CHECK(recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0, "the server's end came through the pump");
  ss_adopt(&r3, &a3); /* the fresh connection: the server's second */
  CHECK(st.pool_retried == 1 && a3.results == 1,
        "a dead pooled connection retried fresh, unseen: "
        "pool_retried %llu, %d results",
        (unsigned long long)st.pool_retried, a3.results);
  adopted_end(&r3, &a3);
  cfg.socks5.password[0] = '\0';
  cfg.socks5.type = S5_UPSTREAM_SOCKS5;
}

int main(void) {
  uv_loop_init(L);
  w.stats = &st;
  cfg.session.connect_timeout = 1;
  test_connect_granted();
  test_connect_refused();
  test_auth();
  test_associate();
  test_garbage_and_eof();
  test_nobody();
  test_silent();
  test_warm_adopted();
  test_warm_failure_not_counted();
  test_adopted_dead_retried();
  test_http();
  test_http_warm();
  test_socks4();
  test_ss_warm();
  s5_pump_end();
  CHECK(uv_loop_close(L) == 0, "handles left open on the loop");
  return check_done();
}
