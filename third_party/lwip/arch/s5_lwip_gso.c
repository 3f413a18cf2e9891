/* SPDX-License-Identifier: MIT */
/* The TCP output hook (lwipopts.h): the client MSS of the pcb a segment
 * belongs to, for the netif write that follows on this thread. 0 when the
 * pcb keeps lwIP's own segment sizes (or a RST has no pcb). */
#include "lwip/tcp.h"

#include <stdint.h>

LWIP_THREAD_LOCAL unsigned short s5_lwip_out_gso;

unsigned int *s5_lwip_tcp_out_opts(const struct tcp_pcb *pcb, unsigned int *opts) {
  s5_lwip_out_gso = pcb == NULL ? 0 : (unsigned short)(uintptr_t)tcp_ext_arg_get(pcb, S5_LWIP_EXT_CLIENT_MSS);
  return opts;
}
