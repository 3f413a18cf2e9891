/* Writes the effective configuration (--check-config) as an INI document
 * that s5_config_load_file() reads back to the same configuration, except
 * the password, which is replaced by "***" so the output can be pasted into
 * a bug report. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const mode_names[] = { "thread", "process" };
static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Quotes are needed when the loader would otherwise change the value: outer
 * blanks are stripped, a ';' may start a comment, a leading '"' opens a
 * quoted value. */
static bool needs_quotes(const char *s) {
  size_t len = strlen(s);

  if (len == 0)
    return false;
  return isspace((unsigned char)s[0]) || isspace((unsigned char)s[len - 1]) ||
         s[0] == '"' || strchr(s, ';') != NULL;
}

static void print_text(FILE *out, const char *key, const char *value) {
  const char *p;

  fprintf(out, "%s =", key);
  if (value[0] == '\0') {
    fputc('\n', out);
    return;
  }
  if (!needs_quotes(value)) {
    fprintf(out, " %s\n", value);
    return;
  }
  fputs(" \"", out);
  for (p = value; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\')
      fputc('\\', out);
    fputc(*p, out);
  }
  fputs("\"\n", out);
}

static void print_prefix(FILE *out, const char *key,
                         const struct s5_prefix *p) {
  char buf[INET6_ADDRSTRLEN];

  if (p->family == 0 || inet_ntop(p->family, p->addr, buf, sizeof buf) == NULL) {
    fprintf(out, "%s =\n", key);
    return;
  }
  fprintf(out, "%s = %s/%u\n", key, buf, p->len);
}

/* An address without port; empty when unset (ss_family 0). */
static void print_addr(FILE *out, const char *key,
                       const struct sockaddr_storage *ss) {
  char buf[INET6_ADDRSTRLEN] = "";
  const void *addr = NULL;

  if (ss->ss_family == AF_INET)
    addr = &((const struct sockaddr_in *)ss)->sin_addr;
  else if (ss->ss_family == AF_INET6)
    addr = &((const struct sockaddr_in6 *)ss)->sin6_addr;
  if (addr == NULL || inet_ntop(ss->ss_family, addr, buf, sizeof buf) == NULL)
    buf[0] = '\0';
  fprintf(out, "%s =%s%s\n", key, buf[0] ? " " : "", buf);
}

static void print_sockaddr(FILE *out, const struct sockaddr_storage *ss) {
  char buf[INET6_ADDRSTRLEN] = "";
  const void *addr = NULL;

  if (ss->ss_family == AF_INET)
    addr = &((const struct sockaddr_in *)ss)->sin_addr;
  else if (ss->ss_family == AF_INET6)
    addr = &((const struct sockaddr_in6 *)ss)->sin6_addr;
  if (addr == NULL || inet_ntop(ss->ss_family, addr, buf, sizeof buf) == NULL)
    buf[0] = '\0';
  fprintf(out, "address = %s\n", buf);
  fprintf(out, "port = %u\n", (unsigned)s5_sockaddr_port(ss));
}

static void print_tun(FILE *out, const struct s5_config *cfg) {
  fputs("\n[tun]\n", out);
  fprintf(out, "name = %s\n", cfg->tun.name);
  fprintf(out, "mtu = %u\n", cfg->tun.mtu);
  print_prefix(out, "ipv4", &cfg->tun.ipv4);
  print_prefix(out, "ipv6", &cfg->tun.ipv6);
  fprintf(out, "persist = %s\n", cfg->tun.persist ? "true" : "false");
  fprintf(out, "offload = %s\n", cfg->tun.offload ? "true" : "false");
  fprintf(out, "auto-route = %s\n", cfg->tun.auto_route ? "true" : "false");
  print_text(out, "post-up", cfg->tun.post_up);
  print_text(out, "pre-down", cfg->tun.pre_down);
  fprintf(out, "icmp = %s\n", cfg->tun.icmp_reply ? "reply" : "off");
}

static void print_socks5(FILE *out, const struct s5_config *cfg) {
  fputs("\n[socks5]\n", out);
  print_sockaddr(out, &cfg->socks5.addr);
  print_text(out, "username", cfg->socks5.username);
  print_text(out, "password", cfg->socks5.password[0] != '\0' ? "***" : "");
  fprintf(out, "mark = %lu\n", (unsigned long)cfg->socks5.mark);
  fprintf(out, "pipeline = %s\n", cfg->socks5.pipeline ? "true" : "false");
  fprintf(out, "udp = %s\n", cfg->socks5.udp ? "associate" : "off");
  print_addr(out, "udp-address", &cfg->socks5.udp_addr);
}

static void print_session(FILE *out, const struct s5_config *cfg) {
  fputs("\n[session]\n", out);
  fprintf(out, "connect-timeout = %u\n", cfg->session.connect_timeout);
  fprintf(out, "tcp-idle-timeout = %u\n", cfg->session.tcp_idle_timeout);
  fprintf(out, "max-sessions = %u\n", cfg->session.max_sessions);
  fprintf(out, "udp-idle-timeout = %u\n", cfg->session.udp_idle_timeout);
  fputs("\n[dns]\n", out);
  print_addr(out, "address", &cfg->dns.addr);
  print_prefix(out, "network", &cfg->dns.network);
  fprintf(out, "cache-size = %u\n", cfg->dns.cache_size);
}

static void print_log(FILE *out, const struct s5_config *cfg) {
  unsigned level = (unsigned)cfg->log.level;

  fputs("\n[log]\n", out);
  fprintf(out, "level = %s\n", level < 4 ? level_names[level] : "info");
  print_text(out, "file", cfg->log.file);
}

static void print_run(FILE *out, const struct s5_config *cfg) {
  fputs("\n[run]\n", out);
  print_text(out, "user", cfg->run.user);
  print_text(out, "pid-file", cfg->run.pid_file);
  fprintf(out, "drain-timeout = %u\n", cfg->run.drain_timeout);
  fprintf(out, "limit-nofile = %u\n", cfg->run.limit_nofile);
  fputs("\n[stats]\n", out);
  print_text(out, "socket", cfg->stats.socket);
}

void s5_config_print(const struct s5_config *cfg, FILE *out) {
  fputs("; s5tund effective configuration\n", out);
  fprintf(out, "mode = %s\n", mode_names[cfg->mode == S5_MODE_PROCESS]);
  fprintf(out, "queues = %u\n", cfg->queues);
  print_tun(out, cfg);
  print_socks5(out, cfg);
  print_session(out, cfg);
  print_log(out, cfg);
  print_run(out, cfg);
}
