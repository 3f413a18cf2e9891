/* SPDX-License-Identifier: MIT */
/* The proxy client's upstream, whether the owner's data may follow the
 * request, and the set-up's clock (see proxy.h):
 * connect-timeout over the whole set-up, and within it the upstream's
 * handshake-timeout for the proxy's first answer on each new connection,
 * for an owner that can move on to another upstream (ops->slow). A black
 * hole (takes the TCP connection, never answers) costs handshake-timeout,
 * not connect-timeout. SOCKS5 answers first with its greeting; HTTP and
 * SOCKS4 have none, so for them it bounds the CONNECT's reply too.
 * And its messages' sending, which clears them (credentials). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ctx/wctx.h"
#include "ini/config.h"
#include "socks5/proxy.h"

#define PROXY_OF_TIMER(t) ((struct s5_proxy *)((char *)(t)-offsetof(struct s5_proxy, timer)))

void s5_proxy_use(struct s5_proxy *p, const struct s5_upstream_cfg *up, const struct s5_target *target) {
  p->up = up;
  p->target = target;
  p->pipeline = p->ops->cmd == S5_PROXY_CONNECT && up->type == S5_UPSTREAM_SOCKS5 && up->pipeline;
}

int s5_proxy_send(struct s5_proxy *p, uint8_t *msg, int len) {
  if (len < 0) return len;
  uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
  int sent = uv_try_write((uv_stream_t *)&p->sock, &b, 1);
  explicit_bzero(msg, (size_t)len); /* no copy of a password left on the stack */
  return sent == len ? 0 : -1;
}

int s5_proxy_cleared(int r, uint8_t *msg, size_t cap) {
  explicit_bzero(msg, cap);
  return r;
}

int s5_proxy_data_ok(struct s5_proxy *p) {
  if (p->step == S5_PROXY_DONE) return 1;
  if (!p->requested) return 0;
  p->pooled = 0, p->data_sent = 1; /* the data goes on this connection: no retry without it */
  return 1;
}

static void clock_arm(struct s5_proxy *p);

static void clock_slow(uv_timer_t *timer) {
  struct s5_proxy *p = PROXY_OF_TIMER(timer);
  char why[128];
  p->hs_over = 1;
  clock_arm(p); /* connect-timeout runs on, unless the owner moves on */
  snprintf(why, sizeof why, "no answer from the proxy within handshake-timeout (%u s)",
           p->up->handshake_timeout);
  struct s5_proxy_result r = {.outcome = S5_PROXY_FAILED,
                              .level = S5_LOG_WARN,
                              .why = why,
                              .step = p->step,
                              .slow = 1,
                              .cause = S5_UP_TIMEOUT};
  p->ops->slow(p->owner, &r);
}

static void clock_arm(struct s5_proxy *p) {
  uint64_t now = uv_now(&p->w->loop), left = p->deadline > now ? p->deadline - now : 0;
  uint64_t hs = p->up->handshake_timeout * 1000ull;
  if (p->ops->slow != NULL && !p->hs_over && hs != 0 && hs < left)
    uv_timer_start(&p->timer, clock_slow, hs, 0);
  else uv_timer_start(&p->timer, s5_proxy_expired, left, 0);
}

void s5_proxy_clock(struct s5_proxy *p, uint64_t ms, int heard) {
  if (ms != 0) p->deadline = uv_now(&p->w->loop) + ms;
  p->heard = p->hs_over = heard != 0;
  clock_arm(p);
}

void s5_proxy_clock_heard(struct s5_proxy *p) {
  p->heard = 1;
  if (p->hs_over) return;
  p->hs_over = 1;
  if (p->step < S5_PROXY_DONE) clock_arm(p);
}
