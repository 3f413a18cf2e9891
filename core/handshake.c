/* SPDX-License-Identifier: MIT */
/* The proxy side of a new session: a TCP connection to the SOCKS5 server,
 * then the greeting, RFC 1929 authentication if configured, and CONNECT to
 * the client's original destination. Messages are tiny and each is sent
 * only after the server answered the previous one, so they always fit the
 * fresh socket's send buffer: uv_try_write() without a request suffices. */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns.h"
#include "log.h"
#include "session.h"

#include "lwip/tcp.h"

static void hs_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);
static void hs_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static int hs_send(struct s5_session *s, const uint8_t *msg, int len) {
  if (len < 0) return len;
  uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
  int r = uv_try_write((uv_stream_t *)&s->sock, &b, 1);
  return r == len ? 0 : -1;
}

static int with_auth(const struct s5_session *s) { return s->cfg->socks5.username[0] != '\0'; }

/* The address the client asked for: lwIP's "any destination" listener gave
 * the accepted pcb the SYN's destination as its local address. */
static void original_destination(const struct tcp_pcb *pcb, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (IP_IS_V6(&pcb->local_ip)) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(pcb->local_port);
    memcpy(&sin6->sin6_addr, ip_2_ip6(&pcb->local_ip)->addr, 16);
  } else {
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(pcb->local_port);
    sin->sin_addr.s_addr = ip_2_ip4(&pcb->local_ip)->addr;
  }
}

/* The CONNECT request for the client's destination, into msg. */
static int hs_put_connect(struct s5_session *s, uint8_t *msg, size_t cap) {
  struct sockaddr_storage dst;
  original_destination(s->pcb, &dst);
  /* A mapped DNS address: CONNECT by name, the proxy resolves it. */
  char name[256];
  int mapped = s5_dns_name_of((struct sockaddr *)&dst, name, sizeof name);
  if (mapped < 0) return -1;
  if (mapped > 0 && s->rec.name == NULL) s->rec.name = strdup(name);   /* the session log, --connections */
  if (mapped > 0) return s5_socks5_write_connect_name(msg, cap, name, s->pcb->local_port);
  return s5_socks5_write_connect(msg, cap, (struct sockaddr *)&dst);
}

static int hs_put_auth(struct s5_session *s, uint8_t *msg, size_t cap) {
  const struct s5_config *cfg = s->cfg;
  return s5_socks5_write_auth(msg, cap, cfg->socks5.username, cfg->socks5.password);
}

static int hs_send_connect(struct s5_session *s) {
  uint8_t msg[S5_SOCKS5_MAX_MSG];
  return hs_send(s, msg, hs_put_connect(s, msg, sizeof msg));
}

static int hs_send_auth(struct s5_session *s) {
  uint8_t msg[S5_SOCKS5_MAX_MSG];
  return hs_send(s, msg, hs_put_auth(s, msg, sizeof msg));
}

/* The first flight: the greeting, and with [socks5] pipeline the
 * authentication and CONNECT too, saving a round trip or two per
 * connection with servers that read requests as a stream (most do; RFC
 * 1928 does not promise it, hence an option). */
static int hs_send_first(struct s5_session *s) {
  uint8_t msg[3 * S5_SOCKS5_MAX_MSG];
  int len = s5_socks5_write_greeting(msg, sizeof msg, with_auth(s));
  if (len < 0 || !s->cfg->socks5.pipeline) return hs_send(s, msg, len);
  int n = with_auth(s) ? hs_put_auth(s, msg + len, sizeof msg - (size_t)len) : 0;
  if (n < 0) return n;
  len += n;
  n = hs_put_connect(s, msg + len, sizeof msg - (size_t)len);
  if (n < 0) return n;
  return hs_send(s, msg, len + n);
}

static void hs_connected(uv_connect_t *req, int status) {
  struct s5_session *s = req->handle->data;
  if (status == UV_ECANCELED || s->state == S5_SESSION_CLOSED) return;
  if (status < 0) {
    S5_STAT_ADD(s->w->stats, socks5_connect_failed, 1);
    char why[128];
    snprintf(why, sizeof why, "proxy connection failed: %s", uv_strerror(status));
    s5_session_abort_at(s, S5_LOG_WARN, why);
    return;
  }
  s->state = S5_SESSION_HANDSHAKE;
  s->step = S5_HS_METHOD;
  int r = hs_send_first(s);
  if (r == 0) r = uv_read_start((uv_stream_t *)&s->sock, hs_alloc, hs_read);
  if (r < 0) s5_session_abort(s, "sending SOCKS5 greeting failed");
}

/* Parses as many complete replies as hs_in holds. Returns bytes consumed so
 * far, or a negative s5_socks5_status on a reply that ends the session. */
static int hs_parse(struct s5_session *s, size_t *used) {
  while (s->step != S5_HS_DONE) {
    const uint8_t *in = s->hs_in + *used;
    size_t len = s->hs_in_len - *used;
    uint8_t rep = 0;
    int r;
    switch (s->step) {
      case S5_HS_METHOD:
        r = s5_socks5_parse_method(in, len, with_auth(s));
        break;
      case S5_HS_AUTH:
        r = s5_socks5_parse_auth(in, len);
        break;
      default:
        r = s5_socks5_parse_reply(in, len, &rep);
        if (r == S5_SOCKS5_REFUSED) return -256 - rep;  /* keep REP for the log */
        break;
    }
    if (r == S5_SOCKS5_NEED_MORE) return 0;
    if (r < 0) return r;
    *used += (size_t)r;

    int sent = 0, pipelined = s->cfg->socks5.pipeline;
    if (s->step == S5_HS_METHOD && with_auth(s)) {
      s->step = S5_HS_AUTH;
      if (!pipelined) sent = hs_send_auth(s);
    } else if (s->step == S5_HS_METHOD || s->step == S5_HS_AUTH) {
      s->step = S5_HS_REPLY;
      if (!pipelined) sent = hs_send_connect(s);
    } else {
      s->step = S5_HS_DONE;
    }
    if (sent < 0) return S5_SOCKS5_BAD_MESSAGE;
  }
  return 0;
}

static void hs_fail(struct s5_session *s, int status) {
  char why[160];
  struct s5_queue_stats *st = s->w->stats;
  if (status <= -256) S5_STAT_ADD(st, socks5_refused, 1);
  else if (status == S5_SOCKS5_AUTH_FAILED || status == S5_SOCKS5_NO_METHOD) S5_STAT_ADD(st, socks5_auth_failed, 1);
  else S5_STAT_ADD(st, socks5_bad_reply, 1);
  if (status <= -256)
    snprintf(why, sizeof why, "proxy refused CONNECT: %s", s5_socks5_strrep((uint8_t)(-status - 256)));
  else if (status == S5_SOCKS5_AUTH_FAILED)
    snprintf(why, sizeof why, "proxy rejected the username/password");
  else if (status == S5_SOCKS5_NO_METHOD)
    snprintf(why, sizeof why, "proxy accepts none of our authentication methods (%s)",
             with_auth(s) ? "username/password" : "none: configure [socks5] username");
  else
    snprintf(why, sizeof why, "SOCKS5 handshake failed: %s", s5_socks5_strerror(status));
  s5_session_abort(s, why);
}

static void hs_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  struct s5_session *s = handle->data;
  *buf = uv_buf_init((char *)s->hs_in + s->hs_in_len, sizeof s->hs_in - s->hs_in_len);
}

static void hs_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  struct s5_session *s = stream->data;
  if (nread == 0) return;
  if (nread < 0) {
    S5_STAT_ADD(s->w->stats, socks5_bad_reply, 1);
    s5_session_abort(s, nread == UV_EOF ? "proxy closed the connection during the SOCKS5 handshake"
                                         : uv_strerror((int)nread));
    return;
  }
  s->hs_in_len += (uint16_t)nread;
  size_t used = 0;
  int r = hs_parse(s, &used);
  if (r < 0) {
    hs_fail(s, r);
    return;
  }
  memmove(s->hs_in, s->hs_in + used, s->hs_in_len - used);
  s->hs_in_len -= (uint16_t)used;
  if (s->step != S5_HS_DONE) {
    if (s->hs_in_len == sizeof s->hs_in) hs_fail(s, S5_SOCKS5_BAD_MESSAGE);
    return;
  }
  /* Relay reads start once the client has completed its handshake too. */
  uv_read_stop(stream);
  s5_session_established(s);
}

static int hs_open_socket(struct s5_session *s) {
  const struct s5_config *cfg = s->cfg;
  int fd = socket(cfg->socks5.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    char line[160];
    snprintf(line, sizeof line, "s%llu socket to proxy: %s", (unsigned long long)s->id, strerror(errno));
    s5_debug("%s", line);
    s5_wctx_failure(s->w, S5_LOG_WARN, line);
    return -1;
  }
  if (cfg->socks5.mark != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_MARK, &cfg->socks5.mark, sizeof cfg->socks5.mark) < 0) {
    s5_warn("s%llu SO_MARK %u on proxy socket: %s", (unsigned long long)s->id,
            cfg->socks5.mark, strerror(errno));
    close(fd);
    return -1;
  }
  int r = uv_tcp_open(&s->sock, fd);
  if (r < 0) {
    s5_warn("s%llu adopting proxy socket: %s", (unsigned long long)s->id, uv_strerror(r));
    close(fd);
    return -1;
  }
  return 0;
}

int s5_handshake_start(struct s5_session *s) {
  const struct s5_config *cfg = s->cfg;
  int r = uv_tcp_init(&s->w->loop, &s->sock);
  if (r < 0) return -1;
  s->sock.data = s;
  s->sock_open = 1;
  s->handles_open++;
  if (hs_open_socket(s) < 0) return -1;
  uv_tcp_nodelay(&s->sock, 1);
  r = uv_tcp_connect(&s->connect_req, &s->sock, (const struct sockaddr *)&cfg->socks5.addr,
                     hs_connected);
  if (r < 0) {
    s5_warn("s%llu connecting to proxy: %s", (unsigned long long)s->id, uv_strerror(r));
    return -1;
  }
  return 0;
}
