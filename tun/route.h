/* SPDX-License-Identifier: MIT */
/* auto-route: policy routing that sends all traffic into the device except
 * packets carrying the proxy sockets' mark, so the proxy connections
 * themselves never loop back into the tunnel:
 *
 *   ip rule  add iif NAME lookup main pref S5_ROUTE_LOCAL_PREF
 *   ip rule  add lookup main suppress_prefixlength 0 pref S5_ROUTE_LOCAL_PREF
 *                                                   (exclude-local)
 *   ip rule  add not fwmark MARK lookup S5_ROUTE_TABLE pref S5_ROUTE_PREF
 *   ip route add default dev NAME table S5_ROUTE_TABLE
 *   ip route add throw PREFIX table S5_ROUTE_TABLE  (each route-exclude)
 *
 * (with route-include, a route via the device for each included prefix
 * instead of the default one; see route_table.c),
 * for IPv4 and IPv6. Per-user routing adds rules at S5_ROUTE_UID_PREF, just
 * before: with exclude-uid "uidrange A-B lookup main" for each range (those
 * users go around the tunnel); with include-uid "fwmark MARK lookup main",
 * then "uidrange A-B lookup S5_ROUTE_TABLE" for each range, and no
 * catch-all rule (only those users go into it). With the kill switch also
 *
 *   ip route add unreachable default table S5_ROUTE_TABLE metric S5_ROUTE_BLOCK_METRIC
 *
 * (or one such copy per included prefix) behind the device's route: while the device exists its route wins; when
 * it is gone (s5tund killed) the rule still sends everything unmarked into
 * the table, where it now meets "unreachable" instead of falling through to
 * the main table and out around the proxy. The rules and routes are found
 * again by table and priority, so those a killed run left behind are
 * replaced at the next start; the caller makes sure no other live s5tund
 * owns them (threads/device/device.c). */
#ifndef S5_TUN_ROUTE_H
#define S5_TUN_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "tun/route_spec.h"

/* Installs routes, rules (and with exclude_local the connection marks) for
 * both families, then removes whatever else an earlier run left at our
 * priorities and in our table. Returns 0 or -errno with what failed in err
 * (and then leaves nothing of ours behind). */
int s5_route_install(const struct s5_route_spec *spec, char *err, size_t errlen);

/* A reload: the table's prefixes only (the rules stay as they are), the
 * new routes in before the stale ones go. Returns 0 or -errno with err. */
int s5_route_update(const struct s5_route_spec *spec, char *err, size_t errlen);

/* Removes every rule of our priorities, every route in our table and the
 * connection marks (from this run or an earlier one). Returns how many
 * were removed, or -errno. */
int s5_route_remove(void);

#endif
