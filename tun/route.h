/* auto-route: policy routing that sends all traffic into the device except
 * packets carrying the proxy sockets' mark, so the proxy connections
 * themselves never loop back into the tunnel:
 *
 *   ip rule  add not fwmark MARK lookup S5_ROUTE_TABLE pref S5_ROUTE_PREF
 *   ip route add default dev NAME table S5_ROUTE_TABLE
 *
 * for IPv4 and IPv6. The rules are found again by their table and
 * priority, so rules a killed run left behind are removed at the next start
 * (the routes go with the device). */
#ifndef S5_TUN_ROUTE_H
#define S5_TUN_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#define S5_ROUTE_TABLE 5335u
#define S5_ROUTE_PREF  5335u

/* Removes stale rules, then installs rules and routes for both families.
 * Returns 0 or -errno with what failed in err. */
int s5_route_install(const char *name, uint32_t mark, char *err, size_t errlen);

/* Removes the rules (any left, from this run or an earlier one). Returns
 * how many were removed, or -errno. */
int s5_route_remove(void);

#endif
