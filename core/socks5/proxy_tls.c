/* SPDX-License-Identifier: MIT */
/* The proxy client over a pump (proxy.h, pump.h): its socket is the plain
 * end of a TLS connection (tls.c) or a Shadowsocks one (ss.c); the pump's
 * handshake's end is its connect's. */
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socks5/proxy.h"
#include "ctx/wctx.h"
#include "ini/config.h"
#include "socks5/ss.h"
#include "socks5/tls.h"

static void proxy_pump_done(void *arg, int status, const char *why) {
  s5_proxy_up(arg, status > 0 ? UV_EPROTO : status, why); /* p->pump stays ours until the close */
}

int s5_proxy_pump(struct s5_proxy *p, char *why, size_t cap) {
  int fd = -1, ss = p->up->type == S5_UPSTREAM_SHADOWSOCKS;
  p->pump = (ss ? s5_ss_start : s5_tls_start)(&p->w->loop, p->up, proxy_pump_done, p, &fd, why, cap);
  if (p->pump == NULL) return UV_EPROTO;
  int r = uv_tcp_open(&p->sock, fd);
  if (r < 0) {
    snprintf(why, cap, "%s to upstream %s: opening its plain end: %s", ss ? "Shadowsocks" : "TLS",
             p->up->name, uv_strerror(r));
    close(fd);
    s5_proxy_pump_detach(p, 0);
  }
  return r;
}

void s5_proxy_pump_detach(struct s5_proxy *p, int reset) {
  if (p->pump != NULL) s5_pump_detach(p->pump, reset);
  p->pump = NULL;
}

/* A pooled Shadowsocks connection's turn to be up: as a fresh one's is
 * once its TCP connect succeeded (s5_proxy_up: the target, then granted).
 * Unless its server hung up meanwhile (the pump passed its FIN on to our
 * end): then a fresh connection, unseen, as for a pooled one whose reply
 * never came, before a first chunk would go on it and its end be taken
 * for a refusal (ss.c's silent server). */
static void proxy_pump_adopted_up(uv_timer_t *timer) {
  struct s5_proxy *p = (struct s5_proxy *)((char *)timer - offsetof(struct s5_proxy, timer));
  uv_os_fd_t fd;
  char b;
  if (uv_fileno((const uv_handle_t *)&p->sock, &fd) == 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0 &&
      s5_proxy_retry(p, p->up, 0) == 0) {
    S5_STAT_ADD(p->w->stats, pool_retried, 1);
    return;
  }
  s5_proxy_up(p, 0, NULL);
}

int s5_proxy_pump_adopted(struct s5_proxy *p) {
  return uv_timer_start(&p->timer, proxy_pump_adopted_up, 0, 0);
}

static void proxy_sock_dropped(uv_handle_t *handle) {
  struct s5_proxy *p = (struct s5_proxy *)(void *)((char *)handle - offsetof(struct s5_proxy, sock));
  if (p->closing) s5_proxy_release(p);
  else p->handles_open--;
}

void s5_proxy_sock_drop(struct s5_proxy *p) {
  if (!p->sock_open || p->closing) return;
  p->sock_open = 0;
  uv_close((uv_handle_t *)&p->sock, proxy_sock_dropped);
}
