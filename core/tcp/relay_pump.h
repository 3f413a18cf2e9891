/* SPDX-License-Identifier: MIT */
/* An encrypted upstream's session in its bulk phase (relay_pump.c): the
 * relay reads and writes through the pump's codec (socks5/pump.h), the
 * socket pair of the handshake handed over and closed. */
#ifndef S5_CORE_RELAY_PUMP_H
#define S5_CORE_RELAY_PUMP_H

#include "socks5/pump.h"
#include "tcp/relay.h"

/* c started; p its proxy client's pump (owned by the proxy client, which
 * detaches it at its close, after the relay's release). */
void s5_relay_pump(struct s5_relay_conn *c, struct s5_pump *p);

#endif
