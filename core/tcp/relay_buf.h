/* SPDX-License-Identifier: MIT */
/* The relay's read buffers (relay_buf.c), for relay.c. */
#ifndef S5_CORE_RELAY_BUF_H
#define S5_CORE_RELAY_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "tcp/relay.h"

/* Resume reading from the proxy only when a read of this size fits. */
#define S5_RELAY_MIN_ROOM 4096

/* How many bytes lwIP can queue for the client right now. */
size_t s5_relay_room(const struct s5_relay_conn *s);
/* Where the next read lands: the current read buffer (the fallback when
 * none can be allocated). */
uint8_t *s5_relay_rbuf(struct s5_relay *r);
/* Queues n bytes the proxy sent, read into buf (s5_relay_rbuf's). */
err_t s5_relay_queue(struct s5_relay_conn *s, const uint8_t *buf, u16_t n);

#endif
