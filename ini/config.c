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
static int set_max_sessions(struct s5_config *cfg, const char *value,
                            char *err, size_t errlen) {
  unsigned long n;

  if (s5_parse_uint(value, 0, 1000000, &n, err, errlen) != 0)
    return -1;
  cfg->session.max_sessions = (unsigned)n;
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

/* Order matters for the defaults only: address before port. */
static const struct s5_key keys[] = {
  { "", "mode", "thread", set_mode },
  { "", "queues", "0", set_queues },
  { "tun", "name", "tun0", set_tun_name },
  { "tun", "mtu", "8500", set_tun_mtu },
  { "tun", "ipv4", "198.18.0.1/15", set_tun_ipv4 },
  { "tun", "ipv6", "", set_tun_ipv6 },
  { "tun", "persist", "false", set_tun_persist },
  { "socks5", "address", "127.0.0.1", set_socks5_address },
  { "socks5", "port", "1080", set_socks5_port },
  { "socks5", "username", "", set_socks5_username },
  { "socks5", "password", "", set_socks5_password },
  { "socks5", "mark", "0", set_socks5_mark },
  { "session", "connect-timeout", "10", set_connect_timeout },
  { "session", "tcp-idle-timeout", "600", set_tcp_idle_timeout },
  { "session", "max-sessions", "0", set_max_sessions },
  { "log", "level", "info", set_log_level },
  { "log", "file", "", set_log_file },
};

#define KEY_COUNT ((int)(sizeof keys / sizeof keys[0]))

static const char *const sections[] = { "", "tun", "socks5", "session", "log",
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
               "[socks5], [session] or [log])", section);
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
  return 0;
}
