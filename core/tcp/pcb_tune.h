/* SPDX-License-Identifier: MIT */
/* A new client's pcb, tuned at its SYN before the SYN-ACK goes out: the
 * segment size lwIP builds for the device's offloads (GSO), and the most
 * the session holds each way ([session] tcp-buffer). */
#ifndef S5_CORE_TCP_PCB_TUNE_H
#define S5_CORE_TCP_PCB_TUNE_H

#include <stdint.h>

#include "ctx/wctx.h"

struct tcp_pcb;

void s5_pcb_tune(const struct s5_wctx *w, struct tcp_pcb *pcb, uint32_t tcp_buffer);

#endif
