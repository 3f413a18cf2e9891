/* SPDX-License-Identifier: MIT */
/* The upstreams' TLS state in the shared table (uptab.h): per upstream,
 * the last handshake's version, cipher suite and verified name, and the
 * handshakes refused by cause, for --stats, Prometheus and the log.
 *
 * Lock-free as the rest of the table: the state is one 64-bit word
 * (version, the suite's IANA number, verified, a hash of the name) that
 * the worker whose handshake changes it swaps in with a compare-and-swap
 * (that worker logs the one info line); the name goes word by word beside
 * it, and a reader takes it only when its hash matches the word's. */
#ifndef S5_CORE_UPTLS_H
#define S5_CORE_UPTLS_H

#include <stddef.h>

#include "shared/uptab.h"

/* What a renderer shows of one upstream's TLS state. */
struct s5_up_tls {
  unsigned version; /* the protocol's number (0x0303: TLS 1.2); 0: no handshake yet */
  unsigned cipher;  /* the suite's IANA number */
  int verified;     /* certificate and name checked (tls-verify) */
  char name[48];    /* the name checked ("" while a writer changes it) */
};

/* A handshake with slot i ended with this state; name: the certificate's
 * name that matched (or the address checked). 1 when this call changed
 * the shared state (the caller logs it), else 0. */
int s5_uptab_tls_state(struct s5_uptab *t, unsigned i, unsigned version, unsigned cipher, int verified,
                       const char *name);
void s5_uptab_tls_read(const struct s5_up_slot *u, struct s5_up_tls *out);
/* A handshake with slot i refused for cause; the count of that cause now. */
uint64_t s5_uptab_tls_failed(struct s5_uptab *t, unsigned i, enum s5_tls_cause cause);

/* "name", "ca", "expired", "certificate", "alert", "version", "reset", "not_tls", "other". */
const char *s5_tls_cause_name(enum s5_tls_cause c);
/* "TLSv1.2", "TLSv1.3" (as OpenSSL says them), "" for none, else "0x0302". */
const char *s5_tls_version_name(unsigned version, char *buf, size_t cap);
/* The suite's name as OpenSSL says it, or "0xC0FF" for one not in the table. */
const char *s5_tls_cipher_name(unsigned cipher, char *buf, size_t cap);

#endif
