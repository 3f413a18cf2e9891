/* SPDX-License-Identifier: MIT */
/* The proxy client (proxy.h): one exchange with an upstream, for a TCP session's CONNECT or a UDP
 * association's ASSOCIATE: the socket (SO_MARK; a pump's: proxy_tls.c), the connect-timeout, replies,
 * failure texts, counters and closing are here once; the request (ops) and log words differ. */
#include "socks5/proxy.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/assert.h"
#include "ini/config.h"
#include "ctx/wctx.h"
#include "socks5/dial.h"

/* Each request's words in log lines: the connection, exchange, request, what it sets up. */
struct proxy_words {
  const char *conn, *hs, *req, *what;
};

static const struct proxy_words words[] = {
  [S5_PROXY_CONNECT] = {"proxy connection", "SOCKS5 handshake", "CONNECT", "connection"},
  [S5_PROXY_ASSOCIATE] = {"proxy connection for UDP", "SOCKS5 handshake for UDP", "UDP ASSOCIATE",
                          "UDP association"},
  [S5_PROXY_WARM] = {"pooled proxy connection", "SOCKS5 greeting", "greeting", "pooled connection"},
};

static const struct proxy_words *proxy_words(const struct s5_proxy *p) { return &words[p->ops->cmd]; }

static int with_auth(const struct s5_proxy *p) { return p->up->username[0] != '\0'; }

/* socks5_* count sessions' and associations' failures; the pool counts its own. */
#define PROXY_COUNT(p, field) \
  ((p)->ops->cmd != S5_PROXY_WARM ? S5_STAT_ADD((p)->w->stats, field, 1) : (void)0)

/* The client a handle or request is a member of (sock.data is the relay's). */
#define PROXY_OF(ptr, member) ((struct s5_proxy *)((char *)(ptr)-offsetof(struct s5_proxy, member)))

static int proxy_retry_fresh(struct s5_proxy *p);
static void proxy_connected(uv_connect_t *req, int status);

/* ---------------------------------------------------------------- outcomes */

/* No more timeouts or replies; the owner decides when to close. */
static void proxy_stop(struct s5_proxy *p) {
  p->step = S5_PROXY_ENDED;
  uv_timer_stop(&p->timer);
  if (p->sock_open) uv_read_stop((uv_stream_t *)&p->sock);
}

static void proxy_report(struct s5_proxy *p, enum s5_proxy_outcome outcome, const char *why) {
  struct s5_proxy_result r = {.outcome = outcome, .level = S5_LOG_INFO, .why = why};
  p->ops->result(p->owner, &r);
}

/* The caller counted the failure already. */
static void proxy_fail(struct s5_proxy *p, enum s5_log_level level, int status, uint8_t rep,
                       const char *why) {
  struct s5_proxy_result r = {
    .outcome = S5_PROXY_FAILED, .level = level, .why = why, .status = status, .rep = rep, .step = p->step};
  r.http = p->requested ? p->http.status : 0; /* a response of this connection's request */
  r.cause = p->expired
              ? S5_UP_TIMEOUT
              : s5_upstream_cause(p->up, status, rep, r.http, p->step == S5_PROXY_CONNECTING, &r.every);
  proxy_stop(p);
  p->ops->result(p->owner, &r);
}

/* The exchange failed on what the server said (or did not let us say). */
static void proxy_rejected(struct s5_proxy *p, int status, uint8_t rep) {
  char why[200];
  if (status == S5_SOCKS5_REFUSED) PROXY_COUNT(p, socks5_refused);
  else if (status == S5_SOCKS5_AUTH_FAILED || status == S5_SOCKS5_NO_METHOD)
    PROXY_COUNT(p, socks5_auth_failed);
  else PROXY_COUNT(p, socks5_bad_reply);
  s5_upstream_why(p->up, proxy_words(p)->req, proxy_words(p)->hs, status, rep, &p->http, why, sizeof why);
  if (p->ops->cmd == S5_PROXY_ASSOCIATE && status == S5_SOCKS5_REFUSED && rep == 7) { /* not supported */
    proxy_stop(p); /* microsocks's answer to UDP ASSOCIATE: the udp = off hint, once */
    proxy_report(p, S5_PROXY_NO_ASSOCIATE, why);
  } else /* a wrong login, or an HTTP proxy's policy (407, 403): warnings */
    proxy_fail(p,
               (p->up->type == S5_UPSTREAM_HTTP && p->http.status != 0) || status == S5_SOCKS5_AUTH_FAILED
                 ? S5_LOG_WARN
                 : S5_LOG_INFO,
               status, rep, why);
}

static void proxy_granted(struct s5_proxy *p, const struct s5_socks5_addr *bnd) {
  /* granted only by the request's reply, or (warm-up) the greeting's end */
  S5_ASSERT(p->step == S5_PROXY_REPLY ||
            (p->ops->cmd == S5_PROXY_WARM && (p->step == S5_PROXY_METHOD || p->step == S5_PROXY_AUTH)));
  p->step = S5_PROXY_DONE;
  uv_timer_stop(&p->timer);
  if (p->ops->cmd == S5_PROXY_CONNECT)
    uv_read_stop((uv_stream_t *)&p->sock); /* the relay reads once the client is connected too */
  else p->in_len = 0;                      /* from now on a read sink */
  struct s5_proxy_result r = {.outcome = S5_PROXY_GRANTED, .level = S5_LOG_INFO, .bnd = *bnd};
  p->ops->result(p->owner, &r);
}

/* ---------------------------------------------------------------- messages out */

#define proxy_send s5_proxy_send

static int proxy_put_auth(const struct s5_proxy *p, uint8_t *msg, size_t cap) {
  return s5_socks5_write_auth(msg, cap, p->up->username, p->up->password);
}

/* The request is on its way: the owner's data may follow it (optimistic). */
static int proxy_requested(struct s5_proxy *p, int sent) {
  if (sent < 0) return sent;
  p->requested = 1;
  s5_http_reply_init(&p->http);
  if (p->ops->requested != NULL) p->ops->requested(p->owner);
  return 0;
}

/* The request: the owner's bytes, or its CONNECT's destination written for the upstream's type. */
static int proxy_request(struct s5_proxy *p, uint8_t *msg, size_t cap, const char **why) {
  *why = "it cannot be written";
  /* UDP's target is for direct alone; its request is always its own */
  if (p->target == NULL || p->ops->cmd == S5_PROXY_ASSOCIATE) return p->ops->request(p->owner, msg, cap);
  return s5_upstream_write_connect(p->up, p->target, msg, cap, why);
}

/* The request, when the destination can be written: its length, or < 0 with why. */
static int proxy_request_text(struct s5_proxy *p, uint8_t *msg, size_t cap, char *why, size_t wcap) {
  const char *cannot;
  int len = proxy_request(p, msg, cap, &cannot);
  if (len < 0) snprintf(why, wcap, "no %s to upstream %s: %s", proxy_words(p)->req, p->up->name, cannot);
  return len;
}

static int proxy_send_request(struct s5_proxy *p) {
  uint8_t msg[S5_HTTP_REQUEST_MAX];
  const char *why;
  return proxy_requested(p, proxy_send(p, msg, proxy_request(p, msg, sizeof msg, &why)));
}

/* The first flight: the greeting, and with [socks5] pipeline the auth and the request too, saving a
 * round trip or two with servers that read requests as a stream (most do; RFC 1928 does not promise it). */
static int proxy_send_first(struct s5_proxy *p) {
  uint8_t msg[3 * S5_SOCKS5_MAX_MSG];
  int len = s5_socks5_write_greeting(msg, sizeof msg, with_auth(p));
  if (len < 0 || !p->pipeline) return proxy_send(p, msg, len);
  int n = with_auth(p) ? proxy_put_auth(p, msg + len, sizeof msg - (size_t)len) : 0;
  if (n < 0) return n;
  len += n;
  const char *why;
  n = proxy_request(p, msg + len, sizeof msg - (size_t)len, &why);
  if (n < 0) return n;
  return proxy_requested(p, proxy_send(p, msg, len + n));
}

/* ---------------------------------------------------------------- replies in */

/* One reply of the current step at the start of in[]: its length, or a
 * negative s5_socks5_status. A refused CONNECT is final once REP is known;
 * an ASSOCIATE reply is read whole, for its bound address. */
static int proxy_parse_one(struct s5_proxy *p, uint8_t *rep, struct s5_socks5_addr *bnd) {
  if (p->step == S5_PROXY_METHOD) return s5_socks5_parse_method(p->in, p->in_len, with_auth(p));
  if (p->step == S5_PROXY_AUTH) return s5_socks5_parse_auth(p->in, p->in_len);
  return s5_upstream_parse_reply(p->up, &p->http, p->in, &p->in_len, rep,
                                 p->ops->cmd == S5_PROXY_CONNECT ? NULL : bnd);
}

/* A reply came: on to the next step, sending what it lets go. Returns 0, or -1 when it is over. */
static int proxy_next(struct s5_proxy *p, const struct s5_socks5_addr *bnd) {
  int sent = 0;
  if (p->step == S5_PROXY_METHOD && with_auth(p)) {
    p->step = S5_PROXY_AUTH;
    uint8_t msg[S5_SOCKS5_MAX_MSG];
    if (!p->pipeline) sent = proxy_send(p, msg, proxy_put_auth(p, msg, sizeof msg));
  } else if ((p->step == S5_PROXY_METHOD || p->step == S5_PROXY_AUTH) && p->ops->cmd == S5_PROXY_WARM) {
    proxy_granted(p, bnd); /* greeted and authenticated: ready for a session's CONNECT */
    return -1;
  } else if (p->step == S5_PROXY_METHOD || p->step == S5_PROXY_AUTH) {
    p->step = S5_PROXY_REPLY;
    if (!p->pipeline) sent = proxy_send_request(p);
  } else {
    proxy_granted(p, bnd);
    return -1;
  }
  if (sent < 0) {
    proxy_rejected(p, S5_SOCKS5_BAD_MESSAGE, 0);
    return -1;
  }
  return 0;
}

/* Parses as many complete replies as in[] holds. */
static void proxy_parse(struct s5_proxy *p) {
  while (p->step >= S5_PROXY_METHOD && p->step <= S5_PROXY_REPLY) {
    uint8_t rep = 0;
    struct s5_socks5_addr bnd;
    memset(&bnd, 0, sizeof bnd);
    int r = proxy_parse_one(p, &rep, &bnd);
    if (r == S5_SOCKS5_NEED_MORE && p->in_len < sizeof p->in) return;
    if (r == S5_SOCKS5_NEED_MORE) r = S5_SOCKS5_BAD_MESSAGE; /* no reply is that long */
    if (r < 0) {
      proxy_rejected(p, r, rep);
      return;
    }
    S5_ASSERT((size_t)r <= p->in_len); /* a reply is no longer than what came */
    memmove(p->in, p->in + r, p->in_len - (size_t)r);
    p->in_len = (uint16_t)(p->in_len - r);
    if (proxy_next(p, &bnd) < 0) return;
  }
}

/* The connection ended or failed: during the exchange a failure; after ASSOCIATE the association's end. */
static void proxy_read_failed(struct s5_proxy *p, int err) {
  int eof = err == UV_EOF;
  if (proxy_retry_fresh(p)) return;
  if (p->step == S5_PROXY_DONE) {
    proxy_stop(p);
    proxy_report(p, S5_PROXY_LOST, eof ? "proxy closed the control connection" : "control connection failed");
    return;
  }
  if (eof && p->step == S5_PROXY_REPLY && p->ops->cmd == S5_PROXY_ASSOCIATE) {
    /* It took the greeting (and credentials) and hung up on the request. */
    proxy_stop(p);
    PROXY_COUNT(p, socks5_refused);
    proxy_report(p, S5_PROXY_NO_ASSOCIATE,
                 "the proxy closed the connection on UDP ASSOCIATE (no UDP support)");
    return;
  }
  PROXY_COUNT(p, socks5_bad_reply);
  int http = p->up->type == S5_UPSTREAM_HTTP;
  char why[160]; /* with optimistic data sent, never silence about the client's bytes */
  snprintf(why, sizeof why, "proxy closed the connection during the %s %s%s", s5_upstream_proto(p->up),
           http ? "response" : "handshake",
           p->data_sent ? ", after the client's first bytes (optimistic): reset" : "");
  proxy_fail(p, http || p->data_sent ? S5_LOG_WARN : S5_LOG_INFO, 0, 0,
             eof || p->data_sent ? why : uv_strerror(err));
}

static void proxy_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  struct s5_proxy *p = PROXY_OF(handle, sock);
  if (p->step == S5_PROXY_DONE) {
    *buf = uv_buf_init((char *)p->in, sizeof p->in); /* read and ignored */
    return;
  }
  *buf = uv_buf_init((char *)p->in + p->in_len, sizeof p->in - p->in_len);
}

static void proxy_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  struct s5_proxy *p = PROXY_OF(stream, sock);
  if (nread == 0 || p->step == S5_PROXY_ENDED) return;
  if (nread < 0) {
    proxy_read_failed(p, (int)nread);
    return;
  }
  if (p->step == S5_PROXY_DONE) return; /* RFC 1928 defines nothing here: ignored */
  if (!p->heard) s5_proxy_clock_heard(p);
  S5_ASSERT((size_t)nread <= sizeof p->in - p->in_len); /* proxy_alloc's room */
  p->in_len = (uint16_t)(p->in_len + nread);
  proxy_parse(p);
}

/* ---------------------------------------------------------------- connecting */

/* p->sock initialised, its socket opened (AF_UNSPEC: adopted later). */
static int proxy_sock_init(struct s5_proxy *p, int family, char *why, size_t cap) {
  int r = uv_tcp_init_ex(&p->w->loop, &p->sock, (unsigned)family);
  if (r < 0) {
    snprintf(why, cap, "socket to %s: %s", p->up->name, uv_strerror(r));
    return r;
  }
  p->sock.data = p->owner;
  S5_ASSERT(!p->sock_open && p->handles_open == 1); /* started once, after init: the timer only */
  p->sock_open = 1;
  p->handles_open++;
  return 0;
}

/* A new connection to addr (the upstream's, or direct's destination):
 * s5_proxy_up follows. Returns 0 or < 0 with why. */
static int proxy_connect(struct s5_proxy *p, const struct sockaddr_storage *addr, char *why, size_t cap) {
  p->step = S5_PROXY_CONNECTING;
  int r = proxy_sock_init(p, s5_upstream_pumped(p->up) ? AF_UNSPEC : addr->ss_family, why, cap);
  if (r == 0 && s5_upstream_pumped(p->up)) return s5_proxy_pump(p, why, cap); /* s5_proxy_up follows */
  if (r == 0) r = s5_dial_prepare(&p->sock, p->up->mark, p->up->name, why, cap);
  if (r < 0) return r;
  r = uv_tcp_connect(&p->connect_req, &p->sock, (const struct sockaddr *)addr, proxy_connected);
  if (r < 0) snprintf(why, cap, "connecting to %s: %s", p->up->name, uv_strerror(r));
  return r;
}

static void proxy_connected(uv_connect_t *req, int status) {
  s5_proxy_up(PROXY_OF(req, connect_req), status, NULL);
}

void s5_proxy_up(struct s5_proxy *p, int status, const char *tls_why) {
  int direct = p->up->type == S5_UPSTREAM_DIRECT;
  if (status == UV_ECANCELED || p->step != S5_PROXY_CONNECTING) return;
  if (status < 0) {
    PROXY_COUNT(p, socks5_connect_failed);
    char why[160];
    snprintf(why, sizeof why, "%s failed: %s", direct ? "direct connection" : proxy_words(p)->conn,
             uv_strerror(status));
    proxy_fail(p, direct ? S5_LOG_INFO : S5_LOG_WARN, direct ? S5_SOCKS5_REFUSED : 0, 0,
               tls_why ? tls_why : why);
    return;
  }
  if (p->ops->connected != NULL && p->ops->connected(p->owner) != 0) return;
  if (direct) { /* [rules] direct: connected is granted */
    p->step = S5_PROXY_REPLY;
    proxy_granted(p, &(struct s5_socks5_addr){0});
    return;
  }
  if (p->up->type != S5_UPSTREAM_SOCKS5) { /* no greeting: the request, or (warm) ready as it is */
    p->step = S5_PROXY_REPLY;
    int r = uv_read_start((uv_stream_t *)&p->sock, proxy_alloc, proxy_read);
    if (r == 0 && p->ops->cmd != S5_PROXY_WARM && proxy_send_request(p) < 0)
      proxy_fail(p, S5_LOG_INFO, 0, 0, "sending the request failed");
    else if (r == 0 && (p->ops->cmd == S5_PROXY_WARM || p->up->type == S5_UPSTREAM_SHADOWSOCKS))
      proxy_granted(p, &(struct s5_socks5_addr){0}); /* shadowsocks: no reply comes */
    if (r < 0) proxy_fail(p, S5_LOG_INFO, 0, 0, uv_strerror(r));
    return;
  }
  p->step = S5_PROXY_METHOD;
  int r = proxy_send_first(p);
  if (r == 0) r = uv_read_start((uv_stream_t *)&p->sock, proxy_alloc, proxy_read);
  if (r < 0) proxy_fail(p, S5_LOG_INFO, 0, 0, "sending SOCKS5 greeting failed");
}

/* [rules] direct for UDP: no connection; the destination is the relay,
 * connected by ops->connected, then granted with it as BND. */
static void proxy_direct_datagrams(struct s5_proxy *p, const struct sockaddr_storage *to) {
  if (p->ops->connected != NULL && p->ops->connected(p->owner) != 0) return;
  struct s5_socks5_addr bnd;
  int r = s5_socks5_addr_of((const struct sockaddr *)to, &bnd);
  S5_ASSERT(r == 0); /* the resolver's AF_INET or AF_INET6 */
  p->step = S5_PROXY_REPLY;
  proxy_granted(p, &bnd);
}

/* A failure while connecting (direct: the resolution), counted. */
static void proxy_connect_failed(struct s5_proxy *p, const char *why) {
  PROXY_COUNT(p, socks5_connect_failed);
  proxy_fail(p, S5_LOG_INFO, S5_SOCKS5_REFUSED, 0, why);
}

/* [rules] direct's destination resolved from name (or why not); never into our own device. */
static void proxy_resolved(void *arg, const struct sockaddr_storage *to, const char *name) {
  struct s5_proxy *p = arg;
  char why[400];
  p->lookup = NULL;
  if (to == NULL) proxy_connect_failed(p, name);
  else if (p->ops->cmd == S5_PROXY_ASSOCIATE) proxy_direct_datagrams(p, to);
  else if (s5_dial_loops(p->cfg, to, name, why, sizeof why)) {
    PROXY_COUNT(p, drop_proxy_loop);
    proxy_fail(p, S5_LOG_WARN, S5_SOCKS5_REFUSED, 0, why);
  } else if (proxy_connect(p, to, why, sizeof why) < 0) proxy_connect_failed(p, why);
}

/* [rules] direct: TCP to an address connects now (unless it loops); a
 * mapped name, and UDP always (its grant never inside s5_proxy_start),
 * through the resolver first. */
static int proxy_direct(struct s5_proxy *p, char *why, size_t cap) {
  const struct s5_target *t = p->target;
  if (t == NULL) {
    snprintf(why, cap, "direct: no destination");
    return UV_EINVAL;
  }
  int udp = p->ops->cmd == S5_PROXY_ASSOCIATE;
  if (t->name[0] == '\0' && !udp)
    return s5_dial_loops(p->cfg, &t->addr, NULL, why, cap) ? UV_ELOOP : proxy_connect(p, &t->addr, why, cap);
  return s5_dial_resolve(&p->w->loop, p->cfg, &t->addr, t->name, udp, proxy_resolved, p, &p->lookup, why,
                         cap);
}

void s5_proxy_expired(uv_timer_t *timer) {
  struct s5_proxy *p = PROXY_OF(timer, timer);
  PROXY_COUNT(p, socks5_timeout);
  p->expired = 1;
  char why[160];
  int conn = p->step == S5_PROXY_CONNECTING || !p->heard; /* the proxy itself never answered: a warning */
  if (conn && p->step != S5_PROXY_CONNECTING)
    snprintf(why, sizeof why, "no answer from the proxy within connect-timeout");
  else
    snprintf(why, sizeof why, "%s not established within connect-timeout",
             conn ? proxy_words(p)->conn : proxy_words(p)->what);
  proxy_fail(p, conn ? S5_LOG_WARN : S5_LOG_INFO, 0, 0, why);
}

int s5_proxy_start(struct s5_proxy *p, char *why, size_t cap) {
  uint8_t msg[S5_HTTP_REQUEST_MAX]; /* can it be written: a mapped name may have gone */
  if (p->target != NULL && p->ops->cmd != S5_PROXY_ASSOCIATE &&
      s5_proxy_cleared(proxy_request_text(p, msg, sizeof msg, why, cap), msg, sizeof msg) < 0)
    return UV_EINVAL;
  s5_proxy_clock(p, p->cfg->session.connect_timeout * 1000ull, 0);
  if (p->up->type == S5_UPSTREAM_DIRECT) return proxy_direct(p, why, cap);
  if (p->up->type == S5_UPSTREAM_SHADOWSOCKS && p->ops->cmd == S5_PROXY_ASSOCIATE) /* UDP: no connection */
    return s5_dial_resolve(&p->w->loop, p->cfg, &p->up->addr, "", 1, proxy_resolved, p, &p->lookup, why, cap);
  return proxy_connect(p, &p->up->addr, why, cap);
}

/* ---------------------------------------------------------------- pooled */

/* The socket the retry closed is gone: a fresh connection in its place,
 * unless the owner closed the client meanwhile. */
static void proxy_sock_reopen(uv_handle_t *handle) {
  struct s5_proxy *p = PROXY_OF(handle, sock);
  p->sock_open = p->retrying = 0;
  if (p->closing) {
    s5_proxy_release(p);
    return;
  }
  p->handles_open--;
  char why[160];
  if (proxy_connect(p, &p->up->addr, why, sizeof why) == 0) return;
  PROXY_COUNT(p, socks5_connect_failed);
  proxy_fail(p, S5_LOG_WARN, 0, 0, why);
}

/* A pooled connection that ended before its CONNECT reply (closed idle, its EOF
 * crossing our request): retried once, fresh, unseen. Returns 1 when it was. */
static int proxy_retry_fresh(struct s5_proxy *p) {
  if (!p->pooled || p->step != S5_PROXY_REPLY) return 0;
  S5_STAT_ADD(p->w->stats, pool_retried, 1);
  return s5_proxy_retry(p, p->up, 0) == 0;
}

int s5_proxy_adopt(struct s5_proxy *p, struct s5_proxy *warm, char *why, size_t cap) {
  uint8_t msg[S5_HTTP_REQUEST_MAX];
  int len = proxy_request_text(p, msg, sizeof msg, why, cap);
  if (len < 0) return len;
  /* a pooled SOCKS5 connection was greeted: the proxy has answered */
  s5_proxy_clock(p, p->cfg->session.connect_timeout * 1000ull, p->up->type == S5_UPSTREAM_SOCKS5);
  int r = proxy_sock_init(p, AF_UNSPEC, why, cap);
  if (r == 0) r = s5_dial_adopt(&p->sock, &warm->sock, why, cap);
  if (r < 0) return s5_proxy_cleared(r, msg, sizeof msg);
  p->pump = warm->pump, warm->pump = NULL;    /* a pooled connection's pump (TLS, Shadowsocks) is ours */
  if (p->up->type == S5_UPSTREAM_SHADOWSOCKS) /* no reply: up as a fresh one is */
    return s5_proxy_cleared(s5_proxy_pump_adopted(p), msg, sizeof msg);
  p->pooled = 1;
  p->step = S5_PROXY_REPLY;
  if (uv_read_start((uv_stream_t *)&p->sock, proxy_alloc, proxy_read) < 0 ||
      proxy_requested(p, proxy_send(p, msg, len)) < 0)
    proxy_retry_fresh(p);
  return 0;
}

int s5_proxy_retry(struct s5_proxy *p, const struct s5_upstream_cfg *up, uint64_t ms) {
  if (p->closing || p->retrying || !p->sock_open || p->data_sent) return -1; /* the bytes went with it */
  s5_proxy_use(p, up, p->target);
  p->pooled = p->requested = p->in_len = p->expired = 0;
  s5_proxy_clock(p, ms, 0); /* a new connection: handshake-timeout again */
  p->retrying = 1;
  s5_proxy_pump_detach(p, 0);
  p->step = S5_PROXY_CONNECTING; /* nothing reported until the fresh one answers */
  if (p->ops->withdrawn != NULL) p->ops->withdrawn(p->owner);
  uv_close((uv_handle_t *)&p->sock, proxy_sock_reopen);
  return 0;
}

void s5_proxy_init(struct s5_proxy *p, struct s5_wctx *w, const struct s5_config *cfg,
                   const struct s5_proxy_ops *ops, void *owner) {
  p->w = w;
  p->cfg = cfg;
  p->ops = ops;
  p->owner = owner;
  p->step = S5_PROXY_CONNECTING;
  p->pooled = p->retrying = p->requested = p->data_sent = p->heard = p->hs_over = 0;
  p->lookup = NULL, p->pump = NULL;
  /* UDP ASSOCIATE names our UDP socket, which ops->connected opens: it
   * waits for the replies before it. */
  s5_proxy_use(p, &cfg->upstreams[0], NULL);
  uv_timer_init(&w->loop, &p->timer);
  p->handles_open = 1;
}

/* ---------------------------------------------------------------- closing */

void s5_proxy_release(struct s5_proxy *p) {
  S5_ASSERT(p->closing && p->handles_open > 0);
  if (--p->handles_open == 0) p->ops->closed(p->owner);
}

static void proxy_timer_closed(uv_handle_t *handle) { s5_proxy_release(PROXY_OF(handle, timer)); }

static void proxy_sock_closed(uv_handle_t *handle) { s5_proxy_release(PROXY_OF(handle, sock)); }

void s5_proxy_close(struct s5_proxy *p, int reset) {
  if (p->closing) return;
  p->closing = 1;
  if (p->lookup != NULL) s5_dial_cancel(p->lookup);
  p->lookup = NULL;
  s5_proxy_pump_detach(p, reset);
  p->step = S5_PROXY_ENDED;
  uv_timer_stop(&p->timer);
  uv_close((uv_handle_t *)&p->timer, proxy_timer_closed);
  if (!p->sock_open || p->retrying) return; /* a retry's close callback releases it */
  /* A RST rather than a FIN: the proxy drops the far end at once too. */
  if (reset && uv_tcp_close_reset(&p->sock, proxy_sock_closed) == 0) return;
  uv_close((uv_handle_t *)&p->sock, proxy_sock_closed);
}
