/* SPDX-License-Identifier: MIT */
/* auto-route's table (S5_ROUTE_TABLE): what it holds for one family, made
 * so with batched rtnetlink. Internal to tun/ (route.c). */
#ifndef S5_TUN_ROUTE_TABLE_H
#define S5_TUN_ROUTE_TABLE_H

#include "tun/netlink.h"
#include "tun/route_spec.h"

/* Makes the table's routes of `family` what spec asks: every wanted route
 * is added or replaced in place first, then every other route of ours in
 * the table is removed, so that a prefix wanted before and after never
 * changes its way, even for a moment. ifindex: the device's. Returns 0 or
 * -errno with what failed in err. */
int s5_route_table_set(struct nl_conn *c, int family, int ifindex, const struct s5_route_spec *spec,
                       char *err, size_t errlen);

/* Removes every route of the table of `family`; returns how many, or -errno. */
int s5_route_table_clear(struct nl_conn *c, int family);

#endif
