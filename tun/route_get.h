/* SPDX-License-Identifier: MIT */
/* Which device the kernel would send a packet out of: one RTM_GETROUTE,
 * for the data path's rare questions (a UDP relay address, once per
 * association: is it routed into our own device?). */
#ifndef S5_TUN_ROUTE_GET_H
#define S5_TUN_ROUTE_GET_H

#include <stdint.h>
#include <sys/socket.h>

/* The output interface index for dst, from src (may be NULL) with mark
 * (0: none); or -errno (-ENETUNREACH and friends: no route). */
int s5_route_get_oif(const struct sockaddr *dst, const struct sockaddr *src, uint32_t mark);

#endif
