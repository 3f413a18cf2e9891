/* SPDX-License-Identifier: MIT */
/* A new flow's route: where it goes, decided once, for TCP sessions and
 * UDP associations alike. s5_route_init computes the value from the
 * flow's destination: the mapped name (looked up once), the [rules] rule
 * that matched and its outbound (block, direct, an upstream or [balance]).
 * Then the route is a cursor over the candidate upstreams, in the order
 * the strategy gives them from the shared health table (core/shared/
 * uptab.h): s5_route_first, then s5_route_next for each failure, with the
 * failure's cause as the proxy client reported it, until one grants the
 * request (s5_route_granted) or there is none left.
 *
 *   s5_route_init     the value: target, rule, outbound
 *   s5_route_first    the first upstream (NULL: none may take it now)
 *   s5_route_next     the last one failed: counted; the next, or NULL
 *   s5_route_skip     the last one cannot carry this flow: the next, or NULL
 *   s5_route_granted  the last one carried it
 *
 * A route holds no resources: it is a value in its owner. */
#ifndef S5_CORE_ROUTE_H
#define S5_CORE_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/addr.h"
#include "ini/config.h"
#include "shared/uptab.h"

enum s5_route_kind {
  S5_ROUTE_PROXY,  /* through an upstream: s5_route_first */
  S5_ROUTE_DIRECT, /* [rules] direct: cfg->direct */
  S5_ROUTE_BLOCK,  /* [rules] block: refused */
  S5_ROUTE_GONE,   /* a mapped address that stands for no name any more: refused */
};

struct s5_route {
  const struct s5_config *cfg; /* the owner's, held by it */
  struct s5_target target;     /* the destination, by its mapped name when it has one */
  uint8_t proto;               /* IPPROTO_TCP or IPPROTO_UDP */
  enum s5_route_kind kind;
  int outbound;   /* [rules]' answer: an upstream's index, S5_OUTBOUND_*; BALANCE without rules */
  uint32_t rule;  /* the rule that matched, S5_RULE_DEFAULT */
  char label[48]; /* "FILE:LINE" or "default" for the logs; "" without [rules] */
  uint64_t hash;  /* the destination's, for strategy = hash (0 until needed) */
  uint32_t tried; /* upstreams it may not take (failed, or cannot carry it), a bit per index */
  int up;         /* the upstream now, its index in cfg->upstreams; -1: none yet */
  uint32_t downs; /* the upstream's down count when chosen (s5_uptab_granted) */
  uint8_t sniff;  /* [sniff]: S5_ROUTE_SNIFF_* bits, its name is to be learnt */
  uint8_t named;  /* enum s5_name_src: how target.name (or, override off, the rule's name) was learnt */
};

/* What a flow is sniffed for (struct s5_route sniff). */
#define S5_ROUTE_SNIFF_TLS 1u
#define S5_ROUTE_SNIFF_HTTP 2u
#define S5_ROUTE_SNIFF_QUIC 4u /* UDP */

/* The route of a new flow of proto to dst from src (the client). Counts
 * the rule's hit. Returns r->kind. */
enum s5_route_kind s5_route_init(struct s5_route *r, const struct s5_config *cfg, uint8_t proto,
                                 const struct sockaddr_storage *dst, const struct sockaddr_storage *src);

/* [sniff]: the name learnt from the flow's first bytes (how: src, an enum
 * s5_name_src), for the flow to src that s5_route_init made the route of
 * (with sniff set). The rules run again with it (its hit counted), and
 * with [sniff] override the CONNECT goes by the name; a name under [sniff]
 * skip is not used. Returns r->kind. */
enum s5_route_kind s5_route_named(struct s5_route *r, const char *name, int src,
                                  const struct sockaddr_storage *srcaddr);

/* [sniff]: what a flow of proto to port is sniffed for (S5_ROUTE_SNIFF_*
 * bits: TLS and HTTP for TCP, QUIC for UDP), and whether a name found is one [sniff] skip
 * names (then not used). For s5_route_init and --explain. */
unsigned s5_route_sniff_port(const struct s5_config *cfg, uint8_t proto, uint16_t port);
int s5_route_name_skipped(const struct s5_config *cfg, const char *name);

/* The first upstream for a PROXY route, or NULL with why when none may
 * take the flow now: every candidate is down, the one its rule names is
 * down, or none can carry UDP. Counted as no_upstream when it is for want
 * of a healthy one. */
const struct s5_upstream_cfg *s5_route_first(struct s5_route *r, char *why, size_t len);

/* The set-up through the current upstream failed for cause (every: an
 * S5_UP_REFUSING that counts for any destination; why: for the log line
 * that may mark it down). Counted against it unless the destination
 * refused. Returns the next candidate, or NULL when the flow does not move
 * on: the destination refused (the next would hear the same), a rule
 * named this upstream, none is left, or the owner cannot move (move 0:
 * the client's bytes went with the request, or its time is up). */
const struct s5_upstream_cfg *s5_route_next(struct s5_route *r, enum s5_up_cause cause, int every,
                                            const char *why, int move);

/* The current upstream cannot carry this flow (SOCKS4 and an IPv6
 * address), through no fault of its own: the next candidate, or NULL. */
const struct s5_upstream_cfg *s5_route_skip(struct s5_route *r);

/* The set-up through the current upstream succeeded, hs_us after the flow
 * began, on queue q: counted open there (s5_uptab_ended when it ends). */
void s5_route_granted(struct s5_route *r, unsigned q, uint64_t hs_us);

/* The [group] the route goes through (its name, in r->cfg), or NULL when
 * its outbound is not a group. */
const char *s5_route_group_name(const struct s5_route *r);

/* Does the current upstream still take new flows? (An association ends
 * when its upstream goes down.) */
int s5_route_up(const struct s5_route *r);

#endif
