/* SPDX-License-Identifier: MIT */
/* Unit test of the configuration: defaults, the INI file, the command-line
 * flags and --check-config. Run as "test_config DIR", DIR holding the INI
 * files of test/unit/configs. Prints one line per failed check, then
 * "N passed, M failed"; exits 1 if anything failed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini/config.h"

#include "check.h"

static const char *dir; /* the configs directory */
static char tmpdir[64]; /* scratch files written by the test */

/* Paths are built into a ring of buffers so that a few can be alive at once
 * (e.g. as flag arguments). */
static const char *join(const char *base, const char *name) {
  static char ring[8][PATH_MAX];
  static unsigned next;
  char *p = ring[next++ % 8];

  snprintf(p, PATH_MAX, "%s/%s", base, name);
  return p;
}

static const char *conf(const char *name) { return join(dir, name); }

static const char *scratch(const char *name) { return join(tmpdir, name); }

static void write_file(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");

  if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
    printf("FAIL cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

static void write_text(const char *path, const char *text) { write_file(path, text, strlen(text)); }

/* ---- comparing configurations ---------------------------------------- */

static bool prefix_eq(const struct s5_prefix *a, const struct s5_prefix *b) {
  if (a->family != b->family) return false;
  if (a->family == 0) return true;
  return a->len == b->len && memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

static bool sockaddr_eq(const struct s5_config *a, const struct s5_config *b) {
  const struct sockaddr_storage *x = &a->socks5.addr;
  const struct sockaddr_storage *y = &b->socks5.addr;

  if (x->ss_family != y->ss_family || a->socks5.addrlen != b->socks5.addrlen) return false;
  if (x->ss_family == AF_INET) {
    const struct sockaddr_in *p = (const void *)x, *q = (const void *)y;
    return p->sin_port == q->sin_port && p->sin_addr.s_addr == q->sin_addr.s_addr;
  }
  if (x->ss_family == AF_INET6) {
    const struct sockaddr_in6 *p = (const void *)x, *q = (const void *)y;
    return p->sin6_port == q->sin6_port && memcmp(&p->sin6_addr, &q->sin6_addr, 16) == 0;
  }
  return true;
}

/* Name of the first field that differs, NULL if none. The password is
 * compared only when asked: --check-config masks it. */
static const char *cfg_diff(const struct s5_config *a, const struct s5_config *b, bool password) {
  if (a->mode != b->mode) return "mode";
  if (a->queues != b->queues) return "queues";
  if (strcmp(a->tun.name, b->tun.name) != 0) return "tun.name";
  if (a->tun.mtu != b->tun.mtu) return "tun.mtu";
  if (!prefix_eq(&a->tun.ipv4, &b->tun.ipv4)) return "tun.ipv4";
  if (!prefix_eq(&a->tun.ipv6, &b->tun.ipv6)) return "tun.ipv6";
  if (a->tun.persist != b->tun.persist) return "tun.persist";
  if (!sockaddr_eq(a, b)) return "socks5.addr";
  if (strcmp(a->socks5.username, b->socks5.username) != 0) return "socks5.username";
  if (password && strcmp(a->socks5.password, b->socks5.password) != 0) return "socks5.password";
  if (a->socks5.mark != b->socks5.mark) return "socks5.mark";
  if (a->session.connect_timeout != b->session.connect_timeout) return "session.connect_timeout";
  if (a->session.tcp_idle_timeout != b->session.tcp_idle_timeout) return "session.tcp_idle_timeout";
  if (a->session.max_sessions != b->session.max_sessions) return "session.max_sessions";
  if (a->tun.icmp_reply != b->tun.icmp_reply) return "tun.icmp";
  if (a->socks5.udp != b->socks5.udp) return "socks5.udp";
  if (memcmp(&a->socks5.udp_addr, &b->socks5.udp_addr, sizeof a->socks5.udp_addr) != 0)
    return "socks5.udp_addr";
  if (a->session.udp_idle_timeout != b->session.udp_idle_timeout) return "session.udp_idle_timeout";
  if (a->session.udp_coalesce != b->session.udp_coalesce) return "session.udp_coalesce";
  if (memcmp(&a->dns.addr, &b->dns.addr, sizeof a->dns.addr) != 0) return "dns.addr";
  if (!prefix_eq(&a->dns.network, &b->dns.network)) return "dns.network";
  if (!prefix_eq(&a->dns.network6, &b->dns.network6)) return "dns.network6";
  if (memcmp(&a->tun.exclude_uid, &b->tun.exclude_uid, sizeof a->tun.exclude_uid) != 0)
    return "tun.exclude_uid";
  if (memcmp(&a->tun.include_uid, &b->tun.include_uid, sizeof a->tun.include_uid) != 0)
    return "tun.include_uid";
  if (a->dns.cache_size != b->dns.cache_size) return "dns.cache_size";
  if (a->dns.hijack != b->dns.hijack) return "dns.hijack";
  if (a->log.level != b->log.level) return "log.level";
  if (strcmp(a->log.file, b->log.file) != 0) return "log.file";
  if (a->tun.offload != b->tun.offload) return "tun.offload";
  if (a->tun.auto_route != b->tun.auto_route) return "tun.auto_route";
  if (a->tun.kill_switch != b->tun.kill_switch) return "tun.kill_switch";
  if (strcmp(a->tun.post_up, b->tun.post_up) != 0) return "tun.post_up";
  if (strcmp(a->tun.pre_down, b->tun.pre_down) != 0) return "tun.pre_down";
  if (a->socks5.pipeline != b->socks5.pipeline) return "socks5.pipeline";
  if (a->socks5.pool != b->socks5.pool) return "socks5.pool";
  if (a->socks5.optimistic != b->socks5.optimistic) return "socks5.optimistic";
  if (a->session.tcp_buffer != b->session.tcp_buffer) return "session.tcp_buffer";
  if (strcmp(a->run.user, b->run.user) != 0) return "run.user";
  if (a->run.uid != b->run.uid || a->run.gid != b->run.gid) return "run.uid";
  if (strcmp(a->run.pid_file, b->run.pid_file) != 0) return "run.pid_file";
  if (a->run.drain_timeout != b->run.drain_timeout) return "run.drain_timeout";
  if (a->run.limit_nofile != b->run.limit_nofile) return "run.limit_nofile";
  if (strcmp(a->stats.socket, b->stats.socket) != 0) return "stats.socket";
  if (memcmp(&a->stats.http, &b->stats.http, sizeof a->stats.http) != 0) return "stats.http";
  if (a->n_upstreams != b->n_upstreams || a->socks5_section != b->socks5_section) return "n_upstreams";
  for (unsigned i = 0; i < a->n_upstreams; i++) {
    const struct s5_upstream_cfg *x = &a->upstreams[i], *y = &b->upstreams[i];
    if (strcmp(x->name, y->name) != 0 || x->type != y->type || x->weight != y->weight) return "upstream name";
    if (x->addrlen != y->addrlen || memcmp(&x->addr, &y->addr, x->addrlen) != 0) return "upstream address";
    if (strcmp(x->username, y->username) != 0) return "upstream username";
    if (password && strcmp(x->password, y->password) != 0) return "upstream password";
    if (x->mark != y->mark || x->pipeline != y->pipeline || x->pool != y->pool ||
        x->optimistic != y->optimistic)
      return "upstream mark/pipeline/pool/optimistic";
    if (x->udp != y->udp || memcmp(&x->udp_addr, &y->udp_addr, sizeof x->udp_addr) != 0)
      return "upstream udp";
  }
  return NULL;
}

/* As --check-config prints them. */
static void mask_passwords(struct s5_config *c) {
  for (unsigned i = 0; i < c->n_upstreams; i++) {
    if (c->upstreams[i].password[0] == '\0') continue;
    memset(c->upstreams[i].password, 0, sizeof c->upstreams[i].password);
    strcpy(c->upstreams[i].password, "***");
  }
}

static const char *show_diff(const char *d) { return d != NULL ? d : "(none)"; }

static bool is_prefix(const struct s5_prefix *p, int family, const char *addr, unsigned len) {
  unsigned char want[16];

  if (inet_pton(family, addr, want) != 1) return false;
  return p->family == family && p->len == len && memcmp(p->addr, want, family == AF_INET ? 4 : 16) == 0;
}

static bool is_sockaddr(const struct s5_config *c, const char *addr, unsigned port) {
  const struct sockaddr_storage *ss = &c->socks5.addr;
  unsigned char want[16];

  if (inet_pton(AF_INET, addr, want) == 1) {
    const struct sockaddr_in *sin = (const void *)ss;
    return ss->ss_family == AF_INET && c->socks5.addrlen == sizeof *sin && ntohs(sin->sin_port) == port &&
           memcmp(&sin->sin_addr, want, 4) == 0;
  }
  if (inet_pton(AF_INET6, addr, want) == 1) {
    const struct sockaddr_in6 *sin6 = (const void *)ss;
    return ss->ss_family == AF_INET6 && c->socks5.addrlen == sizeof *sin6 && ntohs(sin6->sin6_port) == port &&
           memcmp(&sin6->sin6_addr, want, 16) == 0;
  }
  return false;
}

static unsigned expected_auto_queues(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > S5_QUEUES_MAX ? S5_QUEUES_MAX : (unsigned)n;
}

/* ---- running s5_args_load --------------------------------------------- */

struct run {
  enum s5_args_result rc;
  char *out; /* everything written to stdout */
  char *err; /* everything written to stderr */
  struct s5_config cfg;
};

/* Runs s5_args_load_io() on "s5tund" followed by the NULL-terminated
 * arguments, capturing both streams. */
static void run(struct run *r, ...) {
  char *argv[32];
  size_t outlen, errlen;
  FILE *out, *err;
  int argc = 0;
  va_list ap;

  argv[argc++] = "s5tund";
  va_start(ap, r);
  while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL) argc++;
  va_end(ap);
  argv[argc] = NULL;
  out = open_memstream(&r->out, &outlen);
  err = open_memstream(&r->err, &errlen);
  if (out == NULL || err == NULL) {
    printf("FAIL open_memstream: %s\n", strerror(errno));
    exit(1);
  }
  r->rc = s5_args_load_io(&r->cfg, argc, argv, out, err);
  fclose(out);
  fclose(err);
}

static void run_free(struct run *r) {
  free(r->out);
  free(r->err);
}

static unsigned count_lines(const char *s) {
  unsigned n = 0;

  for (; *s != '\0'; s++) n += *s == '\n';
  return n;
}

/* ---- defaults ---------------------------------------------------------- */

static void test_defaults(void) {
  struct s5_config c;

  s5_config_defaults(&c);
  CHECK(c.mode == S5_MODE_THREAD, "default mode");
  CHECK(c.queues == expected_auto_queues(), "default queues %u", c.queues);
  CHECK(strcmp(c.tun.name, "tun0") == 0, "default tun.name %s", c.tun.name);
  CHECK(c.tun.mtu == 8500, "default mtu %u", c.tun.mtu);
  CHECK(is_prefix(&c.tun.ipv4, AF_INET, "198.18.0.1", 15), "default ipv4");
  CHECK(c.tun.ipv6.family == 0, "default ipv6 unset");
  CHECK(!c.tun.persist, "default persist");
  CHECK(is_sockaddr(&c, "127.0.0.1", 1080), "default socks5 address");
  CHECK(c.socks5.username[0] == '\0' && c.socks5.password[0] == '\0', "default no authentication");
  CHECK(c.socks5.mark == 0, "default mark");
  CHECK(c.session.connect_timeout == 10, "default connect-timeout");
  CHECK(c.session.tcp_idle_timeout == 600, "default tcp-idle-timeout");
  CHECK(c.session.max_sessions == 0, "default max-sessions");
  CHECK(c.log.level == S5_LOG_INFO, "default log level");
  CHECK(c.log.file[0] == '\0', "default log file");
  CHECK(!c.tun.icmp_reply, "default icmp off");
  CHECK(c.socks5.udp, "default udp associate");
  CHECK(c.socks5.udp_addr.ss_family == 0, "default udp-address unset");
  CHECK(c.session.udp_idle_timeout == 60, "default udp-idle-timeout");
  CHECK(c.session.udp_coalesce == 250, "default udp-coalesce");
  CHECK(c.session.tcp_buffer == 512 * 1024, "default tcp-buffer");
  CHECK(c.dns.addr[0].ss_family == 0 && c.dns.addr[1].ss_family == 0, "default dns address unset");
  CHECK(c.dns.network6.family == 0, "default dns network6 unset");
  CHECK(is_prefix(&c.dns.network, AF_INET, "100.64.0.0", 10), "default dns network");
  CHECK(c.dns.cache_size == 10000, "default dns cache-size");
  CHECK(!c.dns.hijack, "default dns hijack false");
  CHECK(c.tun.kill_switch, "default kill-switch true");
  CHECK(c.queues_configured == 0, "default queues as written: 0");
}

/* ---- good files --------------------------------------------------------- */

/* Loads name over defaults; returns false (after a failed check) on error. */
static bool load_ok(const char *path, struct s5_config *c) {
  char err[1024] = "";
  int rc;

  s5_config_defaults(c);
  rc = s5_config_load_file(c, path, err, sizeof err);
  CHECK(rc == 0, "%s: expected to load, got: %s", path, err);
  return rc == 0;
}

static void check_full(const struct s5_config *c, const char *what) {
  CHECK(c->mode == S5_MODE_PROCESS, "%s: mode", what);
  CHECK(c->queues == 3, "%s: queues %u", what, c->queues);
  CHECK(strcmp(c->tun.name, "s5t.0_a-b") == 0, "%s: name %s", what, c->tun.name);
  CHECK(c->tun.mtu == 1500, "%s: mtu %u (inline comment)", what, c->tun.mtu);
  CHECK(is_prefix(&c->tun.ipv4, AF_INET, "10.99.0.1", 24), "%s: ipv4", what);
  CHECK(is_prefix(&c->tun.ipv6, AF_INET6, "fd00:5::1", 64), "%s: ipv6", what);
  CHECK(c->tun.persist, "%s: persist", what);
  CHECK(is_sockaddr(c, "2001:db8::10", 9050), "%s: socks5 address", what);
  CHECK(strcmp(c->socks5.username, "alice") == 0, "%s: username", what);
  CHECK(c->socks5.mark == 0x1f, "%s: mark %u", what, c->socks5.mark);
  CHECK(c->session.connect_timeout == 5, "%s: connect-timeout", what);
  CHECK(c->session.tcp_idle_timeout == 86400, "%s: tcp-idle-timeout", what);
  CHECK(c->session.max_sessions == 1000000, "%s: max-sessions", what);
  CHECK(c->log.level == S5_LOG_DEBUG, "%s: level", what);
  CHECK(strcmp(c->log.file, "/var/log/s5tund.log") == 0, "%s: file", what);
}

static void test_good_files(void) {
  struct s5_config c, d;

  s5_config_defaults(&d);
  if (load_ok(conf("empty.ini"), &c))
    CHECK(cfg_diff(&c, &d, true) == NULL,
          "empty.ini differs from defaults "
          "in %s",
          show_diff(cfg_diff(&c, &d, true)));
  if (load_ok(conf("full.ini"), &c)) {
    check_full(&c, "full.ini");
    CHECK(strcmp(c.socks5.password, "s3cret ;with \"quotes\" and \\ ") == 0,
          "full.ini: quoted password is [%s]", c.socks5.password);
  }
  if (load_ok(conf("ipv6_only.ini"), &c)) {
    CHECK(c.tun.ipv4.family == 0, "ipv6_only.ini: ipv4 disabled");
    CHECK(is_prefix(&c.tun.ipv6, AF_INET6, "fc00::1", 7),
          "ipv6_only.ini: "
          "ipv6");
    CHECK(is_sockaddr(&c, "::1", 1081),
          "ipv6_only.ini: [::1] and port: "
          "1081");
  }
  if (load_ok(conf("udp_dns.ini"), &c)) {
    const struct sockaddr_in *u = (const void *)&c.socks5.udp_addr;
    const struct sockaddr_in *a = (const void *)&c.dns.addr[0];
    const struct sockaddr_in6 *a6 = (const void *)&c.dns.addr[1];
    uint8_t want6[16] = {0xfc, [15] = 2};
    CHECK(c.tun.icmp_reply, "udp_dns.ini: icmp");
    CHECK(!c.socks5.udp, "udp_dns.ini: udp");
    CHECK(u->sin_family == AF_INET && ntohl(u->sin_addr.s_addr) == 0xc0000207, "udp_dns.ini: udp-address");
    CHECK(c.session.udp_idle_timeout == 86400, "udp_dns.ini: udp-idle-timeout");
    CHECK(c.session.tcp_buffer == 65536, "udp_dns.ini: tcp-buffer");
    CHECK(a->sin_family == AF_INET && ntohl(a->sin_addr.s_addr) == 0xc6120002 && ntohs(a->sin_port) == 53,
          "udp_dns.ini: dns address");
    CHECK(a6->sin6_family == AF_INET6 && memcmp(&a6->sin6_addr, want6, 16) == 0 && ntohs(a6->sin6_port) == 53,
          "udp_dns.ini: dns address, IPv6");
    CHECK(is_prefix(&c.dns.network, AF_INET, "10.128.0.0", 30), "udp_dns.ini: dns network");
    CHECK(is_prefix(&c.dns.network6, AF_INET6, "fdff:5335::", 96), "udp_dns.ini: dns network6");
    CHECK(c.dns.cache_size == 2, "udp_dns.ini: cache-size");
  }
  if (load_ok(conf("quoted.ini"), &c)) {
    CHECK(strcmp(c.socks5.username, " lead;semi\"quote\\back ") == 0, "quoted.ini: username is [%s]",
          c.socks5.username);
    CHECK(strcmp(c.log.file, "/tmp/a ;b.log") == 0,
          "quoted.ini: file is "
          "[%s]",
          c.log.file);
  }
}

/* ---- bad files ---------------------------------------------------------- */

struct bad {
  const char *file;
  unsigned line;      /* 0: the message names no line */
  const char *key;    /* "[tun] mtu", "mode", or NULL for syntax errors */
  const char *reason; /* a part of what is wrong */
};

static const struct bad bad_files[] = {
  {"bad_sniff_port.ini", 3, "[sniff] tls", "70000"},
  {"bad_sniff_twice.ini", 3, "[sniff] http", "port 80 is listed twice"},
  {"bad_sniff_skip.ini", 3, "[sniff] skip", "neither an address prefix nor a host name"},
  {"bad_section.ini", 3, "[tunnel] mtu", "unknown section [tunnel]"},
  {"bad_section.ini", 3, "[tunnel] mtu",
   "(expected [tun], [socks5], [upstream NAME], "
   "[group NAME], [balance], [rules], [sniff], [session], [dns], [log], [run] or [stats])"},
  {"bad_run_key.ini", 3, "[run] usr",
   "unknown key (expected one of: user, "
   "pid-file, drain-timeout, limit-nofile)"},
  {"bad_stats_key.ini", 3, "[stats] sock",
   "unknown key (expected one of: "
   "socket, http)"},
  {"bad_uid_user.ini", 4, "[tun] exclude-uid", "\"s5tund-no-such-user\" is neither a uid nor a user"},
  {"bad_uid_both.ini", 5, "[tun] include-uid", "set with [tun] exclude-uid"},
  {"bad_uid_noauto.ini", 3, "[tun] include-uid", "needs [tun] auto-route = true"},
  {"bad_uid_range.ini", 4, "[tun] exclude-uid", "range 2000-1000 runs backwards"},
  {"bad_run_user.ini", 3, "[run] user",
   "\"s5tund-no-such-user\" is not a "
   "user on this system"},
  {"bad_section_case.ini", 2, "[TUN] mtu", "lowercase: [tun]"},
  {"bad_key.ini", 3, "[tun] mtuu",
   "unknown key (expected one of: name, "
   "mtu, txqueuelen, ipv4, ipv6, persist, icmp, offload, auto-route, kill-switch, exclude-uid, include-uid, "
   "exclude-local, route-exclude, route-include, route-exclude-file, route-include-file, netns, post-up, "
   "pre-down)"},
  {"bad_netns_autoroute.ini", 3, "[tun] netns", "set with [tun] auto-route"},
  {"bad_netns_name.ini", 2, "[tun] netns", "\"a/b\" is not a namespace name"},
  {"bad_route_exclude.ini", 3, "[tun] route-exclude", "\"10.1.0.0/8\" has host bits set beyond /8"},
  {"bad_route_file.ini", 4, "[tun] route-include-file", "must be an absolute path"},
  {"bad_route_noauto.ini", 3, "[tun] route-exclude", "needs [tun] auto-route = true"},
  {"bad_key_case.ini", 2, "[tun] MTU", "lowercase: mtu"},
  {"bad_key_section.ini", 2, "[tun] port", "did you mean [socks5] port?"},
  {"bad_key_global.ini", 2, "[tun] queues", "before the first [section]"},
  {"bad_mode.ini", 1, "mode", "\"fiber\" is not one of: thread, process"},
  {"bad_queues_range.ini", 1, "queues", "257 is out of range (0..256)"},
  {"bad_queues_nan.ini", 2, "queues", "\"4x\" is not a number"},
  {"bad_queues_negative.ini", 1, "queues", "-1 is out of range (0..256)"},
  {"bad_mtu_high.ini", 7, "[tun] mtu", "70000 is out of range (1280..65535)"},
  {"bad_mtu_low.ini", 2, "[tun] mtu", "1279 is out of range (1280..65535)"},
  {"bad_mtu_empty.ini", 2, "[tun] mtu", "empty value"},
  {"bad_mtu_glued_comment.ini", 2, "[tun] mtu", "is not a number"},
  {"bad_name_long.ini", 2, "[tun] name",
   "too long (16 characters, at "
   "most 15)"},
  {"bad_name_slash.ini", 2, "[tun] name", "character other than"},
  {"bad_name_template.ini", 2, "[tun] name", "template"},
  {"bad_name_empty.ini", 2, "[tun] name", "empty"},
  {"bad_ipv4_nolen.ini", 2, "[tun] ipv4", "no prefix length"},
  {"bad_ipv4_len.ini", 2, "[tun] ipv4", "33 is out of range (1..32)"},
  {"bad_ipv4_zero.ini", 2, "[tun] ipv4", "0 is out of range (1..32)"},
  {"bad_ipv4_addr.ini", 2, "[tun] ipv4", "not an IPv4 address"},
  {"bad_ipv4_family.ini", 2, "[tun] ipv4", "wrong family"},
  {"bad_ipv6_len.ini", 2, "[tun] ipv6", "129 is out of range (1..128)"},
  {"bad_ipv6_addr.ini", 2, "[tun] ipv6", "not an IPv6 address"},
  {"bad_no_address.ini", 2, "[tun] ipv4", "at least one address"},
  {"bad_persist.ini", 2, "[tun] persist", "\"maybe\" is not a boolean"},
  {"bad_socks5_host.ini", 2, "[socks5] address",
   "host names are not "
   "looked up: DNS"},
  {"bad_socks5_any.ini", 2, "[socks5] address", "unspecified address"},
  {"bad_port_zero.ini", 2, "[socks5] port", "0 is out of range (1..65535)"},
  {"bad_port_high.ini", 2, "[socks5] port", "65536 is out of range"},
  {"bad_username_only.ini", 2, "[socks5] username",
   "without [socks5] "
   "password"},
  {"bad_password_only.ini", 3, "[socks5] password",
   "without [socks5] "
   "username"},
  {"bad_mark_big.ini", 2, "[socks5] mark", "4294967296 is out of range"},
  {"bad_mark_hex.ini", 2, "[socks5] mark", "is not a number"},
  {"bad_connect_timeout.ini", 2, "[session] connect-timeout", "(1..3600)"},
  {"bad_connect_timeout_high.ini", 2, "[session] connect-timeout", "3601 is out of range"},
  {"bad_idle_timeout.ini", 2, "[session] tcp-idle-timeout", "(1..86400)"},
  {"bad_max_sessions.ini", 2, "[session] max-sessions", "(0..1000000)"},
  {"bad_level.ini", 2, "[log] level",
   "\"verbose\" is not one of: error, "
   "warn, info, debug"},
  {"bad_log_file_control.ini", 2, "[log] file", "control character"},
  {"bad_duplicate.ini", 4, "[tun] mtu", "set twice, first at line 2"},
  {"bad_syntax.ini", 2, NULL, "expected \"key = value\""},
  {"bad_section_header.ini", 1, NULL, "without a closing ']'"},
  {"bad_syntax_first.ini", 2, NULL, "expected \"key = value\""},
  {"bad_key_first.ini", 2, "[tun] mtu", "1 is out of range"},
  {"bad_quote.ini", 3, "[socks5] password", "missing closing quote"},
  {"bad_quote_trailing.ini", 2, "[socks5] username",
   "after the closing "
   "quote"},
  {"bad_escape.ini", 2, "[socks5] username", "unknown escape"},
  {"bad_icmp.ini", 2, "[tun] icmp", "\"echo\" is not one of: off, reply"},
  {"bad_udp.ini", 2, "[socks5] udp",
   "\"relay\" is not one of: off, "
   "associate"},
  {"bad_udp_address.ini", 2, "[socks5] udp-address",
   "host names are not "
   "looked up"},
  {"bad_udp_idle_timeout.ini", 2, "[session] udp-idle-timeout", "0 is out of range (1..86400)"},
  {"bad_udp_coalesce.ini", 2, "[session] udp-coalesce", "10001 is out of range (0..10000)"},
  {"bad_tcp_buffer.ini", 2, "[session] tcp-buffer", "8192 is out of range (16384..524288)"},
  {"bad_dns_address.ini", 2, "[dns] address", "not an IPv4 or IPv6 address"},
  {"bad_dns_network_nolen.ini", 2, "[dns] network", "no prefix length"},
  {"bad_dns_network_family.ini", 2, "[dns] network", "wrong family"},
  {"bad_dns_network_hostbits.ini", 2, "[dns] network",
   "host bits set (the "
   "network of /10 starts at 100.64.0.0)"},
  {"bad_dns_network_small.ini", 2, "[dns] network", "at least /30"},
  {"bad_dns_network_empty.ini", 2, "[dns] network", "empty"},
  {"bad_dns_cache_size.ini", 2, "[dns] cache-size",
   "0 is out of range "
   "(1..1000000)"},
  {"bad_dns_cache_pool.ini", 3, "[dns] cache-size",
   "300 is more than the "
   "254 addresses of [dns] network /24"},
  {"bad_dns_address_in_pool.ini", 2, "[dns] address", "inside [dns] network"},
  {"bad_dns_hijack.ini", 3, "[dns] hijack", "needs [dns] address"},
  {"bad_stats_http_port.ini", 2, "[stats] http",
   "port: 0 is out of range "
   "(1..65535)"},
  {"bad_stats_http_v6.ini", 2, "[stats] http",
   "an IPv6 address needs "
   "brackets"},
  {"bad_stats_http_host.ini", 2, "[stats] http",
   "host names are not "
   "looked up"},
  {"bad_stats_http_noport.ini", 2, "[stats] http", "is not ADDR:PORT"},
};

/* Loads path over a non-default configuration and checks: -1, the message
 * is "PATH[:LINE]: [KEY: ]..." and holds the reason, and nothing changed. */
static void expect_bad(const char *path, unsigned line, const char *key, const char *reason) {
  struct s5_config c, before;
  char err[1024] = "";
  char want[PATH_MAX + 128];
  int n;

  s5_config_defaults(&c);
  c.tun.mtu = 1234; /* something a file could not have set by accident */
  before = c;
  CHECK(s5_config_load_file(&c, path, err, sizeof err) == -1, "%s: expected an error", path);
  n = snprintf(want, sizeof want, "%s", path);
  if (line > 0) n += snprintf(want + n, sizeof want - (size_t)n, ":%u", line);
  snprintf(want + n, sizeof want - (size_t)n, ": %s%s", key ? key : "", key ? ": " : "");
  CHECK(strncmp(err, want, strlen(want)) == 0,
        "%s: message [%s] does not "
        "start with [%s]",
        path, err, want);
  CHECK(strstr(err, reason) != NULL, "%s: message [%s] lacks [%s]", path, err, reason);
  CHECK(strchr(err, '\n') == NULL, "%s: message has a newline", path);
  CHECK(cfg_diff(&c, &before, true) == NULL,
        "%s: configuration changed "
        "(%s) although the file was refused",
        path, show_diff(cfg_diff(&c, &before, true)));
}

/* [stats] http: ADDR:PORT, brackets for IPv6, every address allowed (the
 * daemon warns), empty = off; --check-config prints it back as written. */
static void test_stats_http(void) {
  static const struct {
    const char *text;
    int family;
    const char *addr;
    unsigned port;
  } good[] = {
    {"127.0.0.1:9553", AF_INET, "127.0.0.1", 9553},
    {"[::1]:9553", AF_INET6, "::1", 9553},
    {"0.0.0.0:1", AF_INET, "0.0.0.0", 1},
    {"[::]:65535", AF_INET6, "::", 65535},
    {"", 0, NULL, 0},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    struct s5_config c;
    char err[256] = "", out[8192] = "", want[128];
    unsigned char a[16];
    s5_config_defaults(&c);
    c.stats.http.ss_family = AF_UNIX; /* must be overwritten */
    CHECK(s5_config_set(&c, "stats", "http", good[i].text, err, sizeof err) == 0, "http = %s: %s",
          good[i].text, err);
    const struct sockaddr_storage *ss = &c.stats.http;
    CHECK(ss->ss_family == good[i].family, "http = %s: family %d", good[i].text, ss->ss_family);
    if (good[i].family == AF_INET) {
      const struct sockaddr_in *sin = (const void *)ss;
      inet_pton(AF_INET, good[i].addr, a);
      CHECK(memcmp(&sin->sin_addr, a, 4) == 0 && ntohs(sin->sin_port) == good[i].port,
            "http = %s: address or port", good[i].text);
    } else if (good[i].family == AF_INET6) {
      const struct sockaddr_in6 *sin6 = (const void *)ss;
      inet_pton(AF_INET6, good[i].addr, a);
      CHECK(memcmp(&sin6->sin6_addr, a, 16) == 0 && ntohs(sin6->sin6_port) == good[i].port,
            "http = %s: address or port", good[i].text);
    }
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    if (f == NULL) continue;
    s5_config_print(&c, f);
    fclose(f);
    snprintf(want, sizeof want, "\nhttp =%s%s\n", good[i].text[0] ? " " : "", good[i].text);
    CHECK(strstr(out, want) != NULL, "http = %s: --check-config lacks [%s]", good[i].text, want);
  }
}

static void test_bad_files(void) {
  size_t i;

  for (i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++)
    expect_bad(conf(bad_files[i].file), bad_files[i].line, bad_files[i].key, bad_files[i].reason);
}

/* The message exactly as in the issue. */
static void test_message_format(void) {
  struct s5_config c;
  char err[1024];
  char want[PATH_MAX + 128];

  s5_config_defaults(&c);
  s5_config_load_file(&c, conf("bad_mtu_high.ini"), err, sizeof err);
  snprintf(want, sizeof want,
           "%s:7: [tun] mtu: 70000 is out of range "
           "(1280..65535)",
           conf("bad_mtu_high.ini"));
  CHECK(strcmp(err, want) == 0, "message [%s], want [%s]", err, want);
  CHECK(strcmp(c.tun.name, "tun0") == 0,
        "bad_mtu_high.ini: name was "
        "applied (%s) before the error",
        c.tun.name);
  /* Secrets are never repeated in a message. */
  s5_config_load_file(&c, conf("bad_password_only.ini"), err, sizeof err);
  CHECK(strstr(err, "secret") == NULL, "password shown: %s", err);
  s5_config_load_file(&c, conf("bad_quote.ini"), err, sizeof err);
  CHECK(strstr(err, "open") == NULL, "password shown: %s", err);
}

/* ---- generated files: long lines, line ends, I/O errors ---------------- */

static char *repeat(char ch, size_t n) {
  char *s = malloc(n + 1);

  if (s == NULL) exit(1);
  memset(s, ch, n);
  s[n] = '\0';
  return s;
}

static void test_long_lines(void) {
  struct s5_config c;
  char *p255 = repeat('p', 255), *p256 = repeat('p', 256);
  char *path = repeat('d', 3000), *key = repeat('k', 300);
  char *comment = repeat('x', 500), *huge = repeat('h', 9000);
  char *buf = malloc(20000);

  if (buf == NULL) exit(1);
  /* Longer than inih's 200-byte line: still read, and line numbers stay
   * right after it. */
  path[0] = '/';
  snprintf(buf, 20000,
           "; %s\n[socks5]\nusername = u\npassword = %s\n"
           "[log]\nfile = %s\n",
           comment, p255, path);
  write_text(scratch("long.ini"), buf);
  if (load_ok(scratch("long.ini"), &c)) {
    CHECK(strcmp(c.socks5.password, p255) == 0, "255-byte password");
    CHECK(strcmp(c.log.file, path) == 0, "3000-byte log file name");
  }
  snprintf(buf, 20000,
           "[socks5]\nusername = u\npassword = %s\n"
           "port = 0\n",
           p255);
  write_text(scratch("long_then_bad.ini"), buf);
  expect_bad(scratch("long_then_bad.ini"), 4, "[socks5] port", "out of range");
  snprintf(buf, 20000, "[socks5]\nusername = u\npassword = \"%s\"\n", p256);
  write_text(scratch("long_password.ini"), buf);
  expect_bad(scratch("long_password.ini"), 3, "[socks5] password", "too long (256 bytes, at most 255)");
  snprintf(buf, 20000, "[tun]\n%s = 1\n", key);
  write_text(scratch("long_key.ini"), buf);
  expect_bad(scratch("long_key.ini"), 2, NULL,
             "too long for a section "
             "header or key name");
  snprintf(buf, 20000, "[log]\n\nfile = /%s\n", huge);
  write_text(scratch("huge_line.ini"), buf);
  expect_bad(scratch("huge_line.ini"), 3, NULL, "line is too long");
  free(p255);
  free(p256);
  free(path);
  free(key);
  free(comment);
  free(huge);
  free(buf);
}

static void test_odd_files(void) {
  struct s5_config c;
  static const char nul[] =
    "[tun]\nmtu = 15\0"
    "00\n";

  write_text(scratch("crlf.ini"),
             "mode = process\r\n[tun]\r\nmtu = 1500\r\n"
             "[socks5]\r\nusername = \"a b\"\r\npassword = pw\r\n");
  if (load_ok(scratch("crlf.ini"), &c)) {
    CHECK(c.mode == S5_MODE_PROCESS && c.tun.mtu == 1500, "CRLF values");
    CHECK(strcmp(c.socks5.username, "a b") == 0 && strcmp(c.socks5.password, "pw") == 0, "CRLF quoted value");
  }
  /* A form feed is a blank to inih too: no continuation line either. */
  write_text(scratch("blanks.ini"), "[tun]\nname = tun9\n\f\v mtu = 1500\n");
  if (load_ok(scratch("blanks.ini"), &c))
    CHECK(c.tun.mtu == 1500 && strcmp(c.tun.name, "tun9") == 0, "indented key after a key");
  write_text(scratch("bom.ini"), "\xEF\xBB\xBFmode = process\n");
  if (load_ok(scratch("bom.ini"), &c)) CHECK(c.mode == S5_MODE_PROCESS, "UTF-8 BOM skipped");
  write_text(scratch("crlf_bad.ini"), "[tun]\r\n\r\nmtu = 1\r\n");
  expect_bad(scratch("crlf_bad.ini"), 3, "[tun] mtu", "1 is out of range");
  write_file(scratch("nul.ini"), nul, sizeof nul - 1);
  expect_bad(scratch("nul.ini"), 2, NULL, "NUL byte");
  /* No file, a directory, and (when not root) a file we may not read. */
  expect_bad(scratch("missing.ini"), 0, NULL, "cannot open: No such file");
  expect_bad(tmpdir, 0, NULL, "cannot read");
  if (geteuid() != 0) {
    write_text(scratch("secret.ini"), "mode = process\n");
    chmod(scratch("secret.ini"), 0);
    expect_bad(scratch("secret.ini"), 0, NULL, "cannot open: Permission");
  }
}

/* ---- command line ------------------------------------------------------- */

/* Expects EXIT_BAD with exactly one line on stderr starting with want, and
 * nothing on stdout. */
static void expect_flag_error(struct run *r, const char *what, const char *want) {
  CHECK(r->rc == S5_ARGS_EXIT_BAD, "%s: result %d, want EXIT_BAD", what, r->rc);
  CHECK(strncmp(r->err, want, strlen(want)) == 0,
        "%s: stderr [%s] does "
        "not start with [%s]",
        what, r->err, want);
  CHECK(count_lines(r->err) == 1, "%s: %u lines on stderr", what, count_lines(r->err));
  CHECK(r->out[0] == '\0', "%s: stdout not empty: [%s]", what, r->out);
  run_free(r);
}

static void test_args_good(void) {
  struct s5_config d;
  struct run r;

  s5_config_defaults(&d);
  run(&r, NULL);
  CHECK(r.rc == S5_ARGS_RUN, "no flags: result %d", r.rc);
  CHECK(cfg_diff(&r.cfg, &d, true) == NULL, "no flags: differs in %s", show_diff(cfg_diff(&r.cfg, &d, true)));
  CHECK(r.out[0] == '\0' && r.err[0] == '\0', "no flags: output");
  run_free(&r);

  run(&r, "--config", conf("full.ini"), NULL);
  CHECK(r.rc == S5_ARGS_RUN, "--config full.ini: result %d: %s", r.rc, r.err);
  check_full(&r.cfg, "--config full.ini");
  run_free(&r);

  run(&r, "--queues", "4", "--mode", "process", NULL);
  CHECK(r.rc == S5_ARGS_RUN, "--queues 4 --mode process: %s", r.err);
  CHECK(r.cfg.queues == 4 && r.cfg.mode == S5_MODE_PROCESS, "--queues 4 --mode process: queues %u mode %d",
        r.cfg.queues, r.cfg.mode);
  run_free(&r);

  run(&r, "--queues=0", NULL);
  CHECK(r.rc == S5_ARGS_RUN && r.cfg.queues == expected_auto_queues(),
        "--queues=0 resolves to the CPU count (%u)", r.cfg.queues);
  run_free(&r);

  /* Precedence: defaults < file < flags, whatever the flag order. */
  run(&r, "--queues", "5", "--tun", "flagtun", "-c", conf("precedence.ini"), "--socks5", "[::1]:2000", NULL);
  CHECK(r.rc == S5_ARGS_RUN, "precedence: %s", r.err);
  CHECK(r.cfg.queues == 5, "precedence: flag queues %u", r.cfg.queues);
  CHECK(r.cfg.mode == S5_MODE_PROCESS, "precedence: file mode");
  CHECK(strcmp(r.cfg.tun.name, "flagtun") == 0, "precedence: flag tun %s", r.cfg.tun.name);
  CHECK(r.cfg.tun.mtu == 1400, "precedence: file mtu %u", r.cfg.tun.mtu);
  CHECK(is_sockaddr(&r.cfg, "::1", 2000), "precedence: flag socks5");
  CHECK(r.cfg.log.level == S5_LOG_DEBUG, "precedence: file level");
  CHECK(r.cfg.session.connect_timeout == 10,
        "precedence: default "
        "connect-timeout");
  run_free(&r);

  run(&r, "--config=", NULL);
  expect_flag_error(&r, "--config=", "s5tund: --config: empty file name");

  run(&r, "--config=no-such-file.ini", NULL);
  expect_flag_error(&r, "--config=missing",
                    "s5tund: no-such-file.ini: "
                    "cannot open");

  {
    char dashc[PATH_MAX + 4];
    snprintf(dashc, sizeof dashc, "-c%s", conf("precedence.ini"));
    run(&r, dashc, "--mtu=1500", "--log-level=warn", "--socks5=127.0.0.2:1", NULL);
  }
  CHECK(r.rc == S5_ARGS_RUN, "-cFILE --flag=value: %s", r.err);
  CHECK(r.cfg.tun.mtu == 1500 && r.cfg.log.level == S5_LOG_WARN && r.cfg.queues == 3,
        "-cFILE --flag=value values");
  CHECK(is_sockaddr(&r.cfg, "127.0.0.2", 1), "--socks5=127.0.0.2:1");
  run_free(&r);

  /* The later of two equal flags wins. */
  run(&r, "--mtu", "1400", "--mtu", "1500", NULL);
  CHECK(r.rc == S5_ARGS_RUN && r.cfg.tun.mtu == 1500, "repeated flag");
  run_free(&r);
}

static void test_args_exit(void) {
  struct run r;
  const char *help[] = {"-h", "--help"};
  const char *version[] = {"-V", "--version"};
  size_t i;

  for (i = 0; i < 2; i++) {
    run(&r, help[i], NULL);
    CHECK(r.rc == S5_ARGS_EXIT_OK, "%s: result %d", help[i], r.rc);
    CHECK(strncmp(r.out, "Usage: s5tund", 13) == 0 && r.err[0] == '\0', "%s: usage on stdout", help[i]);
    run_free(&r);
    run(&r, version[i], NULL);
    CHECK(r.rc == S5_ARGS_EXIT_OK, "%s: result %d", version[i], r.rc);
#ifdef S5_VERSION
    CHECK(strcmp(r.out, "s5tund " S5_VERSION "\n") == 0, "%s: [%s]", version[i], r.out);
#else /* the build gives S5_VERSION to the library only */
    CHECK(strncmp(r.out, "s5tund ", 7) == 0 && r.out[7] != '\n' && count_lines(r.out) == 1, "%s: [%s]",
          version[i], r.out);
#endif
    run_free(&r);
  }
  /* --help wins once seen, even over a broken file or later junk... */
  run(&r, "-c", conf("bad_mode.ini"), "--help", "--bogus", NULL);
  CHECK(r.rc == S5_ARGS_EXIT_OK && r.err[0] == '\0',
        "--help with junk after "
        "it");
  run_free(&r);
  /* ...but not over a misspelled flag before it. */
  run(&r, "--bogus", "--help", NULL);
  expect_flag_error(&r, "--bogus --help", "s5tund: --bogus: unknown flag");

  run(&r, "--check-config", NULL);
  CHECK(r.rc == S5_ARGS_EXIT_OK, "--check-config: result %d", r.rc);
  CHECK(strstr(r.out, "\nmtu = 8500\n") != NULL,
        "--check-config output: "
        "[%s]",
        r.out);
  run_free(&r);
  run(&r, "--check-config", "-c", conf("bad_mtu_high.ini"), NULL);
  expect_flag_error(&r, "--check-config bad file", "s5tund: ");
  run(&r, "--check-config", "--mtu", "100", NULL);
  expect_flag_error(&r, "--check-config bad flag",
                    "s5tund: --mtu: 100 is "
                    "out of range");
}

static void test_args_bad(void) {
  struct run r;
  char want[PATH_MAX + 128];

  run(&r, "--queues", "x", NULL);
  CHECK(strcmp(r.err, "s5tund: --queues: \"x\" is not a number\n") == 0, "--queues x: [%s]", r.err);
  expect_flag_error(&r, "--queues x", "s5tund: --queues:");
  run(&r, "--bogus", NULL);
  expect_flag_error(&r, "--bogus", "s5tund: --bogus: unknown flag");
  run(&r, "--bogus=1", NULL);
  expect_flag_error(&r, "--bogus=1", "s5tund: --bogus: unknown flag");
  run(&r, "--que", "4", NULL);
  expect_flag_error(&r, "--que", "s5tund: --que: unknown flag");
  run(&r, "-x", NULL);
  expect_flag_error(&r, "-x", "s5tund: -x: unknown flag");
  run(&r, "-hV", NULL);
  expect_flag_error(&r, "-hV", "s5tund: -hV: unknown flag");
  run(&r, "--queues", NULL);
  expect_flag_error(&r, "--queues", "s5tund: --queues: missing argument");
  run(&r, "--queues", "--mode", "process", NULL);
  expect_flag_error(&r, "--queues --mode",
                    "s5tund: --queues: missing "
                    "argument");
  run(&r, "-c", NULL);
  expect_flag_error(&r, "-c", "s5tund: -c: missing argument");
  /* The stats client's flags belong to main(), and only first. */
  run(&r, "-c", "x.ini", "--stats", NULL);
  expect_flag_error(&r, "--stats not first",
                    "s5tund: --stats: must be the "
                    "first argument");
  run(&r, "--json", NULL);
  expect_flag_error(&r, "--json alone", "s5tund: --json: only with --stats");
  run(&r, "--help=yes", NULL);
  expect_flag_error(&r, "--help=yes", "s5tund: --help: takes no value");
  run(&r, "tun.ini", NULL);
  expect_flag_error(&r, "positional",
                    "s5tund: \"tun.ini\": unexpected "
                    "argument");
  run(&r, "--mtu", "70000", NULL);
  CHECK(strcmp(r.err,
               "s5tund: --mtu: 70000 is out of range "
               "(1280..65535)\n") == 0,
        "--mtu 70000: [%s]", r.err);
  expect_flag_error(&r, "--mtu 70000", "s5tund: --mtu:");
  run(&r, "--mode", "fiber", NULL);
  expect_flag_error(&r, "--mode fiber", "s5tund: --mode: \"fiber\" is not");
  run(&r, "--queues", "300", NULL);
  expect_flag_error(&r, "--queues 300",
                    "s5tund: --queues: 300 is out of "
                    "range (0..256)");
  run(&r, "--tun", "tun%d", NULL);
  expect_flag_error(&r, "--tun tun%d",
                    "s5tund: --tun: \"tun%d\" is a name "
                    "template");
  run(&r, "--log-level", "loud", NULL);
  expect_flag_error(&r, "--log-level loud", "s5tund: --log-level: \"loud\"");
  run(&r, "--config", conf("nothere.ini"), NULL);
  snprintf(want, sizeof want, "s5tund: %s: cannot open: No such file", conf("nothere.ini"));
  expect_flag_error(&r, "missing file", want);
  run(&r, "--queues", "4", "--config", conf("bad_mtu_high.ini"), NULL);
  snprintf(want, sizeof want,
           "s5tund: %s:7: [tun] mtu: 70000 is out of "
           "range (1280..65535)\n",
           conf("bad_mtu_high.ini"));
  expect_flag_error(&r, "bad file", want);
}

static void test_args_socks5(void) {
  static const struct {
    const char *arg;
    const char *addr;
    unsigned port;
  } good[] = {
    {"127.0.0.1:1080", "127.0.0.1", 1080},
    {"[::1]:1080", "::1", 1080},
    {"[2001:db8::5]:9050", "2001:db8::5", 9050},
    {"10.0.0.1:65535", "10.0.0.1", 65535},
  };
  static const struct {
    const char *arg;
    const char *want;
  } bad[] = {
    {"::1:1080", "write an IPv6 address in brackets"},
    {"::1", "write an IPv6 address in brackets"},
    {"[::1]", "expected [IPV6]:PORT"},
    {"[::1:1080", "expected [IPV6]:PORT"},
    {"[::1]:", "port: empty value"},
    {"[::1]1080", "expected [IPV6]:PORT"},
    {"127.0.0.1", "expected ADDR:PORT"},
    {"127.0.0.1:", "port: empty value"},
    {"127.0.0.1:0", "port: 0 is out of range (1..65535)"},
    {"127.0.0.1:65536", "port: 65536 is out of range"},
    {"127.0.0.1:x", "port: \"x\" is not a number"},
    {"proxy.example:1080", "host names are not looked up"},
    {":1080", "empty"},
    {"[fe80::1%eth0]:1080", "is not an IPv4 or IPv6 address"},
    {"0.0.0.0:1080", "unspecified address"},
  };
  char want[256];
  struct run r;
  size_t i;

  for (i = 0; i < sizeof good / sizeof good[0]; i++) {
    run(&r, "--socks5", good[i].arg, NULL);
    CHECK(r.rc == S5_ARGS_RUN, "--socks5 %s: %s", good[i].arg, r.err);
    CHECK(is_sockaddr(&r.cfg, good[i].addr, good[i].port),
          "--socks5 %s: "
          "wrong address",
          good[i].arg);
    run_free(&r);
  }
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run(&r, "--socks5", bad[i].arg, NULL);
    CHECK(strstr(r.err, bad[i].want) != NULL, "--socks5 %s: [%s] lacks [%s]", bad[i].arg, r.err, bad[i].want);
    snprintf(want, sizeof want, "--socks5 %s", bad[i].arg);
    expect_flag_error(&r, want, "s5tund: --socks5: ");
  }
}

/* ---- --check-config round trip ------------------------------------------ */

/* Prints the configuration of "flags...", loads the output back over the
 * defaults and compares (all but the password, which is masked). */
static void round_trip(const char *what, const char *file, const char *flag, const char *value) {
  struct s5_config back;
  char err[1024];
  struct run r;

  if (flag != NULL) run(&r, "-c", file, flag, value, "--check-config", NULL);
  else run(&r, "-c", file, "--check-config", NULL);
  CHECK(r.rc == S5_ARGS_EXIT_OK, "%s: --check-config result %d: %s", what, r.rc, r.err);
  write_text(scratch("printed.ini"), r.out);
  s5_config_defaults(&back);
  back.tun.mtu = 1300; /* must be overwritten by the printed file */
  if (s5_config_load_file(&back, scratch("printed.ini"), err, sizeof err) != 0) {
    CHECK(false, "%s: printed configuration does not load: %s\n%s", what, err, r.out);
  } else {
    CHECK(cfg_diff(&back, &r.cfg, false) == NULL,
          "%s: round trip differs "
          "in %s",
          what, show_diff(cfg_diff(&back, &r.cfg, false)));
    CHECK(strcmp(back.socks5.password, r.cfg.socks5.password[0] ? "***" : "") == 0, "%s: password not masked",
          what);
  }
  if (r.cfg.socks5.password[0] != '\0')
    CHECK(strstr(r.out, r.cfg.socks5.password) == NULL,
          "%s: password "
          "printed",
          what);
  run_free(&r);
}

static void test_round_trip(void) {
  round_trip("empty.ini", conf("empty.ini"), NULL, NULL);
  round_trip("full.ini", conf("full.ini"), NULL, NULL);
  round_trip("quoted.ini", conf("quoted.ini"), NULL, NULL);
  round_trip("ipv6_only.ini", conf("ipv6_only.ini"), NULL, NULL);
  round_trip("udp_dns.ini", conf("udp_dns.ini"), NULL, NULL);
  round_trip("precedence.ini + --socks5", conf("precedence.ini"), "--socks5", "[fd00::2]:1");
}

/* --check-config of a file that sets every key to a non-default value:
 * the output loads back to the same configuration (byte for byte, but for
 * the masked password) and prints the same text again. */
static char *print_text(const struct s5_config *c) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);

  if (out == NULL) exit(1);
  s5_config_print(c, out);
  fclose(out);
  return text;
}

/* Where the rules were written (file, lines) is not configuration: the
 * printed copy has its own. */
static void mask_rule_sources(struct s5_config *want, const struct s5_config *back) {
  memcpy(want->rules.conf, back->rules.conf, sizeof want->rules.conf);
  memcpy(want->rules.line, back->rules.line, sizeof want->rules.line);
  want->rules.def_line = back->rules.def_line;
}

/* FILE sets every key (but one of two exclusive ones) to a non-default
 * value: printed, loaded and printed again, it must come back the same. */
static void every_round_trip(const char *file) {
  struct s5_config c, back, want;
  char *first, *second;
  if (!load_ok(conf(file), &c)) return;
  first = print_text(&c);
  write_text(scratch("every_printed.ini"), first);
  if (load_ok(scratch("every_printed.ini"), &back)) {
    second = print_text(&back);
    CHECK(strcmp(first, second) == 0, "%s: second print differs:\n%s---\n%s", file, first, second);
    free(second);
    want = c;
    mask_passwords(&want);
    mask_rule_sources(&want, &back);
    CHECK(memcmp(&want, &back, sizeof want) == 0, "%s: loaded configuration differs (%s)", file,
          show_diff(cfg_diff(&want, &back, true)));
  }
  free(first);
}

static void test_every_key(void) {
  struct s5_config c, back, want;
  char *first, *second;
  struct run r;

  every_round_trip("every_key_include.ini");
  every_round_trip("every_key_netns.ini");
  if (!load_ok(conf("every_key.ini"), &c)) return;
  first = print_text(&c);
  write_text(scratch("every_printed.ini"), first);
  if (load_ok(scratch("every_printed.ini"), &back)) {
    second = print_text(&back);
    CHECK(strcmp(first, second) == 0,
          "every_key.ini: second print differs:"
          "\n%s---\n%s",
          first, second);
    free(second);
    want = c;
    mask_passwords(&want);
    mask_rule_sources(&want, &back);
    CHECK(memcmp(&want, &back, sizeof want) == 0,
          "every_key.ini: loaded "
          "configuration differs (%s)",
          show_diff(cfg_diff(&want, &back, true)));
    CHECK(cfg_diff(&c, &back, false) == NULL,
          "every_key.ini: round trip "
          "differs in %s",
          show_diff(cfg_diff(&c, &back, false)));
  }
  CHECK(strstr(first, "\ntcp-buffer = 131072\n") != NULL,
        "tcp-buffer not "
        "printed:\n%s",
        first);
  free(first);

  /* A mark is printed in hex, as marks are written (ip rule, nft). */
  if (load_ok(conf("every_key_include.ini"), &back)) {
    second = print_text(&back);
    CHECK(strstr(second, "\nmark = 0x53\n") != NULL, "mark = 0x53 printed as:\n%s", second);
    free(second);
  }

  /* queues = 0 (one per CPU) is printed as written, not as the count. */
  run(&r, "--queues", "0", "--check-config", NULL);
  CHECK(r.rc == S5_ARGS_EXIT_OK && strstr(r.out, "\nqueues = 0\n") != NULL, "--queues 0 --check-config: [%s]",
        r.out);
  run_free(&r);
  run(&r, "--queues", "2", "--check-config", NULL);
  CHECK(r.rc == S5_ARGS_EXIT_OK && strstr(r.out, "\nqueues = 2\n") != NULL, "--queues 2 --check-config: [%s]",
        r.out);
  run_free(&r);

  /* An unknown user is a configuration error at --check-config time. */
  run(&r, "-c", conf("bad_run_user.ini"), "--check-config", NULL);
  expect_flag_error(&r, "--check-config unknown user", "s5tund: ");
}

/* The scratch directory holds only plain files written above. */
static void remove_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  struct dirent *e;

  if (d == NULL) return;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlink(scratch(e->d_name));
  closedir(d);
  if (rmdir(tmpdir) != 0) printf("note: could not remove %s: %s\n", tmpdir, strerror(errno));
}

/* A reload's merge: what docs/upstreams-balance.md says applies at once
 * does ([balance] fail-after with the other [balance] keys), what needs a
 * restart is kept and said. */
static void reload_warned(void *arg, const char *section, const char *was, const char *now) {
  char *seen = arg;
  snprintf(seen + strlen(seen), 512 - strlen(seen), "[%s] %s -> %s;", section, was, now);
}

static void test_reload_live(void) {
  static struct s5_config cur, next;
  char seen[512] = "", err[256];
  s5_config_defaults(&cur);
  s5_config_defaults(&next);
  CHECK(s5_config_set(&next, "balance", "fail-after", "7", err, sizeof err) == 0 &&
          s5_config_set(&next, "balance", "strategy", "round-robin", err, sizeof err) == 0 &&
          s5_config_set(&next, "", "queues", "3", err, sizeof err) == 0,
        "set: %s", err);
  int kept = s5_config_reload_merge(&next, &cur, reload_warned, seen);
  CHECK(next.balance.fail_after == 7 && next.balance.strategy == S5_BALANCE_ROUND_ROBIN,
        "[balance] fail-after and strategy live: fail-after %u", next.balance.fail_after);
  CHECK(kept == 1 && strstr(seen, "fail-after") == NULL && strstr(seen, "queues") != NULL,
        "only queues kept (needs a restart): %d [%s]", kept, seen);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CONFIG-DIR\n", argv[0]);
    return 2;
  }
  dir = argv[1];
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_config.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) {
    printf("FAIL mkdtemp: %s\n", strerror(errno));
    return 1;
  }

  test_defaults();
  test_good_files();
  test_bad_files();
  test_stats_http();
  test_message_format();
  test_long_lines();
  test_odd_files();
  test_args_good();
  test_args_exit();
  test_args_bad();
  test_args_socks5();
  test_round_trip();
  test_every_key();
  test_reload_live();

  remove_tmpdir();
  return check_done();
}
