/* SPDX-License-Identifier: MIT */
/* exclude-local's half that routing rules cannot do: a connection that came
 * into this host from outside the tunnel (SSH to it, a web server on it,
 * from the LAN or through the default gateway) must have its replies leave
 * the way it came, not go into the tunnel. Policy routing sees packets, not
 * connections, so conntrack carries it: an nftables table of ours, through
 * libnftables (one atomic transaction, no shell-out):
 *
 *   table inet s5tund {
 *     chain inbound {   # new and earlier inbound connections are marked
 *       type filter hook input priority mangle;
 *       iifname != "DEV" ct direction original ct mark set MARK
 *     }
 *     chain replies {   # their replies carry the mark, so rule
 *       type route hook output priority mangle;   # 5335 lets them go
 *       meta mark 0 ct mark MARK meta mark set MARK
 *     }
 *   }
 *
 * MARK is [socks5] mark: a packet carrying it is what auto-route already
 * keeps out of the tunnel. Only packets to or from this host's own sockets
 * pass these hooks; forwarded ones (a router's LAN clients) do not. */
#ifndef S5_TUN_NFT_H
#define S5_TUN_NFT_H

#include <stddef.h>
#include <stdint.h>

#define S5_NFT_TABLE "s5tund"

/* Installs (or atomically replaces an earlier run's) table. Returns 0 or
 * -errno with the reason in err. */
int s5_nft_install(const char *dev, uint32_t mark, char *err, size_t errlen);

/* Removes the table if it is there. Returns 1 if it was, 0 if not, or
 * -errno with the reason in err (err may be NULL). */
int s5_nft_remove(char *err, size_t errlen);

#endif
