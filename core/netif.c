/* The TUN queue as an lwIP netif: packets read from the queue fd go straight
 * into pbufs and into ip_input(); packets lwIP sends go out with one writev()
 * over the pbuf chain, without being copied into a flat buffer first. */
#include <errno.h>
#include <string.h>
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

static err_t netif_write(struct netif *nif, struct pbuf *p) {
  struct s5_worker *w = nif->state;
  struct iovec iov[S5_TUN_IOV_MAX];
  int n = 0;
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
  S5_STAT_ADD(w->stats, tun_tx_bytes, r);
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
static struct pbuf *tun_read_packet(struct s5_worker *w, int *err) {
  struct pbuf *p = w->spare;
  w->spare = NULL;
  if (p == NULL) {
    p = pbuf_alloc(PBUF_RAW, (u16_t)w->cfg->tun.mtu, PBUF_RAM);
    if (p == NULL) {
      *err = ENOMEM;
      return NULL;
    }
  }
  ssize_t n = read(w->fd, p->payload, p->len);
  if (n <= 0) {
    w->spare = p;
    *err = n < 0 ? errno : EIO;
    return NULL;
  }
  pbuf_realloc(p, (u16_t)n);
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
