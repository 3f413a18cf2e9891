/* SPDX-License-Identifier: MIT */
/* The real start_proxy of a session table (tcp/session.h): a CONNECT to the
 * client's destination through the SOCKS5 client (core/socks5/proxy.c).
 * The worker hands it to s5_sessions_init(); session.c never names it. */
#ifndef S5_CORE_HANDSHAKE_H
#define S5_CORE_HANDSHAKE_H

#include "tcp/session.h"

/* Ends in s5_session_established() or an abort. Returns 0, or -1 (logged):
 * then the client is to be refused. */
int s5_handshake_start(struct s5_session *s);

#endif
