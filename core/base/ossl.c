/* SPDX-License-Identifier: MIT */
/* OpenSSL loaded on demand: see ossl.h. */
#define S5_OSSL_TABLE_ONLY /* the table's fields by their names, not redirected */
#include "base/ossl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ini/config.h"

struct s5_ossl_table s5_ossl;

/* Each function's name, its library and its slot in s5_ossl. */
static const struct fn {
  enum s5_ossl_lib lib;
  const char *name;
  size_t off;
} fns[] = {
#define S5_OSSL_FN(lib, name) {S5_OSSL_##lib, #name, offsetof(struct s5_ossl_table, name)},
#include "base/ossl_funcs.h"
#undef S5_OSSL_FN
};

static const char *const libname[] = {[S5_OSSL_CRYPTO] = S5_OSSL_LIBCRYPTO, [S5_OSSL_SSL] = S5_OSSL_LIBSSL};
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int loaded[2]; /* set (release) once the library's slots are filled */

int s5_ossl_loaded(enum s5_ossl_lib lib) { return atomic_load_explicit(&loaded[lib], memory_order_acquire); }

/* lib's library opened and its functions looked up, under lock. */
static int load_one(enum s5_ossl_lib lib, char *err, size_t cap) {
  if (atomic_load_explicit(&loaded[lib], memory_order_relaxed)) return 0;
  void *h = dlopen(libname[lib], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    if (err != NULL) snprintf(err, cap, "%s", dlerror());
    return -1;
  }
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    if (fns[i].lib != lib) continue;
    void *f = dlsym(h, fns[i].name);
    if (f == NULL) { /* another OpenSSL than the one built against */
      int n = err != NULL ? snprintf(err, cap, "%s: %s", libname[lib], dlerror()) : 0;
      for (size_t k = 0; k < i; k++) /* nothing of it half there */
        if (fns[k].lib == lib) *(void **)((char *)&s5_ossl + fns[k].off) = NULL;
      if (dlclose(h) != 0 && err != NULL && n >= 0 && (size_t)n < cap) /* never seen; said if it ever is */
        snprintf(err + n, cap - (size_t)n, "; unloading it: %s", dlerror());
      return -1;
    }
    *(void **)((char *)&s5_ossl + fns[i].off) = f;
  }
  atomic_store_explicit(&loaded[lib], 1, memory_order_release);
  return 0; /* never closed: see ossl.h */
}

int s5_ossl_load(enum s5_ossl_lib lib, char *err, size_t cap) {
  if (s5_ossl_loaded(lib)) return 0;
  int r = pthread_mutex_lock(&lock);
  if (r != 0) { /* never seen: the lock is a plain one */
    if (err != NULL) snprintf(err, cap, "%s: pthread_mutex_lock: %s", libname[lib], strerror(r));
    return -1;
  }
  r = load_one(S5_OSSL_CRYPTO, err, cap);
  if (r == 0 && lib == S5_OSSL_SSL) r = load_one(S5_OSSL_SSL, err, cap);
  int u = pthread_mutex_unlock(&lock);
  if (u != 0 && r == 0) { /* never seen: the lock is ours and held */
    if (err != NULL) snprintf(err, cap, "%s: pthread_mutex_unlock: %s", libname[lib], strerror(u));
    r = -1;
  }
  return r;
}

int s5_ossl_needed(const struct s5_config *cfg, char *what, size_t cap) {
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (cfg->upstreams[i].tls && cfg->upstreams[i].type != S5_UPSTREAM_DIRECT) {
      if (i == 0 && cfg->socks5_section) snprintf(what, cap, "[socks5] tls = true");
      else snprintf(what, cap, "[upstream %s] tls = true", cfg->upstreams[i].name);
      return S5_OSSL_SSL;
    }
  for (unsigned i = 0; i < cfg->n_upstreams; i++)
    if (cfg->upstreams[i].type == S5_UPSTREAM_SHADOWSOCKS) {
      snprintf(what, cap, "[upstream %s] type = shadowsocks", cfg->upstreams[i].name);
      return S5_OSSL_CRYPTO;
    }
  if (cfg->sniff.quic.n > 0) {
    snprintf(what, cap, "[sniff] quic");
    return S5_OSSL_CRYPTO;
  }
  return -1;
}

int s5_ossl_load_for(const struct s5_config *cfg, char *err, size_t cap) {
  char what[80], why[400];
  int lib = s5_ossl_needed(cfg, what, sizeof what);
  if (lib < 0 || s5_ossl_load((enum s5_ossl_lib)lib, why, sizeof why) == 0) return 0;
  snprintf(err, cap, "%s needs %s: %s", what, libname[lib], why);
  return -1;
}
