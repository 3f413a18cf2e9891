/* SPDX-License-Identifier: MIT */
/* [log] sessions = true: one line per finished TCP session and UDP
 * association, at info: client, destination (and the name it stood for),
 * proxy (with its [group]: "via ADDR:PORT (GROUP/MEMBER)"), bytes each way, duration, how it ended. At most [log]
 * sessions-max-per-second lines per worker and second; the rest are counted
 * (session_log_dropped) and summed up in one line per second. Formatting
 * only happens for lines that are written. */
#ifndef S5_CORE_SESSIONLOG_H
#define S5_CORE_SESSIONLOG_H

#include <stdint.h>

#include "lwip/ip_addr.h"

struct s5_wctx;
struct s5_config;

/* What a session or association leaves behind for its line. */
struct s5_session_record {
  char kind; /* 's' (TCP session) or 'u' (UDP association) */
  uint64_t id;
  ip_addr_t client, dest;
  uint16_t client_port, dest_port;
  const char *name;     /* the name the destination stood for (mapped, or sniffed: named), or NULL */
  const char *named_by; /* a sniffed name's source, "tls", "http" (static); NULL: mapped, or none */
  const char
    *upstream; /* the upstream's name (in the held configuration), NULL: the first; or direct, block, none */
  const char *group;             /* the [group] it went through (in the held configuration), or NULL */
  char rule[48];                 /* [rules]: "FILE:LINE" or "default" that chose it; "" without rules */
  uint64_t bytes_up, bytes_down; /* client to proxy, proxy to client (payload) */
  uint64_t started_ms;
  const char *end; /* how it ended */
};

struct s5_conn;
/* The --connections entry of a record (addresses, ports, bytes, times, name). */
void s5_session_record_entry(const struct s5_session_record *r, struct s5_conn *c);

/* 1 if cfg asks for session lines (checked before collecting anything costly). */
int s5_session_log_on(const struct s5_config *cfg);

/* Writes r's line, or counts it when this second's lines are used up.
 * cfg: the configuration the session started with (its proxy). */
void s5_session_log(struct s5_wctx *w, const struct s5_config *cfg, const struct s5_session_record *r);

/* Once per second or so (the worker's timer): the summary of lines left out. */
void s5_session_log_tick(struct s5_wctx *w);

#endif
