/* SPDX-License-Identifier: MIT */
/* The upstreams' shared view: health and counters per upstream, in one
 * area mapped before the workers start (MAP_SHARED, like the stats area),
 * so that threads and forked workers see the same table. Every worker
 * decides alone which upstream a new session takes (s5_uptab_pick), from
 * this table, with atomics and no lock: one read-modify-write per session
 * set-up and end, nothing per packet.
 *
 * Health, passive: an upstream whose set-ups fail [balance] fail-after
 * times in a row (TCP connect, handshake, authentication, timeout; not a
 * CONNECT the destination refused) is marked down by the worker whose
 * failure crossed the line (a compare-and-swap: one warn line). A down
 * upstream takes no new session; queue 0's worker probes it every
 * check-interval (core/socks5/upcheck.c) and the first probe or set-up
 * that succeeds marks it up again (one warn line). When the last one goes
 * down, and when one comes back, one more line says so.
 *
 * Slots are by name: each upstream of a configuration carries its slot
 * (s5_upstream_cfg.slot), assigned at start-up (s5_uptab_init) and by
 * each reload (s5_uptab_assign) before the configuration is published.
 * An upstream a reload keeps keeps its slot, health and counters; one it
 * removes becomes "removed": it takes no new session, its open ones run
 * to their end and are still counted there; one it adds takes a free
 * slot (or a removed one that no session holds any more). */
#ifndef S5_CORE_UPTAB_H
#define S5_CORE_UPTAB_H

#include <stdint.h>

#include "ini/config.h"

/* Why a set-up failed for the upstream's own reason (the causes counted). */
enum s5_up_cause {
  S5_UP_CONNECT,   /* the TCP connection to the proxy */
  S5_UP_HANDSHAKE, /* a bad or cut reply, the greeting */
  S5_UP_AUTH,      /* credentials refused (SOCKS5 auth, HTTP 407) */
  S5_UP_TIMEOUT,   /* connect-timeout, or no answer within handshake-timeout */
  S5_UP_REFUSING,  /* a refusal that means the proxy is broken (HTTP 403, 5xx; SOCKS5 general failure) */
  S5_UP_CAUSES,
  /* Not the upstream's: the destination refused (the next upstream would
   * hear the same), or the set-up was given up by its owner. */
  S5_UP_DESTINATION = S5_UP_CAUSES,
  S5_UP_NONE,
};

/* Why a TLS handshake with the proxy failed (shared/uptls.h names them;
 * each is also a failed[CONNECT] or [HANDSHAKE] of the set-up). */
enum s5_tls_cause {
  S5_TLS_NAME,    /* the certificate is for another name (tls-server-name) */
  S5_TLS_CA,      /* signed by a CA we do not trust (tls-ca-file) */
  S5_TLS_EXPIRED, /* the certificate expired or is not valid yet */
  S5_TLS_CERT,    /* another certificate check */
  S5_TLS_ALERT,   /* the proxy sent an alert (a client certificate it wants: tls-cert-file) */
  S5_TLS_VERSION, /* the proxy offers only TLS below 1.2 */
  S5_TLS_RESET,   /* the proxy reset or closed the connection in the handshake */
  S5_TLS_NOT_TLS, /* the port does not speak TLS */
  S5_TLS_OTHER,
  S5_TLS_CAUSES,
};

/* Handshake time buckets (ms, upper bounds; +Inf after the last), for the
 * Prometheus histogram s5tund_upstream_handshake_seconds. */
#define S5_UP_HS_BUCKETS 12
extern const unsigned s5_up_hs_bucket_ms[S5_UP_HS_BUCKETS];

/* The slots: twice the upstreams a configuration may have, so that a
 * reload that replaces every upstream finds free ones while the removed
 * ones' sessions run on. */
#define S5_UPTAB_SLOTS (2 * S5_UPSTREAMS_MAX)

enum s5_up_state { S5_UP_FREE, S5_UP_ACTIVE, S5_UP_REMOVED };

/* Shadowsocks streams refused, by cause (also counted in stream_bad). */
enum s5_up_ss_cause {
  S5_UP_SS_BAD_TAG,    /* a chunk or header did not open: a wrong password or method, tampering */
  S5_UP_SS_REPLAY,     /* 2022: a server salt seen lately, or not our request's salt */
  S5_UP_SS_CLOCK_SKEW, /* 2022: the server's timestamp more than 30 s off */
  S5_UP_SS_CAUSES
};

struct s5_up_slot {
  char name[32];       /* the upstream's, for the renderers */
  uint32_t state;      /* enum s5_up_state */
  uint32_t down;       /* 0 up, 1 down */
  uint32_t why;        /* enum s5_up_cause of the last failure while down (the fall's, then each check's) */
  uint32_t downs;      /* times it was marked down: a set-up begun before the last one cannot mark it up */
  uint64_t since_unix; /* time of the last state change (start: 0) */
  uint64_t fails_row;  /* set-ups failed in a row */
  uint64_t begun;      /* set-ups least-connections gave it: its ties go to the fewest */
  uint64_t refuse_at;  /* refuse_dest's next entry */
  uint64_t refuse_dest[4]; /* the run's last destinations refused (s5_uptab_refusing); 0 = none */
  uint64_t open;           /* sessions open now, all workers */
  uint64_t total;          /* sessions carried */
  uint64_t failed[S5_UP_CAUSES];
  uint64_t refused;    /* CONNECTs the destination refused (not the upstream's fault) */
  uint64_t retried;    /* set-ups that moved on from here to another upstream */
  uint64_t stream_bad; /* sessions its stream ended: shadowsocks, a chunk that failed authentication or
                            * framing (a wrong password or method, tampering), or was cut short */
  uint64_t ss_bad[S5_UP_SS_CAUSES]; /* of them, by cause (shadowsocks; enum s5_up_ss_cause) */
  uint64_t tls_handshakes; /* tls = true: TLS handshakes done with it (a refused one is failed[CONNECT]) */
  uint64_t tls_resumed;    /* of them, sessions resumed */
  uint64_t tls_failed[S5_TLS_CAUSES]; /* handshakes refused, by cause */
  uint64_t tls_info;                  /* the last handshake's state (shared/uptls.h); 0 = none yet */
  uint64_t tls_name[6];               /* the name it verified: 47 bytes and a NUL, word by word */
  uint64_t bytes_up;                  /* client to proxy, counted as sessions end */
  uint64_t bytes_down;
  uint64_t hs_le[S5_UP_HS_BUCKETS + 1]; /* set-ups granted within each bucket (not cumulative) */
  uint64_t hs_sum_us;                   /* their handshake times, summed */
  uint64_t lat_last_us;                 /* [group] fastest: the last probe's latency; 0 = none yet */
  uint64_t lat_avg_us;                  /* its smoothed latency (probes: shared/uplat.h); 0 = none yet */
} __attribute__((aligned(64)));

/* A [group NAME]'s shared state, by the group's index in the live
 * configuration (s5_uptab_assign carries it over a reload by name). */
struct s5_up_group {
  char name[32];
  uint32_t chosen;     /* fastest: the member taken now; select: the operator's live choice;
                        * an upstream slot + 1, 0 = none (fastest: not measured yet; select:
                        * the configuration's selected) */
  uint64_t since_unix; /* when chosen last changed */
};

struct s5_uptab {
  uint64_t rr;          /* round-robin ticket */
  uint64_t no_upstream; /* sessions refused: every upstream down or failed */
  uint32_t all_down;    /* the "every upstream is down" line was written */
  uint32_t n;           /* slots ever used: u[0..n) (free ones among them are skipped) */
  uint32_t active;      /* upstreams of the live configuration */
  uint32_t fail_after;  /* [balance] fail-after of the live configuration */
  struct s5_up_slot u[S5_UPTAB_SLOTS];
  struct s5_up_group g[S5_GROUPS_MAX];
  /* Sessions open per queue and upstream, each row written by its queue's
   * worker only: what a dead worker left open is taken off open when its
   * queue's next worker starts (s5_uptab_queue_reset). */
  uint64_t open_q[S5_QUEUES_MAX][S5_UPTAB_SLOTS];
};

/* Maps the table for cfg's upstreams (before the workers start) and
 * assigns their slots in cfg. Returns 0 or -errno. s5_uptab() is NULL
 * until then (unit tests: s5_uptab_init). */
int s5_uptab_setup(struct s5_config *cfg);
struct s5_uptab *s5_uptab(void);
/* Fills t (zeroed) for cfg: upstream i in slot i, every one up. */
void s5_uptab_init(struct s5_uptab *t, struct s5_config *cfg);
/* A reload: cfg's upstreams take the slots of their names (or free ones),
 * the live ones cfg no longer has become removed. Once, by the control
 * loop, before cfg is published. */
void s5_uptab_assign(struct s5_uptab *t, struct s5_config *cfg);

/* The destination's hash for [balance] strategy = hash: the mapped name
 * when there is one (every port of a site), else the address and port. */
uint64_t s5_uptab_hash(const struct sockaddr_storage *dest, const char *name);

/* The upstream for a new session under cfg's strategy: the index in
 * cfg->upstreams of an up one that is not in tried (a bit per index), or
 * -1 when there is none. The other calls take the upstream's slot. */
int s5_uptab_pick(struct s5_uptab *t, const struct s5_config *cfg, uint64_t hash, uint32_t tried);
/* The same for group g of cfg (-1: [balance], every upstream) among its
 * members (indexes in cfg->upstreams, in their order) under its strategy.
 * fastest: the member chosen by latency while it is usable, else the
 * usable one of lowest latency (unmeasured ones last, in order); select:
 * the operator's member alone (s5_uptab_group_member). */
int s5_uptab_pick_in(struct s5_uptab *t, const struct s5_config *cfg, int g, uint64_t hash, uint32_t tried);

/* Group g's member now, as an index in cfg->upstreams: select's (the live
 * choice, else the configuration's selected, else the first member);
 * fastest's chosen one (-1 before any measurement). */
int s5_uptab_group_member(const struct s5_uptab *t, const struct s5_config *cfg, unsigned g);
/* Group g of the live configuration now takes upstream slot s (fastest's
 * choice, select's live choice); since is set when it changes. */
void s5_uptab_group_choose(struct s5_uptab *t, unsigned g, unsigned s);

/* Slot i takes new sessions (it is not down). */
int s5_uptab_up(const struct s5_uptab *t, unsigned i);
/* Counted, each: a CONNECT through i the destination refused; a set-up
 * that moved on from i to another upstream; a session refused because no
 * upstream it may take is up. */
void s5_uptab_count_refused(struct s5_uptab *t, unsigned i);
void s5_uptab_count_retried(struct s5_uptab *t, unsigned i);
void s5_uptab_count_no_upstream(struct s5_uptab *t);
/* A session through i ended by its stream's failure (stream_bad). */
void s5_uptab_count_stream_bad(struct s5_uptab *t, unsigned i);
/* Of those, one with a cause counted apart (ss_bad[cause]). */
void s5_uptab_count_ss_bad(struct s5_uptab *t, unsigned i, enum s5_up_ss_cause cause);
/* A TLS handshake with i done; resumed: its session was resumed. */
void s5_uptab_count_tls(struct s5_uptab *t, unsigned i, int resumed);

/* How often slot i was marked down so far: a session reads it when it
 * chooses the upstream, and hands it to s5_uptab_granted. */
uint32_t s5_uptab_downs(const struct s5_uptab *t, unsigned i);
/* A set-up through slot i on queue q succeeded after hs_us: a session
 * opens (open, total, the handshake histogram), the failure run ends, and
 * a down upstream is up again, unless it went down after the set-up began
 * (downs, as s5_uptab_downs read it then, is older): a reply already on
 * its way from a proxy that died since says nothing of it now. */
void s5_uptab_granted(struct s5_uptab *t, unsigned q, unsigned i, uint64_t hs_us, uint32_t downs);
/* A set-up through i failed for cause; 1 when this failure marked it
 * down (an upstream already down takes cause as its why). why: the last
 * failure's text, for the warn line. */
int s5_uptab_failed(struct s5_uptab *t, unsigned i, enum s5_up_cause cause, const char *why);
/* A CONNECT through i was refused in words that say the proxy itself is
 * broken (HTTP 403, a 5xx but 502/504, SOCKS5 general failure): counted
 * in the run of failures like s5_uptab_failed (cause S5_UP_REFUSING).
 * every: each one counts (HTTP 403: the proxy refuses us); else only a
 * destination (dest: s5_uptab_hash) other than the run's last four
 * refused, so that one destination's trouble, which some proxies word as
 * a general failure, never marks it down alone. 1 when it marked it down. */
int s5_uptab_refusing(struct s5_uptab *t, unsigned i, uint64_t dest, int every, const char *why);
/* A check of down slot i failed for cause: the cause it is down for from
 * now on (--stats' why). 1 when that changed it (for the log), else 0. */
int s5_uptab_check_failed(struct s5_uptab *t, unsigned i, enum s5_up_cause cause);
/* A probe of a down upstream answered: up again. */
void s5_uptab_probe_ok(struct s5_uptab *t, unsigned i);
/* A session through i on queue q ended with these bytes. */
void s5_uptab_ended(struct s5_uptab *t, unsigned q, unsigned i, uint64_t up, uint64_t down);
/* Queue q's worker starts: sessions a dead one left counted open are not. */
void s5_uptab_queue_reset(struct s5_uptab *t, unsigned q);

/* "connect", "handshake", "auth", "timeout", "refusing". */
const char *s5_up_cause_name(enum s5_up_cause c);

#endif
