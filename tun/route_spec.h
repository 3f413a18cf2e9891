/* SPDX-License-Identifier: MIT */
/* What auto-route installs (types and constants only): the table, the
 * rules' priorities, the users and prefixes, shared by its rules
 * (route.c), its table (route_table.c) and its connection marks (nft.c). */
#ifndef S5_TUN_ROUTE_SPEC_H
#define S5_TUN_ROUTE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define S5_ROUTE_TABLE 5335u
#define S5_ROUTE_PREF 5335u
#define S5_ROUTE_UID_PREF 5334u           /* per-user rules, checked first */
#define S5_ROUTE_LOCAL_PREF 5333u         /* iif DEV, exclude-local: the main table first */
#define S5_ROUTE_BLOCK_METRIC 4294967295u /* the kill switch's route: last of all */

struct s5_prefix;

/* [tun] exclude-uid or include-uid: inclusive uid ranges. */
struct s5_route_users {
  int include; /* 0: the ranges stay out of the tunnel; 1: only they go in */
  unsigned n;
  const uint32_t (*ranges)[2];
};

/* Prefixes of either family (struct s5_prefix of ini/config.h). */
struct s5_route_prefixes {
  size_t n;
  const struct s5_prefix *p;
};

/* What auto-route installs. */
struct s5_route_spec {
  const char *name; /* the device */
  uint32_t mark;    /* the proxy sockets' mark; with exclude_local also inbound connections' replies */
  int kill_switch;
  int exclude_local; /* connected networks and inbound connections stay out (nft.h) */
  struct s5_route_users users;
  struct s5_route_prefixes exclude, include; /* include empty: everything */
};

#endif
