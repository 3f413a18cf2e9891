/* SPDX-License-Identifier: MIT */
/* Private to the ini/ folder: the value parsers (value.c) and the key table
 * (keys.c) shared by the INI loader (config_load.c) and the command-line
 * flags (args.c). */
#ifndef S5_INI_INTERNAL_H
#define S5_INI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ini/config.h"
#include "ini/sockaddr.h"

/* Longest physical line accepted in a configuration file, in bytes. Room for
 * a PATH_MAX log file name plus the key and some quoting. */
#define S5_INI_LINE_MAX 8192

/* Buffer size that fits a value shown in a message (see s5_show). */
#define S5_SHOW_MAX 80

/* Writes text into buf as a double-quoted, escaped and (if long) shortened
 * string, so that a message never carries raw control bytes or kilobytes. */
void s5_show(char *buf, size_t len, const char *text);

/* The parsers below take a complete value (quotes and comments already
 * removed), store the result and return 0, or write a short "what is wrong"
 * into err and return -1. The caller prefixes where the value came from. */

/* Decimal digits only: no sign, no blanks, no 0x, nothing after the digits. */
int s5_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out, char *err,
                  size_t errlen);

/* Decimal, or hexadecimal with a 0x prefix: 0..4294967295. */
int s5_parse_u32(const char *text, uint32_t *out, char *err, size_t errlen);

/* true/false, yes/no, on/off, 1/0, in any letter case. */
int s5_parse_bool(const char *text, bool *out, char *err, size_t errlen);

/* One of a NULL-terminated list of words (any letter case); *out = index. */
int s5_parse_word(const char *text, const char *const *words, int *out, char *err, size_t errlen);

/* A network interface name the kernel accepts, given exactly (no template). */
int s5_parse_ifname(const char *text, char *out, size_t outlen, char *err, size_t errlen);

/* ADDR/LEN of the given family; an empty text clears *out (family 0). */
int s5_parse_prefix(const char *text, int family, struct s5_prefix *out, char *err, size_t errlen);
/* What types.c shares with the types defined elsewhere (prefixes.c): a
 * key's field, its "name = value" line (quoted where needed), and a
 * comma-separated list walked item by item, blanks trimmed. */
struct s5_key;
void *s5_key_field(const struct s5_key *k, struct s5_config *cfg);
const void *s5_key_cfield(const struct s5_key *k, const struct s5_config *cfg);
void s5_key_print_plain(const struct s5_key *k, FILE *out, const char *value);
void s5_key_print_quoted(const struct s5_key *k, FILE *out, const char *value);
int s5_list_each(const char *text, int (*fn)(char *item, void *arg, char *err, size_t errlen), void *arg,
                 char *err, size_t errlen);

/* A route list's prefix: either family, ADDR/LEN (1..32 or 1..128) or a bare
 * address, no host bits. */
int s5_parse_route_prefix(const char *text, struct s5_prefix *out, char *err, size_t errlen);

/* An IPv4 or IPv6 literal (optionally in brackets) stored with the port. */
int s5_parse_ip(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *sslen, char *err,
                size_t errlen);

/* "ADDR:PORT" or "[V6]:PORT" to listen on; the unspecified address is
 * allowed (every address). */
int s5_parse_listen(const char *text, struct sockaddr_storage *ss, char *err, size_t errlen);

/* Free text of at most max bytes without control characters. The value is
 * never repeated in the message: it may be a password. */
int s5_parse_text(const char *text, size_t max, char *out, size_t outlen, char *err, size_t errlen);

/* Key table (keys.c, keys.h). Keys are identified by their index
 * 0..s5_config_key_count()-1. */
int s5_config_key_count(void);
int s5_config_key_find(const char *section, const char *name);
const char *s5_config_key_section(int key);
const char *s5_config_key_name(int key);
int s5_config_key_set(struct s5_config *cfg, int key, const char *value, char *err, size_t errlen);

/* Writes a hint for a key that is not in the table (wrong section, wrong
 * letter case, unknown section) into err, e.g. "unknown key in [tun]". */
void s5_config_key_unknown(const char *section, const char *name, char *err, size_t errlen);

/* Checks rules that involve more than one key (config_check.c). On failure
 * returns -1, names the key to blame in *key (and in *up its upstream for a
 * key of an [upstream] section, else -1) and writes what is wrong into
 * err. */
int s5_config_check(const struct s5_config *cfg, int *key, int *up, char *err, size_t errlen);

/* The long names of the command-line flags (args.c), for the docs test. */
int s5_args_flag_count(void);
const char *s5_args_flag_name(int i);

/* One key's line as --check-config prints it, without the newline (keys.c). */
struct s5_key;
void s5_key_line(const struct s5_key *k, const struct s5_config *cfg, char *buf, size_t len);

/* The upstream list (upstream_sections.c). Keys of [upstream NAME] sections are
 * declared at upstreams[0] (key->upstream); these read, print and merge
 * them for upstream up. */
int s5_upstream_key_set(struct s5_config *cfg, int key, unsigned up, const char *value, char *err,
                        size_t errlen);
void s5_upstream_key_print(const struct s5_config *cfg, int key, unsigned up, FILE *out);
/* Upstream up to the [upstream] defaults, named name. */
void s5_upstream_defaults(struct s5_config *cfg, unsigned up, const char *name);
/* 0 if name may name an upstream, else -1 with err. */
/* The name of an [upstream NAME] or [group NAME] section (section
 * "upstream" or "group"): 1..31 of [A-Za-z0-9_.-], and not one of
 * [rules]' own outbounds. 0, or -1 with err. */
int s5_section_name_check(const char *section, const char *name, char *err, size_t errlen);
/* direct and block, [rules]' own outbounds, which a rule names itself: what
 * they do ("s5tund connects itself", "refused"), else NULL. */
const char *s5_rules_own_outbound(const char *name);
/* Appends an upstream with the defaults: its index, or -1 with err (a bad or
 * taken name, too many). */
int s5_upstream_add(struct s5_config *cfg, const char *name, char *err, size_t errlen);
/* The [upstream NAME] sections of cfg (all but a [socks5] one). */
void s5_upstream_print(const struct s5_config *cfg, FILE *out);
/* s5_config_reload_merge() for one [upstream] key over every upstream. */
int s5_upstream_reload_merge(struct s5_config *next, const struct s5_config *cur, int key,
                             s5_config_reload_warn *warn, void *arg);
/* --proxy URL (proxy_url.c): appends the upstream it describes. */
int s5_upstream_from_url(struct s5_config *cfg, const char *url, char *err, size_t errlen);

/* The group list (group_sections.c), as the upstream list above: keys of
 * [group NAME] sections are declared at groups[0] (key->group). */
int s5_group_key_set(struct s5_config *cfg, int key, unsigned g, const char *value, char *err, size_t errlen);
void s5_group_key_print(const struct s5_config *cfg, int key, unsigned g, FILE *out);
/* Appends a group with the defaults: its index, or -1 with err (a bad or
 * taken name, too many). */
int s5_group_add(struct s5_config *cfg, const char *name, char *err, size_t errlen);
/* The [group NAME] sections of cfg. */
void s5_group_print(const struct s5_config *cfg, FILE *out);
/* What group g must be once every section is read (its members resolved):
 * a name no upstream has, one member at least, a probe for fastest, a
 * selected that is a member. 0, or -1 with err and *key (the key to blame,
 * -1: the section itself). */
int s5_group_check(const struct s5_config *cfg, unsigned g, int *key, char *err, size_t errlen);

/* A list file opened for reading: a regular file, or /dev/null; a FIFO,
 * a terminal or /dev/zero is refused (it would block the daemon or never
 * end). NULL with "PATH: what" in err (prefixes.c). */
FILE *s5_open_regular(const char *path, char *err, size_t errlen);

/* After a [rules] key was set from line of the configuration file conf:
 * the line of the item it added, or of default (rules_syntax.c). */
void s5_rules_note_line(struct s5_config *cfg, const char *conf, const char *name, unsigned line);

/* One of --explain, --name, --src, --proto (flag without "--") with its
 * value into s5_args_explain()'s flow; flag NULL starts afresh. 0, or -1
 * with what is wrong (explain_query.c). */
int s5_explain_flag(const char *flag, const char *value, char *err, size_t errlen);

#endif
