/* SPDX-License-Identifier: MIT */
/* Fuzz target: packets entering a worker from its TUN queue.
 *
 * What runs is the daemon's own worker: s5_worker_init() and
 * s5_worker_run() (core/worker/worker.c) with their lwIP instance, the TUN netif
 * and its read/write path (core/netif/netif.c), the any-destination listener and
 * session_on_syn() (core/tcp/session.c), the relay (core/tcp/relay.c), the UDP
 * associations (core/udp/udp.c), the mapped resolver (core/dns/dns.c) and the ICMP
 * filter; and its orderly stop (s5_worker_stop(): drain, sessions and pcbs
 * aborted, netif removed). The TUN queue is one end of a SOCK_DGRAM
 * socketpair: the fuzzer writes packets into the other end, the worker
 * reads them exactly as from a TUN fd, and what it writes back is read and
 * dropped (the last TCP segment is remembered, see OP_REPLY).
 *
 * Two things are not the real ones, to keep runs deterministic:
 *   - the session table's start_proxy (core/tcp/session.h; the worker sets
 *     it to s5_handshake_start(), core/tcp/handshake.c, which starts the
 *     session's SOCKS5 client, core/socks5/proxy.c) is set to
 *     fuzz_start_proxy() below after s5_worker_init(): the session gets one
 *     end of an AF_UNIX stream socketpair as its proxy socket, and the
 *     input decides when the "proxy" completes the handshake, refuses,
 *     sends, reads, half-closes or closes. The SOCKS5 parsing has its own
 *     fuzzer (fuzz_socks5).
 *   - s5_lwip_rand() (third_party/lwip/arch) returns a constant, so every
 *     SYN-ACK carries the initial sequence number S5_FUZZ_ISN and inputs
 *     can acknowledge it (static linking takes our definition instead of
 *     the library's).
 * UDP associations are real: with [socks5] udp = associate, a small SOCKS5
 * server on 127.0.0.1 in the worker's own loop answers UDP ASSOCIATE and
 * echoes datagrams back through the relay socket. Nothing leaves loopback.
 *
 * Input: bytes 0 and 1 are the configuration. Byte 0: bit 0 icmp = reply,
 * 1 udp = associate, 2 mapped DNS resolver on, 3 max-sessions 2 instead of
 * 8, 4-5 MTU 1500/1280/9000/65535, 6 debug logging (to /dev/null), 7
 * offload = true (a virtio_net_hdr before every packet both ways). Byte 1:
 * bit 0 the resolver on IPv6. Then operations, one byte each (value %
 * OP_COUNT) plus operands; a missing operand byte reads as 0:
 *   OP_PACKET      flags, len (2 bytes, big-endian), len bytes: one packet
 *                  (IPv4 or IPv6) from the TUN. Checksums (IPv4 header,
 *                  TCP, UDP, ICMP, ICMPv6, unless the packet is a fragment)
 *                  are corrected first unless flags bit 0 is set. With
 *                  offload, flags bit 1 says the packet starts with its own
 *                  virtio_net_hdr (else a zero one is put in front).
 *   OP_REPLY       flags, window, n, n bytes: a TCP segment answering the
 *                  last one the worker sent (addresses and ports swapped,
 *                  seq = its ack, ack = its seq + length); flags are the
 *                  TCP flags (ACK added unless bit 6 is set).
 *   OP_TICK        n: (n % 8) + 1 runs of lwIP's TCP timer (reassembly
 *                  timers every fourth), as the worker's timer does.
 *   OP_PROXY_OK    k, e, e % 64 bytes: session k's CONNECT succeeded; the
 *                  bytes came with the reply (delivered to the client first).
 *   OP_PROXY_FAIL  k: session k's handshake failed.
 *   OP_PROXY_SEND  k, n (2 bytes): the proxy sends n bytes to session k.
 *   OP_PROXY_EOF   k: the proxy half-closes session k.
 *   OP_PROXY_CLOSE k: the proxy closes session k (a reset if it left
 *                  bytes unread).
 *   OP_PROXY_READ  k: the proxy reads everything session k sent it.
 *   OP_SPIN        n: n % 16 turns of the event loop with no input.
 *   OP_REFUSE_NEXT the next proxy connection fails at once.
 * Session k is the (k % live sessions)-th of the worker's list; an
 * operation on no session does nothing. At the end the loop turns until
 * things settle, the UDP server resets its connections, and the worker is
 * stopped as by SIGTERM; then lwIP's reassembly buffers are aged out, so
 * LeakSanitizer sees every byte returned.
 *
 * Environment: S5_FUZZ_LOG=1 logs to stderr instead of /dev/null;
 * S5_FUZZ_TRACE=1 prints the worker's counters after each input (to see
 * what a seed reaches). */
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ini/config.h"
#include "dns/dns.h"
#include "fuzz_check.h"
#include "base/log.h"
#include "tcp/session.h"
#include "shared/stats.h"
#include "worker/worker.h"

#include "lwip/ip4_frag.h"
#include "lwip/ip6_frag.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"

#define S5_FUZZ_ISN 0x01000000u
#define MAX_OPS 1024
#define MAX_PEERS 64
#define SETTLE_TURNS 24
#define SRV_CONNS 8

enum op {
  OP_PACKET,
  OP_REPLY,
  OP_TICK,
  OP_PROXY_OK,
  OP_PROXY_FAIL,
  OP_PROXY_SEND,
  OP_PROXY_EOF,
  OP_PROXY_CLOSE,
  OP_PROXY_READ,
  OP_SPIN,
  OP_REFUSE_NEXT,
  OP_COUNT
};

/* The proxy end of a session's socketpair. */
struct peer {
  uint64_t id; /* the session's */
  int fd;      /* -1 once the proxy closed it */
};

/* The last TCP segment the worker wrote to the TUN. */
struct segment {
  int valid, v6;
  uint8_t src[16], dst[16];
  uint16_t sport, dport;
  uint32_t seq, ack, len;
  uint8_t flags;
};

enum stage { RUN, SETTLE, RESET, STOPPING };

static struct {
  const uint8_t *in;
  size_t pos, size;
  unsigned ops, spin, ticks;
  enum stage stage;
  int started;
  int refuse_next;
  int tun[2]; /* [0] the worker's queue fd, [1] ours */
  uv_idle_t feeder;
  struct peer peers[MAX_PEERS];
  unsigned npeers;
  struct segment last;
} H;

/* The SOCKS5 server for UDP ASSOCIATE (udp = associate). */
struct srv_conn {
  uv_tcp_t h;
  int used, stage;
  size_t len;
  uint8_t in[S5_SOCKS5_MAX_MSG];
};

static struct {
  int on;
  uv_tcp_t listener;
  uv_udp_t udp;
  uint16_t udp_port;
  struct srv_conn c[SRV_CONNS];
  uint8_t dgram[65536 + 512];
} S;

static struct s5_worker W;
static int trace; /* S5_FUZZ_TRACE=1: one line of counters per input */
static struct s5_config BASE, CFG;
static struct s5_queue_stats STATS;
#define VNET ((size_t)sizeof(struct virtio_net_hdr))
static uint8_t pkt_buf[VNET + 65536 + 64]; /* room for a virtio header in front */
static uint8_t *const pkt = pkt_buf + VNET;
static uint8_t out[65536 + 64];

/* -------------------------------------------------------------- replaced functions */

uint32_t s5_lwip_rand(void) { return S5_FUZZ_ISN; }

static void peers_prune(void) {
  unsigned kept = 0;
  for (unsigned i = 0; i < H.npeers; i++) {
    int live = 0;
    for (struct s5_session *s = W.tcp.list; s != NULL && !live; s = s->next) live = s->id == H.peers[i].id;
    if (live) {
      H.peers[kept++] = H.peers[i];
    } else if (H.peers[i].fd >= 0) {
      close(H.peers[i].fd);
    }
  }
  H.npeers = kept;
}

/* The session's proxy client, as handshake.c would leave it right after
 * its uv_tcp_connect(): the connection open, not reading, no timer
 * running (nothing here reports a result through it; the operations below
 * play the proxy's answers). */
static const struct s5_proxy_ops fuzz_proxy_ops = {
  .cmd = S5_PROXY_CONNECT,
  .closed = s5_session_release,
};

static int fuzz_start_proxy(struct s5_session *s) {
  s5_proxy_init(&s->proxy, s->w, s->cfg, &fuzz_proxy_ops, s);
  s5_session_retain(s);
  if (uv_tcp_init(&s->w->loop, &s->proxy.sock) < 0) return -1;
  s->proxy.sock.data = s;
  s->proxy.sock_open = 1;
  s->proxy.handles_open++;
  if (H.refuse_next) {
    H.refuse_next = 0;
    return -1;
  }
  peers_prune();
  if (H.npeers == MAX_PEERS) return -1;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  if (uv_tcp_open(&s->proxy.sock, sv[0]) < 0) {
    close(sv[0]);
    close(sv[1]);
    return -1;
  }
  H.peers[H.npeers].id = s->id;
  H.peers[H.npeers].fd = sv[1];
  H.npeers++;
  return 0;
}

/* -------------------------------------------------------------- input */

static unsigned next_byte(void) { return H.pos < H.size ? H.in[H.pos++] : 0; }

/* Up to n bytes of input; *got says how many. */
static const uint8_t *take(size_t n, size_t *got) {
  size_t left = H.size - H.pos;
  *got = n < left ? n : left;
  const uint8_t *p = H.in + H.pos;
  H.pos += *got;
  return p;
}

/* -------------------------------------------------------------- checksums */

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t acc) {
  for (size_t i = 0; i + 1 < n; i += 2) acc += (uint32_t)(p[i] << 8 | p[i + 1]);
  if (n & 1) acc += (uint32_t)p[n - 1] << 8;
  return acc;
}

static uint16_t fold(uint32_t acc) {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return (uint16_t)~acc;
}

/* Sets the checksum of the transport header at l4 (l4len bytes); pseudo is
 * the pseudo-header's sum (0 for ICMPv4, which has none). */
static void fix_l4(uint8_t proto, uint8_t *l4, size_t l4len, uint32_t pseudo) {
  size_t at;
  switch (proto) {
    case 6: at = 16; break; /* TCP */
    case 17: at = 6; break; /* UDP */
    case 1:                 /* ICMP */
    case 58: at = 2; break; /* ICMPv6 */
    default: return;
  }
  if (l4len < at + 2) return;
  l4[at] = l4[at + 1] = 0;
  uint16_t c = fold(sum16(l4, l4len, pseudo));
  if (proto == 17 && c == 0) c = 0xffff;
  l4[at] = (uint8_t)(c >> 8);
  l4[at + 1] = (uint8_t)c;
}

static void fix_checksums(uint8_t *p, size_t len) {
  if (len < 1) return;
  if (p[0] >> 4 == 4) {
    if (len < 20) return;
    size_t ihl = (size_t)(p[0] & 15) * 4;
    if (ihl < 20 || ihl > len) return;
    p[10] = p[11] = 0;
    uint16_t c = fold(sum16(p, ihl, 0));
    p[10] = (uint8_t)(c >> 8);
    p[11] = (uint8_t)c;
    size_t tot = (size_t)(p[2] << 8 | p[3]);
    if ((p[6] & 0x3f) != 0 || p[7] != 0) return; /* a fragment: the sum covers the whole datagram */
    if (tot < ihl || tot > len) return;
    uint32_t pseudo = p[9] == 1 ? 0 : sum16(p + 12, 8, 0) + p[9] + (uint32_t)(tot - ihl);
    fix_l4(p[9], p + ihl, tot - ihl, pseudo);
  } else if (p[0] >> 4 == 6) {
    if (len < 40) return;
    size_t end = 40 + (size_t)(p[4] << 8 | p[5]);
    if (end > len) return;
    uint8_t next = p[6];
    size_t off = 40;
    for (int hops = 0; hops < 8; hops++) {
      if (next == 0 || next == 43 || next == 60) {
        if (off + 2 > end) return;
        next = p[off];
        off += ((size_t)p[off + 1] + 1) * 8;
      } else if (next == 44) {
        if (off + 8 > end || ((p[off + 2] << 8 | p[off + 3]) & 0xfff9) != 0) return;
        next = p[off];
        off += 8;
      } else {
        break;
      }
    }
    if (off > end) return;
    size_t l4len = end - off;
    fix_l4(next, p + off, l4len, sum16(p + 8, 32, 0) + (uint32_t)l4len + next);
  }
}

/* -------------------------------------------------------------- the TUN side */

static void remember_segment(const uint8_t *p, size_t len) {
  struct segment s;
  memset(&s, 0, sizeof s);
  size_t ip_len, l4;
  if (len >= 20 && p[0] >> 4 == 4 && p[9] == 6) {
    l4 = (size_t)(p[0] & 15) * 4;
    ip_len = (size_t)(p[2] << 8 | p[3]);
    memcpy(s.src, p + 12, 4);
    memcpy(s.dst, p + 16, 4);
  } else if (len >= 40 && p[0] >> 4 == 6 && p[6] == 6) {
    s.v6 = 1;
    l4 = 40;
    ip_len = 40 + (size_t)(p[4] << 8 | p[5]);
    memcpy(s.src, p + 8, 16);
    memcpy(s.dst, p + 24, 16);
  } else {
    return;
  }
  if (ip_len > len || l4 + 20 > ip_len) return;
  const uint8_t *t = p + l4;
  size_t doff = (size_t)(t[12] >> 4) * 4;
  if (doff < 20 || l4 + doff > ip_len) return;
  s.sport = (uint16_t)(t[0] << 8 | t[1]);
  s.dport = (uint16_t)(t[2] << 8 | t[3]);
  s.seq = (uint32_t)t[4] << 24 | (uint32_t)t[5] << 16 | (uint32_t)t[6] << 8 | t[7];
  s.ack = (uint32_t)t[8] << 24 | (uint32_t)t[9] << 16 | (uint32_t)t[10] << 8 | t[11];
  s.flags = t[13];
  s.len = (uint32_t)(ip_len - l4 - doff);
  s.valid = 1;
  H.last = s;
}

/* Reads (and drops) what the worker wrote to its queue. */
static void drain_tun(void) {
  for (;;) {
    ssize_t n = recv(H.tun[1], out, sizeof out, MSG_DONTWAIT);
    if (n <= 0) return;
    size_t skip = CFG.tun.offload ? VNET : 0;
    FUZZ_CHECK((size_t)n >= skip, "a %zd-byte write to the TUN", n);
    remember_segment(out + skip, (size_t)n - skip);
  }
}

/* p points into pkt_buf, at least VNET bytes after its start. own_vnet:
 * with offload, p already starts with a virtio_net_hdr. */
static void send_packet(uint8_t *p, size_t len, int fix, int own_vnet) {
  if (CFG.tun.offload && !own_vnet) {
    p -= VNET;
    memset(p, 0, VNET);
    if (fix) fix_checksums(p + VNET, len);
    len += VNET;
  } else if (fix) {
    size_t skip = CFG.tun.offload ? VNET : 0;
    if (len > skip) fix_checksums(p + skip, len - skip);
  }
  if (len == 0) return;                       /* a TUN read never returns nothing */
  (void)send(H.tun[1], p, len, MSG_DONTWAIT); /* a full queue drops it, as a TUN would */
}

/* A TCP segment answering H.last. */
static void send_reply(unsigned tflags, unsigned window, const uint8_t *data, size_t n) {
  const struct segment *l = &H.last;
  if (!l->valid) return;
  size_t ip = l->v6 ? 40 : 20, len = ip + 20 + n;
  uint8_t *p = pkt;
  memset(p, 0, ip + 20);
  if (l->v6) {
    p[0] = 0x60;
    p[4] = (uint8_t)((20 + n) >> 8);
    p[5] = (uint8_t)(20 + n);
    p[6] = 6;
    p[7] = 64;
    memcpy(p + 8, l->dst, 16);
    memcpy(p + 24, l->src, 16);
  } else {
    p[0] = 0x45;
    p[2] = (uint8_t)(len >> 8);
    p[3] = (uint8_t)len;
    p[6] = 0x40; /* DF */
    p[8] = 64;
    p[9] = 6;
    memcpy(p + 12, l->dst, 4);
    memcpy(p + 16, l->src, 4);
  }
  uint8_t *t = p + ip;
  uint32_t seq = l->ack;
  uint32_t ack = l->seq + l->len + ((l->flags & 0x02) ? 1 : 0) + ((l->flags & 0x01) ? 1 : 0);
  t[0] = (uint8_t)(l->dport >> 8);
  t[1] = (uint8_t)l->dport;
  t[2] = (uint8_t)(l->sport >> 8);
  t[3] = (uint8_t)l->sport;
  for (int i = 0; i < 4; i++) {
    t[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
    t[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
  }
  t[12] = 5 << 4;
  t[13] = (uint8_t)((tflags & 0x3f) | ((tflags & 0x40) ? 0 : 0x10));
  t[14] = (uint8_t)window;
  t[15] = 0xff;
  memcpy(t + 20, data, n);
  send_packet(p, len, 1, 0);
}

/* -------------------------------------------------------------- the proxy side */

static struct s5_session *pick_session(unsigned k, struct peer **peer) {
  unsigned n = 0;
  for (struct s5_session *s = W.tcp.list; s != NULL; s = s->next) n++;
  if (n == 0) return NULL;
  struct s5_session *s = W.tcp.list;
  for (k %= n; k > 0; k--) s = s->next;
  *peer = NULL;
  for (unsigned i = 0; i < H.npeers; i++)
    if (H.peers[i].id == s->id) *peer = &H.peers[i];
  return s;
}

static int handshaking(const struct s5_session *s) { return s->state == S5_SESSION_CONNECTING; }

/* The proxy client granting the CONNECT (proxy.c's proxy_granted() and
 * handshake.c's result callback). */
static void proxy_ok(struct s5_session *s, const uint8_t *early, size_t n) {
  memcpy(s->proxy.in, early, n);
  s->proxy.in_len = (uint16_t)n;
  s->proxy.step = S5_PROXY_DONE;
  uv_read_stop((uv_stream_t *)&s->proxy.sock);
  s5_session_established(s);
}

static void proxy_send(int fd, size_t n) {
  static uint8_t bytes[65536];
  if (bytes[0] == 0)
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 7 + 1);
  while (n > 0) {
    ssize_t w = send(fd, bytes, n < sizeof bytes ? n : sizeof bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w <= 0) return;
    n -= (size_t)w;
  }
}

static void proxy_read(int fd) {
  for (int i = 0; i < 64; i++)
    if (recv(fd, out, sizeof out, MSG_DONTWAIT) <= 0) return;
}

/* -------------------------------------------------------------- the UDP ASSOCIATE server */

static void srv_closed(uv_handle_t *h) {
  struct srv_conn *c = h->data;
  c->used = 0;
}

static void srv_close(struct srv_conn *c) {
  if (!uv_is_closing((uv_handle_t *)&c->h)) uv_close((uv_handle_t *)&c->h, srv_closed);
}

static void srv_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  struct srv_conn *c = h->data;
  *buf = uv_buf_init((char *)c->in + c->len, (unsigned)(sizeof c->in - c->len));
}

static void srv_write(struct srv_conn *c, const uint8_t *msg, size_t n) {
  uv_buf_t b = uv_buf_init((char *)msg, (unsigned)n);
  if (uv_try_write((uv_stream_t *)&c->h, &b, 1) != (int)n) srv_close(c);
}

static void srv_consume(struct srv_conn *c, size_t n) {
  memmove(c->in, c->in + n, c->len - n);
  c->len -= n;
}

/* Greeting -> "no authentication"; request -> success, BND = our UDP socket. */
static void srv_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  struct srv_conn *c = stream->data;
  if (nread < 0) {
    srv_close(c);
    return;
  }
  c->len += (size_t)nread;
  if (c->stage == 0 && c->len >= 2 && c->len >= 2u + c->in[1]) {
    static const uint8_t method[2] = {5, 0};
    srv_consume(c, 2u + c->in[1]);
    c->stage = 1;
    srv_write(c, method, sizeof method);
  }
  if (c->stage == 1 && c->len >= 5) {
    size_t need = c->in[3] == 1 ? 10 : c->in[3] == 4 ? 22 : c->in[3] == 3 ? 7u + c->in[4] : 0;
    if (need == 0) {
      srv_close(c);
      return;
    }
    if (c->len >= need) {
      uint8_t reply[10] = {5, 0, 0, 1, 127, 0, 0, 1, (uint8_t)(S.udp_port >> 8), (uint8_t)S.udp_port};
      srv_consume(c, need);
      c->stage = 2;
      srv_write(c, reply, sizeof reply);
    }
  }
  if (c->stage == 2) c->len = 0; /* nothing more is defined on this connection */
  if (c->len == sizeof c->in) srv_close(c);
}

static void srv_accept(uv_stream_t *listener, int status) {
  if (status < 0) return;
  for (int i = 0; i < SRV_CONNS; i++) {
    struct srv_conn *c = &S.c[i];
    if (c->used) continue;
    memset(c, 0, sizeof *c);
    c->used = 1;
    uv_tcp_init(listener->loop, &c->h);
    c->h.data = c;
    if (uv_accept(listener, (uv_stream_t *)&c->h) < 0 ||
        uv_read_start((uv_stream_t *)&c->h, srv_alloc, srv_read) < 0)
      srv_close(c);
    return;
  }
  /* all slots taken: the connection waits in the backlog */
}

static void srv_udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  *buf = uv_buf_init((char *)S.dgram, sizeof S.dgram);
}

/* The relay: every datagram goes back to its sender as it came, so its
 * header (the destination) becomes the reply's source. */
static void srv_udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *addr,
                         unsigned flags) {
  if (nread <= 0 || addr == NULL) return;
  uv_buf_t b = uv_buf_init(buf->base, (unsigned)nread);
  (void)uv_udp_try_send(h, &b, 1, addr);
}

static void server_start(uv_loop_t *loop, struct sockaddr_storage *proxy) {
  struct sockaddr_in a;
  struct sockaddr_storage ss;
  int len = sizeof ss;
  uv_ip4_addr("127.0.0.1", 0, &a);
  if (uv_tcp_init(loop, &S.listener) < 0 || uv_tcp_bind(&S.listener, (struct sockaddr *)&a, 0) < 0 ||
      uv_listen((uv_stream_t *)&S.listener, 16, srv_accept) < 0 ||
      uv_tcp_getsockname(&S.listener, (struct sockaddr *)&ss, &len) < 0)
    abort();
  memcpy(proxy, &ss, sizeof ss);
  len = sizeof ss;
  if (uv_udp_init(loop, &S.udp) < 0 || uv_udp_bind(&S.udp, (struct sockaddr *)&a, 0) < 0 ||
      uv_udp_getsockname(&S.udp, (struct sockaddr *)&ss, &len) < 0 ||
      uv_udp_recv_start(&S.udp, srv_udp_alloc, srv_udp_recv) < 0)
    abort();
  S.udp_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
  S.on = 1;
}

/* Resets every control connection (no TIME_WAIT left behind on either
 * side), then stops listening. */
static void server_reset(void) {
  if (!S.on) return;
  for (int i = 0; i < SRV_CONNS; i++) {
    struct srv_conn *c = &S.c[i];
    if (!c->used || uv_is_closing((uv_handle_t *)&c->h)) continue;
    if (uv_tcp_close_reset(&c->h, srv_closed) < 0) srv_close(c);
  }
  uv_close((uv_handle_t *)&S.listener, NULL);
  uv_close((uv_handle_t *)&S.udp, NULL);
  S.on = 0;
}

/* -------------------------------------------------------------- operations */

static void do_op(void) {
  unsigned op = next_byte() % OP_COUNT;
  struct peer *peer = NULL;
  struct s5_session *s;
  size_t n;
  const uint8_t *p;
  switch (op) {
    case OP_PACKET: {
      unsigned flags = next_byte();
      size_t len = next_byte() << 8;
      len |= next_byte();
      p = take(len, &n);
      memcpy(pkt, p, n);
      send_packet(pkt, n, !(flags & 1), (flags & 2) != 0);
      break;
    }
    case OP_REPLY: {
      unsigned tflags = next_byte(), window = next_byte();
      p = take(next_byte(), &n);
      send_reply(tflags, window, p, n);
      break;
    }
    case OP_TICK:
      for (unsigned i = (next_byte() & 7) + 1; i > 0; i--) {
        tcp_tmr();
        if (++H.ticks % 4 == 0) {
          ip_reass_tmr();
          ip6_reass_tmr();
        }
      }
      break;
    case OP_PROXY_OK: {
      s = pick_session(next_byte(), &peer);
      p = take(next_byte() % 64, &n);
      if (s != NULL && handshaking(s)) proxy_ok(s, p, n);
      break;
    }
    case OP_PROXY_FAIL:
      s = pick_session(next_byte(), &peer);
      if (s != NULL && handshaking(s)) s5_session_abort(s, "fuzz: the proxy refused");
      break;
    case OP_PROXY_SEND: {
      s = pick_session(next_byte(), &peer);
      size_t len = next_byte() << 8;
      len |= next_byte();
      if (s != NULL && peer != NULL && peer->fd >= 0) proxy_send(peer->fd, len);
      break;
    }
    case OP_PROXY_EOF:
      s = pick_session(next_byte(), &peer);
      if (s != NULL && peer != NULL && peer->fd >= 0) shutdown(peer->fd, SHUT_WR);
      break;
    case OP_PROXY_CLOSE:
      s = pick_session(next_byte(), &peer);
      if (s != NULL && peer != NULL && peer->fd >= 0) {
        close(peer->fd);
        peer->fd = -1;
      }
      break;
    case OP_PROXY_READ:
      s = pick_session(next_byte(), &peer);
      if (s != NULL && peer != NULL && peer->fd >= 0) proxy_read(peer->fd);
      break;
    case OP_SPIN: H.spin = next_byte() % 16; break;
    case OP_REFUSE_NEXT: H.refuse_next = 1; break;
  }
}

/* One operation per turn of the worker's loop (an idle handle keeps the
 * loop from blocking), so that everything the previous one set off (TUN
 * reads, socket readiness) has happened before the next. */
static void feed(uv_idle_t *idle) {
  if (!H.started) {
    H.started = 1;
    uv_timer_stop(&W.lwip_timer); /* lwIP's timers run by OP_TICK only: no wall clock */
  }
  drain_tun();
  if (H.spin > 0) {
    H.spin--;
    return;
  }
  switch (H.stage) {
    case RUN:
      if (H.pos < H.size && H.ops < MAX_OPS) {
        H.ops++;
        do_op();
        return;
      }
      H.stage = SETTLE;
      H.spin = SETTLE_TURNS;
      return;
    case SETTLE:
      server_reset();
      H.stage = RESET;
      H.spin = 4;
      return;
    case RESET:
      H.stage = STOPPING;
      uv_idle_stop(idle);
      s5_worker_stop(&W); /* as SIGTERM: drain (drain-timeout 0), then everything reset */
      return;
    case STOPPING: return;
  }
}

/* -------------------------------------------------------------- set-up */

static void init_once(void) {
  static int done;
  if (done) return;
  done = 1;
  signal(SIGPIPE, SIG_IGN); /* as main() does */
  s5_config_defaults(&BASE);
  BASE.queues = 1;
  BASE.run.drain_timeout = 0;
  /* No timer of a session or association may fire on the wall clock
   * during a run: inputs must behave the same every time. */
  BASE.session.connect_timeout = 3600;
  BASE.session.tcp_idle_timeout = 86400;
  BASE.session.udp_idle_timeout = 86400;
  struct sockaddr_in *dns = (struct sockaddr_in *)&BASE.dns.addr[0];
  dns->sin_family = AF_INET;
  dns->sin_port = htons(53);
  dns->sin_addr.s_addr = htonl(0x0a350001); /* 10.53.0.1 */
  BASE.dns.network.family = AF_INET;
  memcpy(BASE.dns.network.addr, (const uint8_t[]){100, 64, 0, 0}, 4);
  BASE.dns.network.len = 28;
  BASE.dns.network6.family = AF_INET6; /* AAAA answers and IPv6 pool addresses too */
  memcpy(BASE.dns.network6.addr, (const uint8_t[16]){0xfd, 0xff, 0x53, 0x35}, 16);
  BASE.dns.network6.len = 96;
  BASE.dns.cache_size = 8;
  trace = getenv("S5_FUZZ_TRACE") != NULL && *getenv("S5_FUZZ_TRACE") != '0';
  const char *log = getenv("S5_FUZZ_LOG");
  if (log == NULL || *log == '\0' || *log == '0') strcpy(BASE.log.file, "/dev/null");
  BASE.log.level = S5_LOG_DEBUG;
  if (s5_log_open(&BASE.log) < 0 || s5_dns_setup(&BASE) < 0) abort();
}

static void configure(uint8_t c, uint8_t c2) {
  static const unsigned mtus[4] = {1500, 1280, 9000, 65535};
  memcpy(&CFG, &BASE, sizeof CFG);
  CFG.tun.icmp_reply = c & 0x01;
  CFG.socks5.udp = (c & 0x02) != 0;
  if (!(c & 0x04)) {
    memset(&CFG.dns.addr, 0, sizeof CFG.dns.addr);
  } else if (c2 & 0x01) { /* an IPv6 resolver, alone or beside the IPv4 one */
    if (c2 & 0x02) memset(&CFG.dns.addr[0], 0, sizeof CFG.dns.addr[0]);
    struct sockaddr_in6 *dns6 = (struct sockaddr_in6 *)&CFG.dns.addr[1];
    memset(dns6, 0, sizeof *dns6);
    dns6->sin6_family = AF_INET6;
    dns6->sin6_port = htons(53);
    memcpy(&dns6->sin6_addr, (const uint8_t[16]){0xfd, 0x53, [15] = 1}, 16); /* fd53::1 */
  }
  CFG.session.max_sessions = (c & 0x08) ? 2 : 8;
  CFG.tun.mtu = mtus[(c >> 4) & 3];
  s5_log_level = (c & 0x40) ? S5_LOG_DEBUG : S5_LOG_ERROR;
  CFG.tun.offload = (c & 0x80) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  init_once();
  if (size < 2) return 0;
  memset(&H, 0, sizeof H);
  memset(&S, 0, sizeof S);
  memset(&STATS, 0, sizeof STATS);
  configure(data[0], data[1]);
  H.in = data;
  H.pos = 2;
  H.size = size;

  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, H.tun) < 0) abort();
  int big = 1 << 22;
  setsockopt(H.tun[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(H.tun[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  if (s5_worker_init(&W, &CFG, 0, H.tun[0], &STATS) < 0) abort();
  W.tcp.start_proxy = fuzz_start_proxy;
  if (CFG.socks5.udp) server_start(&W.ctx.loop, &CFG.socks5.addr);
  uv_idle_init(&W.ctx.loop, &H.feeder);
  uv_idle_start(&H.feeder, feed);

  s5_worker_run(&W, 0); /* returns once the worker stopped and closed every handle */
  FUZZ_CHECK(H.stage == STOPPING, "the worker stopped by itself (stage %d)", (int)H.stage);
  FUZZ_CHECK(W.tcp.list == NULL, "sessions left after the stop");
  FUZZ_CHECK(STATS.tcp_active == 0 && STATS.udp_active == 0, "active counters %llu/%llu after the stop",
             (unsigned long long)STATS.tcp_active, (unsigned long long)STATS.udp_active);
  s5_worker_close(&W);
  if (trace)
    fprintf(
      stderr,
      "fuzz_packet: ops %u in %llu out %llu tcp %llu to_proxy %llu from_proxy %llu "
      "udp %llu drop_tun_write %llu drop_udp %llu drop_dns %llu drop_icmp %llu drop_max %llu drop_loop %llu\n",
      H.ops, (unsigned long long)STATS.tun_rx_packets, (unsigned long long)STATS.tun_tx_packets,
      (unsigned long long)STATS.tcp_total, (unsigned long long)STATS.bytes_to_proxy,
      (unsigned long long)STATS.bytes_from_proxy, (unsigned long long)STATS.udp_total,
      (unsigned long long)STATS.drop_tun_write, (unsigned long long)STATS.drop_udp,
      (unsigned long long)STATS.drop_dns, (unsigned long long)STATS.drop_icmp,
      (unsigned long long)STATS.drop_max_sessions, (unsigned long long)STATS.drop_proxy_loop);

  /* lwIP has no deinit: fragments waiting for reassembly are freed when
   * they time out. */
  for (int i = 0; i <= IP_REASS_MAXAGE + IPV6_REASS_MAXAGE + 2; i++) {
    ip_reass_tmr();
    ip6_reass_tmr();
  }
  for (unsigned i = 0; i < H.npeers; i++)
    if (H.peers[i].fd >= 0) close(H.peers[i].fd);
  close(H.tun[0]);
  close(H.tun[1]);
  return 0;
}
