/* SPDX-License-Identifier: MIT */
/* UDP datagrams through SOCKS5 UDP ASSOCIATE (see udp.h for the design):
 * from the TUN to an association's relay socket and back, the mapped
 * resolver's answers, and the relay socket's start (opened on the control
 * connection's address, connected to the relay the proxy names). The
 * associations themselves, their table and their life, are assoc.c's.
 *
 * Hot path (core/udp/udp_io.c, core/netif/udp_tun.c): client to proxy, the SOCKS5
 * header is built on the stack and queued with the payload in the worker's
 * send arena, sent once per loop turn with sendmmsg (UDP_SEGMENT for runs
 * of equal size); proxy to client, datagrams are read with recvmmsg into
 * the worker's ring and written to the TUN as one GSO packet per run of a
 * flow (USO), or through lwIP where the kernel cannot. No allocation. */
#include "udp/udp.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/addr.h"
#include "udp/assoc.h"
#include "dns/dns.h"
#include "dns/dnsmap.h"
#include "netif/icmp.h"
#include "netif/netif.h"
#include "base/log.h"
#include "socks5/proxy.h"
#include "tun/route_get.h"
#include "shared/rules.h"
#include "shared/uptab.h"
#include "socks5/socks5_udp.h"
#include "udp/udp_dest.h"
#include "udp/udp_io.h"
#include "udp/udp_sniff.h"
#include "udp/udp_ss.h"
#include "netif/udp_tun.h"
#include "ctx/wctx.h"

#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/prot/ip4.h"
#include "lwip/pbuf.h"
#include "lwip/prot/udp.h"
#include "lwip/udp.h"

/* Relays of a proxy that worked and then refuse datagrams this many times in
 * a row, with none answering in between: the proxy's UDP side has failed. */
#define S5_UDP_RELAY_DEAD_RUN 8
/* The same on a worker where no relay has answered yet. */
#define S5_UDP_RELAY_DEAD_RUN_FRESH 2

/* ---------------------------------------------------------------- helpers */

static void udp_drop(struct s5_wctx *w) { S5_STAT_ADD(w->stats, drop_udp, 1); }

/* ---------------------------------------------------------------- to the client */

int s5_udp_output(struct s5_wctx *w, const ip_addr_t *src, uint16_t sport, const ip_addr_t *dst,
                  uint16_t dport, const uint8_t *data, size_t len) {
  /* IPv4: the whole packet fits 16 bits; IPv6: the payload (UDP header too). */
  size_t max = IP_IS_V6(dst) ? 0xffff - UDP_HLEN : 0xffff - UDP_HLEN - IP_HLEN;
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
  h->chksum = sum == 0 ? 0xffff : sum; /* 0 means "no checksum" (RFC 768) */
  err_t err = ip_output_if_src(p, src, dst, UDP_TTL, 0, IP_PROTO_UDP, &w->netif);
  pbuf_free(p);
  if (err != ERR_OK) {
    udp_drop(w);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- client to proxy */

/* Sends one datagram (hdr, then the chain p) to the relay: queued for the
 * end of this loop turn (core/udp/udp_io.c), where it is counted. */
static void assoc_send(struct s5_assoc *a, const uint8_t *hdr, size_t hlen, struct pbuf *p) {
  s5__udp_relay_send(a, hdr, hlen, p); /* Shadowsocks: sealed first (udp_ss.c) */
}

static void assoc_flush_queue(struct s5_assoc *a) {
  for (unsigned i = 0; i < a->queued && a->state == S5_ASSOC_READY; i++) {
    assoc_send(a, NULL, 0, a->queue[i]);
    pbuf_free(a->queue[i]);
    a->queue[i] = NULL;
  }
  for (unsigned i = 0; i < a->queued; i++)
    if (a->queue[i] != NULL) pbuf_free(a->queue[i]);
  a->queued = 0;
}

/* ---------------------------------------------------------------- proxy to client */

/* The source the client sees: the remote the proxy names, in the client's
 * family (IPv4-mapped IPv6 from a dual-stack relay becomes IPv4; a name
 * becomes its mapped address). Returns 0, or -1 when it cannot be shown to
 * this client. */
static int reply_source(const struct s5_assoc *a, const struct s5_socks5_addr *s, ip_addr_t *out) {
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (s->family == AF_UNSPEC) return s5_dnsmap_address_of(s->name, s->name_len, IP_IS_V6(&a->client), out);
  if (s->family == AF_INET6 && !IP_IS_V6(&a->client) && memcmp(s->ip, v4mapped, 12) == 0) {
    IP_ADDR4(out, s->ip[12], s->ip[13], s->ip[14], s->ip[15]);
    return 0;
  }
  if (s->family != (IP_IS_V6(&a->client) ? AF_INET6 : AF_INET)) return -1;
  s5_addr_from_bytes(out, s->ip, s->family == AF_INET6 ? 16 : 4);
  return 0;
}

/* The relay answers with ICMP errors. That is the proxy ending this one
 * association (danted does, for one whose datagrams drew an ICMP error from
 * the target: a closed port, say), or the proxy's UDP side failing. Only
 * the second holds back new associations of every client (udp_hold), and
 * it is told apart by clients: relays of several distinct clients refusing
 * in a row with no datagram back in between (S5_UDP_RELAY_DEAD_RUN_FRESH
 * when no relay of this worker has worked yet, S5_UDP_RELAY_DEAD_RUN when
 * one has). One client
 * alone costs only itself: when nothing came back through its relay, that
 * client is held back (its retries would cost an ASSOCIATE each). */
static void relay_unreachable(struct s5_assoc *a, int err) {
  struct s5_udp *u = a->u;
  char why[200];
  int again = 0;
  unsigned held_ms = a->answered ? 0 : s5_assoc_hold_client(u, &a->client, a->client_port, &again);
  unsigned most = u->relay_worked ? S5_UDP_RELAY_DEAD_RUN : S5_UDP_RELAY_DEAD_RUN_FRESH;
  if (a->answered || again || ++u->relay_dead_run < most) {
    int n = snprintf(why, sizeof why,
                     "the proxy ended the association (its relay refuses datagrams: %s); others go on",
                     uv_strerror(err));
    if (held_ms != 0 && n > 0 && (size_t)n < sizeof why)
      snprintf(why + n, sizeof why - (size_t)n, "; this client held back %u ms", held_ms);
    char c[80], line[300];
    snprintf(line, sizeof line, "u%llu %s: %s", (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c),
             why);
    s5_wctx_failure(u->w, S5_LOG_INFO, line);
    s5_assoc_end(a, why);
    return;
  }
  snprintf(why, sizeof why, "UDP relay unreachable: %s; new associations held back", uv_strerror(err));
  S5_STAT_ADD(u->w->stats, socks5_connect_failed, 1);
  s5_assoc_fail(a, why);
}

/* A read on the relay socket failed: on a connected UDP socket, an ICMP
 * error for an earlier send, e.g. the relay port closed. Not fatal by
 * itself (the control connection says whether the association lives), but
 * nothing arrives either. */
static void relay_error(struct s5_udp_sock *s, int err) {
  struct s5_assoc *a = s->poll.data;
  if (a->state != S5_ASSOC_READY) return;
  s5_debug("u%llu relay socket: %s", (unsigned long long)a->id, uv_strerror(err));
  if (err != UV_ECONNREFUSED && err != UV_EHOSTUNREACH && err != UV_ENETUNREACH) return;
  if (a->direct)
    s5_assoc_end(a, "the destination refused datagrams (direct)"); /* its own answer: no hold-down */
  else relay_unreachable(a, err);
}

static void relay_recv(struct s5_udp_sock *s, uint8_t *buf, size_t nread) {
  struct s5_assoc *a = s->poll.data;
  struct s5_wctx *w = a->u->w;
  if (a->state != S5_ASSOC_READY) return;
  const char *bad = NULL;
  struct s5_socks5_addr src;
  int hlen = 0;
  if (buf == NULL) {
    bad = "datagram larger than the buffer";
  } else if (a->direct) { /* from the one destination, as it is */
    src.port = a->rec.dest_port;
  } else if (a->ss_on && s5__udp_ss_open(a, &buf, &nread) < 0) {
    return; /* a bad tag: counted and said there */
  } else {
    hlen = s5_socks5_udp_header_parse(buf, nread, &src);
    if (hlen == S5_SOCKS5_FRAGMENTED) bad = "fragmented SOCKS5 datagram (FRAG != 0)";
    else if (hlen < 0) bad = "malformed SOCKS5 UDP header";
  }
  ip_addr_t from = a->rec.dest;
  if (bad == NULL && !a->direct && reply_source(a, &src, &from) < 0)
    bad = "source address of the other family (or an unmappable name)";
  if (bad != NULL) {
    udp_drop(w);
    s5_debug("u%llu datagram from the relay dropped: %s (%zu bytes; %llu UDP drops on this queue)",
             (unsigned long long)a->id, bad, nread, (unsigned long long)S5_STAT_GET(w->stats, drop_udp));
    return;
  }
  S5_STAT_ADD(w->stats, bytes_from_proxy, nread);
  a->rec.bytes_down += (uint64_t)(nread - (size_t)hlen);
  a->u->hold_ms = 0; /* the proxy's UDP side works */
  a->u->relay_worked = 1;
  a->u->relay_dead_run = 0;
  a->answered = 1;
  s5_assoc_touch(a);
  const uint8_t *data = buf + hlen;
  size_t len = nread - (size_t)hlen;
  if (s5_udp_tun_put(a->u->tun, &from, src.port, &a->client, a->client_port, data, len) < 0)
    s5_udp_output(w, &from, src.port, &a->client, a->client_port, data, len);
}

/* ---------------------------------------------------------------- the association's start */

/* Our UDP socket: same family and local address as the control connection
 * (the address the proxy sees us at), any port, SO_MARK like every socket
 * to the proxy. */
static int relay_open(struct s5_assoc *a) {
  const struct s5_upstream_cfg *up = a->proxy.up;
  struct sockaddr_storage local;
  int len = sizeof local, r = 0;
  memset(&local, 0, sizeof local);
  if (a->direct || up->type == S5_UPSTREAM_SHADOWSOCKS) { /* no control connection: any address of the
                                                             destination's (the server's) family */
    local.ss_family = !a->direct ? up->addr.ss_family : IP_IS_V6(&a->rec.dest) ? AF_INET6 : AF_INET;
    len = (int)s5_sockaddr_len(&local);
  } else {
    r = uv_tcp_getsockname(&a->proxy.sock, (struct sockaddr *)&local, &len);
  }
  if (r < 0) return r;
  s5_sockaddr_set_port(&local, 0);
  int fd = socket(local.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if ((up->mark != 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &up->mark, sizeof up->mark) < 0) ||
      bind(fd, (struct sockaddr *)&local, (socklen_t)len) < 0) {
    r = -errno;
    close(fd);
    return r;
  }
  r = s5_udp_sock_init(&a->relay, a->u->io, fd, a, a->id); /* takes fd */
  if (r < 0) return r;
  a->relay_open = 1;
  s5_assoc_retain(a);
  socklen_t slen = sizeof a->udp_local;
  return getsockname(fd, (struct sockaddr *)&a->udp_local, &slen) < 0 ? -errno : 0;
}

/* A relay the host routes into our own device (a partial route that
 * covers it, no mark rule): every datagram sent there would come back in as
 * a new client, which opens another association, and so on. Refused before
 * anything is sent, counted as a proxy loop like TCP's, that client held
 * back. One route lookup per association, none per datagram. */
static int relay_loops(struct s5_assoc *a, const struct sockaddr_storage *target) {
  struct s5_udp *u = a->u;
  if (a->cfg->tun.netns[0] != '\0') return 0; /* the device is in another namespace than our sockets */
  if (u->tun_ifindex == 0) u->tun_ifindex = if_nametoindex(a->cfg->tun.name);
  int oif = s5_route_get_oif((const struct sockaddr *)target, (const struct sockaddr *)&a->udp_local,
                             a->proxy.up->mark);
  if (oif <= 0 || (unsigned)oif != u->tun_ifindex) return 0; /* no route: connect() will say */
  S5_STAT_ADD(u->w->stats, drop_proxy_loop, 1);
  int again;
  unsigned ms = s5_assoc_hold_client(u, &a->client, a->client_port, &again);
  char c[80], line[360];
  char relay_s[S5_SOCKADDR_STRLEN];
  if (
    a->direct) /* no proxy here: the destination itself, sent direct by a rule (said first: the limiter cuts) */
    snprintf(
      line, sizeof line,
      "u%llu %s: refused: direct by rule %s: the destination %s is routed into %s, so its datagrams would "
      "come back as new clients (a loop); route it outside the tunnel ([rules] mark and a policy rule, "
      "or auto-route) or send it through an upstream; this client held back %u ms",
      (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c), a->rec.rule[0] ? a->rec.rule : "default",
      s5_sockaddr_str(target, relay_s, sizeof relay_s), a->cfg->tun.name, ms);
  else
    snprintf(
      line, sizeof line,
      "u%llu %s: refused: the proxy's UDP relay %s is routed into %s, so its datagrams would come back "
      "as new clients (a loop); route the relay outside the tunnel; this client held back %u ms",
      (unsigned long long)a->id, s5_assoc_client(a, c, sizeof c),
      s5_sockaddr_str(target, relay_s, sizeof relay_s), a->cfg->tun.name, ms);
  s5_wctx_failure(u->w, S5_LOG_WARN, line);
  s5_assoc_end(a, a->direct ? "direct destination routed into the tunnel" : "relay routed into the tunnel");
  return 1;
}

/* The proxy granted UDP ASSOCIATE: datagrams go to its relay from now on. */
static void assoc_ready(struct s5_assoc *a, const struct s5_socks5_addr *bnd) {
  struct sockaddr_storage target;
  if (s5_assoc_relay_target(a, bnd, &target) < 0) {
    S5_STAT_ADD(a->u->w->stats, socks5_bad_reply, 1);
    s5_assoc_fail(a, "the proxy's UDP relay address is unusable (check [socks5] udp-address)");
    return;
  }
  if (relay_loops(a, &target)) return;
  char why[160];
  if (a->proxy.up->type == S5_UPSTREAM_SHADOWSOCKS && s5__udp_ss_init(a, why, sizeof why) < 0) {
    s5_assoc_fail_at(a, S5_LOG_WARN, why);
    return;
  }
  int r = connect(a->relay.fd, (const struct sockaddr *)&target, s5_sockaddr_len(&target)) < 0 ? -errno : 0;
  if (r == 0) r = s5_udp_sock_start(&a->relay, relay_recv, relay_error);
  if (r < 0) {
    snprintf(why, sizeof why, "UDP relay socket: %s", uv_strerror(r));
    S5_STAT_ADD(a->u->w->stats, socks5_connect_failed, 1);
    s5_assoc_fail(a, why);
    return;
  }
  s5_assoc_set_ready(a, bnd->port);
  assoc_flush_queue(a);
}

/* ---------------------------------------------------------------- the proxy client's callbacks */

/* The control connection is up: our UDP socket is opened now, on its
 * local address, for the request to name. */
static int assoc_proxy_connected(void *assoc) {
  struct s5_assoc *a = assoc;
  int r = relay_open(a);
  if (r == 0) return 0;
  char why[160];
  snprintf(why, sizeof why, "UDP socket for the relay: %s", uv_strerror(r));
  s5_assoc_fail(a, why);
  return -1;
}

static int assoc_proxy_request(void *assoc, uint8_t *msg, size_t cap) {
  struct s5_assoc *a = assoc;
  return s5_socks5_write_udp_associate(msg, cap, (struct sockaddr *)&a->udp_local);
}

static void assoc_proxy_result(void *assoc, const struct s5_proxy_result *r) {
  struct s5_assoc *a = assoc;
  if (a->state == S5_ASSOC_CLOSED) return;
  switch (r->outcome) {
    case S5_PROXY_GRANTED:
      if (!a->direct && s5_uptab() != NULL) {
        s5_route_granted(&a->route, a->w->index, (uv_now(&a->w->loop) - a->rec.started_ms) * 1000);
        a->up_open = 1;
      }
      assoc_ready(a, &r->bnd);
      break;
    case S5_PROXY_FAILED:
      if (s5_assoc_failover(a, r) != 0) s5_assoc_fail_at(a, r->level, r->why);
      break;
    case S5_PROXY_NO_ASSOCIATE: s5_assoc_no_associate(a, r->why); break;
    case S5_PROXY_LOST: s5_assoc_end(a, r->why); break;
  }
}

static const struct s5_proxy_ops assoc_proxy_ops = {
  .cmd = S5_PROXY_ASSOCIATE,
  .request = assoc_proxy_request,
  .connected = assoc_proxy_connected,
  .result = assoc_proxy_result,
  .closed = s5_assoc_release,
};

/* ---------------------------------------------------------------- from lwIP */

/* A query for the mapped resolver: the resolver makes the answer, which
 * goes back like any datagram to the client, from the address it asked
 * (with [dns] hijack, any address's port 53). */
static void udp_dns_query(struct s5_wctx *w, struct pbuf *p, const ip_addr_t *src, u16_t sport,
                          const ip_addr_t *dst, u16_t dport, enum s5_dns_dest dest) {
  uint8_t answer[S5_DNS_ANSWER_MAX];
  int n = s5_dns_answer_pbuf(w, p, src, dest, answer, sizeof answer);
  if (n > 0) s5_udp_output(w, dst, dport, src, sport, answer, (size_t)n);
}

static void udp_from_tun(void *arg, struct pbuf *p, const ip_addr_t *src, u16_t sport, const ip_addr_t *dst,
                         u16_t dport) {
  struct s5_udp *u = arg;
  struct s5_wctx *w = u->w;
  enum s5_dns_dest dns = s5_dns_dest(w->cfg, dst, dport);
  if (dns != S5_DNS_PASS) {
    udp_dns_query(w, p, src, sport, dst, dport, dns);
    return;
  }
  if (w->stopping || (s5_upstream_for_udp(w->cfg) == NULL && !s5_rules_configured(s5_rules_of(w->cfg)))) {
    s5_icmp_port_unreachable(w, p); /* no upstream carries UDP, and no rule says otherwise */
    return;
  }
  struct s5_assoc *a = s5_assoc_find(u, src, sport);
  if (a == NULL && s5_assoc_held(u, src, sport)) { /* the proxy failed just now */
    s5_icmp_port_unreachable(w, p);
    return;
  }
  if (a != NULL && !s5_route_up(&a->route)) { /* its upstream went down: a new one on another */
    S5_STAT_ADD(w->stats, udp_upstream_down, 1);
    s5_assoc_end(a, "its upstream went down");
    a = NULL;
  }
  if (a == NULL) {
    char why[160];
    struct s5_route route;
    const struct s5_upstream_cfg *up = s5__udp_route(w, src, dst, dport, &route, why, sizeof why);
    if (up == NULL && route.sniff == 0) {
      s5_debug("UDP from port %u: %s%s%s: ICMP port unreachable", sport, why, route.label[0] ? ", rule " : "",
               route.label);
      s5_icmp_port_unreachable(w, p);
      return;
    }
    a = s5_assoc_new(u, src, sport, dst, dport, &route, up); /* up NULL: sniffed first */
    if (a == NULL) {
      udp_drop(w);
      pbuf_free(p);
      return;
    }
    memcpy(a->rec.rule, route.label, sizeof a->rec.rule);
    if (up == NULL) s5__udp_sniff_start(a);
  }
  if (a->state == S5_ASSOC_SNIFFING) s5__udp_sniff_datagram(a, p, dst, dport);
  else if (a->state != S5_ASSOC_CLOSED) s5__udp_datagram(a, p, dst, dport);
  else s5_icmp_port_unreachable(w, p); /* it could not start ([sniff] could not begin) */
}

/* ---------------------------------------------------------------- worker glue */

/* After each batch of relay reads: the TUN writer points into the read
 * ring, which the next batch reuses. */
static void udp_batch_done(void *arg) { s5_udp_tun_flush(((struct s5_udp *)arg)->tun); }

/* The table is the worker's (it keeps what this returns), one per worker
 * like the lwIP instance it serves, and lwIP hands it back with every
 * datagram: nothing here is per thread. */
struct s5_udp *s5_udp_start(struct s5_wctx *w, struct s5_netif *n) {
  struct s5_udp *u = calloc(1, sizeof *u);
  if (u == NULL) {
    s5_error("UDP: out of memory");
    return NULL;
  }
  u->w = w;
  u->netif = n;
  u->proxy_ops = &assoc_proxy_ops;
  u->io = s5_udp_io_start(w, udp_batch_done, u);
  if (u->io != NULL) u->tun = s5_udp_tun_start(w, n->fd, s5_udp_io_batching(u->io));
  if (u->tun == NULL) {
    if (u->io != NULL) s5_error("UDP: out of memory for the TUN writer");
    s5_udp_io_stop(u->io);
    free(u);
    return NULL;
  }
  n->udp_tun = u->tun;
  udp_set_any_dest_handler(udp_from_tun, u);
  return u;
}

/* The worker's end of a loop turn: the datagrams queued for the relays
 * go out, then whatever the TUN writer still holds. */
void s5_udp_end_turn(struct s5_udp *u) {
  s5_udp_io_flush(u->io);
  s5_udp_tun_flush(u->tun);
}

uint64_t s5_udp_wait_wish(struct s5_udp *u) { return s5_udp_io_wait_wish(u->io); }

void s5_udp_list(const struct s5_udp *u, struct s5_connq *q) { s5_assoc_list(u, q); }

void s5_udp_release(struct s5_udp *u) {
  if (u != NULL) s5_udp_io_release(u->io);
}

void s5_udp_stop(struct s5_udp *u) {
  if (u == NULL) return;
  udp_set_any_dest_handler(NULL, NULL);
  while (u->all != NULL) s5_assoc_end(u->all, "worker stopping");
  u->netif->udp_tun = NULL;
  s5_udp_tun_stop(u->tun);
  s5_udp_io_stop(u->io);
  s5__udp_ss_stop(u);
  free(u);
}
