/* SPDX-License-Identifier: MIT */
/* Process mode: the segments the supervisor writes to a dead worker's
 * clients on its TUN queue (threads/recovery/flowreset.c), for a flow of the shared
 * table (core/shared/flowtab.h). No I/O. */
#ifndef S5_THREADS_FLOWPROBE_H
#define S5_THREADS_FLOWPROBE_H

#include <stddef.h>
#include <stdint.h>

#include "shared/flowtab.h"

/* Writes into buf a segment without payload from f's remote to its client
 * with the given seq and ack numbers and TCP flags (IPv4 or IPv6, checksums
 * filled). Returns its length (40 or 60), or 0 when cap is too small. */
#define S5_TCP_RST 0x04
#define S5_TCP_ACK 0x10
size_t s5_flow_probe(const struct s5_flow *f, uint32_t seq, uint32_t ack, uint8_t flags, uint8_t *buf,
                     size_t cap);

#endif
