/* SPDX-License-Identifier: MIT */
/* net.ipv4.conf.all.src_valid_mark while auto-route is on: strict
 * reverse-path filtering then looks up a packet's source with the packet's
 * mark, which nft.h's table restores from its connection, so that replies
 * to marked connections pass it (nft.h (2)). The value found is put back
 * at the stop; after kill -9 it stays 1 (it changes nothing for packets
 * without a mark). IPv6 has no such check in the kernel's routing. */
#ifndef S5_TUN_SRCMARK_H
#define S5_TUN_SRCMARK_H

/* Sets it to 1 if it is not; returns 0 or -errno. */
int s5_srcmark_enable(void);

/* Puts back what enable found, if enable changed it; returns 0 or -errno. */
int s5_srcmark_restore(void);

#endif
