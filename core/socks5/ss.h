/* SPDX-License-Identifier: MIT */
/* Shadowsocks to the proxy ([upstream] type = shadowsocks, AEAD 2017 or 2022): a
 * pump (pump.h) with the Shadowsocks codec. Up: a random salt, then the
 * pair's bytes as AEAD chunks (ss_aead.h); the proxy client's first bytes
 * there are the target address (ATYP, address, port, as SOCKS5 writes
 * it). Down: the server's salt, then chunks, opened into the pair. No
 * handshake: done() comes when the TCP connect is up. A chunk that fails
 * its tag (a wrong password or method, or tampering), a length over
 * 0x3FFF or a stream cut inside a chunk: one warning naming the upstream,
 * counted (stream_bad), and that connection closed. The 2022-blake3-*
 * methods (SIP022): the PSK from base64, the request's headers around the
 * target (ss2022.h), the down stream by ss2022_dec.h with the worker's
 * replay filter; its refusals (also type, request salt, clock skew,
 * replay) warned by cause, counted alike. */
#ifndef S5_CORE_SOCKS5_SS_H
#define S5_CORE_SOCKS5_SS_H

#include <stddef.h>
#include <uv.h>

#include "socks5/pump.h"

struct s5_upstream_cfg;

/* Connects to up's address with its mark (pump.h's s5_pump_start). */
struct s5_pump *s5_ss_start(uv_loop_t *loop, const struct s5_upstream_cfg *up, s5_pump_done *done, void *arg,
                            int *plain, char *why, size_t cap);

#endif
