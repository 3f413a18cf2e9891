/* SPDX-License-Identifier: MIT */
/* The proxy client over TLS (proxy.h): its socket is the plain end of a
 * TLS connection (tls.c); the handshake's end is its connect's. */
#include <stdio.h>
#include <unistd.h>

#include "socks5/proxy.h"
#include "ctx/wctx.h"
#include "ini/config.h"
#include "socks5/tls.h"

static void proxy_tls_done(void *arg, int status, const char *why) {
  struct s5_proxy *p = arg;
  p->tls = NULL; /* the pump's own from here */
  s5_proxy_up(p, status > 0 ? UV_EPROTO : status, why);
}

int s5_proxy_tls(struct s5_proxy *p, char *why, size_t cap) {
  int fd = -1;
  p->tls = s5_tls_start(&p->w->loop, p->up, proxy_tls_done, p, &fd, why, cap);
  if (p->tls == NULL) return UV_EPROTO;
  int r = uv_tcp_open(&p->sock, fd);
  if (r < 0) {
    snprintf(why, cap, "TLS to upstream %s: opening its plain end: %s", p->up->name, uv_strerror(r));
    close(fd);
    s5_proxy_tls_detach(p);
  }
  return r;
}

void s5_proxy_tls_detach(struct s5_proxy *p) {
  if (p->tls != NULL) s5_tls_detach(p->tls);
  p->tls = NULL;
}
