/* SPDX-License-Identifier: MIT */
/* The device's transmit queue length and its drops (txq.c). */
#ifndef S5_TUN_TXQ_H
#define S5_TUN_TXQ_H

#include <stdint.h>

/* The queue length of device NAME in the calling thread's namespace.
 * 0 or -errno. */
int s5_tun_txqlen_get(const char *name, unsigned *qlen);
int s5_tun_txqlen_set(const char *name, unsigned qlen);

/* /proc/net/dev of the calling thread's namespace, kept open so that it is
 * read for that namespace later from anywhere: an fd, or -errno. */
int s5_tun_drops_open(void);

/* The transmit drops of NAME from that fd: 0, or -errno (-ENODEV: gone). */
int s5_tun_drops_read(int fd, const char *name, uint64_t *tx_dropped);

#endif
