/* SPDX-License-Identifier: MIT */
/* [sniff] for TCP sessions: a flow whose route (outbound/route.h) could go
 * elsewhere by name gets its SYN-ACK at once; its first bytes are held in
 * the relay (never acknowledged beyond lwIP's window), copied here (at
 * most S5_SNIFF_HOLD_MAX) and parsed (core/sniff/sniff.h) until a name is
 * found, none can be, or [sniff] timeout passes. Then the session goes on
 * as [socks5] optimistic does: the route with the name, the CONNECT, the
 * held bytes right behind it; the copy goes again to the next upstream
 * when the first refuses (no server byte has reached the client).
 * A failure (no name, or silence) is told to the worker's table of
 * destinations that failed (sniff/sniff_skip.h), which UDP shares. */
#ifndef S5_CORE_SNIFFING_H
#define S5_CORE_SNIFFING_H

#include <stdint.h>
#include <uv.h>

#include "lwip/ip_addr.h"
#include "sniff/sniff.h"
#include "sniff/sniff_skip.h"

struct s5_session;

enum s5_sniffing_state {
  S5_SNIFFING_WAIT,    /* bytes awaited */
  S5_SNIFFING_DONE,    /* decided: name (or none), the route goes on */
  S5_SNIFFING_GRANTED, /* an upstream carries it: the copy is freed once no write uses it */
};

/* A sniffing session's (s->sniff, allocated at its SYN, freed with it). */
struct s5_sniffing {
  uint8_t as;      /* S5_ROUTE_SNIFF_* */
  uint8_t state;   /* enum s5_sniffing_state */
  uint8_t src;     /* enum s5_name_src of name; S5_NAME_NONE: none found */
  uint16_t len;    /* bytes copied into buf */
  uint16_t again;  /* failover: bytes of buf written again on the next upstream before the relay's */
  uint8_t writing; /* write_req (those bytes) in flight */
  uv_write_t write_req;
  char name[S5_SNIFF_NAME_MAX + 1];
  uint8_t buf[S5_SNIFF_HOLD_MAX];
};

/* The session holds its client's bytes until it knows a name: 0, or -1
 * for want of memory (then it goes on by address). */
int s5_sniffing_begin(struct s5_session *s, unsigned as);
/* The client sent bytes (or its FIN): 1 when decided now (s->sniff->state
 * DONE, counted), 0 while more is needed. */
int s5_sniffing_look(struct s5_session *s);
/* [sniff] timeout passed with nothing decided: DONE without a name, counted. */
void s5_sniffing_timeout(struct s5_session *s);
/* The CONNECT was granted: the copy goes (now, or when its write is back). */
void s5_sniffing_granted(struct s5_session *s);
void s5_sniffing_free(struct s5_session *s);

#endif
