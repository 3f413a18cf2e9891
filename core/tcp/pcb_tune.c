/* SPDX-License-Identifier: MIT */
/* See pcb_tune.h. */
#include "tcp/pcb_tune.h"

#include <stdint.h>

#include "ini/config.h"
#include "netif/netif.h"

#include "lwip/tcp.h"

/* With offloads the kernel cuts our segments to the MSS (GSO): lwIP builds
 * them as large as a pbuf holds, one write per 64 KiB. A client with a
 * smaller MSS than the device's (a LAN client at MTU 1500) keeps it in the
 * pcb, whose segments the netif then writes with that gso_size (lwipopts.h:
 * the output hook). Below S5_GSO_MSS_MIN, lwIP's own sizes (no thousands
 * of tiny segments asked of the kernel by a hostile client). */
#define S5_GSO_MSS_MIN 536u
#define S5_GSO_MSS4 65495u /* 65535 - IPv4 - TCP headers */
#define S5_GSO_MSS6 65475u /* 65535 - IPv6 - TCP headers */

static void pcb_use_gso(const struct s5_wctx *w, struct tcp_pcb *pcb) {
  int v6 = IP_IS_V6(&pcb->local_ip);
  unsigned device = s5_netif_gso_size(w, v6);
  if (!w->cfg->tun.offload || pcb->mss > device || pcb->mss < S5_GSO_MSS_MIN) return;
  if (pcb->mss < device) tcp_ext_arg_set(pcb, S5_LWIP_EXT_CLIENT_MSS, (void *)(uintptr_t)pcb->mss);
  pcb->mss = (u16_t)(v6 ? S5_GSO_MSS6 : S5_GSO_MSS4);
}

/* [session] tcp-buffer: the most one session holds each way, the client's
 * bytes not yet taken by the proxy (the receive window) and the proxy's
 * not yet acknowledged by the client (the send buffer). Set before the
 * SYN-ACK announces the window (lwIP patch 0005); lwIP's default is the
 * compiled maximum. */
_Static_assert(S5_TCP_BUFFER_MAX == TCP_WND && S5_TCP_BUFFER_MAX == TCP_SND_BUF,
               "[session] tcp-buffer's maximum is lwIP's TCP_WND and TCP_SND_BUF");

static void pcb_limit_buffers(struct tcp_pcb *pcb, tcpwnd_size_t limit) {
  if (limit >= TCP_WND) return;
  pcb->rcv_wnd_max = limit;
  pcb->rcv_wnd = pcb->rcv_ann_wnd = TCP_WND_MAX(pcb);
  pcb->snd_buf = limit;
}

void s5_pcb_tune(const struct s5_wctx *w, struct tcp_pcb *pcb, uint32_t tcp_buffer) {
  pcb_use_gso(w, pcb);
  pcb_limit_buffers(pcb, (tcpwnd_size_t)tcp_buffer);
}
