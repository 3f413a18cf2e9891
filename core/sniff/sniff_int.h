/* SPDX-License-Identifier: MIT */
/* Inside the sniff layer: what the TLS and QUIC parsers share. */
#ifndef S5_CORE_SNIFF_INT_H
#define S5_CORE_SNIFF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "sniff/sniff.h"

/* name[0..len) as a host name: lower-cased into out, a trailing dot
 * dropped; 0 if it is not a valid host name or is an address literal. */
int s5_sniff_name(const uint8_t *name, size_t len, char out[S5_SNIFF_NAME_MAX + 1]);

/* A whole ClientHello's body (after the 4-byte handshake header), for TLS
 * and QUIC alike: FOUND with its server_name, else NONE. */
enum s5_sniff s5_sniff_client_hello(const uint8_t *body, size_t len, char name[S5_SNIFF_NAME_MAX + 1]);

#endif
