/* SPDX-License-Identifier: MIT */
/* s5tund --connections: every open TCP session and UDP association, on
 * request. Workers own their sessions, so nothing is kept up to date for
 * this: a request bumps a counter in memory shared with every worker
 * (mapped before they start) and pokes them; each worker, on its own loop,
 * writes its sessions into its queue's list and says it is done. The
 * control loop waits for them (bounded), then renders the table
 * (threads/ctl/conntab_render.c). A worker
 * pays only when somebody asks: one pass over its sessions. */
#ifndef S5_CORE_CONNTAB_H
#define S5_CORE_CONNTAB_H

#include <stdint.h>

#define S5_CONN_MAX (1u << 16) /* entries per queue in one answer; beyond it counted */

enum s5_conn_state { S5_CONN_CONNECTING, S5_CONN_OPEN, S5_CONN_HALF_CLOSED, S5_CONN_DRAINING };

struct s5_conn {
  uint8_t udp;   /* 0: TCP session, 1: UDP association */
  uint8_t state; /* enum s5_conn_state */
  uint8_t v6;
  uint8_t has_dest;             /* a UDP association has sent nothing yet: 0 */
  uint8_t client[16], dest[16]; /* IPv4 in the first 4 bytes */
  uint16_t client_port, dest_port;
  uint64_t id;
  uint64_t bytes_up, bytes_down;
  uint64_t started_ms, last_ms; /* the worker's loop clock: CLOCK_MONOTONIC ms */
  char name[128];               /* the destination's name, "" for none (cut at 127) */
  char named_by[8];             /* how it was learnt: "mapped", "tls", "http"; "" for none */
  char upstream[32];            /* the upstream that carries it, "" before its CONNECT was granted */
  char group[32];               /* the [group] it goes through, "" for none */
  char rule[48];                /* [rules]: the rule ("FILE:LINE", "default") that chose it; "" without */
};

/* Its state is stored in a byte. */
_Static_assert(S5_CONN_DRAINING <= UINT8_MAX, "enum s5_conn_state fits struct s5_conn's state");

struct s5_connq; /* one queue's list */

/* Maps the lists of `queues` queues. Returns 0 or -errno. */
int s5_conntab_setup(unsigned queues);
struct s5_connq *s5_conntab_queue(unsigned queue);

/* Worker: the request it should answer, or 0 when it has answered the last
 * one. Then begin (empties the list), put each connection, say done. */
uint64_t s5_conntab_pending(const struct s5_connq *q);
void s5_conntab_begin(struct s5_connq *q);
void s5_conntab_put(struct s5_connq *q, const struct s5_conn *c);
void s5_conntab_done(struct s5_connq *q, uint64_t req);

/* Control loop: a new request (every queue's list emptied); returns its
 * number. Then, after poking the workers, s5_conntab_answered() tells
 * whether queue i has answered it. */
uint64_t s5_conntab_request(void);
int s5_conntab_answered(unsigned queue, uint64_t req);

/* Control loop: the number of queues, and queue i's answer to req: its
 * entries (*n of them; *over more did not fit), or NULL when it has not
 * answered. threads/ctl/conntab_render.c renders them. */
unsigned s5_conntab_queues(void);
const struct s5_conn *s5_conntab_answer(unsigned queue, uint64_t req, uint32_t *n, uint64_t *over);

#endif
