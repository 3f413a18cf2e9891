/* The TUN queue as an lwIP netif: packets read from the queue fd go straight
 * into pbufs and into ip_input(); packets lwIP sends go out with one writev()
 * over the pbuf chain, without being copied into a flat buffer first. */
#include <errno.h>
#include <string.h>
#include <linux/virtio_net.h>
#include <sys/uio.h>
#include <unistd.h>

#include "icmp.h"
#include "log.h"
#include "worker.h"

#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"

/* A wake-up reads until EAGAIN, but at most this many packets, so that a
 * flood on the TUN cannot starve the proxy sockets and timers on the same
 * loop: the poll handle is level-triggered and comes straight back. */
#define S5_TUN_READ_BATCH 256

/* pbuf chains from lwIP are a header pbuf plus one or a few data pbufs. */
#define S5_TUN_IOV_MAX 32

/* With offloads (S5_TUN_OFFLOAD) reads may be TCP segments of up to 64 KiB;
 * one read buffer of that size is kept. A packet of up to this size is
 * copied into a pbuf of its own size instead, so that small packets queued
 * in lwIP (or waiting for the proxy) never pin 64 KiB each: a packet handed
 * over in the big buffer fills at least half of it. */
#define S5_TUN_BIG_READ 65535
#define S5_TUN_COPY_MAX 32768

/* What precedes every packet with offloads: for our writes, all zero (no
 * GSO, checksums complete). */
static const struct virtio_net_hdr vnet_none;

static err_t netif_write(struct netif *nif, struct pbuf *p) {
  struct s5_worker *w = nif->state;
  struct iovec iov[S5_TUN_IOV_MAX];
  int n = 0;
  if (w->cfg->tun.offload) {
    iov[n].iov_base = (void *)&vnet_none;
    iov[n].iov_len = sizeof vnet_none;
    n++;
  }
  for (struct pbuf *q = p; q != NULL && n < S5_TUN_IOV_MAX; q = q->next) {
    if (q->len == 0) continue;
    iov[n].iov_base = q->payload;
    iov[n].iov_len = q->len;
    n++;
  }
  ssize_t r = writev(w->fd, iov, n);
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
  struct s5_worker *w = nif->state;
  nif->name[0] = 't';
  nif->name[1] = 'n';
  nif->mtu = (u16_t)w->cfg->tun.mtu;
#if LWIP_ND6_ALLOW_RA_UPDATES
  nif->mtu6 = nif->mtu;
#endif
  nif->output = netif_output4;
  nif->output_ip6 = netif_output6;
  nif->flags = NETIF_FLAG_UP | NETIF_FLAG_LINK_UP | NETIF_FLAG_ANY_DEST;
  return ERR_OK;
}

/* Reads one packet into a pbuf sized for the MTU. Returns the packet, NULL
 * on EAGAIN (the pbuf is kept as w->spare for the next wake-up). */
/* With offloads: the virtio header goes to the stack, the packet into the
 * big buffer. The header needs no looking at: GSO segments are just large
 * segments to lwIP, and partial checksums are not verified (lwipopts.h). */
static ssize_t tun_read_offload(struct s5_worker *w, struct pbuf *p) {
  struct virtio_net_hdr vh;
  struct iovec iov[2] = {{&vh, sizeof vh}, {p->payload, p->len}};
  ssize_t n = readv(w->fd, iov, 2);
  if (n >= 0 && (size_t)n < sizeof vh) {
    errno = EIO;
    return -1;
  }
  return n < 0 ? n : n - (ssize_t)sizeof vh;
}

/* Hands over the big buffer for a large packet; copies a small one into a
 * pbuf of its own size and keeps the big buffer for the next read. */
static struct pbuf *tun_take_big(struct s5_worker *w, struct pbuf *big, size_t n) {
  if (n > S5_TUN_COPY_MAX) {
    pbuf_realloc(big, (u16_t)n);
    return big;
  }
  struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)n, PBUF_RAM);
  if (p != NULL) memcpy(p->payload, big->payload, n);
  w->spare = big;
  return p;
}

static struct pbuf *tun_read_packet(struct s5_worker *w, int *err) {
  int offload = w->cfg->tun.offload;
  struct pbuf *p = w->spare;
  w->spare = NULL;
  if (p == NULL) {
    p = pbuf_alloc(PBUF_RAW, (u16_t)(offload ? S5_TUN_BIG_READ : w->cfg->tun.mtu), PBUF_RAM);
    if (p == NULL) {
      *err = ENOMEM;
      return NULL;
    }
  }
  ssize_t n = offload ? tun_read_offload(w, p) : read(w->fd, p->payload, p->len);
  if (n <= 0) {
    w->spare = p;
    *err = n < 0 ? errno : EIO;
    return NULL;
  }
  if (offload) {
    p = tun_take_big(w, p, (size_t)n);
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

static void tun_readable(uv_poll_t *handle, int status, int events) {
  struct s5_worker *w = handle->data;
  if (status < 0) {
    s5_error("polling TUN queue: %s", uv_strerror(status));
    return;
  }
  for (int i = 0; i < S5_TUN_READ_BATCH; i++) {
    int err = 0;
    struct pbuf *p = tun_read_packet(w, &err);
    if (p == NULL) {
      if (err != EAGAIN && err != EINTR)
        s5_error("reading TUN queue: %s", strerror(err));
      return;
    }
    /* [tun] icmp = off: lwIP would answer a ping to any address. */
    if (!w->cfg->tun.icmp_reply && s5_icmp_is_echo_request(p->payload, p->len)) {
      S5_STAT_ADD(w->stats, drop_icmp, 1);
      pbuf_free(p);
      continue;
    }
    /* ip_input() owns p from here, whatever it returns. */
    w->netif.input(p, &w->netif);
  }
}

int s5_netif_start(struct s5_worker *w) {
  if (netif_add_noaddr(&w->netif, w, netif_setup, ip_input) == NULL) {
    s5_error("lwIP refused the TUN netif");
    return -1;
  }
  netif_set_default(&w->netif);
  netif_set_up(&w->netif);
  netif_set_link_up(&w->netif);

  int r = uv_poll_init(&w->loop, &w->tun_poll, w->fd);
  if (r < 0) {
    s5_error("watching TUN queue fd %d: %s", w->fd, uv_strerror(r));
    return -1;
  }
  w->tun_poll.data = w;
  r = uv_poll_start(&w->tun_poll, UV_READABLE, tun_readable);
  if (r < 0) {
    s5_error("watching TUN queue fd %d: %s", w->fd, uv_strerror(r));
    return -1;
  }
  return 0;
}

/* The poll handle is closed with the other handles by the worker. */
void s5_netif_stop(struct s5_worker *w) {
  if (w->netif.state != NULL) netif_remove(&w->netif);   /* state is set by netif_add */
  if (w->spare != NULL) {
    pbuf_free(w->spare);
    w->spare = NULL;
  }
}
