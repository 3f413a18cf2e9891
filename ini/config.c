/* The configuration keys: one table that names every key, its default and
 * the setter that validates it. The INI loader and the command-line flags
 * both go through it, and so do the defaults, so a default can never be a
 * value the loader would refuse. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"

typedef int (*s5_setter)(struct s5_config *cfg, const char *value,
                         char *err, size_t errlen);

struct s5_key {
  const char *section;  /* "" for keys before the first [section] */
  const char *name;     /* lowercase; keys are case-sensitive */
  const char *def;      /* default, as it would be written in the file */
  s5_setter set;
};

static const char *const mode_words[] = { "thread", "process", NULL };
static const char *const level_words[] = { "error", "warn", "info", "debug",
                                           NULL };

/* queues = 0 means one queue per online CPU, clamped to what the TUN driver
 * allows; resolved here so that nobody downstream ever sees 0. */
static unsigned online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);

  if (n < 1)
    return 1;
  if (n > S5_QUEUES_MAX)
    return S5_QUEUES_MAX;
  return (unsigned)n;
}

static int set_mode(struct s5_config *cfg, const char *value,
                    char *err, size_t errlen) {
  int i;

  if (s5_parse_word(value, mode_words, &i, err, errlen) != 0)
    return -1;
  cfg->mode = i == 0 ? S5_MODE_THREAD : S5_MODE_PROCESS;
  return 0;
}

static int set_queues(struct s5_config *cfg, const char *value,
                      char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 0, S5_QUEUES_MAX, &n, err, errlen) != 0)
    return -1;
  cfg->queues = n == 0 ? online_cpus() : (unsigned)n;
  return 0;
}

static int set_tun_name(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_ifname(value, cfg->tun.name, sizeof cfg->tun.name,
                         err, errlen);
}

/* 1280 is the IPv6 minimum link MTU (RFC 8200): the kernel drops IPv6 from
 * a device below it, and one floor for both families keeps things simple.
 * 65535 is the largest IP packet (and lwIP keeps the MTU in 16 bits). */
static int set_tun_mtu(struct s5_config *cfg, const char *value,
                       char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 1280, 65535, &n, err, errlen) != 0)
    return -1;
  cfg->tun.mtu = (unsigned)n;
  return 0;
}

/* Either address may be empty here; s5_config_check() insists that at least
 * one is set once the whole file has been read. */
static int set_tun_ipv4(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_prefix(value, AF_INET, &cfg->tun.ipv4, err, errlen);
}

static int set_tun_ipv6(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_prefix(value, AF_INET6, &cfg->tun.ipv6, err, errlen);
}

static int set_tun_persist(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  return s5_parse_bool(value, &cfg->tun.persist, err, errlen);
}

uint16_t s5_sockaddr_port(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
  if (ss->ss_family == AF_INET6)
    return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  return 0;
}

/* Address and port are separate keys but one sockaddr: each setter keeps
 * the other half. */
static int set_socks5_address(struct s5_config *cfg, const char *value,
                              char *err, size_t errlen) {
  return s5_parse_ip(value, s5_sockaddr_port(&cfg->socks5.addr),
                     &cfg->socks5.addr, &cfg->socks5.addrlen, err, errlen);
}

static int set_socks5_port(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  struct sockaddr_storage *ss = &cfg->socks5.addr;
  unsigned long n;

  if (s5_parse_uint(value, 1, 65535, &n, err, errlen) != 0)
    return -1;
  if (ss->ss_family == AF_INET)
    ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)n);
  else if (ss->ss_family == AF_INET6)
    ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)n);
  return 0;
}

/* RFC 1929 carries each field with a one-byte length: 1..255 bytes, and
 * empty here means "not set". */
static int set_socks5_username(struct s5_config *cfg, const char *value,
                               char *err, size_t errlen) {
  return s5_parse_text(value, 255, cfg->socks5.username,
                       sizeof cfg->socks5.username, err, errlen);
}

static int set_socks5_password(struct s5_config *cfg, const char *value,
                               char *err, size_t errlen) {
  return s5_parse_text(value, 255, cfg->socks5.password,
                       sizeof cfg->socks5.password, err, errlen);
}

static int set_socks5_mark(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  return s5_parse_u32(value, &cfg->socks5.mark, err, errlen);
}

/* A connect that takes an hour is already a failure. */
static int set_connect_timeout(struct s5_config *cfg, const char *value,
                               char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 1, 3600, &n, err, errlen) != 0)
    return -1;
  cfg->session.connect_timeout = (unsigned)n;
  return 0;
}

/* Up to a day: longer idle flows are better served by keepalives in the
 * application than by pinning memory here. */
static int set_tcp_idle_timeout(struct s5_config *cfg, const char *value,
                                char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 1, 86400, &n, err, errlen) != 0)
    return -1;
  cfg->session.tcp_idle_timeout = (unsigned)n;
  return 0;
}

/* A million sessions per worker already exceeds any sane fd limit; a bigger
 * number is more likely a typo than a plan. */
static int set_socks5_pipeline(struct s5_config *cfg, const char *value,
                               char *err, size_t errlen) {
  return s5_parse_bool(value, &cfg->socks5.pipeline, err, errlen);
}

static int set_tun_offload(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  return s5_parse_bool(value, &cfg->tun.offload, err, errlen);
}

static int set_tun_auto_route(struct s5_config *cfg, const char *value,
                              char *err, size_t errlen) {
  return s5_parse_bool(value, &cfg->tun.auto_route, err, errlen);
}

static int set_tun_post_up(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  return s5_parse_text(value, PATH_MAX - 1, cfg->tun.post_up,
                       sizeof cfg->tun.post_up, err, errlen);
}

static int set_tun_pre_down(struct s5_config *cfg, const char *value,
                            char *err, size_t errlen) {
  return s5_parse_text(value, PATH_MAX - 1, cfg->tun.pre_down,
                       sizeof cfg->tun.pre_down, err, errlen);
}

/* Only the form is checked here; whether the user exists is checked at
 * start-up, where a missing user is a runtime failure. */
static int set_run_user(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_text(value, sizeof cfg->run.user - 1, cfg->run.user,
                       sizeof cfg->run.user, err, errlen);
}

static int set_pid_file(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_text(value, PATH_MAX - 1, cfg->run.pid_file,
                       sizeof cfg->run.pid_file, err, errlen);
}

static int set_drain_timeout(struct s5_config *cfg, const char *value,
                             char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 0, 3600, &n, err, errlen) != 0)
    return -1;
  cfg->run.drain_timeout = (unsigned)n;
  return 0;
}

/* Every session holds a socket to the proxy (a UDP association two): a
 * daemon meant for many connections needs more than the usual 1024. The
 * kernel's own ceiling (fs.nr_open) is checked at start-up by setrlimit. */
static int set_limit_nofile(struct s5_config *cfg, const char *value,
                            char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 0, 16777216, &n, err, errlen) != 0)
    return -1;
  cfg->run.limit_nofile = (unsigned)n;
  return 0;
}

/* sun_path holds 108 bytes including the terminating NUL. */
static int set_stats_socket(struct s5_config *cfg, const char *value,
                            char *err, size_t errlen) {
  return s5_parse_text(value, sizeof cfg->stats.socket - 1, cfg->stats.socket,
                       sizeof cfg->stats.socket, err, errlen);
}

static int set_max_sessions(struct s5_config *cfg, const char *value,
                            char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 0, 1000000, &n, err, errlen) != 0)
    return -1;
  cfg->session.max_sessions = (unsigned)n;
  return 0;
}

static int set_tcp_buffer(struct s5_config *cfg, const char *value,
                          char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, S5_TCP_BUFFER_MIN, S5_TCP_BUFFER_MAX, &n, err, errlen) != 0)
    return -1;
  cfg->session.tcp_buffer = (unsigned)n;
  return 0;
}

static int set_log_level(struct s5_config *cfg, const char *value,
                         char *err, size_t errlen) {
  int i;

  if (s5_parse_word(value, level_words, &i, err, errlen) != 0)
    return -1;
  cfg->log.level = (enum s5_log_level)i;
  return 0;
}

/* Only the name is checked: opening it is the logger's job, at start-up. */
static int set_log_file(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  return s5_parse_text(value, PATH_MAX - 1, cfg->log.file,
                       sizeof cfg->log.file, err, errlen);
}

/* ---- UDP, mapped DNS, ICMP (core/udp.c, core/dns.c, core/icmp.c) ---- */

static const char *const icmp_words[] = { "off", "reply", NULL };
static const char *const udp_words[] = { "off", "associate", NULL };

static int set_tun_icmp(struct s5_config *cfg, const char *value,
                        char *err, size_t errlen) {
  int i;

  if (s5_parse_word(value, icmp_words, &i, err, errlen) != 0)
    return -1;
  cfg->tun.icmp_reply = i == 1;
  return 0;
}

static int set_socks5_udp(struct s5_config *cfg, const char *value,
                          char *err, size_t errlen) {
  int i;

  if (s5_parse_word(value, udp_words, &i, err, errlen) != 0)
    return -1;
  cfg->socks5.udp = i == 1;
  return 0;
}

/* Empty: send to the relay address the proxy returns (its own address if
 * that is unspecified). Otherwise this address, with the returned port. */
static int set_socks5_udp_address(struct s5_config *cfg, const char *value,
                                  char *err, size_t errlen) {
  socklen_t len;

  if (*value == '\0') {
    memset(&cfg->socks5.udp_addr, 0, sizeof cfg->socks5.udp_addr);
    return 0;
  }
  return s5_parse_ip(value, 0, &cfg->socks5.udp_addr, &len, err, errlen);
}

/* UDP has no close: an association ends after this long without a datagram
 * either way (or when the proxy closes its control connection). */
static int set_udp_idle_timeout(struct s5_config *cfg, const char *value,
                                char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 1, 86400, &n, err, errlen) != 0)
    return -1;
  cfg->session.udp_idle_timeout = (unsigned)n;
  return 0;
}

/* The mapped resolver's address; empty disables mapped DNS. */
static int set_dns_address(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  socklen_t len;

  if (*value == '\0') {
    memset(&cfg->dns.addr, 0, sizeof cfg->dns.addr);
    return 0;
  }
  return s5_parse_ip(value, 53, &cfg->dns.addr, &len, err, errlen);
}

/* An IPv4 pool of at least 2 usable addresses (/30); the address is taken
 * as given but must be the network's first (no host bits), so that the
 * file says exactly which addresses are claimed. */
static int set_dns_network(struct s5_config *cfg, const char *value,
                           char *err, size_t errlen) {
  struct s5_prefix p;
  uint32_t a;
  uint32_t mask;

  if (*value == '\0') {
    snprintf(err, errlen, "empty (expected an IPv4 network, e.g. "
             "100.64.0.0/10)");
    return -1;
  }
  if (s5_parse_prefix(value, AF_INET, &p, err, errlen) != 0)
    return -1;
  if (p.len > 30) {
    snprintf(err, errlen, "prefix length %u is too long: the pool needs at "
             "least /30", p.len);
    return -1;
  }
  a = ((uint32_t)p.addr[0] << 24) | ((uint32_t)p.addr[1] << 16) |
      ((uint32_t)p.addr[2] << 8) | p.addr[3];
  mask = 0xffffffffu << (32 - p.len);
  if ((a & ~mask) != 0) {
    snprintf(err, errlen, "has host bits set (the network of /%u starts at "
             "%u.%u.%u.%u)", p.len, (a & mask) >> 24, ((a & mask) >> 16) & 0xff,
             ((a & mask) >> 8) & 0xff, (a & mask) & 0xff);
    return -1;
  }
  cfg->dns.network = p;
  return 0;
}

/* Up to a million names: an entry takes about 270 bytes of shared memory
 * (the default 10000 is under 3 MB). Checked against the pool's size once
 * the whole file is read (s5_config_check). */
static int set_dns_cache_size(struct s5_config *cfg, const char *value,
                              char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 1, 1000000, &n, err, errlen) != 0)
    return -1;
  cfg->dns.cache_size = (unsigned)n;
  return 0;
}

/* Order matters for the defaults only: address before port. */
static const struct s5_key keys[] = {
  { "", "mode", "thread", set_mode },
  { "", "queues", "0", set_queues },
  { "tun", "name", "tun0", set_tun_name },
  { "tun", "mtu", "8500", set_tun_mtu },
  { "tun", "ipv4", "198.18.0.1/15", set_tun_ipv4 },
  { "tun", "ipv6", "", set_tun_ipv6 },
  { "tun", "persist", "false", set_tun_persist },
  { "tun", "icmp", "off", set_tun_icmp },
  { "socks5", "address", "127.0.0.1", set_socks5_address },
  { "socks5", "port", "1080", set_socks5_port },
  { "socks5", "username", "", set_socks5_username },
  { "socks5", "password", "", set_socks5_password },
  { "socks5", "mark", "0", set_socks5_mark },
  { "socks5", "pipeline", "false", set_socks5_pipeline },
  { "socks5", "udp", "associate", set_socks5_udp },
  { "socks5", "udp-address", "", set_socks5_udp_address },
  { "session", "connect-timeout", "10", set_connect_timeout },
  { "session", "tcp-idle-timeout", "600", set_tcp_idle_timeout },
  { "session", "max-sessions", "0", set_max_sessions },
  { "session", "udp-idle-timeout", "60", set_udp_idle_timeout },
  { "session", "tcp-buffer", "524288", set_tcp_buffer },
  { "dns", "address", "", set_dns_address },
  { "dns", "network", "100.64.0.0/10", set_dns_network },
  { "dns", "cache-size", "10000", set_dns_cache_size },
  { "log", "level", "info", set_log_level },
  { "log", "file", "", set_log_file },
  { "tun", "offload", "true", set_tun_offload },
  { "tun", "auto-route", "false", set_tun_auto_route },
  { "tun", "post-up", "", set_tun_post_up },
  { "tun", "pre-down", "", set_tun_pre_down },
  { "run", "user", "", set_run_user },
  { "run", "pid-file", "", set_pid_file },
  { "run", "drain-timeout", "5", set_drain_timeout },
  { "run", "limit-nofile", "0", set_limit_nofile },
  { "stats", "socket", "", set_stats_socket },
};

#define KEY_COUNT ((int)(sizeof keys / sizeof keys[0]))

static const char *const sections[] = { "", "tun", "socks5", "session", "dns", "log",
                                        NULL };

int s5_config_key_count(void) {
  return KEY_COUNT;
}

int s5_config_key_find(const char *section, const char *name) {
  int i;

  for (i = 0; i < KEY_COUNT; i++)
    if (strcmp(keys[i].section, section) == 0 &&
        strcmp(keys[i].name, name) == 0)
      return i;
  return -1;
}

const char *s5_config_key_section(int key) {
  return keys[key].section;
}

const char *s5_config_key_name(int key) {
  return keys[key].name;
}

int s5_config_key_set(struct s5_config *cfg, int key, const char *value,
                      char *err, size_t errlen) {
  return keys[key].set(cfg, value, err, errlen);
}

static bool section_known(const char *section) {
  int i;

  for (i = 0; sections[i] != NULL; i++)
    if (strcmp(sections[i], section) == 0)
      return true;
  return false;
}

/* Lists the keys of a section, e.g. "name, mtu, ipv4, ipv6, persist". */
static void list_keys(const char *section, char *buf, size_t len) {
  size_t n = 0;
  int i;

  buf[0] = '\0';
  for (i = 0; i < KEY_COUNT && n < len; i++)
    if (strcmp(keys[i].section, section) == 0)
      n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                            keys[i].name);
}

void s5_config_key_unknown(const char *section, const char *name,
                           char *err, size_t errlen) {
  char known[160];
  int i;

  if (!section_known(section)) {
    for (i = 0; sections[i] != NULL; i++)
      if (sections[i][0] != '\0' && strcasecmp(sections[i], section) == 0)
        break;
    if (sections[i] != NULL)
      snprintf(err, errlen, "unknown section [%s] (section names are "
               "lowercase: [%s])", section, sections[i]);
    else
      snprintf(err, errlen, "unknown section [%s] (expected [tun], "
               "[socks5], [session], [dns] or [log])", section);
    return;
  }
  /* Right name, wrong place or wrong case: point at the right spelling. */
  for (i = 0; i < KEY_COUNT; i++) {
    if (strcmp(keys[i].name, name) == 0) {
      if (keys[i].section[0] == '\0')
        snprintf(err, errlen, "unknown key here (%s goes before the first "
                 "[section])", name);
      else
        snprintf(err, errlen, "unknown key here (did you mean [%s] %s?)",
                 keys[i].section, name);
      return;
    }
  }
  for (i = 0; i < KEY_COUNT; i++) {
    if (strcmp(keys[i].section, section) == 0 &&
        strcasecmp(keys[i].name, name) == 0) {
      snprintf(err, errlen, "unknown key (key names are lowercase: %s)",
               keys[i].name);
      return;
    }
  }
  list_keys(section, known, sizeof known);
  snprintf(err, errlen, "unknown key (expected one of: %s)", known);
}

int s5_config_set(struct s5_config *cfg, const char *section, const char *key,
                  const char *value, char *err, size_t errlen) {
  int i = s5_config_key_find(section, key);

  if (i < 0) {
    s5_config_key_unknown(section, key, err, errlen);
    return -1;
  }
  return s5_config_key_set(cfg, i, value, err, errlen);
}

void s5_config_defaults(struct s5_config *cfg) {
  char err[256];
  int i;

  memset(cfg, 0, sizeof *cfg);
  for (i = 0; i < KEY_COUNT; i++) {
    if (keys[i].set(cfg, keys[i].def, err, sizeof err) != 0) {
      /* A broken default is a bug in this file, not a user error. */
      fprintf(stderr, "s5tund: bad built-in default for %s: %s\n",
              keys[i].name, err);
      abort();
    }
  }
}

/* Mapped DNS: the pool must hold cache-size names, and the resolver's own
 * address must not be one of the addresses it hands out. */
static int s5_config_check_dns(const struct s5_config *cfg, int *key,
                               char *err, size_t errlen) {
  const struct s5_prefix *net = &cfg->dns.network;
  unsigned long long pool;
  uint32_t a, n, mask;
  const uint8_t *ip;

  if (net->family != AF_INET || net->len < 1 || net->len > 30)
    return 0;   /* the setter already refused anything else */
  pool = (1ull << (32 - net->len)) - 2;
  if (cfg->dns.cache_size > pool) {
    *key = s5_config_key_find("dns", "cache-size");
    snprintf(err, errlen, "%u is more than the %llu addresses of [dns] "
             "network /%u", cfg->dns.cache_size, pool, net->len);
    return -1;
  }
  if (cfg->dns.addr.ss_family != AF_INET)
    return 0;
  ip = (const uint8_t *)&((const struct sockaddr_in *)&cfg->dns.addr)->sin_addr;
  a = ((uint32_t)ip[0] << 24) | ((uint32_t)ip[1] << 16) |
      ((uint32_t)ip[2] << 8) | ip[3];
  n = ((uint32_t)net->addr[0] << 24) | ((uint32_t)net->addr[1] << 16) |
      ((uint32_t)net->addr[2] << 8) | net->addr[3];
  mask = 0xffffffffu << (32 - net->len);
  if ((a & mask) == (n & mask)) {
    *key = s5_config_key_find("dns", "address");
    snprintf(err, errlen, "is inside [dns] network, the pool of mapped "
             "addresses");
    return -1;
  }
  return 0;
}

int s5_config_check(const struct s5_config *cfg, int *key,
                    char *err, size_t errlen) {
  bool user = cfg->socks5.username[0] != '\0';
  bool pass = cfg->socks5.password[0] != '\0';

  /* RFC 1929 sends both or nothing; one alone is surely a mistake. */
  if (user != pass) {
    *key = s5_config_key_find("socks5", user ? "username" : "password");
    snprintf(err, errlen, "set without [socks5] %s (authentication needs "
             "both)", user ? "password" : "username");
    return -1;
  }
  /* One family may be switched off by leaving it empty, not both. */
  if (cfg->tun.ipv4.family == 0 && cfg->tun.ipv6.family == 0) {
    *key = s5_config_key_find("tun", "ipv4");
    snprintf(err, errlen, "empty, and [tun] ipv6 is not set either: the "
             "device needs at least one address");
    return -1;
  }
  if (s5_config_check_dns(cfg, key, err, errlen) != 0)
    return -1;
  /* Without a mark the proxy connections would be routed into the tunnel. */
  if (cfg->tun.auto_route && cfg->socks5.mark == 0) {
    *key = s5_config_key_find("tun", "auto-route");
    snprintf(err, errlen, "needs [socks5] mark: the proxy connections "
             "must carry a mark to stay out of the tunnel");
    return -1;
  }
  return 0;
}
