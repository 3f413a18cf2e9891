/* SPDX-License-Identifier: MIT */
/* The TUN queue as the worker's lwIP netif (netif.c): the queue's packets
 * go into lwIP, lwIP's packets go out to the queue. Its state is the
 * worker's (one queue, one netif); it reaches the rest of the worker only
 * through the worker context. */
#ifndef S5_CORE_NETIF_H
#define S5_CORE_NETIF_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ctx/wctx.h"

struct pbuf;
struct s5_udp_tun;

/* The most a packet lwIP sends can hold (tot_len is a u16_t). */
#define S5_NETIF_MAX_PACKET 65536

struct s5_netif {
  struct s5_wctx *w;
  int fd;             /* the TUN queue; owned by whoever opened it */
  uv_poll_t poll;     /* readable TUN queue */
  uv_timer_t retry;   /* watches the queue again after an error */
  unsigned retry_ms;  /* the next retry's delay, doubling; 0 = healthy */
  struct pbuf *spare; /* allocated, not yet filled by a TUN read */
  /* UDP's writer to this queue (core/netif/udp_tun.h): started and stopped
   * by core/udp/udp.c, NULL while UDP is not running; the netif hands it
   * the GSO packets to split. */
  struct s5_udp_tun *udp_tun;
  /* The end of a packet that has more pbufs than one writev takes iovecs,
   * copied (netif.c: netif_write). Last, so that init need not clear it. */
  uint8_t tail[S5_NETIF_MAX_PACKET];
};
_Static_assert(offsetof(struct s5_netif, tail) + S5_NETIF_MAX_PACKET == sizeof(struct s5_netif),
               "struct s5_netif: tail is the last member (s5_netif_init clears what precedes it)");

/* Prepares n for TUN queue fd, w's netif (nothing to undo). */
void s5_netif_init(struct s5_netif *n, struct s5_wctx *w, int fd);

/* Adds the netif to lwIP (this thread's instance) and watches the queue.
 * Returns 0, or -1 (logged). s5_netif_stop() undoes it either way. */
int s5_netif_start(struct s5_netif *n);

/* Removes the netif. Its poll handle and timer close with the worker's other handles. */
void s5_netif_stop(struct s5_netif *n);

/* 1 while the queue fails and is not read (the watchdog's heartbeat stands still). */
int s5_netif_failing(const struct s5_netif *n);

/* The TCP segment size the device's MTU allows; with offloads, lwIP may
 * send longer segments, which the kernel cuts to this size (GSO). */
unsigned s5_netif_gso_size(const struct s5_wctx *w, int v6);

#endif
