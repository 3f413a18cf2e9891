/* SPDX-License-Identifier: MIT */
/* The state file of the mapped names ([dns] state): the table's names and
 * their addresses, so that a restarted s5tund gives every name the address
 * it had before and a client that resolved before the restart reaches the
 * same name with the address it holds.
 *
 * The file is text, version 1, written whole to PATH.tmp, fsynced and
 * renamed over PATH (then the directory fsynced), so a reader sees the old
 * file or the new one, never a part:
 *
 *   s5tund-dnsmap 1
 *   network 100.64.0.0/10
 *   network6 fdff:5335::/96        ("network6 -" without an IPv6 pool)
 *   names 2
 *   100.64.0.1 example.com         (least recently used first; a name's
 *   100.64.0.2 www.example.org      IPv6 address is its entry's, as ever)
 *   sum 3f1c0a9b2d4e5f60           (FNV-1a 64 of every byte before "sum")
 *
 * Loading trusts nothing: the size is bounded by the table's, the sum must
 * match, the networks must be the configured ones, every name must be
 * [a-z0-9_-] labels of 1..63 bytes (1..253 in all), every address inside
 * the network, no name and no address twice. Any fault leaves the table
 * empty. An address inside the network but beyond cache-size (it was
 * lowered) is skipped and counted. */
#ifndef S5_CORE_DNS_STATE_H
#define S5_CORE_DNS_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "dns/dns_table.h"
#include "ini/config.h"

#define S5_DNS_STATE_VERSION 1
#define S5_DNS_STATE_NONE (-2) /* s5_dns_state_load(): there is no file */

/* 1 when name (len bytes) may be written to and read from the file. */
int s5_dns_state_name_ok(const char *name, size_t len);

/* Writes the table's names to path (see above) for the pools net4 and net6
 * (net6->family 0: none). *generation gets the table's generation of the
 * copy written. Returns the names written, or -1 with err set. */
long s5_dns_state_save(struct s5_dns_table *t, const struct s5_prefix *net4, const struct s5_prefix *net6,
                       const char *path, uint64_t *generation, char *err, size_t errlen);

/* Reads path into the (empty) table made for net4 and net6. Returns the
 * names restored, S5_DNS_STATE_NONE when path does not exist, or -1 with
 * err set (the file is not used; the table is left empty). *skipped (may
 * be NULL) counts the entries beyond the table's size. */
long s5_dns_state_load(struct s5_dns_table *t, const struct s5_prefix *net4, const struct s5_prefix *net6,
                       const char *path, long *skipped, char *err, size_t errlen);

#endif
