/* SPDX-License-Identifier: MIT */
/* auto-route's connection marks, what routing rules cannot do alone, both
 * through conntrack. Policy routing sees packets, not connections; an
 * nftables table of ours (through libnftables: one atomic transaction, no
 * shell-out) carries a connection's mark to all its packets:
 *
 *   table inet s5tund {
 *     chain prerouting {
 *       type filter hook prerouting priority mangle;
 *       iifname != "DEV" ct direction original fib daddr type local ct mark set MARK  # (1)
 *       ct mark MARK meta mark set MARK                                             # (2)
 *     }
 *     chain output {
 *       type route hook output priority mangle;
 *       meta mark MARK ct mark set MARK                                             # (2)
 *       meta skuid { A-B, ... } ct mark set MARK    # (2) exclude-uid's users
 *       (or: meta skuid != { A-B, ... } ...)            all but include-uid's
 *       meta mark 0 ct mark MARK meta mark set MARK                                 # (1)
 *     }
 *   }
 *
 * (1) exclude-local: a connection that came into this host from outside the
 * tunnel (SSH to it, a web server on it, from the LAN or through the
 * default gateway) is marked, and its replies carry the mark, so rule 5335
 * lets them leave the way the connection came, not into the tunnel.
 * (2) always: strict reverse-path filtering (rp_filter = 1) checks where a
 * reply would be routed back to. Unmarked, that is the tunnel (rule 5335)
 * for every source but the connected networks: the proxy's replies when
 * the proxy is behind the default gateway, and (1)'s connections from
 * beyond it, and those of the users that per-user routing keeps out of the
 * tunnel (an ssh -D of exclude-uid: the check's lookup has no user), would
 * be dropped. So the packets of marked connections are
 * marked as they come in, and with net.ipv4.conf.all.src_valid_mark = 1
 * (set by route.c while auto-route is on) the check uses the mark, and the
 * main table. Forwarded packets (a router's LAN clients) are never marked:
 * (1) takes only packets for this host, and their connections were never
 * seen in the output hook.
 *
 * MARK is [socks5] mark: a packet carrying it is what auto-route already
 * keeps out of the tunnel. */
#ifndef S5_TUN_NFT_H
#define S5_TUN_NFT_H

#include <stddef.h>
#include <stdint.h>

#include "tun/route_spec.h"

#define S5_NFT_TABLE "s5tund"

/* Installs (or atomically replaces an earlier run's) table; the (1) rules
 * only with exclude_local. Returns 0 or -errno with the reason in err. */
int s5_nft_install(const struct s5_route_spec *spec, char *err, size_t errlen);

/* Removes the table if it is there. Returns 1 if it was, 0 if not, or
 * -errno with the reason in err (err may be NULL). */
int s5_nft_remove(char *err, size_t errlen);

#endif
