/* SPDX-License-Identifier: MIT */
/* Private to udp/: an association through a Shadowsocks upstream (2017
 * AEAD, or 2022: core/socks5/ss2022_udp.h). No control connection and no ASSOCIATE: the relay socket is
 * connected to the server's own address (its udp-address if set), and
 * each datagram crosses as one packet [salt][sealed target address and
 * payload][tag] (core/socks5/ss_aead.h), a fresh random salt each. The
 * server answers in the same form, with the remote's address in the
 * sealed text. Sealing uses one buffer per worker (the packet is then
 * copied into the send arena like any relay datagram, and batched the
 * same way); opening is done in place in the read ring. */
#ifndef S5_CORE_UDP_SS_H
#define S5_CORE_UDP_SS_H

#include <stddef.h>
#include <stdint.h>

#include "udp/assoc.h"

struct pbuf;

/* The association's cipher, once it is granted (its upstream is a
 * Shadowsocks one). 0, or -1 with why. */
int s5__udp_ss_init(struct s5_assoc *a, char *why, size_t cap);

/* One datagram to the relay: hdr (hlen bytes, the SOCKS5 UDP header) and
 * the chain p; hdr NULL: p starts with its header (a queued datagram).
 * Through Shadowsocks when the association is, else as it is. */
void s5__udp_relay_send(struct s5_assoc *a, const uint8_t *hdr, size_t hlen, const struct pbuf *p);

/* A packet read from the server (buf[*len], opened in place): 0 with
 * *buf and *len the datagram in SOCKS5's form (RSV, FRAG, address, port,
 * payload), or -1 when it failed its tag or was short (counted in the
 * upstream's stream_bad and drop_udp, one rate-limited warning). */
int s5__udp_ss_open(struct s5_assoc *a, uint8_t **buf, size_t *len);

/* The association's cipher freed, its keys cleared. */
void s5__udp_ss_free(struct s5_assoc *a);

/* The worker's sealing buffer (NULL: none yet), freed at stop. */
void s5__udp_ss_stop(struct s5_udp *u);

#endif
