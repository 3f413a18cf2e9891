/* SPDX-License-Identifier: MIT */
/* Command-line flags. Precedence is defaults, then the file, then flags, so
 * the flags are read twice: first to check their spelling and find --config,
 * --help and friends, then (after the file is loaded) to apply their values.
 *
 * Hand-written rather than getopt_long(): the messages must name the flag as
 * typed, and getopt's unique-prefix matching ("--que" for --queues) would
 * make today's abbreviations break when a flag is added. Accepted forms:
 * "--flag value", "--flag=value", "-c FILE", "-cFILE", "-h", "-V". A flag
 * given twice: the later one wins, as usual for command lines. */
#include <stdio.h>
#include <string.h>

#include "ini/internal.h"

#ifndef S5_VERSION
#error "S5_VERSION must be defined by the build (see ini/CMakeLists.txt)"
#endif

enum flag_id {
  FLAG_CONFIG,
  FLAG_MODE,
  FLAG_QUEUES,
  FLAG_TUN,
  FLAG_MTU,
  FLAG_NETNS,
  FLAG_SOCKS5,
  FLAG_PROXY,
  FLAG_LOG_LEVEL,
  FLAG_CHECK,
  FLAG_EXPLAIN,
  FLAG_NAME,
  FLAG_SRC,
  FLAG_SNI,
  FLAG_PROTO,
  FLAG_STATS,
  FLAG_CONNECTIONS,
  FLAG_SELECT,
  FLAG_JSON,
  FLAG_HELP,
  FLAG_VERSION,
};

struct flag {
  enum flag_id id;
  const char *name;    /* long name, without "--" */
  char letter;         /* short name, 0 = none */
  const char *arg;     /* what the value is, NULL = takes no value */
  const char *section; /* config key set by the value, if one key */
  const char *key;
  const char *shown; /* the value as --help shows it, if not arg */
  const char *help;  /* one line for --help */
};

/* --help is written from this table, and test_config_docs checks the man
 * page and README against it. --stats, --connections, --select and --json
 * are read by main() (their client is not the daemon); they are here for --help and for a
 * clear message when they are not first. */
static const struct flag flags[] = {
  {FLAG_CONFIG, "config", 'c', "FILE", NULL, NULL, NULL, "read settings from the INI file FILE"},
  {FLAG_MODE, "mode", 0, "thread|process", "", "mode", NULL, "run the queue workers as threads or processes"},
  {FLAG_QUEUES, "queues", 0, "N", "", "queues", NULL, "number of TUN queues, 1..256 (0 = one per CPU)"},
  {FLAG_TUN, "tun", 0, "NAME", "tun", "name", NULL, "TUN device name"},
  {FLAG_MTU, "mtu", 0, "N", "tun", "mtu", NULL, "TUN device MTU, 1280..65535"},
  {FLAG_NETNS, "netns", 0, "NAME", "tun", "netns", NULL, "create the device in network namespace NAME"},
  {FLAG_SOCKS5, "socks5", 0, "ADDR:PORT", NULL, NULL, NULL,
   "SOCKS5 proxy, e.g. 127.0.0.1:1080 or [::1]:1080"},
  {FLAG_PROXY, "proxy", 0, "URL", NULL, NULL, NULL,
   "an upstream proxy, repeatable; replaces the file's:\n"
   "                           socks5://[USER:PASS@]ADDR:PORT, socks4://, socks4a://, https://,\n"
   "                           http://USER:PASS@[::1]:3128, ss://BASE64(METHOD:PASS)@ADDR:PORT\n"
   "                           (a #NAME may follow)"},
  {FLAG_LOG_LEVEL, "log-level", 0, "error|warn|info|debug", "log", "level", "LEVEL",
   "error, warn, info or debug"},
  {FLAG_CHECK, "check-config", 0, NULL, NULL, NULL, NULL, "print the effective configuration and exit"},
  {FLAG_EXPLAIN, "explain", 0, "DST:PORT", NULL, NULL, NULL,
   "print the [rules] rule and the outbound a flow to DST:PORT\n"
   "                           would take, and exit (no daemon needed)"},
  {FLAG_NAME, "name", 0, "NAME", NULL, NULL, NULL, "with --explain: the flow's mapped name"},
  {FLAG_SRC, "src", 0, "ADDR", NULL, NULL, NULL, "with --explain: the flow's source (a LAN client)"},
  {FLAG_SNI, "sni", 0, "NAME", NULL, NULL, NULL,
   "with --explain: the name [sniff] would learn from its first bytes\n"
   "                           (TLS server_name, HTTP Host, QUIC) of a flow without a mapped name"},
  {FLAG_PROTO, "proto", 0, "tcp|udp", NULL, NULL, NULL, "with --explain: the protocol (default tcp)"},
  {FLAG_STATS, "stats", 0, NULL, NULL, NULL, "[SOCKET]",
   "print the counters of a running s5tund and exit\n"
   "                           (first argument; default SOCKET " S5_STATS_DEFAULT_SOCKET ")"},
  {FLAG_CONNECTIONS, "connections", 0, NULL, NULL, NULL, "[SOCKET]",
   "print the open sessions of a running s5tund and exit\n"
   "                           (first argument; default SOCKET as --stats)"},
  {FLAG_SELECT, "select", 0, NULL, NULL, NULL, "GROUP MEMBER [SOCKET]",
   "\n                           a select group's member from now on in a running s5tund\n"
   "                           (first argument; SOCKET as --stats)"},
  {FLAG_JSON, "json", 0, NULL, NULL, NULL, NULL, "with --stats or --connections: print JSON"},
  {FLAG_HELP, "help", 'h', NULL, NULL, NULL, NULL, "print this help and exit"},
  {FLAG_VERSION, "version", 'V', NULL, NULL, NULL, NULL, "print the version and exit"},
};

#define FLAG_COUNT (sizeof flags / sizeof flags[0])

int s5_args_flag_count(void) { return (int)FLAG_COUNT; }

const char *s5_args_flag_name(int i) { return flags[i].name; }

/* One flag as found on the command line. */
struct arg {
  const struct flag *flag;
  char spelled[40];  /* as typed, e.g. "--mtu" or "-c", for messages */
  const char *value; /* NULL for flags without a value */
};

/* What the first pass found. */
struct args {
  const char *config; /* --config FILE, NULL = none */
  bool explain_on;    /* --explain: what it asks is in explain */
  bool socks5, proxy; /* --socks5 given, --proxy given */
  bool check;
  bool help;
  bool version;
};

/* The help column starts here, as in most GNU tools' --help. */
#define USAGE_COLUMN 27

static void usage(FILE *out) {
  size_t i;

  fputs(
    "Usage: s5tund [OPTION]...\n"
    "       s5tund --stats [SOCKET] [--json]\n"
    "       s5tund --connections [SOCKET] [--json]\n"
    "       s5tund --select GROUP MEMBER [SOCKET]\n"
    "       s5tund exec [OPTION]... -- COMMAND [ARG]...\n"
    "Carry TCP and UDP from a multi-queue TUN device to SOCKS5 proxies\n"
    "(TCP also to SOCKS4 and HTTP CONNECT proxies).\n"
    "exec: run COMMAND in a network namespace whose only way out is the proxy.\n"
    "\n",
    out);
  for (i = 0; i < FLAG_COUNT; i++) {
    const struct flag *f = &flags[i];
    const char *arg = f->shown != NULL ? f->shown : f->arg;
    char left[64];
    int n;

    if (f->letter != 0) n = snprintf(left, sizeof left, "  -%c, --%s", f->letter, f->name);
    else n = snprintf(left, sizeof left, "      --%s", f->name);
    if (arg != NULL) snprintf(left + n, sizeof left - (size_t)n, " %s", arg);
    fprintf(out, "%-*s  %s\n", USAGE_COLUMN - 2, left, f->help);
  }
  fputs(
    "\n"
    "Flags override the file, which overrides the built-in defaults.\n"
    "Exit status: 0 ok, 2 bad configuration or command line.\n",
    out);
}

/* Copies the first n bytes of a flag as typed, for a message: unquoted,
 * like the flags we know, but without control bytes. */
static void spell(char *buf, size_t len, const char *s, size_t n) {
  size_t i;

  for (i = 0; i < n && s[i] != '\0' && i + 1 < len; i++)
    buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  buf[i] = '\0';
}

static const struct flag *find_long(const char *name, size_t len) {
  size_t i;

  for (i = 0; i < FLAG_COUNT; i++)
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0) return &flags[i];
  return NULL;
}

static const struct flag *find_short(char letter) {
  size_t i;

  for (i = 0; i < FLAG_COUNT; i++)
    if (flags[i].letter != 0 && flags[i].letter == letter) return &flags[i];
  return NULL;
}

/* Takes the value from the next argument. One that looks like a long flag
 * is not taken: "--queues --mode process" means a forgotten number. */
static int take_next(struct arg *a, int argc, char **argv, int *i, char *err, size_t errlen) {
  if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0) {
    snprintf(err, errlen, "%s: missing argument (%s %s)", a->spelled, a->spelled, a->flag->arg);
    return -1;
  }
  a->value = argv[++*i];
  return 0;
}

/* The flag's value: the one written into the argument itself ("--mtu=9000",
 * "-cFILE"), else the next argument. A flag without a value takes none. */
static int take_value(struct arg *a, const char *inline_value, int argc, char **argv, int *i, char *err,
                      size_t errlen) {
  if (a->flag->arg == NULL) {
    if (inline_value == NULL) return 0;
    snprintf(err, errlen, "%s: takes no value", a->spelled);
    return -1;
  }
  if (inline_value != NULL) {
    a->value = inline_value;
    return 0;
  }
  return take_next(a, argc, argv, i, err, errlen);
}

static int read_long(struct arg *a, int argc, char **argv, int *i, char *err, size_t errlen) {
  const char *name = argv[*i] + 2;
  const char *eq = strchr(name, '=');
  size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
  char shown[S5_SHOW_MAX];

  a->flag = find_long(name, len);
  if (a->flag == NULL) {
    spell(shown, sizeof shown, argv[*i], len + 2);
    snprintf(err, errlen, "%s: unknown flag (see --help)", shown);
    return -1;
  }
  snprintf(a->spelled, sizeof a->spelled, "--%s", a->flag->name);
  return take_value(a, eq != NULL ? eq + 1 : NULL, argc, argv, i, err, errlen);
}

static int read_short(struct arg *a, int argc, char **argv, int *i, char *err, size_t errlen) {
  const char *s = argv[*i];
  char shown[S5_SHOW_MAX];

  a->flag = find_short(s[1]);
  /* "-hV" bundles are not supported; "-cFILE" is. */
  if (a->flag == NULL || (a->flag->arg == NULL && s[2] != '\0')) {
    spell(shown, sizeof shown, s, strlen(s));
    snprintf(err, errlen, "%s: unknown flag (see --help)", shown);
    return -1;
  }
  snprintf(a->spelled, sizeof a->spelled, "-%c", s[1]);
  return take_value(a, s[2] != '\0' ? s + 2 : NULL, argc, argv, i, err, errlen);
}

/* Reads the flag at argv[*i] (and its value), leaving *i on the last
 * argument used. */
static int read_arg(struct arg *a, int argc, char **argv, int *i, char *err, size_t errlen) {
  const char *s = argv[*i];
  char shown[S5_SHOW_MAX];

  memset(a, 0, sizeof *a);
  if (strncmp(s, "--", 2) == 0 && s[2] != '\0') return read_long(a, argc, argv, i, err, errlen);
  if (s[0] == '-' && s[1] != '\0' && s[1] != '-') return read_short(a, argc, argv, i, err, errlen);
  s5_show(shown, sizeof shown, s);
  snprintf(err, errlen,
           "%s: unexpected argument (s5tund takes only flags; "
           "see --help)",
           shown);
  return -1;
}

/* First pass: spelling, --config, and the flags that end the run early.
 * --help and --version win as soon as they are seen. */
static int scan(struct args *as, int argc, char **argv, char *err, size_t errlen) {
  struct arg a;
  int i;

  char what[200];
  memset(as, 0, sizeof *as);
  s5_explain_flag(NULL, NULL, what, sizeof what);
  for (i = 1; i < argc; i++) {
    if (read_arg(&a, argc, argv, &i, err, errlen) != 0) return -1;
    switch (a.flag->id) {
      case FLAG_CONFIG:
        if (a.value[0] == '\0') {
          snprintf(err, errlen, "%s: empty file name", a.spelled);
          return -1;
        }
        as->config = a.value;
        break;
      case FLAG_CHECK: as->check = true; break;
      case FLAG_EXPLAIN:
      case FLAG_NAME:
      case FLAG_SRC:
      case FLAG_SNI:
      case FLAG_PROTO:
        if (s5_explain_flag(a.flag->name, a.value, what, sizeof what) != 0) {
          snprintf(err, errlen, "%s: %s", a.spelled, what);
          return -1;
        }
        as->explain_on = as->explain_on || a.flag->id == FLAG_EXPLAIN;
        break;
      case FLAG_SOCKS5: as->socks5 = true; break;
      case FLAG_PROXY: as->proxy = true; break;
      case FLAG_HELP: as->help = true; return 0;
      case FLAG_VERSION: as->version = true; return 0;
      case FLAG_STATS:
      case FLAG_CONNECTIONS:
      case FLAG_SELECT:
        snprintf(err, errlen, "%s: must be the first argument (s5tund %s %s)", a.spelled, a.spelled,
                 a.flag->id == FLAG_SELECT ? "GROUP MEMBER [SOCKET]" : "[SOCKET] [--json]");
        return -1;
      case FLAG_JSON:
        snprintf(err, errlen,
                 "%s: only with --stats or --connections (s5tund --stats [SOCKET] "
                 "[--json])",
                 a.spelled);
        return -1;
      default: break;
    }
  }
  const struct s5_explain *explain = s5_args_explain();
  if (!as->explain_on && (explain->name[0] != '\0' || explain->src.ss_family != 0 || explain->proto_given)) {
    snprintf(err, errlen, "--name, --sni, --src and --proto go with --explain DST:PORT");
    return -1;
  }
  if (as->socks5 && as->proxy) {
    snprintf(err, errlen,
             "--socks5 and --proxy: choose one (--proxy socks5://ADDR:PORT is --socks5 ADDR:PORT)");
    return -1;
  }
  return 0;
}

/* "ADDR:PORT", or "[ADDR]:PORT" for IPv6, whose ':'s would be ambiguous. */
static int apply_socks5(struct s5_config *cfg, const char *value, char *err, size_t errlen) {
  char addr[S5_SHOW_MAX + 8];
  char shown[S5_SHOW_MAX];
  char msg[256];
  const char *colon;
  const char *port;
  size_t len;

  s5_show(shown, sizeof shown, value);
  if (!cfg->socks5_section) {
    snprintf(err, errlen, "the configuration file has [upstream NAME] sections: use --proxy socks5://%s",
             shown);
    return -1;
  }
  if (value[0] == '[') {
    const char *close = strchr(value, ']');
    if (close == NULL || close[1] != ':') {
      snprintf(err, errlen, "%s: expected [IPV6]:PORT", shown);
      return -1;
    }
    colon = close + 1;
  } else {
    colon = strrchr(value, ':');
    if (colon != NULL && memchr(value, ':', (size_t)(colon - value)) != NULL) {
      snprintf(err, errlen,
               "%s: write an IPv6 address in brackets, "
               "[ADDR]:PORT",
               shown);
      return -1;
    }
    if (colon == NULL) {
      snprintf(err, errlen, "%s: expected ADDR:PORT", shown);
      return -1;
    }
  }
  len = (size_t)(colon - value);
  if (len >= sizeof addr) {
    snprintf(err, errlen, "%s is not an IPv4 or IPv6 address", shown);
    return -1;
  }
  memcpy(addr, value, len);
  addr[len] = '\0';
  port = colon + 1;
  /* Address first: it keeps the old port, which the port then replaces. */
  if (s5_config_set(cfg, "socks5", "address", addr, err, errlen) != 0) return -1;
  if (s5_config_set(cfg, "socks5", "port", port, msg, sizeof msg) != 0) {
    snprintf(err, errlen, "port: %s", msg);
    return -1;
  }
  return 0;
}

/* --proxy URL: the first replaces the file's upstreams, each adds one.
 * They take the first upstream's mark (auto-route's). */
static int apply_proxy(struct s5_config *cfg, const char *url, bool *first, char *err, size_t errlen) {
  uint32_t mark = cfg->upstreams[0].mark;
  if (*first && cfg->n_groups > 0) {
    snprintf(err, errlen,
             "the configuration file has [group NAME] sections, whose members are its upstreams: --proxy "
             "cannot replace those");
    return -1;
  }
  if (*first) {
    *first = false;
    cfg->n_upstreams = 0;
    cfg->socks5_section = false;
  }
  int up = s5_upstream_from_url(cfg, url, err, errlen);
  if (up < 0) return -1;
  cfg->upstreams[up].mark = mark;
  int key, bad;
  char what[256];
  if (s5_config_check(cfg, &key, &bad, what, sizeof what) == 0) return 0;
  if (bad >= 0)
    snprintf(err, errlen, "[upstream %s] %s: %s", cfg->upstreams[bad].name, s5_config_key_name(key), what);
  else snprintf(err, errlen, "[%s] %s: %s", s5_config_key_section(key), s5_config_key_name(key), what);
  return -1;
}

/* Second pass: the values, over defaults and file. Spelling was checked by
 * scan(), so read_arg() cannot fail here. */
static int apply(struct s5_config *cfg, int argc, char **argv, char *err, size_t errlen) {
  char what[512];
  struct arg a;
  bool first_proxy = true;
  int rc;
  int i;

  for (i = 1; i < argc; i++) {
    if (read_arg(&a, argc, argv, &i, err, errlen) != 0) return -1;
    if (a.flag->id == FLAG_SOCKS5) rc = apply_socks5(cfg, a.value, what, sizeof what);
    else if (a.flag->id == FLAG_PROXY) rc = apply_proxy(cfg, a.value, &first_proxy, what, sizeof what);
    else if (a.flag->key != NULL)
      rc = s5_config_set(cfg, a.flag->section, a.flag->key, a.value, what, sizeof what);
    else continue;
    if (rc != 0) {
      snprintf(err, errlen, "%s: %s", a.spelled, what);
      return -1;
    }
  }
  return 0;
}

/* The rules that involve several keys, once more on the final
 * configuration: the file passed them alone, but a flag can break one
 * (--netns over a file with auto-route). The key to blame is named by the
 * flag that set it, or else by the file. */
static int check_final(const struct s5_config *cfg, int argc, char **argv, const char *file, char *err,
                       size_t errlen) {
  char what[256], where[96];
  int key, up;
  if (s5_config_check(cfg, &key, &up, what, sizeof what) == 0) return 0;
  const char *section = s5_config_key_section(key), *name = s5_config_key_name(key);
  if (up >= 0) {
    snprintf(where, sizeof where, "upstream %s", cfg->upstreams[up].name);
    section = where;
  }
  const char *by = NULL;
  for (int i = 1; i < argc; i++) {
    struct arg a;
    char skip[64];
    if (read_arg(&a, argc, argv, &i, skip, sizeof skip) != 0) break;
    if (a.flag->key != NULL && strcmp(a.flag->section, section) == 0 && strcmp(a.flag->key, name) == 0)
      by = a.flag->name;
  }
  if (by != NULL) snprintf(err, errlen, "--%s: [%s] %s %s", by, section, name, what);
  else if (file != NULL)
    snprintf(err, errlen, "%s: [%s] %s %s (with the command line's flags)", file, section, name, what);
  else snprintf(err, errlen, "[%s] %s %s", section, name, what);
  return -1;
}

enum s5_args_result s5_args_load_io(struct s5_config *cfg, int argc, char **argv, FILE *out, FILE *errout) {
  char err[1024];
  struct args as;

  s5_config_defaults(cfg);
  if (scan(&as, argc, argv, err, sizeof err) != 0) goto bad;
  if (as.help) {
    usage(out);
    return S5_ARGS_EXIT_OK;
  }
  if (as.version) {
    fprintf(out, "s5tund %s\n", S5_VERSION);
    return S5_ARGS_EXIT_OK;
  }
  if (as.config != NULL && s5_config_load_file(cfg, as.config, err, sizeof err) != 0) goto bad;
  if (apply(cfg, argc, argv, err, sizeof err) != 0) goto bad;
  if (check_final(cfg, argc, argv, as.config, err, sizeof err) != 0) goto bad;
  if (s5_rules_check(cfg, err, sizeof err) < 0) goto bad; /* reads the rule files */
  s5_config_derive(cfg);
  if (as.explain_on) return S5_ARGS_EXPLAIN;
  if (as.check) {
    s5_config_print(cfg, out);
    return S5_ARGS_EXIT_OK;
  }
  return S5_ARGS_RUN;

bad:
  fprintf(errout, "s5tund: %s\n", err);
  return S5_ARGS_EXIT_BAD;
}

enum s5_args_result s5_args_load(struct s5_config *cfg, int argc, char **argv) {
  return s5_args_load_io(cfg, argc, argv, stdout, stderr);
}
