/* SPDX-License-Identifier: MIT */
/* auto-route's connection marks: see nft.h. */
#include "tun/nft.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>

/* libnftables is loaded for the moment of a transaction and unloaded after:
 * linked in, it and the five libraries it pulls (libnftnl, libmnl, libgmp,
 * libxtables, libjansson) stayed mapped in every process and every worker
 * process for the daemon's life, 0.6 MB of RSS and 0.13 MB of relocated
 * data of their own, for a table written at start and removed at exit. */
#define NFT_LIBRARY "libnftables.so.1"

struct nft_api {
  void *lib;
  struct nft_ctx *(*ctx_new)(uint32_t flags);
  void (*ctx_free)(struct nft_ctx *ctx);
  int (*buffer_output)(struct nft_ctx *ctx);
  int (*buffer_error)(struct nft_ctx *ctx);
  int (*run_cmd)(struct nft_ctx *ctx, const char *buf);
  const char *(*error_buffer)(struct nft_ctx *ctx);
};

/* dlsym() into a function pointer of the right type. */
#define NFT_SYM(api, field, name) (*(void **)&(api)->field = dlsym((api)->lib, name)) != NULL

static int nft_load(struct nft_api *api, const char *what, char *err, size_t errlen) {
  api->lib = dlopen(NFT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (api->lib == NULL) {
    if (err != NULL) snprintf(err, errlen, "%s: %s", what, dlerror());
    return -ENOENT;
  }
  if (NFT_SYM(api, ctx_new, "nft_ctx_new") && NFT_SYM(api, ctx_free, "nft_ctx_free") &&
      NFT_SYM(api, buffer_output, "nft_ctx_buffer_output") &&
      NFT_SYM(api, buffer_error, "nft_ctx_buffer_error") &&
      NFT_SYM(api, run_cmd, "nft_run_cmd_from_buffer") &&
      NFT_SYM(api, error_buffer, "nft_ctx_get_error_buffer"))
    return 0;
  if (err != NULL) snprintf(err, errlen, "%s: %s: %s", what, NFT_LIBRARY, dlerror());
  dlclose(api->lib);
  return -ENOENT;
}

/* One transaction with the library loaded; its error line into err. */
static int nft_transaction(const struct nft_api *api, const char *cmds, const char *what, char *err,
                           size_t errlen) {
  struct nft_ctx *ctx = api->ctx_new(NFT_CTX_DEFAULT);
  if (ctx == NULL) {
    if (err != NULL) snprintf(err, errlen, "%s: libnftables: out of memory", what);
    return -ENOMEM;
  }
  /* Errors into a buffer of ours, never onto our stderr unasked. */
  if (api->buffer_output(ctx) != 0 || api->buffer_error(ctx) != 0) {
    api->ctx_free(ctx);
    if (err != NULL) snprintf(err, errlen, "%s: libnftables: cannot buffer its messages", what);
    return -ENOMEM;
  }
  int r = api->run_cmd(ctx, cmds);
  if (r != 0 && err != NULL) {
    const char *msg = api->error_buffer(ctx);
    size_t n = msg != NULL ? strcspn(msg, "\n") : 0;
    snprintf(err, errlen, "%s: %.*s", what, (int)(n > 200 ? 200 : n), n > 0 ? msg : "failed");
  }
  api->ctx_free(ctx);
  return r != 0 ? -EIO : 0;
}

/* Runs one nft transaction; on failure, libnftables' first error line in
 * err after what. Returns 0, -EIO (libnftables gives no errno), -ENOMEM, or
 * -ENOENT when the library cannot be loaded. */
static int nft_run(const char *cmds, const char *what, char *err, size_t errlen) {
  struct nft_api api;
  int r = nft_load(&api, what, err, errlen);
  if (r < 0) return r;
  r = nft_transaction(&api, cmds, what, err, errlen);
  if (dlclose(api.lib) != 0 && r == 0) { /* never seen; loud if it ever is */
    if (err != NULL) snprintf(err, errlen, "%s: unloading %s: %s", what, NFT_LIBRARY, dlerror());
    r = -EIO;
  }
  return r;
}

/* The users whose traffic goes around the tunnel (exclude-uid's, or all
 * but include-uid's): their connections are marked too (nft.h (2)). */
static void nft_users(const struct s5_route_users *u, uint32_t mark, char *out, size_t outlen) {
  out[0] = '\0';
  if (u->n == 0) return;
  size_t n = (size_t)snprintf(out, outlen, "    meta skuid %s{ ", u->include ? "!= " : "");
  for (unsigned i = 0; i < u->n && n < outlen; i++) {
    const char *sep = i + 1 < u->n ? ", " : "";
    if (u->ranges[i][0] == u->ranges[i][1])
      n += (size_t)snprintf(out + n, outlen - n, "%" PRIu32 "%s", u->ranges[i][0], sep);
    else
      n += (size_t)snprintf(out + n, outlen - n, "%" PRIu32 "-%" PRIu32 "%s", u->ranges[i][0],
                            u->ranges[i][1], sep);
  }
  if (n < outlen) snprintf(out + n, outlen - n, " } ct mark set 0x%x\n", mark);
}

int s5_nft_install(const struct s5_route_spec *spec, char *err, size_t errlen) {
  char cmds[2048], inbound[160] = "", replies[96] = "", users[640];
  uint32_t mark = spec->mark;
  const char *dev = spec->name;
  nft_users(&spec->users, mark, users, sizeof users);
  if (spec->exclude_local) {
    snprintf(inbound, sizeof inbound,
             "    iifname != \"%s\" ct direction original fib daddr type local ct mark set 0x%x\n", dev,
             mark);
    snprintf(replies, sizeof replies, "    meta mark 0 ct mark 0x%1$x meta mark set 0x%1$x\n", mark);
  }
  /* "add" then "delete": whatever an earlier run left goes in the same
   * transaction that puts the new table in, so there is no moment without. */
  snprintf(cmds, sizeof cmds,
           "add table inet %1$s\n"
           "delete table inet %1$s\n"
           "table inet %1$s {\n"
           "  chain prerouting {\n"
           "    type filter hook prerouting priority mangle; policy accept;\n"
           "%2$s"
           "    ct mark 0x%3$x meta mark set 0x%3$x\n"
           "  }\n"
           "  chain output {\n"
           "    type route hook output priority mangle; policy accept;\n"
           "    meta mark 0x%3$x ct mark set 0x%3$x\n"
           "%4$s"
           "%5$s"
           "  }\n"
           "}\n",
           S5_NFT_TABLE, inbound, mark, users, replies);
  return nft_run(cmds, "auto-route: nftables table inet " S5_NFT_TABLE, err, errlen);
}

/* Whether our table is there: "list" of an absent table is an error. */
static int nft_present(void) { return nft_run("list table inet " S5_NFT_TABLE "\n", "", NULL, 0) == 0; }

int s5_nft_remove(char *err, size_t errlen) {
  if (!nft_present()) return 0;
  int r = nft_run("delete table inet " S5_NFT_TABLE "\n",
                  "auto-route: removing nftables table inet " S5_NFT_TABLE, err, errlen);
  return r < 0 ? r : 1;
}
