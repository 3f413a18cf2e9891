/* SPDX-License-Identifier: MIT */
/* The connection marks of exclude-local: see nft.h. */
#include "nft.h"

#include <errno.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>

/* Runs one nft transaction; on failure, libnftables' first error line in
 * err after what. Returns 0 or -EIO (libnftables gives no errno). */
static int nft_run(const char *cmds, const char *what, char *err, size_t errlen) {
  struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == NULL) {
    if (err != NULL) snprintf(err, errlen, "%s: libnftables: out of memory", what);
    return -ENOMEM;
  }
  /* Errors into a buffer of ours, never onto our stderr unasked. */
  if (nft_ctx_buffer_output(ctx) != 0 || nft_ctx_buffer_error(ctx) != 0) {
    nft_ctx_free(ctx);
    if (err != NULL) snprintf(err, errlen, "%s: libnftables: cannot buffer its messages", what);
    return -ENOMEM;
  }
  int r = nft_run_cmd_from_buffer(ctx, cmds);
  if (r != 0 && err != NULL) {
    const char *msg = nft_ctx_get_error_buffer(ctx);
    size_t n = msg != NULL ? strcspn(msg, "\n") : 0;
    snprintf(err, errlen, "%s: %.*s", what, (int)(n > 200 ? 200 : n), n > 0 ? msg : "failed");
  }
  nft_ctx_free(ctx);
  return r != 0 ? -EIO : 0;
}

int s5_nft_install(const char *dev, uint32_t mark, char *err, size_t errlen) {
  char cmds[1024];
  /* "add" then "delete": whatever an earlier run left goes in the same
   * transaction that puts the new table in, so there is no moment without. */
  snprintf(cmds, sizeof cmds,
           "add table inet %1$s\n"
           "delete table inet %1$s\n"
           "table inet %1$s {\n"
           "  chain inbound {\n"
           "    type filter hook input priority mangle; policy accept;\n"
           "    iifname != \"%2$s\" ct direction original ct mark set 0x%3$x\n"
           "  }\n"
           "  chain replies {\n"
           "    type route hook output priority mangle; policy accept;\n"
           "    meta mark 0 ct mark 0x%3$x meta mark set 0x%3$x\n"
           "  }\n"
           "}\n",
           S5_NFT_TABLE, dev, mark);
  return nft_run(cmds, "exclude-local: nftables table inet " S5_NFT_TABLE, err, errlen);
}

/* Whether our table is there: "list" of an absent table is an error. */
static int nft_present(void) { return nft_run("list table inet " S5_NFT_TABLE "\n", "", NULL, 0) == 0; }

int s5_nft_remove(char *err, size_t errlen) {
  if (!nft_present()) return 0;
  int r = nft_run("delete table inet " S5_NFT_TABLE "\n",
                  "exclude-local: removing nftables table inet " S5_NFT_TABLE, err, errlen);
  return r < 0 ? r : 1;
}
