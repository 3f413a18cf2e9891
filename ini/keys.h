/* SPDX-License-Identifier: MIT */
/* The key table: every configuration key once, as data. A key names its
 * section, its type, where it lives in struct s5_config (offsetof), its
 * bounds, its default (as it would be written in the file) and a one-line
 * doc. The loader, the flags, the defaults, the error hints, the section
 * list and --check-config all walk this table (keys.c); the types know how
 * to read and print a value (types.c). Private to ini/ and its tests. */
#ifndef S5_INI_KEYS_H
#define S5_INI_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ini/config.h"

struct s5_key;

/* How one kind of value is read from text and written back. parse stores
 * into cfg at the key's offset, or writes what is wrong into err and
 * returns -1 (cfg may then be half-written: callers work on a copy). print
 * writes the value so that parse reads it back to the same bytes. */
struct s5_key_type {
  const char *name; /* for the docs: "bool", "number", ... */
  int (*parse)(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err, size_t errlen);
  void (*print)(const struct s5_key *k, const struct s5_config *cfg, FILE *out);
};

struct s5_key {
  const char *section; /* "" for the keys before the first [section] */
  const char *name;    /* lowercase; keys are case-sensitive */
  const struct s5_key_type *type;
  size_t offset;            /* of the field in struct s5_config */
  size_t size;              /* of that field */
  unsigned long min, max;   /* numbers: bounds; addresses: max is the port */
  int family;               /* prefixes: AF_INET or AF_INET6 */
  const char *const *words; /* enums: the words, NULL-terminated, index = value */
  bool live;                /* a reload (SIGHUP) applies it, to sessions opened after it */
  bool upstream;   /* a key of every [upstream NAME] section: offset in upstreams[0] (upstream_sections.c) */
  bool group;      /* a key of every [group NAME] section: offset in groups[0] (group_sections.c) */
  bool repeat;     /* may be given many times, each adds a line ([rules] rule, rules-file) */
  const char *def; /* default, in the file's syntax; "" = empty */
  const char *doc; /* one line for people */
};

/* The types (types.c). */
extern const struct s5_key_type s5_type_bool; /* true/false (yes/no, on/off, 1/0) */
extern const struct s5_key_type s5_type_uint; /* unsigned, min..max */
extern const struct s5_key_type
  s5_type_queues; /* unsigned 0..max; 0 resolved to the CPU count in cfg->queues */
extern const struct s5_key_type s5_type_mark;   /* uint32_t, decimal or 0x hex */
extern const struct s5_key_type s5_type_enum;   /* one of words; an int (enum) or, with two words, a bool */
extern const struct s5_key_type s5_type_text;   /* char[size]: at most size-1 bytes, no control characters */
extern const struct s5_key_type s5_type_secret; /* text, printed as "***" */
extern const struct s5_key_type s5_type_user;   /* text, looked up: cfg->run.uid and gid */
extern const struct s5_key_type s5_type_uids; /* struct s5_uid_list: uids, names, ranges A-B; empty = none */
extern const struct s5_key_type s5_type_ifname; /* char[IFNAMSIZ], an exact device name */
extern const struct s5_key_type s5_type_prefix; /* struct s5_prefix of family; empty = unset */
extern const struct s5_key_type s5_type_pool; /* struct s5_prefix: IPv4 network, /30 or wider, no host bits */
extern const struct s5_key_type
  s5_type_pool6; /* struct s5_prefix: IPv6 network /8../120, no host bits; empty = unset */
extern const struct s5_key_type s5_type_prefixes; /* struct s5_prefix_list: either family, comma-separated */
extern const struct s5_key_type
  s5_type_prefix_file;                         /* struct s5_prefix_file: an absolute path, read to check it */
extern const struct s5_key_type s5_type_addr;  /* sockaddr_storage, port max; empty = unset */
extern const struct s5_key_type s5_type_addrs; /* sockaddr_storage[2], port max: "A, B", at most one
                                                    IPv4 ([0]) and one IPv6 ([1]); empty = neither */
extern const struct s5_key_type
  s5_type_proxy; /* an upstream's sockaddr_storage and its addrlen; keeps its port */
extern const struct s5_key_type s5_type_port; /* the port of a sockaddr_storage, 1..65535 */
extern const struct s5_key_type s5_type_listen;
extern const struct s5_key_type s5_type_rule; /* [rules] rule: appended to cfg->rules (rules_syntax.c) */
extern const struct s5_key_type s5_type_rule_file;
extern const struct s5_key_type s5_type_members; /* [group] members: upstream names -> indexes */
extern const struct s5_key_type s5_type_probe;   /* [group] probe: http://HOST:PORT/PATH, connect HOST:PORT */
extern const struct s5_key_type s5_type_ports;   /* struct s5_port_list: 1..65535, comma-separated */
extern const struct s5_key_type s5_type_sniff_skip; /* struct s5_sniff_skip: prefixes and names */
/* [rules] rules-file: appended to cfg->rules */    /* sockaddr_storage from "ADDR:PORT"; empty = unset */

/* The table (keys.c); keys are identified by their index 0..count-1. */
int s5_config_key_count(void);
const struct s5_key *s5_config_key(int key);

/* The sections in table order, "" first; NULL after the last. */
const char *s5_config_section(int i);

#endif
