/* SPDX-License-Identifier: MIT */
/* See relay_pump.h: the relay's io (relay.h) over a pump (pump.h). */
#include "tcp/relay_pump.h"

static int rp_read(void *cx, uint8_t *buf, size_t cap) {
  int r = s5_pump_read(cx, buf, cap);
  return r == -S5_PUMP_EOF ? S5_RELAY_IO_EOF : r < 0 ? -1 : r; /* S5_PUMP_FAILED: -1 */
}

static void rp_want(void *cx, int read) { s5_pump_want(cx, read); }

static long rp_writev(void *cx, const uv_buf_t *bufs, int n) { return s5_pump_writev(cx, bufs, n); }

static int rp_shutdown(void *cx) { return s5_pump_shut(cx); }

static void rp_ready(void *arg, int readable) { s5_relay_ready(arg, readable); }

static const struct s5_relay_io rp_io = {rp_read, rp_want, rp_writev, rp_shutdown};

void s5_relay_pump(struct s5_relay_conn *c, struct s5_pump *p) {
  if (s5_pump_direct(p, rp_ready, c) == 0) s5_relay_direct(c, &rp_io, p);
}
