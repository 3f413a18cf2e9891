/* SPDX-License-Identifier: MIT */
/* s5tund configuration: one read-only struct, filled once at start-up from
 * built-in defaults, then the INI file, then command-line flags, and shared
 * by every worker afterwards (never written again). */
#ifndef S5_INI_CONFIG_H
#define S5_INI_CONFIG_H

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define S5_QUEUES_MAX 256
/* [session] tcp-buffer bounds, in bytes: the most is lwIP's compiled
 * TCP_WND and TCP_SND_BUF (third_party/lwip/lwipopts.h). */
#define S5_TCP_BUFFER_MIN (16u * 1024)
#define S5_TCP_BUFFER_MAX (512u * 1024)
/* Where `s5tund --stats` looks without a SOCKET argument: the systemd
 * unit's RuntimeDirectory. */
#define S5_STATS_DEFAULT_SOCKET "/run/s5tund/s5tund.sock"

enum s5_mode { S5_MODE_THREAD, S5_MODE_PROCESS };

/* [tun] exclude-uid / include-uid: at most this many ranges. */
#define S5_UID_RANGES_MAX 16

/* Inclusive uid ranges; n = 0: unset. */
struct s5_uid_list {
  unsigned n;
  uint32_t r[S5_UID_RANGES_MAX][2];
};

enum s5_log_level { S5_LOG_ERROR, S5_LOG_WARN, S5_LOG_INFO, S5_LOG_DEBUG };

/* An interface address with prefix length; family is 0 when unset. */
struct s5_prefix {
  int family;       /* AF_INET, AF_INET6 or 0 */
  uint8_t addr[16]; /* network byte order; 4 bytes used for AF_INET */
  unsigned len;     /* prefix length */
};

/* [tun] route-exclude / route-include: at most this many prefixes inline;
 * long lists go into route-exclude-file / route-include-file. */
#define S5_ROUTE_PREFIXES_MAX 64

struct s5_prefix_list {
  unsigned n;
  struct s5_prefix p[S5_ROUTE_PREFIXES_MAX];
};

/* [sniff]'s port lists and the names it skips. */
#define S5_SNIFF_PORTS_MAX 16
struct s5_port_list {
  unsigned n;
  uint16_t port[S5_SNIFF_PORTS_MAX];
};
#define S5_SNIFF_SKIP_MAX 32
struct s5_name_list {
  unsigned n;
  char name[S5_SNIFF_SKIP_MAX][64]; /* lower-case, no trailing dot: itself and names under it */
};
struct s5_sniff_skip {
  struct s5_prefix_list pfx; /* destinations never sniffed */
  struct s5_name_list names; /* a name found under one of these is not used: routed by address */
};

/* A file of prefixes, one a line: its path (empty = none), and what it held
 * when the configuration was read (--check-config prints the counts). The
 * routes are installed from the file itself (s5_prefix_file_read), read
 * again at start and at every reload. */
struct s5_prefix_file {
  char path[PATH_MAX];
  unsigned n4, n6;
};

/* Reads a prefix file: one IPv4 or IPv6 prefix a line (ADDR/LEN or a bare
 * address), '#' to the end of a line is a comment, blank lines are
 * skipped. Calls fn (if not NULL) for each prefix; fn returns 0 or -1 (then
 * reading stops with err left as fn wrote it). Returns the number of
 * prefixes with *n4 and *n6 set, or -1 with "PATH:LINE: what" in err. */
typedef int s5_prefix_fn(const struct s5_prefix *p, void *arg, char *err, size_t errlen);

/* 1 when p (set) covers ss's address. */
int s5_prefix_covers(const struct s5_prefix *p, const struct sockaddr_storage *ss);

/* p as "ADDR/LEN" into buf ("" when unset). Returns buf. */
const char *s5_prefix_text(const struct s5_prefix *p, char *buf, size_t len);
long s5_prefix_file_read(const char *path, s5_prefix_fn *fn, void *arg, unsigned *n4, unsigned *n6, char *err,
                         size_t errlen);

/* Several upstreams: [upstream NAME] sections or --proxy URLs, at most
 * this many. */
#define S5_UPSTREAMS_MAX 16

/* What an upstream speaks (the words of [upstream] type). */
/* DIRECT is no [upstream] type: [rules]' direct outbound (s5_config.direct). */
enum s5_upstream_type {
  S5_UPSTREAM_SOCKS5,
  S5_UPSTREAM_SOCKS4,
  S5_UPSTREAM_HTTP,
  S5_UPSTREAM_SHADOWSOCKS,
  S5_UPSTREAM_DIRECT
};

/* Shadowsocks' method (the words of [upstream] method): 2017's AEAD, and
 * 2022's (SIP022, TCP and UDP), whose password is base64 of the key, or
 * of the identity keys then the user's, separated by ':' (SIP023). */
enum s5_ss_method {
  S5_SS_CHACHA20_POLY1305,
  S5_SS_AES_128_GCM,
  S5_SS_AES_256_GCM,
  S5_SS_2022_AES_128_GCM,
  S5_SS_2022_AES_256_GCM,
  S5_SS_2022_CHACHA20_POLY1305
};

/* Shadowsocks 2022 (SIP022). */
static inline int s5_ss_method_2022(enum s5_ss_method m) { return m >= S5_SS_2022_AES_128_GCM; }

/* A key of len bytes from text, base64 (RFC 4648, standard alphabet, its
 * '=' padding, canonical): 0, or -1 when it is not or is another length. */
int s5_b64_key(const char *text, size_t len, uint8_t *out);

/* A 2022 password's keys: at most S5_SS2022_KEYS_MAX parts separated by
 * ':', each base64 of len bytes, into out[i * len] (room: max keys).
 * The number of keys, or -1 (a part not a key, too many). */
#define S5_SS2022_KEYS_MAX 4
int s5_b64_key_chain(const char *text, size_t len, uint8_t *out, size_t max);

/* One upstream proxy: the keys of [socks5] and of an [upstream NAME]
 * section. Keys that a type has no use for (pipeline and udp beyond SOCKS5)
 * are kept but do nothing. */
struct s5_upstream_cfg {
  char name[32]; /* [upstream NAME]; "socks5" for [socks5]; [A-Za-z0-9_.-], 1..31 */
  enum s5_upstream_type type;
  unsigned weight;              /* 1..1000, for [balance] */
  unsigned handshake_timeout;   /* seconds to the proxy's first answer: then the next upstream */
  struct sockaddr_storage addr; /* proxy address and port */
  socklen_t addrlen;
  char username[256]; /* empty = no authentication; SOCKS4: the user id */
  char password[256];
  uint32_t mark;                    /* SO_MARK, 0 = none */
  bool pipeline;                    /* SOCKS5: greeting, auth and CONNECT in one write */
  unsigned pool;                    /* warm proxy connections per worker, 0 = off (core/socks5/pool.c) */
  bool optimistic;                  /* SYN answered at once, the client's bytes right behind the CONNECT */
  bool udp;                         /* SOCKS5: udp = associate (true) | off */
  struct sockaddr_storage udp_addr; /* udp-address: ss_family 0 = use the relay address the proxy returns */
  bool tls;                         /* http and socks5: TLS to the proxy (core/socks5/tls.c) */
  bool tls_verify;                  /* certificate and name verified (default true) */
  char tls_server_name[256];        /* SNI and the name verified; empty = the address */
  char tls_ca_file[256];            /* empty = the system's store */
  char tls_cert_file[256];          /* client certificate, with tls_key_file; empty = none */
  char tls_key_file[256];
  enum s5_ss_method ss_method; /* shadowsocks: the AEAD (core/socks5/ss.c); password is its key's */
  unsigned slot; /* not a key: its row in the shared upstream table, set by core/shared/uptab.c */
};

/* [rules]: the rule and rules-file lines in file order, their text in one
 * buffer (each NUL-terminated at text + off[i]), the configuration line of
 * each. The rules themselves are read (files included) by s5_rules_each
 * and compiled by core/shared/rules.c; only this list is configuration. */
#define S5_RULES_ITEMS_MAX 64
#define S5_RULES_TEXT_MAX 4096
enum { S5_RULE_ITEM_RULE, S5_RULE_ITEM_FILE };
struct s5_rules_cfg {
  char def[32];  /* default outbound: an upstream's or a group's name, direct or block; empty = [balance] */
  uint32_t mark; /* SO_MARK of direct sockets; 0 = auto-route's (upstreams[0].mark) or none */
  struct sockaddr_storage resolver; /* DNS server (port 53) for direct's names; family 0 = the system's */
  unsigned n;                       /* items */
  unsigned used;                    /* bytes of text */
  uint16_t off[S5_RULES_ITEMS_MAX];
  uint8_t kind[S5_RULES_ITEMS_MAX];
  uint32_t line[S5_RULES_ITEMS_MAX]; /* of the configuration file; 0 = not from one */
  uint32_t def_line;
  char conf[256]; /* the configuration file, for "FILE:LINE" */
  char text[S5_RULES_TEXT_MAX];
  /* Not keys: set by s5_rules_check for each rules-file, the lines that
   * are not rules (hosts lines for the machine itself or another address)
   * and the first of them (s5_rules_note). */
  uint32_t skipped[S5_RULES_ITEMS_MAX];
  uint32_t skip_line[S5_RULES_ITEMS_MAX];
};

/* One rule, parsed (s5_rule_parse): all of its matchers must match. */
#define S5_RULE_NAME_MAX 254
#define S5_RULE_OUT_MAX 32
enum { S5_RULE_NONE, S5_RULE_DOMAIN, S5_RULE_FULL, S5_RULE_KEYWORD };
struct s5_rule {
  uint8_t name_kind;           /* S5_RULE_NONE, _DOMAIN (the name and below), _FULL, _KEYWORD */
  uint8_t proto;               /* 0 = either, IPPROTO_TCP, IPPROTO_UDP */
  uint16_t port_lo, port_hi;   /* destination port range; 0-65535 = any */
  struct s5_prefix dst, src;   /* family 0 = any */
  char name[S5_RULE_NAME_MAX]; /* lowercase, no final dot */
  char out[S5_RULE_OUT_MAX];   /* the outbound as written */
};

struct s5_config;

/* The outbounds besides the upstreams (whose index in cfg->upstreams is
 * theirs). */
#define S5_OUTBOUND_DIRECT 1000
#define S5_OUTBOUND_BLOCK 1001
#define S5_OUTBOUND_BALANCE 1002 /* the default when [rules] default is empty: [balance] chooses */
#define S5_OUTBOUND_GROUP 2000   /* + the group's index in cfg->groups */

/* Parses "MATCHERS -> OUTBOUND". With out (a rules-file's own outbound) a
 * line may leave out "-> OUTBOUND" and be a bare name, address or prefix,
 * or a hosts-file line ("0.0.0.0 NAME"). 0, or -1 with what is wrong. */
int s5_rule_parse(const char *text, const char *out, struct s5_rule *r, char *err, size_t errlen);

/* The outbound's number for a name: an upstream's index,
 * S5_OUTBOUND_DIRECT, S5_OUTBOUND_BLOCK, S5_OUTBOUND_GROUP + a group's
 * index, or -1 when there is none. */
int s5_rules_outbound(const struct s5_config *cfg, const char *name);

/* Where a rule came from: a rules-file and its line (file NULL: the
 * configuration file's line), and its item in cfg->rules. */
struct s5_rule_at {
  const char *file;
  unsigned line;
  unsigned item;
};

/* Every rule in order, files read now: fn (may be NULL) for each, which
 * returns 0 or -1 with err. Returns the number of rules, or -1 with
 * "FILE:LINE: what" in err. */
typedef int s5_rule_fn(const struct s5_rule *r, const struct s5_rule_at *at, void *arg, char *err,
                       size_t errlen);
long s5_rules_each(const struct s5_config *cfg, s5_rule_fn *fn, void *arg, char *err, size_t errlen);

/* s5_rules_each checking every outbound named (and the default): the
 * number of rules, or -1 with "FILE:LINE: what". Sets rules.skipped and
 * rules.skip_line. */
long s5_rules_check(struct s5_config *cfg, char *err, size_t errlen);

/* While set, every walk over the rules (s5_rules_each, s5_rules_check:
 * the load and the compile of a reload) stops at its next line with
 * "cancelled" in err: a reload's thread abandoned when the daemon stops
 * (threads/daemon/reload.c). Any thread may set it or ask. */
void s5_rules_cancel(bool on);
bool s5_rules_cancelled(void);

/* The info line for a rules-file item with lines that are not rules (1),
 * or 0 when it has none. */
int s5_rules_note(const struct s5_config *cfg, unsigned item, char *buf, size_t len);

/* [balance] and [group] strategy: how a new session chooses its
 * upstream. [balance] takes the first four words only. */
enum s5_balance {
  S5_BALANCE_FAILOVER,    /* the first healthy one in file order */
  S5_BALANCE_ROUND_ROBIN, /* weighted turns */
  S5_BALANCE_LEAST_CONN,  /* fewest open sessions per weight, all workers */
  S5_BALANCE_HASH,        /* by destination: one site, one exit */
  S5_BALANCE_FASTEST,     /* the lowest measured latency, with tolerance */
  S5_BALANCE_SELECT,      /* the operator's choice (selected, or --select live) */
};

/* Outbound groups: [group NAME] sections, at most this many. A rule (or
 * [rules] default) naming a group gets S5_OUTBOUND_GROUP + its index. */
#define S5_GROUPS_MAX 16

/* [group] probe: how fastest times each member. */
enum s5_probe_kind { S5_PROBE_NONE, S5_PROBE_HTTP, S5_PROBE_CONNECT };

/* One [group NAME] section (ini/group_sections.c). */
struct s5_group_cfg {
  char name[32];                     /* [group NAME], same character rules as upstream names */
  enum s5_balance strategy;          /* default failover */
  unsigned n_members;                /* 1..S5_UPSTREAMS_MAX */
  uint8_t members[S5_UPSTREAMS_MAX]; /* indexes into cfg->upstreams, in the order written */
  char selected[32];                 /* select: a member's name; empty = the first member */
  enum s5_probe_kind probe;          /* fastest: how each member is timed */
  char probe_host[256];              /* HOST of probe (name or address; IPv6 in [] in the text) */
  uint16_t probe_port;
  char probe_path[256];    /* http: PATH, starting with "/" (default "/") */
  unsigned probe_interval; /* seconds, default 10 (min 1, max 3600) */
  unsigned probe_timeout;  /* seconds, default 5 (min 1, max 3600) */
  unsigned tolerance;      /* ms, default 50 (0..60000) */
};

/* The sections are named types (struct s5_SECTION_cfg), so that a module
 * can take the one section it uses rather than the whole configuration. */
struct s5_config {
  enum s5_mode mode;
  unsigned queues;            /* resolved: 1..S5_QUEUES_MAX, never 0 */
  unsigned queues_configured; /* as written: 0 = one per online CPU (--check-config prints it) */

  struct s5_tun_cfg {
    char name[16];       /* IFNAMSIZ */
    unsigned mtu;        /* 1280..65535 */
    unsigned txqueuelen; /* 0 = the kernel's default */
    struct s5_prefix ipv4;
    struct s5_prefix ipv6;
    bool persist;
    bool icmp_reply;  /* icmp = reply: answer echo requests to any address */
    bool offload;     /* IFF_VNET_HDR: checksum and TSO offloads */
    bool auto_route;  /* policy routing: all but [socks5] mark into the device */
    bool kill_switch; /* with auto_route: tunnel-bound traffic blocked while the device is absent */
    struct s5_uid_list exclude_uid; /* with auto_route: these users' traffic stays out of the tunnel */
    struct s5_uid_list include_uid; /* with auto_route: only these users' traffic enters it */
    bool exclude_local;             /* with auto_route: connected networks and inbound connections stay out */
    struct s5_prefix_list route_exclude; /* with auto_route: never into the tunnel (wins over include) */
    struct s5_prefix_list route_include; /* with auto_route: only these into it (empty = everything) */
    struct s5_prefix_file route_exclude_file;
    struct s5_prefix_file route_include_file;
    char netns[256];         /* the device in this named network namespace; empty = ours */
    char post_up[PATH_MAX];  /* command run once the device is up; empty = none */
    char pre_down[PATH_MAX]; /* command run before the device goes */
  } tun;

  /* The upstream proxies, in file order (the order failover tries them):
   * [socks5] is upstreams[0] when written (socks5_section), the [upstream
   * NAME] sections follow; --proxy URLs replace them all. socks5 is the
   * same storage as upstreams[0], the name the single-proxy code reads. */
  union {
    struct s5_upstream_cfg upstreams[S5_UPSTREAMS_MAX];
    struct s5_upstream_cfg socks5;
  };
  unsigned n_upstreams; /* 1..S5_UPSTREAMS_MAX */
  /* Not keys: [rules]' direct outbound as an upstream the proxy client
   * connects through (type DIRECT, name "direct", the direct sockets'
   * mark), derived when the configuration is read. */
  struct s5_upstream_cfg direct;
  unsigned rules_half; /* not a key: the compiled [rules] this configuration uses (core/shared/rules.c) */
  bool socks5_section; /* upstreams[0] is [socks5] (the default, one SOCKS5 proxy) */

  struct s5_rules_cfg rules;

  /* [group NAME] sections in file order; a configuration file is their
   * only source (each load starts without any). */
  struct s5_group_cfg groups[S5_GROUPS_MAX];
  unsigned n_groups;

  struct s5_balance_cfg {
    enum s5_balance strategy;
    unsigned fail_after;                  /* set-ups failed in a row that mark an upstream down */
    unsigned check_interval;              /* seconds between checks of a down upstream (jittered) */
    unsigned check_timeout;               /* seconds a check may take (at most connect-timeout) */
    struct sockaddr_storage check_target; /* a check CONNECTs here; ss_family 0 = the handshake alone */
  } balance;

  struct s5_session_cfg {
    unsigned connect_timeout;  /* seconds, >= 1 */
    unsigned tcp_idle_timeout; /* seconds, >= 1 */
    unsigned max_sessions;     /* per worker, 0 = unlimited */
    unsigned udp_idle_timeout; /* seconds, >= 1 */
    unsigned udp_coalesce;     /* microseconds, 0 = off (udp_io.c) */
    unsigned tcp_buffer;       /* bytes a TCP session holds each way, S5_TCP_BUFFER_MIN..MAX */
  } session;

  struct s5_dns_cfg {
    struct sockaddr_storage addr[2]; /* the mapped resolver, port 53: [0] IPv4, [1] IPv6;
                                      ss_family 0 = none; neither = mapped DNS off */
    struct s5_prefix network;        /* IPv4 pool of mapped addresses */
    struct s5_prefix network6;       /* IPv6 pool; family 0 = AAAA not mapped */
    unsigned cache_size;             /* names kept, 1..pool size */
    bool hijack;                     /* port 53 of every address is the resolver's (needs addr) */
    char state[PATH_MAX];            /* the names' state file; "" = $STATE_DIRECTORY/dnsmap, "off" */
  } dns;

  /* [sniff]: flows to an address that is not mapped, on a listed port,
   * whose rules could go another way by name: the name from their first
   * bytes (core/tcp/sniffing.c, docs/rules.md). No port listed: off. */
  struct s5_sniff_cfg {
    struct s5_port_list tls, http, quic; /* ports whose flows are sniffed as each */
    unsigned timeout;                    /* ms the client's first bytes may take */
    bool override;                       /* CONNECT by the name found (the proxy resolves it) */
    struct s5_sniff_skip skip;           /* never sniffed: these destinations; these names unused */
  } sniff;

  struct s5_log_cfg {
    enum s5_log_level level;
    char file[PATH_MAX];              /* empty = stderr, "syslog" = syslog */
    bool sessions;                    /* a line per finished session (core/ctx/sessionlog.c) */
    unsigned sessions_max_per_second; /* per worker; the rest counted */
  } log;

  struct s5_run_cfg {
    char pid_file[PATH_MAX]; /* written once every queue serves; empty = none */
    unsigned drain_timeout;  /* seconds open sessions get after SIGTERM, 0..3600 */
    unsigned limit_nofile;   /* RLIMIT_NOFILE set at start-up; 0 = leave as is */
    char user[64];           /* workers drop to this user; empty = stay */
    uid_t uid;               /* user and its primary group, looked up when the */
    gid_t gid;               /* configuration is loaded (unknown user: exit 2) */
  } run;

  struct s5_stats_cfg {
    char socket[108];             /* unix socket answering JSON stats; empty = none */
    struct sockaddr_storage http; /* Prometheus endpoint (GET /metrics); ss_family 0 = none */
  } stats;
};

/* What main() should do after s5_args_load(). */
enum s5_args_result {
  S5_ARGS_RUN = 0,  /* configuration complete: start the daemon */
  S5_ARGS_EXIT_OK,  /* --help, --version or a good --check-config: exit 0 */
  S5_ARGS_EXIT_BAD, /* a message naming file/line/key or flag was printed: exit 2 */
  S5_ARGS_EXPLAIN,  /* --explain: the configuration is complete; s5_args_explain() says what to explain */
};

/* --explain DST:PORT [--name NAME] [--src ADDR] [--proto tcp|udp]: the
 * flow to explain (src family 0: none given; proto IPPROTO_TCP or _UDP). */
struct s5_explain {
  struct sockaddr_storage dst, src;
  char name[254];
  int proto;       /* IPPROTO_TCP (the default) or IPPROTO_UDP */
  int proto_given; /* --proto was on the command line */
  int sniffed;     /* name is what [sniff] would learn (--sni), not a mapped one (--name) */
};
const struct s5_explain *s5_args_explain(void);

/* Fills *cfg from defaults, the --config file (if any) and the flags, in that
 * order of precedence. Prints help, version, the effective configuration
 * (--check-config) or one error message to stdout/stderr itself. */
enum s5_args_result s5_args_load(struct s5_config *cfg, int argc, char **argv);

/* s5_args_load() with its output streams given: help, version and
 * --check-config go to out, the one error message to err. For tests. */
enum s5_args_result s5_args_load_io(struct s5_config *cfg, int argc, char **argv, FILE *out, FILE *err);

/* Set by the daemon before s5_args_load (ini/ does not link OpenSSL):
 * whether a TLS upstream's tls-cert-file and tls-key-file belong together;
 * 0, or -1 with what is wrong in err (blamed on tls-key-file). NULL: not
 * checked before the first connection. */
extern int (*s5_config_tls_pair_check)(const char *cert, const char *key, char *err, size_t errlen);

/* Built-in defaults (queues resolved to the online CPU count). */
void s5_config_defaults(struct s5_config *cfg);

/* Loads an INI file over *cfg. On error returns -1, leaves *cfg untouched
 * and writes one message of the form "FILE:LINE: [section] key: what is
 * wrong" into err. */
int s5_config_load_file(struct s5_config *cfg, const char *path, char *err, size_t errlen);

/* Sets one key (section "" for mode and queues) from its text form, with the
 * same checks as the file. On error returns -1 and writes what is wrong
 * (without file or line) into err. */
int s5_config_set(struct s5_config *cfg, const char *section, const char *key, const char *value, char *err,
                  size_t errlen);

/* Live reload: next is the configuration just read, cur the running one.
 * Every key a reload cannot apply (the device, the run mode, auto-route,
 * the DNS pools, the run user...: those not marked live in ini/keys.c) gets
 * cur's value back in next, and warn is called for each that differed, with
 * its section and its line as --check-config prints it, old and new.
 * Returns how many were kept. */
typedef void s5_config_reload_warn(void *arg, const char *section, const char *was, const char *now);
/* What is derived from the keys once they are final (cfg->direct). */
void s5_config_derive(struct s5_config *cfg);

int s5_config_reload_merge(struct s5_config *next, const struct s5_config *cur, s5_config_reload_warn *warn,
                           void *arg);

/* Writes the effective configuration as an INI document that
 * s5_config_load_file() reads back to the same configuration, every key in
 * table order, except the password, shown as "***"; queues as written
 * (queues_configured, 0 = one per CPU). */
void s5_config_print(const struct s5_config *cfg, FILE *out);

#endif
