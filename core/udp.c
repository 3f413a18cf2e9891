/* SPDX-License-Identifier: MIT */
/* UDP associations (see udp.h for the design).
 *
 * Life of an association:
 *   CONNECTING  TCP connect to the proxy (the control connection)
 *   HANDSHAKE   greeting, RFC 1929 if configured, UDP ASSOCIATE naming our
 *               UDP socket (bound to the control connection's local address
 *               before the request, so the proxy knows exactly where our
 *               datagrams come from)
 *   READY       datagrams both ways; the control connection is read only
 *               to notice that it closed
 *   CLOSED      handles closing; freed when the last one has closed
 * Datagrams that arrive before READY wait (up to S5_UDP_QUEUE_MAX, then
 * they are dropped, as a congested network would).
 *
 * Hot path: client to proxy, the SOCKS5 header is built on the stack and
 * sent together with the pbuf chain lwIP handed us (one sendmsg, no copy);
 * proxy to client, the datagram is read into the worker's UDP buffer and
 * copied once into the pbuf lwIP sends. No allocation beyond that pbuf. */
#include "udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "conntab.h"
#include "dns.h"
#include "log.h"
#include "session.h"
#include "socks5.h"
#include "socks5_udp.h"
#include "wctx.h"

#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"
#include "lwip/prot/udp.h"
#include "lwip/udp.h"

#define S5_UDP_BUCKETS 1024          /* hash buckets per worker (chained) */
#define S5_UDP_QUEUE_MAX 32          /* datagrams held while an association starts */
#define S5_UDP_IOV 64                /* header + pbufs per sendmsg; longer chains are copied */
#define S5_UDP_BUF (65536 + S5_SOCKS5_UDP_HDR_MAX)
/* After an association failed at the proxy, new ones are refused for a
 * hold-down that doubles with each failed probe, so a proxy whose UDP side
 * is broken costs one attempt per hold-down, not one per datagram. */
#define S5_UDP_HOLD_MIN_MS 1000
#define S5_UDP_HOLD_MAX_MS 30000
/* Relays of a proxy that worked and then refuse datagrams this many times in
 * a row, with none answering in between: the proxy's UDP side has failed. */
#define S5_UDP_RELAY_DEAD_RUN 8

enum assoc_state { A_CONNECTING, A_HANDSHAKE, A_READY, A_CLOSED };

struct s5_assoc {
  struct s5_assoc *hnext;            /* hash chain */
  struct s5_assoc *prev, *next;      /* every association, for shutdown */
  struct s5_udp *u;                  /* freed at stop before the handles' close callbacks run */
  struct s5_wctx *w;               /* lives until after them */
  const struct s5_config *cfg;       /* held: a reload changes it for new associations only */
  struct s5_session_record rec;      /* [log] sessions */
  char end_why[120];
  uint64_t id;
  ip_addr_t client;                  /* the client's source address and port */
  uint16_t client_port;
  enum assoc_state state;
  enum s5_handshake_step step;

  uv_tcp_t ctl;                      /* control connection to the proxy */
  uv_udp_t relay;                    /* to the proxy's relay address */
  uv_timer_t timer;                  /* connect timeout, then idle timeout */
  uv_connect_t connect_req;
  int handles_open;
  unsigned ctl_open : 1, relay_open : 1;
  unsigned answered : 1;             /* a datagram came back through the relay */
  uint64_t last_active;

  struct sockaddr_storage udp_local; /* our UDP socket, as told to the proxy */
  uint16_t in_len;
  uint8_t in[S5_SOCKS5_MAX_MSG];     /* handshake replies; later a read sink */

  unsigned queued;
  struct pbuf *queue[S5_UDP_QUEUE_MAX];  /* SOCKS5 header pbuf + payload each */
};

struct s5_udp {
  struct s5_wctx *w;
  struct s5_assoc *all;
  unsigned active;
  uint64_t next_id;
  uint64_t hold_until;                /* loop time before which no association starts */
  unsigned hold_ms;                  /* the last hold-down; 0 once a relay answered */
  unsigned no_associate_logged : 1;  /* "the proxy does not support UDP ASSOCIATE" said */
  unsigned relay_worked : 1;         /* a datagram came back through some relay */
  unsigned relay_dead_run;           /* relays unreachable since the last datagram back */
  struct s5_assoc *buckets[S5_UDP_BUCKETS];
  uint8_t buf[S5_UDP_BUF];           /* datagrams from relays; flattening long chains */
};

static void assoc_timer_fired(uv_timer_t *timer);

/* ---------------------------------------------------------------- helpers */

static unsigned assoc_hash(const ip_addr_t *ip, uint16_t port) {
  uint32_t h = 2166136261u ^ port;
  if (IP_IS_V6(ip)) {
    for (int i = 0; i < 4; i++) h = (h ^ ip_2_ip6(ip)->addr[i]) * 16777619u;
  } else {
    h = (h ^ ip_2_ip4(ip)->addr) * 16777619u;
  }
  h ^= h >> 15;
  return h & (S5_UDP_BUCKETS - 1);
}

static const char *assoc_client(const struct s5_assoc *a, char *buf, size_t len) {
  return s5_addr_port_str(&a->client, a->client_port, buf, len);
}

static void udp_drop(struct s5_wctx *w) { S5_STAT_ADD(w->stats, drop_udp, 1); }

/* The SOCKS5 form of a destination: by name for a mapped DNS address. */
static int dest_header(const ip_addr_t *dst, uint16_t port, uint8_t *hdr, size_t cap) {
  struct s5_socks5_addr a;
  memset(&a, 0, sizeof a);
  a.port = port;
  int mapped = s5_dns_name_of_ip(dst, a.name, sizeof a.name);
  if (mapped < 0) return -1;
  if (mapped > 0) {
    a.family = AF_UNSPEC;
    a.name_len = (uint8_t)strlen(a.name);
  } else if (IP_IS_V6(dst)) {
    a.family = AF_INET6;
    memcpy(a.ip, ip_2_ip6(dst)->addr, 16);
  } else {
    a.family = AF_INET;
    memcpy(a.ip, &ip_2_ip4(dst)->addr, 4);
  }
  return s5_socks5_udp_header_write(hdr, cap, &a);
}

/* ---------------------------------------------------------------- to the client */

int s5_udp_output(struct s5_wctx *w, const ip_addr_t *src, uint16_t sport,
                  const ip_addr_t *dst, uint16_t dport, const uint8_t *data, size_t len) {
  /* IPv4: the whole packet fits 16 bits; IPv6: the payload (UDP header too). */
  size_t max = IP_IS_V6(dst) ? 0xffff - UDP_HLEN : 0xffff - UDP_HLEN - 20;
  if (IP_GET_TYPE(src) != IP_GET_TYPE(dst) || len > max) {
    udp_drop(w);
    return -1;
  }
  struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
  if (p == NULL) {
    S5_STAT_ADD(w->stats, drop_no_memory, 1);
    return -1;
  }
  pbuf_take(p, data, (u16_t)len);
  pbuf_add_header(p, UDP_HLEN);
  struct udp_hdr *h = p->payload;
  h->src = lwip_htons(sport);
  h->dest = lwip_htons(dport);
  h->len = lwip_htons(p->tot_len);
  h->chksum = 0;
  u16_t sum = ip_chksum_pseudo(p, IP_PROTO_UDP, p->tot_len, src, dst);
  h->chksum = sum == 0 ? 0xffff : sum;   /* 0 means "no checksum" (RFC 768) */
  err_t err = ip_output_if_src(p, src, dst, UDP_TTL, 0, IP_PROTO_UDP, &w->netif);
  pbuf_free(p);
  if (err != ERR_OK) {
    udp_drop(w);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- life and death */

static void assoc_handle_closed(uv_handle_t *handle) {
  struct s5_assoc *a = handle->data;
  if (--a->handles_open > 0) return;
  s5_wctx_cfg_release(a->w, a->cfg);
  free(a);
}

static void assoc_end(struct s5_assoc *a, const char *why) {
  if (a->state == A_CLOSED) return;
  struct s5_udp *u = a->u;
  if (s5_session_log_on(a->cfg)) {
    snprintf(a->end_why, sizeof a->end_why, "%s", why);
    a->rec.end = a->end_why;
    s5_session_log(u->w, a->cfg, &a->rec);
  }
  char c[80];
  s5_debug("u%llu %s: association ended: %s", (unsigned long long)a->id,
           assoc_client(a, c, sizeof c), why);
  a->state = A_CLOSED;
  struct s5_assoc **link = &u->buckets[assoc_hash(&a->client, a->client_port)];
  while (*link != NULL && *link != a) link = &(*link)->hnext;
  if (*link == a) *link = a->hnext;
  if (a->prev != NULL) a->prev->next = a->next;
  else u->all = a->next;
  if (a->next != NULL) a->next->prev = a->prev;
  u->active--;
  S5_STAT_SUB(u->w->stats, udp_active, 1);
  for (unsigned i = 0; i < a->queued; i++) pbuf_free(a->queue[i]);
  a->queued = 0;
  uv_timer_stop(&a->timer);
  uv_close((uv_handle_t *)&a->timer, assoc_handle_closed);
  if (a->ctl_open) uv_close((uv_handle_t *)&a->ctl, assoc_handle_closed);
  if (a->relay_open) uv_close((uv_handle_t *)&a->relay, assoc_handle_closed);
}

/* An association failed at the proxy. Failures while a hold-down runs (the
 * associations that started before it) do not lengthen it. */
static void udp_hold(struct s5_udp *u) {
  uint64_t now = uv_now(&u->w->loop);
  if (now < u->hold_until) return;
  u->hold_ms = u->hold_ms == 0 ? S5_UDP_HOLD_MIN_MS
               : u->hold_ms >= S5_UDP_HOLD_MAX_MS / 2 ? S5_UDP_HOLD_MAX_MS : 2 * u->hold_ms;
  u->hold_until = now + u->hold_ms;
  s5_debug("UDP: new associations refused for %u ms after a failure at the proxy", u->hold_ms);
}

static void assoc_fail_at(struct s5_assoc *a, enum s5_log_level level, const char *why) {
  udp_hold(a->u);
  char c[80], line[200];
  snprintf(line, sizeof line, "u%llu %s: %s", (unsigned long long)a->id, assoc_client(a, c, sizeof c), why);
  s5_wctx_failure(a->u->w, level, line);
  assoc_end(a, why);
}

static void assoc_fail(struct s5_assoc *a, const char *why) { assoc_fail_at(a, S5_LOG_INFO, why); }

static void assoc_touch(struct s5_assoc *a) { a->last_active = uv_now(&a->u->w->loop); }

static void assoc_timer_fired(uv_timer_t *timer) {
  struct s5_assoc *a = timer->data;
  if (a->state == A_CONNECTING) {   /* the proxy itself does not answer */
    S5_STAT_ADD(a->u->w->stats, socks5_timeout, 1);
    assoc_fail_at(a, S5_LOG_WARN, "proxy connection for UDP not established within connect-timeout");
    return;
  }
  if (a->state != A_READY) {
    S5_STAT_ADD(a->u->w->stats, socks5_timeout, 1);
    assoc_fail(a, "UDP association not established within connect-timeout");
    return;
  }
  uint64_t idle_ms = a->cfg->session.udp_idle_timeout * 1000ull;
  uint64_t quiet = uv_now(&a->u->w->loop) - a->last_active;
  if (quiet >= idle_ms) {
    assoc_end(a, "idle timeout");
    return;
  }
  uv_timer_start(timer, assoc_timer_fired, idle_ms - quiet, 0);
}

/* ---------------------------------------------------------------- client to proxy */

/* Sends one datagram (hdr, then the chain p) to the relay. */
static void assoc_send(struct s5_assoc *a, const uint8_t *hdr, size_t hlen, struct pbuf *p) {
  struct s5_wctx *w = a->u->w;
  uv_buf_t bufs[S5_UDP_IOV];
  unsigned n = 0;
  if (hlen > 0) bufs[n++] = uv_buf_init((char *)hdr, (unsigned)hlen);
  struct pbuf *q = p;
  for (; q != NULL && n < S5_UDP_IOV; q = q->next)
    if (q->len > 0) bufs[n++] = uv_buf_init(q->payload, q->len);
  if (q != NULL) {
    /* A chain longer than the iovec (a reassembled datagram from many
     * small fragments): flatten it into the worker's buffer. */
    memcpy(a->u->buf, hdr, hlen);
    pbuf_copy_partial(p, a->u->buf + hlen, p->tot_len, 0);
    bufs[0] = uv_buf_init((char *)a->u->buf, (unsigned)(hlen + p->tot_len));
    n = 1;
  }
  int r = uv_udp_try_send(&a->relay, bufs, n, NULL);
  if (r < 0) {
    /* EAGAIN (socket buffer full) or an ICMP error from an earlier send:
     * the datagram is lost, as UDP allows. */
    udp_drop(w);
    s5_debug("u%llu send to relay: %s", (unsigned long long)a->id, uv_strerror(r));
    return;
  }
  S5_STAT_ADD(w->stats, bytes_to_proxy, r);
}

static void assoc_flush_queue(struct s5_assoc *a) {
  for (unsigned i = 0; i < a->queued && a->state == A_READY; i++) {
    assoc_send(a, NULL, 0, a->queue[i]);
    pbuf_free(a->queue[i]);
    a->queue[i] = NULL;
  }
  for (unsigned i = 0; i < a->queued; i++)
    if (a->queue[i] != NULL) pbuf_free(a->queue[i]);
  a->queued = 0;
}

/* ---------------------------------------------------------------- proxy to client */

static void relay_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  struct s5_assoc *a = handle->data;
  *buf = uv_buf_init((char *)a->u->buf, sizeof a->u->buf);
}

/* The source the client sees: the remote the proxy names, in the client's
 * family (IPv4-mapped IPv6 from a dual-stack relay becomes IPv4; a name
 * becomes its mapped address). Returns 0, or -1 when it cannot be shown to
 * this client. */
static int reply_source(const struct s5_assoc *a, const struct s5_socks5_addr *s, ip_addr_t *out) {
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (s->family == AF_UNSPEC) return s5_dns_address_of(s->name, s->name_len, IP_IS_V6(&a->client), out);
  if (s->family == AF_INET6 && !IP_IS_V6(&a->client) && memcmp(s->ip, v4mapped, 12) == 0) {
    IP_ADDR4(out, s->ip[12], s->ip[13], s->ip[14], s->ip[15]);
    return 0;
  }
  if (s->family == AF_INET && !IP_IS_V6(&a->client)) {
    IP_ADDR4(out, s->ip[0], s->ip[1], s->ip[2], s->ip[3]);
    return 0;
  }
  if (s->family == AF_INET6 && IP_IS_V6(&a->client)) {
    ip_addr_set_zero_ip6(out);
    memcpy(ip_2_ip6(out)->addr, s->ip, 16);
    return 0;
  }
  return -1;
}

/* The relay answers with ICMP errors. When relays of this proxy have been
 * answering, that is the proxy ending this one association (danted does,
 * for one whose datagrams drew an ICMP error from the target: a closed
 * port, say): it costs only itself. A relay that never worked, or relay
 * after relay failing with no datagram back in between, is the proxy's UDP
 * side failing: new associations are held back (udp_hold). */
static void relay_unreachable(struct s5_assoc *a, int err) {
  struct s5_udp *u = a->u;
  char why[160];
  if (a->answered || (u->relay_worked && ++u->relay_dead_run < S5_UDP_RELAY_DEAD_RUN)) {
    snprintf(why, sizeof why, "the proxy ended the association (its relay refuses datagrams: %s); "
             "others go on", uv_strerror(err));
    char c[80], line[300];
    snprintf(line, sizeof line, "u%llu %s: %s", (unsigned long long)a->id, assoc_client(a, c, sizeof c), why);
    s5_wctx_failure(u->w, S5_LOG_INFO, line);
    assoc_end(a, why);
    return;
  }
  snprintf(why, sizeof why, "UDP relay unreachable: %s; new associations held back", uv_strerror(err));
  S5_STAT_ADD(u->w->stats, socks5_connect_failed, 1);
  assoc_fail(a, why);
}

static void relay_recv(uv_udp_t *handle, ssize_t nread, const uv_buf_t *buf,
                       const struct sockaddr *addr, unsigned flags) {
  struct s5_assoc *a = handle->data;
  struct s5_wctx *w = a->u->w;
  if (a->state != A_READY) return;
  if (nread < 0) {
    /* On a connected UDP socket: an ICMP error for an earlier send, e.g.
     * the relay port closed. Not fatal by itself (the control connection
     * says whether the association lives), but nothing arrives either. */
    s5_debug("u%llu relay socket: %s", (unsigned long long)a->id, uv_strerror((int)nread));
    if (nread == UV_ECONNREFUSED || nread == UV_EHOSTUNREACH || nread == UV_ENETUNREACH)
      relay_unreachable(a, (int)nread);
    return;
  }
  if (addr == NULL) return;   /* nothing more to read for now */
  const char *bad = NULL;
  struct s5_socks5_addr src;
  int hlen = 0;
  if (flags & UV_UDP_PARTIAL) {
    bad = "datagram larger than the buffer";
  } else {
    hlen = s5_socks5_udp_header_parse(buf->base ? (const uint8_t *)buf->base : a->u->buf,
                                      (size_t)nread, &src);
    if (hlen == S5_SOCKS5_FRAGMENTED) bad = "fragmented SOCKS5 datagram (FRAG != 0)";
    else if (hlen < 0) bad = "malformed SOCKS5 UDP header";
  }
  ip_addr_t from;
  if (bad == NULL && reply_source(a, &src, &from) < 0)
    bad = "source address of the other family (or an unmappable name)";
  if (bad != NULL) {
    udp_drop(w);
    s5_debug("u%llu datagram from the relay dropped: %s (%zd bytes; %llu UDP drops on this queue)",
             (unsigned long long)a->id, bad, nread, (unsigned long long)S5_STAT_GET(w->stats, drop_udp));
    return;
  }
  S5_STAT_ADD(w->stats, bytes_from_proxy, nread);
  a->rec.bytes_down += (uint64_t)(nread - hlen);
  a->u->hold_ms = 0;   /* the proxy's UDP side works */
  a->u->relay_worked = 1;
  a->u->relay_dead_run = 0;
  a->answered = 1;
  assoc_touch(a);
  s5_udp_output(w, &from, src.port, &a->client, a->client_port, a->u->buf + hlen,
                (size_t)nread - (size_t)hlen);
}

/* ---------------------------------------------------------------- the control connection */

static int ctl_send(struct s5_assoc *a, const uint8_t *msg, int len) {
  if (len < 0) return len;
  uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
  return uv_try_write((uv_stream_t *)&a->ctl, &b, 1) == len ? 0 : -1;
}

static int with_auth(const struct s5_assoc *a) { return a->cfg->socks5.username[0] != '\0'; }

/* Our UDP socket: same family and local address as the control connection
 * (the address the proxy sees us at), any port, SO_MARK like every socket
 * to the proxy. */
static int relay_open(struct s5_assoc *a) {
  const struct s5_config *cfg = a->cfg;
  struct sockaddr_storage local;
  int len = sizeof local;
  int r = uv_tcp_getsockname(&a->ctl, (struct sockaddr *)&local, &len);
  if (r < 0) return r;
  if (local.ss_family == AF_INET) ((struct sockaddr_in *)&local)->sin_port = 0;
  else ((struct sockaddr_in6 *)&local)->sin6_port = 0;
  int fd = socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if ((cfg->socks5.mark != 0 &&
       setsockopt(fd, SOL_SOCKET, SO_MARK, &cfg->socks5.mark, sizeof cfg->socks5.mark) < 0) ||
      bind(fd, (struct sockaddr *)&local, (socklen_t)len) < 0) {
    r = -errno;
    close(fd);
    return r;
  }
  r = uv_udp_init(&a->u->w->loop, &a->relay);
  if (r < 0) {
    close(fd);
    return r;
  }
  a->relay.data = a;
  a->relay_open = 1;
  a->handles_open++;
  r = uv_udp_open(&a->relay, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  len = sizeof a->udp_local;
  return uv_udp_getsockname(&a->relay, (struct sockaddr *)&a->udp_local, &len);
}

/* Where datagrams go: [socks5] udp-address if set, else BND.ADDR unless it
 * is unspecified (0.0.0.0, ::) or a name, then the proxy's own address;
 * always with BND.PORT. */
static int relay_target(const struct s5_assoc *a, const struct s5_socks5_addr *bnd,
                        struct sockaddr_storage *out) {
  const struct s5_config *cfg = a->cfg;
  static const uint8_t zero[16];
  memset(out, 0, sizeof *out);
  if (cfg->socks5.udp_addr.ss_family != 0) {
    *out = cfg->socks5.udp_addr;
  } else if ((bnd->family == AF_INET && memcmp(bnd->ip, zero, 4) != 0) ||
             (bnd->family == AF_INET6 && memcmp(bnd->ip, zero, 16) != 0)) {
    if (bnd->family == AF_INET) {
      struct sockaddr_in *sin = (struct sockaddr_in *)out;
      sin->sin_family = AF_INET;
      memcpy(&sin->sin_addr, bnd->ip, 4);
    } else {
      struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
      sin6->sin6_family = AF_INET6;
      memcpy(&sin6->sin6_addr, bnd->ip, 16);
    }
  } else {
    *out = cfg->socks5.addr;
  }
  if (out->ss_family != a->udp_local.ss_family) {
    /* A relay of the other family than the control connection (a dual-stack
     * proxy reached over one family): its own address is the safe bet. */
    if (cfg->socks5.udp_addr.ss_family != 0) return -1;
    *out = cfg->socks5.addr;
  }
  if (out->ss_family == AF_INET) ((struct sockaddr_in *)out)->sin_port = htons(bnd->port);
  else ((struct sockaddr_in6 *)out)->sin6_port = htons(bnd->port);
  return bnd->port == 0 ? -1 : 0;
}

static void ctl_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  struct s5_assoc *a = handle->data;
  if (a->state == A_READY) {
    *buf = uv_buf_init((char *)a->in, sizeof a->in);   /* read and ignored */
    return;
  }
  *buf = uv_buf_init((char *)a->in + a->in_len, sizeof a->in - a->in_len);
}

static int assoc_ready(struct s5_assoc *a, const struct s5_socks5_addr *bnd) {
  struct sockaddr_storage target;
  if (relay_target(a, bnd, &target) < 0) {
    S5_STAT_ADD(a->u->w->stats, socks5_bad_reply, 1);
    assoc_fail(a, "the proxy's UDP relay address is unusable (check [socks5] udp-address)");
    return -1;
  }
  int r = uv_udp_connect(&a->relay, (const struct sockaddr *)&target);
  if (r == 0) r = uv_udp_recv_start(&a->relay, relay_alloc, relay_recv);
  if (r < 0) {
    char why[128];
    snprintf(why, sizeof why, "UDP relay socket: %s", uv_strerror(r));
    S5_STAT_ADD(a->u->w->stats, socks5_connect_failed, 1);
    assoc_fail(a, why);
    return -1;
  }
  a->state = A_READY;
  a->in_len = 0;
  assoc_touch(a);
  uv_timer_start(&a->timer, assoc_timer_fired, a->cfg->session.udp_idle_timeout * 1000ull, 0);
  char c[80];
  s5_debug("u%llu %s: association ready (relay port %u)", (unsigned long long)a->id,
           assoc_client(a, c, sizeof c), bnd->port);
  assoc_flush_queue(a);
  return 0;
}

/* Parses the handshake replies in a->in; sends the next request. Returns
 * 1 when the association is ready, 0 for more, -1 when it ended. */
static int ctl_parse(struct s5_assoc *a) {
  const struct s5_config *cfg = a->cfg;
  while (a->state == A_HANDSHAKE) {
    uint8_t msg[S5_SOCKS5_MAX_MSG];
    uint8_t rep = 0;
    struct s5_socks5_addr bnd;
    int r;
    if (a->step == S5_HS_METHOD) r = s5_socks5_parse_method(a->in, a->in_len, with_auth(a));
    else if (a->step == S5_HS_AUTH) r = s5_socks5_parse_auth(a->in, a->in_len);
    else r = s5_socks5_parse_reply_addr(a->in, a->in_len, &rep, &bnd);
    if (r == S5_SOCKS5_NEED_MORE) {
      if (a->in_len == sizeof a->in) r = S5_SOCKS5_BAD_MESSAGE;
      else return 0;
    }
    if (r < 0) {
      char why[160];
      if (r == S5_SOCKS5_REFUSED)
        snprintf(why, sizeof why, "proxy refused UDP ASSOCIATE: %s", s5_socks5_strrep(rep));
      else
        snprintf(why, sizeof why, "SOCKS5 handshake for UDP failed: %s", s5_socks5_strerror(r));
      struct s5_queue_stats *st = a->u->w->stats;
      if (r == S5_SOCKS5_AUTH_FAILED) S5_STAT_ADD(st, socks5_auth_failed, 1);
      else if (r == S5_SOCKS5_REFUSED) S5_STAT_ADD(st, socks5_refused, 1);
      else S5_STAT_ADD(st, socks5_bad_reply, 1);
      assoc_fail(a, why);
      return -1;
    }
    memmove(a->in, a->in + r, a->in_len - (size_t)r);
    a->in_len = (uint16_t)(a->in_len - r);
    int sent = 0;
    if (a->step == S5_HS_METHOD && with_auth(a)) {
      a->step = S5_HS_AUTH;
      sent = ctl_send(a, msg, s5_socks5_write_auth(msg, sizeof msg, cfg->socks5.username,
                                                   cfg->socks5.password));
    } else if (a->step == S5_HS_METHOD || a->step == S5_HS_AUTH) {
      a->step = S5_HS_REPLY;
      sent = ctl_send(a, msg, s5_socks5_write_udp_associate(msg, sizeof msg,
                                                            (struct sockaddr *)&a->udp_local));
    } else {
      a->step = S5_HS_DONE;
      return assoc_ready(a, &bnd) == 0 ? 1 : -1;
    }
    if (sent < 0) {
      assoc_fail(a, "sending to the proxy failed");
      return -1;
    }
  }
  return 0;
}

/* The proxy took the greeting (and credentials) and closed the connection
 * on UDP ASSOCIATE without a reply: it has no UDP (OpenSSH's ssh -D does
 * this). Said once per worker, at warn; each refused association is still
 * held back and counted, but only logged at debug. */
static void ctl_no_associate(struct s5_assoc *a) {
  struct s5_udp *u = a->u;
  S5_STAT_ADD(u->w->stats, socks5_refused, 1);
  if (!u->no_associate_logged) {
    u->no_associate_logged = 1;
    s5_warn("the proxy does not support UDP ASSOCIATE; set [socks5] udp = off and use [dns] for "
            "names (it closed the connection on the request)");
  }
  udp_hold(u);
  assoc_end(a, "the proxy closed the connection on UDP ASSOCIATE (no UDP support)");
}

static void ctl_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  struct s5_assoc *a = stream->data;
  if (nread == 0 || a->state == A_CLOSED) return;
  if (nread < 0) {
    if (a->state == A_READY)
      assoc_end(a, nread == UV_EOF ? "proxy closed the control connection"
                                   : "control connection failed");
    else if (nread == UV_EOF && a->step == S5_HS_REPLY)
      ctl_no_associate(a);
    else
      assoc_fail(a, nread == UV_EOF ? "proxy closed the connection during the SOCKS5 handshake"
                                    : uv_strerror((int)nread));
    return;
  }
  if (a->state == A_READY) return;   /* RFC 1928 defines nothing here: ignored */
  a->in_len = (uint16_t)(a->in_len + nread);
  ctl_parse(a);
}

static void ctl_connected(uv_connect_t *req, int status) {
  struct s5_assoc *a = req->handle->data;
  if (status == UV_ECANCELED || a->state == A_CLOSED) return;
  char why[160];
  if (status < 0) {
    S5_STAT_ADD(a->u->w->stats, socks5_connect_failed, 1);
    snprintf(why, sizeof why, "proxy connection for UDP failed: %s", uv_strerror(status));
    assoc_fail_at(a, S5_LOG_WARN, why);
    return;
  }
  int r = relay_open(a);
  if (r < 0) {
    snprintf(why, sizeof why, "UDP socket for the relay: %s", uv_strerror(r));
    assoc_fail(a, why);
    return;
  }
  a->state = A_HANDSHAKE;
  a->step = S5_HS_METHOD;
  uint8_t msg[8];
  r = ctl_send(a, msg, s5_socks5_write_greeting(msg, sizeof msg, with_auth(a)));
  if (r == 0) r = uv_read_start((uv_stream_t *)&a->ctl, ctl_alloc, ctl_read);
  if (r < 0) assoc_fail(a, "sending the SOCKS5 greeting failed");
}

static int ctl_open(struct s5_assoc *a) {
  const struct s5_config *cfg = a->cfg;
  int r = uv_tcp_init(&a->u->w->loop, &a->ctl);
  if (r < 0) return r;
  a->ctl.data = a;
  a->ctl_open = 1;
  a->handles_open++;
  int fd = socket(cfg->socks5.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (cfg->socks5.mark != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_MARK, &cfg->socks5.mark, sizeof cfg->socks5.mark) < 0) {
    r = -errno;
    close(fd);
    return r;
  }
  r = uv_tcp_open(&a->ctl, fd);
  if (r < 0) {
    close(fd);
    return r;
  }
  uv_tcp_nodelay(&a->ctl, 1);
  return uv_tcp_connect(&a->connect_req, &a->ctl, (const struct sockaddr *)&cfg->socks5.addr,
                        ctl_connected);
}

static struct s5_assoc *assoc_new(struct s5_udp *u, const ip_addr_t *client, uint16_t port) {
  struct s5_wctx *w = u->w;
  unsigned max = w->cfg->session.max_sessions;
  if (max != 0 && u->active >= max) {
    S5_STAT_ADD(w->stats, drop_max_sessions, 1);
    return NULL;
  }
  struct s5_assoc *a = calloc(1, sizeof *a);
  if (a == NULL) {
    S5_STAT_ADD(w->stats, drop_no_memory, 1);
    return NULL;
  }
  a->u = u;
  a->w = w;
  a->cfg = s5_wctx_cfg_hold(w);   /* what it started with, whatever a reload brings */
  a->id = ++u->next_id;
  a->rec = (struct s5_session_record){.kind = 'u', .id = a->id, .client_port = port,
                                      .started_ms = uv_now(&w->loop), .end = "?"};
  ip_addr_copy(a->rec.client, *client);
  ip_addr_copy(a->client, *client);
  a->client_port = port;
  a->state = A_CONNECTING;
  uv_timer_init(&w->loop, &a->timer);
  a->timer.data = a;
  a->handles_open = 1;
  unsigned b = assoc_hash(client, port);
  a->hnext = u->buckets[b];
  u->buckets[b] = a;
  a->next = u->all;
  if (u->all != NULL) u->all->prev = a;
  u->all = a;
  u->active++;
  S5_STAT_ADD(w->stats, udp_active, 1);
  S5_STAT_ADD(w->stats, udp_total, 1);
  uv_timer_start(&a->timer, assoc_timer_fired, a->cfg->session.connect_timeout * 1000ull, 0);
  char c[80];
  s5_debug("u%llu %s: new association", (unsigned long long)a->id, assoc_client(a, c, sizeof c));
  int r = ctl_open(a);
  if (r < 0) {
    char why[128];
    snprintf(why, sizeof why, "connecting to the proxy: %s", uv_strerror(r));
    assoc_fail(a, why);
    return NULL;
  }
  return a;
}

static struct s5_assoc *assoc_find(struct s5_udp *u, const ip_addr_t *client, uint16_t port) {
  for (struct s5_assoc *a = u->buckets[assoc_hash(client, port)]; a != NULL; a = a->hnext)
    if (a->client_port == port && ip_addr_cmp(&a->client, client)) return a;
  return NULL;
}

/* ---------------------------------------------------------------- from lwIP */

/* ICMP port unreachable quoting the datagram, as a host without the port
 * would answer, sent from the address the datagram was for. lwIP's own
 * icmp_port_unreach() would take the source from the netif, which has no
 * address (it takes every destination). Only valid inside lwIP's input
 * processing (ip_current_*), as here. */
static void reject(struct s5_wctx *w, struct pbuf *p) {
  S5_STAT_ADD(w->stats, drop_udp, 1);
  int v6 = ip_current_is_v6();
  /* Quote as much as RFC 1812 (IPv4: 576-byte message) and RFC 4443
   * (IPv6: within the minimum MTU, 1280) allow. */
  u16_t room = v6 ? 1280 - 40 - 8 : 576 - 20 - 8;
  if (pbuf_header_force(p, (s16_t)(ip_current_header_tot_len() + UDP_HLEN)) != 0) {
    pbuf_free(p);
    return;
  }
  u16_t quote = p->tot_len < room ? p->tot_len : room;
  struct pbuf *q = pbuf_alloc(PBUF_IP, (u16_t)(8 + quote), PBUF_RAM);
  if (q == NULL) {
    pbuf_free(p);
    return;
  }
  uint8_t *m = q->payload;
  memset(m, 0, 8);
  m[0] = v6 ? 1 : 3;   /* destination unreachable */
  m[1] = v6 ? 4 : 3;   /* port unreachable */
  pbuf_copy_partial(p, m + 8, quote, 0);
  ip_addr_t src, dst;
  ip_addr_copy(src, *ip_current_dest_addr());
  ip_addr_copy(dst, *ip_current_src_addr());
  pbuf_free(p);
  u16_t sum = v6 ? ip6_chksum_pseudo(q, IP6_NEXTH_ICMP6, q->tot_len, ip_2_ip6(&src), ip_2_ip6(&dst))
                 : inet_chksum(m, q->len);
  memcpy(m + 2, &sum, 2);   /* both sums come in network order */
  ip_output_if_src(q, &src, &dst, 64, 0, v6 ? IP6_NEXTH_ICMP6 : IP_PROTO_ICMP, &w->netif);
  pbuf_free(q);
}

static void udp_from_tun(void *arg, struct pbuf *p, const ip_addr_t *src, u16_t sport,
                         const ip_addr_t *dst, u16_t dport) {
  struct s5_udp *u = arg;
  struct s5_wctx *w = u->w;
  if (s5_dns_is_resolver(w->cfg, dst, dport)) {
    s5_dns_query(w, p, src, sport, dst, dport);
    return;
  }
  if (!w->cfg->socks5.udp || w->stopping) {
    reject(w, p);
    return;
  }
  uint8_t hdr[S5_SOCKS5_UDP_HDR_MAX];
  int hlen = dest_header(dst, dport, hdr, sizeof hdr);
  if (hlen < 0) {   /* a mapped address whose name is gone */
    reject(w, p);
    return;
  }
  struct s5_assoc *a = assoc_find(u, src, sport);
  if (a == NULL && uv_now(&w->loop) < u->hold_until) {   /* the proxy failed just now */
    reject(w, p);
    return;
  }
  if (a == NULL) a = assoc_new(u, src, sport);
  if (a == NULL) {
    udp_drop(w);
    pbuf_free(p);
    return;
  }
  assoc_touch(a);
  if (a->rec.dest_port == 0) {   /* the first destination, for the session log */
    ip_addr_copy(a->rec.dest, *dst);
    a->rec.dest_port = dport;
  }
  a->rec.bytes_up += p->tot_len;
  if (a->state == A_READY) {
    assoc_send(a, hdr, (size_t)hlen, p);
    pbuf_free(p);
    return;
  }
  struct pbuf *h = a->queued < S5_UDP_QUEUE_MAX ? pbuf_alloc(PBUF_RAW, (u16_t)hlen, PBUF_RAM) : NULL;
  if (h == NULL) {
    udp_drop(w);
    pbuf_free(p);
    return;
  }
  pbuf_take(h, hdr, (u16_t)hlen);
  pbuf_cat(h, p);   /* h takes over the reference to p */
  a->queue[a->queued++] = h;
}

/* ---------------------------------------------------------------- worker glue */

/* One per worker thread, like the lwIP instance it serves. */
static __thread struct s5_udp *udp_self;

int s5_udp_start(struct s5_wctx *w) {
  struct s5_udp *u = calloc(1, sizeof *u);
  if (u == NULL) {
    s5_error("UDP: out of memory");
    return -1;
  }
  u->w = w;
  udp_self = u;
  udp_set_any_dest_handler(udp_from_tun, u);
  return 0;
}

void s5_udp_list(struct s5_wctx *w, struct s5_connq *q) {
  const struct s5_udp *u = udp_self;
  for (const struct s5_assoc *a = u != NULL ? u->all : NULL; a != NULL; a = a->next) {
    struct s5_conn c;
    s5_session_record_entry(&a->rec, &c);
    c.last_ms = a->last_active;
    c.state = w->draining ? S5_CONN_DRAINING : a->state == A_READY ? S5_CONN_OPEN : S5_CONN_CONNECTING;
    s5_conntab_put(q, &c);
  }
}

void s5_udp_stop(struct s5_wctx *w) {
  struct s5_udp *u = udp_self;
  if (u == NULL) return;
  udp_set_any_dest_handler(NULL, NULL);
  while (u->all != NULL) assoc_end(u->all, "worker stopping");
  udp_self = NULL;
  free(u);
}
