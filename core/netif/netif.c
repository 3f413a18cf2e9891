/* SPDX-License-Identifier: MIT */
/* The TUN queue as an lwIP netif: packets read from the queue fd go straight
 * into pbufs and into ip_input(); packets lwIP sends go out with one writev()
 * over the pbuf chain, without being copied into a flat buffer first. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <linux/virtio_net.h>
#include <sys/uio.h>
#include <unistd.h>

#include "netif/netif.h"

#include "base/assert.h"
#include "base/chksum.h"
#include "netif/icmp.h"
#include "base/log.h"
#include "netif/udp_tun.h"

#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"
#include "lwip/prot/ip4.h"
#include "lwip/prot/ip6.h"
#include "lwip/prot/tcp.h"

/* A wake-up reads until EAGAIN, but at most this many packets, so that a
 * flood on the TUN cannot starve the proxy sockets and timers on the same
 * loop: the poll handle is level-triggered and comes straight back. */
#define S5_TUN_READ_BATCH 256

/* The header IFF_VNET_HDR puts before every packet, both ways: its size is
 * the kernel's default (TUNSETVNETHDRSZ is not set). */
_Static_assert(sizeof(struct virtio_net_hdr) == 10, "struct virtio_net_hdr: the kernel's 10 bytes");

/* A failed TUN queue is watched again after this delay, doubling while it
 * keeps failing. */
#define S5_TUN_RETRY_MIN_MS 100
#define S5_TUN_RETRY_MAX_MS 5000

/* pbuf chains from lwIP are a header pbuf plus one or a few data pbufs. */
#define S5_TUN_IOV_MAX 32

/* With offloads (S5_TUN_OFFLOAD) reads may be TCP segments of up to 64 KiB;
 * one read buffer of that size is kept. A packet of up to this size is
 * copied into a pbuf of its own size instead, so that small packets queued
 * in lwIP (or waiting for the proxy) never pin 64 KiB each: a packet handed
 * over in the big buffer fills at least half of it. */
#define S5_TUN_BIG_READ 65535
#define S5_TUN_COPY_MAX 32768

/* Where the offload path looks in the headers it fills in. */
#define S5_IP4_PROTO 9   /* protocol */
#define S5_IP4_TOTLEN 2  /* total length */
#define S5_IP4_ADDRS 12  /* source, then destination: 8 bytes */
#define S5_IP6_PLEN 4    /* payload length */
#define S5_IP6_NEXTH 6   /* next header */
#define S5_IP6_ADDRS 8   /* source, then destination: 32 bytes */
#define S5_TCP_OFFSET 12 /* data offset (high nibble, in 32-bit words) */
#define S5_TCP_CHKSUM 16 /* checksum */

/* TCP with offloads: lwIP leaves the checksum to the kernel (disabled per
 * netif), and a segment longer than the device's MSS is sent as one GSO
 * packet that the kernel cuts into MSS-sized segments, or delivers whole to
 * the local TCP stack. The checksum field must then hold the folded
 * pseudo-header sum, the start of a partial checksum. Fills *vh; returns 0,
 * or -1 for a packet that is not TCP (sent with complete checksums). */
static int netif_tcp_offload(const struct s5_wctx *w, struct pbuf *p, struct virtio_net_hdr *vh) {
  uint8_t *ip = p->payload;
  if (p->len < IP_HLEN) return -1;
  unsigned version = ip[0] >> 4, iphl, total;
  const uint8_t *addrs;
  int alen;
  if (version == 4) {
    iphl = (ip[0] & 0x0f) * 4u;
    if (ip[S5_IP4_PROTO] != IP_PROTO_TCP) return -1;
    total = ((unsigned)ip[S5_IP4_TOTLEN] << 8 | ip[S5_IP4_TOTLEN + 1]);
    addrs = ip + S5_IP4_ADDRS, alen = 8;
  } else if (version == 6 && p->len >= IP6_HLEN) {
    iphl = IP6_HLEN; /* lwIP sends TCP without extension headers */
    if (ip[S5_IP6_NEXTH] != IP6_NEXTH_TCP) return -1;
    total = IP6_HLEN + ((unsigned)ip[S5_IP6_PLEN] << 8 | ip[S5_IP6_PLEN + 1]);
    addrs = ip + S5_IP6_ADDRS, alen = 32;
  } else {
    return -1;
  }
  if (p->len < iphl + TCP_HLEN || total > p->tot_len || total < iphl + TCP_HLEN) return -1;
  uint8_t *tcp = ip + iphl;
  unsigned tcphl = (tcp[S5_TCP_OFFSET] >> 4) * 4u, tcplen = total - iphl;
  if (tcphl < TCP_HLEN || p->len < iphl + tcphl) return -1;
  u16_t partial = s5_chksum_pseudo_partial(addrs, alen, IP_PROTO_TCP, tcplen);
  memcpy(tcp + S5_TCP_CHKSUM, &partial, 2);

  /* the segment's pcb's client MSS, from lwIP's output hook; else the device's */
  unsigned mss = s5_lwip_out_gso != 0 ? s5_lwip_out_gso : s5_netif_gso_size(w, version == 6);
  s5_lwip_out_gso = 0;
  memset(vh, 0, sizeof *vh);
  vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  vh->csum_start = (u16_t)iphl;
  vh->csum_offset = S5_TCP_CHKSUM;
  if (tcplen - tcphl > mss) {
    vh->gso_type = version == 6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
    vh->gso_size = (u16_t)mss;
    vh->hdr_len = (u16_t)(iphl + tcphl);
  }
  return 0;
}

/* The MSS the device's MTU allows, which lwIP would have used. */
unsigned s5_netif_gso_size(const struct s5_wctx *w, int v6) {
  return w->cfg->tun.mtu - (v6 ? IP6_HLEN + TCP_HLEN : IP_HLEN + TCP_HLEN);
}

/* What precedes every non-TCP packet with offloads: all zero (no GSO,
 * checksums complete). */
static const struct virtio_net_hdr vnet_none;

static err_t netif_write(struct netif *nif, struct pbuf *p) {
  struct s5_netif *tun = nif->state;
  struct s5_wctx *w = tun->w;
  struct iovec iov[S5_TUN_IOV_MAX];
  struct virtio_net_hdr vh;
  int n = 0;
  if (w->cfg->tun.offload) {
    iov[n].iov_base = netif_tcp_offload(w, p, &vh) == 0 ? &vh : (void *)&vnet_none;
    iov[n].iov_len = sizeof vnet_none;
    n++;
  }
  u16_t off = 0;
  struct pbuf *q = p;
  for (; q != NULL && n < S5_TUN_IOV_MAX - 1; q = q->next) {
    off += q->len;
    if (q->len == 0) continue;
    iov[n].iov_base = q->payload;
    iov[n].iov_len = q->len;
    n++;
  }
  if (q != NULL) {
    /* A segment lwIP grew from many small writes (a proxy sending in small
     * pieces) has more pbufs than iovecs: the rest goes out of one copy,
     * never cut off (a short packet would be dropped and resent forever). */
    S5_ASSERT(off < p->tot_len); /* the pbufs left hold the rest */
    iov[n].iov_base = tun->tail;
    iov[n].iov_len = pbuf_copy_partial(p, tun->tail, (u16_t)(p->tot_len - off), off);
    S5_ASSERT(iov[n].iov_len == (size_t)(p->tot_len - off)); /* never cut off */
    n++;
  }
  ssize_t r = writev(tun->fd, iov, n);
  if (r < 0) {
    /* The kernel takes TUN writes without blocking; a failure here means the
     * packet is lost, which TCP recovers from: count it, never stall. */
    if (w->stats->drop_tun_write == 0)
      s5_warn("write to TUN queue failed: %s (further drops counted only)", strerror(errno));
    S5_STAT_ADD(w->stats, drop_tun_write, 1);
    return ERR_OK;
  }
  S5_STAT_ADD(w->stats, tun_tx_packets, 1);
  S5_STAT_ADD(w->stats, tun_tx_bytes, r - (w->cfg->tun.offload ? (ssize_t)sizeof vnet_none : 0));
  return ERR_OK;
}

static err_t netif_output4(struct netif *nif, struct pbuf *p, const ip4_addr_t *dst) {
  return netif_write(nif, p);
}

static err_t netif_output6(struct netif *nif, struct pbuf *p, const ip6_addr_t *dst) {
  return netif_write(nif, p);
}

static err_t netif_setup(struct netif *nif) {
  const struct s5_wctx *w = ((struct s5_netif *)nif->state)->w;
  nif->name[0] = 't';
  nif->name[1] = 'n';
  /* With offloads lwIP must not fragment a TCP segment longer than the MTU:
   * the kernel cuts it (GSO). Segment sizes still follow the client's MSS,
   * which its own MTU sets; only s5_session_on_syn() lifts it. */
  nif->mtu = (u16_t)(w->cfg->tun.offload ? 65535 : w->cfg->tun.mtu);
#if LWIP_ND6_ALLOW_RA_UPDATES
  nif->mtu6 = nif->mtu;
#endif
  nif->output = netif_output4;
  nif->output_ip6 = netif_output6;
  nif->flags = NETIF_FLAG_UP | NETIF_FLAG_LINK_UP | NETIF_FLAG_ANY_DEST;
  if (w->cfg->tun.offload) NETIF_SET_CHECKSUM_CTRL(nif, NETIF_CHECKSUM_ENABLE_ALL & ~NETIF_CHECKSUM_GEN_TCP);
  return ERR_OK;
}

/* With offloads: the virtio header goes to the stack, the packet into the
 * big buffer. TCP GSO segments are just large segments to lwIP, and
 * partial checksums are not verified (lwipopts.h); UDP GSO is cut up. */
static ssize_t tun_read_offload(struct s5_netif *n, struct pbuf *p, unsigned *udp_gso) {
  struct virtio_net_hdr vh;
  struct iovec iov[2] = {{&vh, sizeof vh}, {p->payload, p->len}};
  ssize_t r = readv(n->fd, iov, 2);
  if (r >= 0 && (size_t)r < sizeof vh) {
    errno = EIO;
    return -1;
  }
  /* A UDP GSO packet (USO, from a client sending with UDP_SEGMENT) stands
   * for many datagrams: its segment size goes to the caller, to be cut up
   * (core/netif/udp_tun.c). */
  *udp_gso = r >= 0 && vh.gso_type == 5 /* VIRTIO_NET_HDR_GSO_UDP_L4 */ ? vh.gso_size : 0;
  return r < 0 ? r : r - (ssize_t)sizeof vh;
}

/* Hands over the big buffer for a large packet; copies a small one into a
 * pbuf of its own size and keeps the big buffer for the next read. */
static struct pbuf *tun_take_big(struct s5_netif *tun, struct pbuf *big, size_t n) {
  S5_ASSERT(n <= big->len);
  if (n > S5_TUN_COPY_MAX) {
    pbuf_realloc(big, (u16_t)n);
    return big;
  }
  struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)n, PBUF_RAM);
  if (p != NULL) memcpy(p->payload, big->payload, n);
  tun->spare = big;
  return p;
}

/* Reads one packet into a pbuf sized for the MTU (with offloads, the big
 * buffer). Returns the packet, or NULL with *err set: EAGAIN when the
 * queue is empty (the pbuf is kept as spare for the next wake-up). */
static struct pbuf *tun_read_packet(struct s5_netif *tun, int *err, unsigned *udp_gso) {
  const struct s5_wctx *w = tun->w;
  int offload = w->cfg->tun.offload;
  struct pbuf *p = tun->spare;
  tun->spare = NULL;
  if (p == NULL) {
    p = pbuf_alloc(PBUF_RAW, (u16_t)(offload ? S5_TUN_BIG_READ : w->cfg->tun.mtu), PBUF_RAM);
    if (p == NULL) {
      *err = ENOMEM;
      return NULL;
    }
  }
  *udp_gso = 0;
  ssize_t n = offload ? tun_read_offload(tun, p, udp_gso) : read(tun->fd, p->payload, p->len);
  if (n <= 0) {
    tun->spare = p;
    *err = n < 0 ? errno : EIO;
    return NULL;
  }
  S5_ASSERT((size_t)n <= p->len); /* a read never fills more than it was given */
  if (offload) {
    p = tun_take_big(tun, p, (size_t)n);
    if (p == NULL) {
      *err = ENOMEM;
      return NULL;
    }
  } else {
    pbuf_realloc(p, (u16_t)n);
  }
  S5_STAT_ADD(w->stats, tun_rx_packets, 1);
  S5_STAT_ADD(w->stats, tun_rx_bytes, n);
  return p;
}

static void tun_readable(uv_poll_t *handle, int status, int events);
static void tun_retry_cb(uv_timer_t *timer);

/* A queue that failed (POLLERR/POLLHUP, on which libuv stops watching it, or
 * a read error other than EAGAIN) is not read until tun_retry() watches it
 * again. One line when it fails and one when it recovers, however often it
 * fails meanwhile (tun_errors counts each). While it fails, the worker's
 * heartbeat stands still, so the watchdog reports the queue; a device that
 * was deleted ends the daemon from the control loop (threads/daemon/control.c). */
static void tun_failed(struct s5_netif *tun, const char *what, const char *why) {
  uv_poll_stop(&tun->poll);
  S5_STAT_ADD(tun->w->stats, tun_errors, 1);
  if (tun->retry_ms == 0) {
    tun->retry_ms = S5_TUN_RETRY_MIN_MS;
    S5_STAT_SET(tun->w->stats, tun_failing, 1);
    s5_error("%s TUN queue (fd %d): %s; not read until it recovers (retrying every %u-%u ms)", what, tun->fd,
             why, S5_TUN_RETRY_MIN_MS, S5_TUN_RETRY_MAX_MS);
  } else if (tun->retry_ms < S5_TUN_RETRY_MAX_MS) {
    tun->retry_ms = tun->retry_ms * 2 > S5_TUN_RETRY_MAX_MS ? S5_TUN_RETRY_MAX_MS : tun->retry_ms * 2;
  }
  uv_timer_start(&tun->retry, tun_retry_cb, tun->retry_ms, 0);
}

static void tun_recovered(struct s5_netif *tun) {
  tun->retry_ms = 0;
  S5_STAT_SET(tun->w->stats, tun_failing, 0);
  s5_info("TUN queue (fd %d) is read again", tun->fd);
}

/* Watches the queue again and reads it at once: a packet or EAGAIN says it
 * works, an error that it still fails. */
static void tun_retry_cb(uv_timer_t *timer) {
  struct s5_netif *tun = timer->data;
  int r = uv_poll_start(&tun->poll, UV_READABLE, tun_readable);
  if (r < 0) {
    tun_failed(tun, "watching", uv_strerror(r));
    return;
  }
  tun_readable(&tun->poll, 0, UV_READABLE);
}

static void tun_readable(uv_poll_t *handle, int status, int events) {
  (void)events;
  struct s5_netif *tun = handle->data;
  if (status < 0) { /* libuv has stopped the handle */
    tun_failed(tun, "polling",
               status == UV_EBADF ? "error or hang-up (POLLERR/POLLHUP)" : uv_strerror(status));
    return;
  }
  for (int i = 0; i < S5_TUN_READ_BATCH; i++) {
    int err = 0;
    unsigned udp_gso = 0;
    struct pbuf *p = tun_read_packet(tun, &err, &udp_gso);
    if (p == NULL && err != EAGAIN && err != EINTR) {
      tun_failed(tun, "reading", strerror(err));
      return;
    }
    if (tun->retry_ms != 0) tun_recovered(tun);
    if (p == NULL) return;
    /* [tun] icmp = off: lwIP would answer a ping to any address. */
    struct s5_wctx *w = tun->w;
    if (!w->cfg->tun.icmp_reply && s5_icmp_is_echo_request(p->payload, p->len)) {
      S5_STAT_ADD(w->stats, drop_icmp, 1);
      pbuf_free(p);
      continue;
    }
    if (udp_gso != 0 && s5_udp_tun_split(w, tun->udp_tun, p, udp_gso) == 0) continue;
    /* ip_input() owns p from here, whatever it returns. */
    w->netif.input(p, &w->netif);
  }
}

static int netif_watch(struct s5_netif *tun) {
  int r = uv_poll_init(&tun->w->loop, &tun->poll, tun->fd);
  if (r < 0) {
    s5_error("watching TUN queue fd %d: %s", tun->fd, uv_strerror(r));
    return -1;
  }
  tun->poll.data = tun;
  r = uv_timer_init(&tun->w->loop, &tun->retry);
  if (r < 0) {
    s5_error("TUN queue retry timer: %s", uv_strerror(r));
    return -1;
  }
  tun->retry.data = tun;
  r = uv_poll_start(&tun->poll, UV_READABLE, tun_readable);
  if (r < 0) {
    s5_error("watching TUN queue fd %d: %s", tun->fd, uv_strerror(r));
    return -1;
  }
  return 0;
}

void s5_netif_init(struct s5_netif *tun, struct s5_wctx *w, int fd) {
  memset(tun, 0, offsetof(struct s5_netif, tail));
  tun->w = w;
  tun->fd = fd;
}

int s5_netif_start(struct s5_netif *tun) {
  struct s5_wctx *w = tun->w;
  if (netif_add_noaddr(&w->netif, tun, netif_setup, ip_input) == NULL) {
    s5_error("lwIP refused the TUN netif");
    return -1;
  }
  netif_set_default(&w->netif);
  netif_set_up(&w->netif);
  netif_set_link_up(&w->netif);
  return netif_watch(tun);
}

int s5_netif_failing(const struct s5_netif *tun) { return tun->retry_ms != 0; }

/* The poll handle and retry timer are closed with the other handles by the worker. */
void s5_netif_stop(struct s5_netif *tun) {
  struct s5_wctx *w = tun->w;
  if (w->netif.state != NULL) netif_remove(&w->netif); /* state is set by netif_add */
  if (tun->spare != NULL) {
    pbuf_free(tun->spare);
    tun->spare = NULL;
  }
}
