/* SPDX-License-Identifier: MIT */
/* Unit test of the upstream list: [upstream NAME] sections beside and
 * without [socks5], --proxy URLs (schemes, IPv6 in brackets,
 * percent-encoded credentials, names) and the errors of both, each naming
 * file, line and key, or the flag. Prints one line per failed check, then
 * "N passed, M failed". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ini/config.h"

#include "check.h"

static char tmpdir[64];

static const char *write_ini(const char *name, const char *text) {
  static char path[8][256];
  static unsigned next;
  char *p = path[next++ % 8];
  snprintf(p, 256, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
    printf("FAIL cannot write %s\n", p);
    exit(1);
  }
  return p;
}

/* Runs the command line argv (NULL-terminated, argv[0] included); the
 * error message, if any, into err. */
static enum s5_args_result run(struct s5_config *c, char **argv, char *err, size_t errlen) {
  int argc = 0;
  while (argv[argc] != NULL) argc++;
  char *out = NULL, *msg = NULL;
  size_t olen = 0, mlen = 0;
  FILE *o = open_memstream(&out, &olen), *m = open_memstream(&msg, &mlen);
  enum s5_args_result r = s5_args_load_io(c, argc, argv, o, m);
  fclose(o);
  fclose(m);
  snprintf(err, errlen, "%s", msg);
  free(out);
  free(msg);
  return r;
}

static bool is_addr(const struct s5_upstream_cfg *u, const char *addr, unsigned port) {
  unsigned char want[16];
  if (inet_pton(AF_INET, addr, want) == 1) {
    const struct sockaddr_in *s = (const void *)&u->addr;
    return s->sin_family == AF_INET && u->addrlen == sizeof *s && memcmp(&s->sin_addr, want, 4) == 0 &&
           ntohs(s->sin_port) == port;
  }
  const struct sockaddr_in6 *s = (const void *)&u->addr;
  return inet_pton(AF_INET6, addr, want) == 1 && s->sin6_family == AF_INET6 && u->addrlen == sizeof *s &&
         memcmp(&s->sin6_addr, want, 16) == 0 && ntohs(s->sin6_port) == port;
}

static void test_defaults(void) {
  struct s5_config c;
  s5_config_defaults(&c);
  CHECK(c.n_upstreams == 1 && c.socks5_section, "defaults: one upstream, [socks5]");
  CHECK(strcmp(c.upstreams[0].name, "socks5") == 0 && c.upstreams[0].type == S5_UPSTREAM_SOCKS5 &&
          c.upstreams[0].weight == 1 && is_addr(&c.upstreams[0], "127.0.0.1", 1080) && c.upstreams[0].udp &&
          c.upstreams[0].pool == 4,
        "defaults: socks5 127.0.0.1:1080");
  CHECK(&c.socks5 == &c.upstreams[0], "socks5 is upstreams[0]");
}

static void test_sections(void) {
  struct s5_config c;
  char err[1024];
  /* Without [socks5]: the sections are the whole list, in file order. */
  const char *f = write_ini("only.ini",
                            "[upstream b]\ntype = http\naddress = 192.0.2.1\nport = 3128\nusername = u\n"
                            "password = p\nweight = 3\n\n[upstream a]\ntype = socks4\naddress = fd00::2\n"
                            "username = id\n\n[session]\nconnect-timeout = 5\n");
  char *argv[] = {"s5tund", "-c", (char *)f, NULL};
  CHECK(run(&c, argv, err, sizeof err) == S5_ARGS_RUN, "only.ini: %s", err);
  CHECK(c.n_upstreams == 2 && !c.socks5_section, "only.ini: two upstreams, no [socks5] (%u)", c.n_upstreams);
  CHECK(strcmp(c.upstreams[0].name, "b") == 0 && c.upstreams[0].type == S5_UPSTREAM_HTTP &&
          is_addr(&c.upstreams[0], "192.0.2.1", 3128) && strcmp(c.upstreams[0].username, "u") == 0 &&
          strcmp(c.upstreams[0].password, "p") == 0 && c.upstreams[0].weight == 3,
        "only.ini: b first, http 192.0.2.1:3128");
  CHECK(strcmp(c.upstreams[1].name, "a") == 0 && c.upstreams[1].type == S5_UPSTREAM_SOCKS4 &&
          is_addr(&c.upstreams[1], "fd00::2", 1080) && c.upstreams[1].weight == 1 && c.upstreams[1].pool == 4,
        "only.ini: a second, socks4 [fd00::2]:1080 with defaults");
  CHECK(c.session.connect_timeout == 5, "only.ini: the section after the upstreams");

  /* With [socks5] first: it stays the first upstream. */
  f = write_ini("both.ini", "[socks5]\nport = 1081\n[upstream two]\naddress = 192.0.2.2\n");
  char *argv2[] = {"s5tund", "-c", (char *)f, NULL};
  CHECK(run(&c, argv2, err, sizeof err) == S5_ARGS_RUN, "both.ini: %s", err);
  CHECK(c.n_upstreams == 2 && c.socks5_section && strcmp(c.upstreams[0].name, "socks5") == 0 &&
          is_addr(&c.upstreams[0], "127.0.0.1", 1081) && strcmp(c.upstreams[1].name, "two") == 0 &&
          is_addr(&c.upstreams[1], "192.0.2.2", 1080),
        "both.ini: socks5 then two");

  /* --check-config prints them back to the same list. */
  char *argv3[] = {"s5tund", "-c", (char *)f, "--check-config", NULL};
  char *out = NULL;
  size_t olen = 0;
  FILE *o = open_memstream(&out, &olen), *e = fopen("/dev/null", "w");
  CHECK(s5_args_load_io(&c, 4, argv3, o, e) == S5_ARGS_EXIT_OK, "both.ini --check-config");
  fclose(o);
  fclose(e);
  CHECK(strstr(out, "\n[socks5]\naddress = 127.0.0.1\nport = 1081\n") != NULL &&
          strstr(out, "\n[upstream two]\ntype = socks5\naddress = 192.0.2.2\nport = 1080\n") != NULL,
        "both.ini --check-config:\n%s", out);
  free(out);
}

/* A file that must fail: the message holds want. */
static void bad_file(const char *text, const char *want) {
  struct s5_config c;
  char err[1024];
  const char *f = write_ini("bad.ini", text);
  char *argv[] = {"s5tund", "-c", (char *)f, NULL};
  enum s5_args_result r = run(&c, argv, err, sizeof err);
  CHECK(r == S5_ARGS_EXIT_BAD && strstr(err, want) != NULL, "%s\n  want an error with [%s], got [%s]", text,
        want, r == S5_ARGS_EXIT_BAD ? err : "(loaded)");
}

static void test_bad_sections(void) {
  bad_file("[upstream]\naddress = 192.0.2.1\n", "bad.ini:1: an upstream needs a name");
  bad_file("[upstream a b]\n", "bad.ini:1: \"a b\" is not an upstream name");
  bad_file("[upstream a]\n[upstream a]\n", "bad.ini:2: upstream a is already declared");
  /* The names of [rules]' own outbounds: no rule could ever name such an upstream. */
  bad_file("[upstream a]\n\n[upstream direct]\naddress = 192.0.2.1\n",
           "bad.ini:3: [upstream direct]: direct is an outbound of [rules]");
  bad_file("[upstream block]\n", "bad.ini:1: [upstream block]: block is an outbound of [rules]");
  bad_file("[socks5]\nport = 1\n[upstream socks5]\n",
           "bad.ini:3: upstream socks5 is already declared (by [socks5])");
  bad_file("[upstream a]\n[socks5]\nport = 1\n", "bad.ini:2: [socks5] must come before the [upstream NAME]");
  bad_file("[upstream a]\ntype = socks6\n", "bad.ini:2: [upstream a] type:");
  bad_file("[upstream a]\nport = 0\n", "bad.ini:2: [upstream a] port:");
  bad_file("[upstream a]\nweight = 0\n", "bad.ini:2: [upstream a] weight:");
  bad_file("[upstream a]\naddress = proxy.example\n", "bad.ini:2: [upstream a] address:");
  bad_file("[upstream a]\nport = 1\nport = 2\n", "bad.ini:3: [upstream a] port: set twice, first at line 2");
  bad_file("[upstream a]\ncolour = red\n", "bad.ini:2: [upstream a] colour: unknown key");
  bad_file("[upstream a]\n\ntype = socks4\nusername = u\npassword = p\n",
           "bad.ini:5: [upstream a] password: set for type = socks4");
  bad_file("[upstream a]\ntype = http\nusername = u\n", "bad.ini:3: [upstream a] username: set without");
  bad_file("[upstream a]\ntype = http\nusername = u:v\npassword = p\n",
           "bad.ini:3: [upstream a] username: contains ':'");
  bad_file("[tun]\nauto-route = true\n[socks5]\nmark = 1\n[upstream a]\nmark = 2\n",
           "bad.ini:6: [upstream a] mark: differs from the first upstream's");
  /* A key left at its default is blamed on the section's header. */
  bad_file("[tun]\nauto-route = true\n[socks5]\nmark = 1\n[upstream a]\nport = 9\n",
           "bad.ini:5: [upstream a] mark: differs");
  char many[2048] = "";
  for (int i = 0; i <= S5_UPSTREAMS_MAX; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "[upstream u%d]\n", i);
  bad_file(many, "bad.ini:17: more than 16 upstreams");
}

/* --check-config of f, written to a file: loads back, and prints the same. */
static void round_trip(const char *f) {
  struct s5_config c, back;
  char *first = NULL, *second = NULL, err[1024] = "";
  size_t n1 = 0, n2 = 0;
  char *argv[] = {"s5tund", "-c", (char *)f, "--check-config", NULL};
  FILE *o = open_memstream(&first, &n1), *e = fopen("/dev/null", "w");
  CHECK(s5_args_load_io(&c, 4, argv, o, e) == S5_ARGS_EXIT_OK, "%s --check-config", f);
  fclose(o);
  const char *printed = write_ini("printed.ini", first);
  char *argv2[] = {"s5tund", "-c", (char *)printed, "--check-config", NULL};
  o = open_memstream(&second, &n2);
  CHECK(s5_args_load_io(&back, 4, argv2, o, e) == S5_ARGS_EXIT_OK, "printed %s loads: %s", f, err);
  fclose(o);
  fclose(e);
  CHECK(strcmp(first, second) == 0, "%s: printed twice differs:\n%s---\n%s", f, first, second);
  CHECK(back.n_upstreams == c.n_upstreams && back.socks5_section == c.socks5_section &&
          memcmp(back.upstreams, c.upstreams, sizeof c.upstreams) == 0,
        "%s: the upstreams differ after the round trip", f);
  free(first);
  free(second);
}

/* TLS keys: the types that carry TLS, files that exist, certificate and key together. */
static void test_tls_keys(void) {
  struct s5_config c;
  char err[1024];
  const char *ca = write_ini("ca.pem", "not read here\n");
  char text[1024];
  snprintf(text, sizeof text,
           "[upstream s]\ntype = socks5\ntls = true\ntls-server-name = proxy.test\ntls-ca-file = %s\n"
           "tls-verify = false\ntls-cert-file = %s\ntls-key-file = %s\n",
           ca, ca, ca);
  const char *f = write_ini("tls.ini", text);
  char *argv[] = {"s5tund", "-c", (char *)f, NULL};
  CHECK(run(&c, argv, err, sizeof err) == S5_ARGS_RUN, "tls keys: %s", err);
  const struct s5_upstream_cfg *u = &c.upstreams[0];
  CHECK(u->tls && !u->tls_verify && strcmp(u->tls_server_name, "proxy.test") == 0 &&
          strcmp(u->tls_ca_file, ca) == 0 && strcmp(u->tls_key_file, ca) == 0,
        "tls keys read");
  round_trip(f);
  bad_file("[upstream a]\ntype = socks4\ntls = true\n", "bad.ini:3: [upstream a] tls: set for type = socks4");
  bad_file("[upstream a]\ntls = true\ntls-ca-file = /nonexistent/ca.pem\n",
           "bad.ini:3: [upstream a] tls-ca-file: /nonexistent/ca.pem: No such file");
  snprintf(text, sizeof text, "[upstream a]\ntype = http\ntls = true\ntls-cert-file = %s\n", ca);
  bad_file(text, "bad.ini:4: [upstream a] tls-cert-file: set without tls-key-file");
}

static void test_round_trips(void) {
  round_trip(write_ini("rt1.ini",
                       "[upstream b]\ntype = http\naddress = 192.0.2.1\nport = 3128\nweight = 9\n"
                       "[upstream a.2]\ntype = socks4\naddress = fd00::2\nusername = id\npool = 0\n"));
  round_trip(write_ini("rt2.ini", "[socks5]\naddress = ::1\n[upstream x]\nudp = off\nmark = 7\n"));
  round_trip(write_ini("rt3.ini", "[session]\nconnect-timeout = 3\n"));
}

static void test_proxy_urls(void) {
  struct s5_config c;
  char err[1024];
  char *argv[] = {"s5tund",
                  "--proxy",
                  "socks5://user:p%40ss%3Aw%25rd@[fd00::2]:1080",
                  "--proxy=socks4a://me@192.0.2.4:1084#four",
                  "--proxy",
                  "HTTP://alice:pw@192.0.2.5:3128/",
                  "--proxy",
                  "socks5h://192.0.2.6:1085",
                  NULL};
  CHECK(run(&c, argv, err, sizeof err) == S5_ARGS_RUN, "--proxy x4: %s", err);
  CHECK(c.n_upstreams == 4 && !c.socks5_section, "--proxy x4: four upstreams (%u)", c.n_upstreams);
  const struct s5_upstream_cfg *u = c.upstreams;
  CHECK(strcmp(u[0].name, "proxy1") == 0 && u[0].type == S5_UPSTREAM_SOCKS5 &&
          is_addr(&u[0], "fd00::2", 1080) && strcmp(u[0].username, "user") == 0 &&
          strcmp(u[0].password, "p@ss:w%rd") == 0,
        "socks5 URL: [%s] [%s] [%s]", u[0].name, u[0].username, u[0].password);
  CHECK(strcmp(u[1].name, "four") == 0 && u[1].type == S5_UPSTREAM_SOCKS4 &&
          is_addr(&u[1], "192.0.2.4", 1084) && strcmp(u[1].username, "me") == 0 && u[1].password[0] == '\0',
        "socks4a URL");
  CHECK(strcmp(u[2].name, "proxy3") == 0 && u[2].type == S5_UPSTREAM_HTTP &&
          is_addr(&u[2], "192.0.2.5", 3128) && strcmp(u[2].password, "pw") == 0,
        "http URL");
  CHECK(u[3].type == S5_UPSTREAM_SOCKS5 && is_addr(&u[3], "192.0.2.6", 1085) && u[3].username[0] == '\0',
        "socks5h URL");

  CHECK(!u[0].tls && !u[2].tls && u[2].tls_verify, "plain URLs: no TLS, verify by default");

  /* https: an HTTP proxy inside TLS, verified against the address by default. */
  char *argv_tls[] = {"s5tund", "--proxy", "https://alice:pw@192.0.2.8:443#sq", NULL};
  CHECK(run(&c, argv_tls, err, sizeof err) == S5_ARGS_RUN, "https URL: %s", err);
  CHECK(c.n_upstreams == 1 && c.upstreams[0].type == S5_UPSTREAM_HTTP && c.upstreams[0].tls &&
          c.upstreams[0].tls_verify && c.upstreams[0].tls_server_name[0] == '\0' &&
          is_addr(&c.upstreams[0], "192.0.2.8", 443) && strcmp(c.upstreams[0].name, "sq") == 0,
        "https URL: type http with tls");

  /* The first --proxy replaces the file's list; the mark carries over. */
  const char *f = write_ini("file.ini", "[socks5]\nmark = 0x53\n[upstream x]\nmark = 0x53\n");
  char *argv2[] = {"s5tund", "-c", (char *)f, "--proxy", "http://192.0.2.7:8080", NULL};
  CHECK(run(&c, argv2, err, sizeof err) == S5_ARGS_RUN, "file + --proxy: %s", err);
  CHECK(c.n_upstreams == 1 && !c.socks5_section && c.upstreams[0].type == S5_UPSTREAM_HTTP &&
          c.upstreams[0].mark == 0x53,
        "file + --proxy: the proxy alone, with the file's mark");

  /* --socks5 stays as it was with [socks5]. */
  f = write_ini("s5.ini", "[socks5]\nusername = bob\npassword = pw\n");
  char *argv3[] = {"s5tund", "-c", (char *)f, "--socks5", "[::1]:1090", NULL};
  CHECK(run(&c, argv3, err, sizeof err) == S5_ARGS_RUN, "--socks5: %s", err);
  CHECK(c.n_upstreams == 1 && c.socks5_section && is_addr(&c.upstreams[0], "::1", 1090) &&
          strcmp(c.socks5.username, "bob") == 0,
        "--socks5 keeps [socks5]'s credentials");
}

static void bad_url(const char *url, const char *want) {
  struct s5_config c;
  char err[1024];
  char *argv[] = {"s5tund", "--proxy", (char *)url, NULL};
  enum s5_args_result r = run(&c, argv, err, sizeof err);
  CHECK(r == S5_ARGS_EXIT_BAD && strstr(err, want) != NULL, "--proxy %s: want [%s], got [%s]", url, want,
        r == S5_ARGS_EXIT_BAD ? err : "(accepted)");
  CHECK(r != S5_ARGS_EXIT_BAD || strstr(err, "s3cr3t") == NULL, "--proxy %s: the password in [%s]", url, err);
}

static void test_bad_urls(void) {
  bad_url("192.0.2.1:1080", "--proxy: expected SCHEME://HOST:PORT");
  bad_url("ftp://192.0.2.1:443",
          "--proxy: scheme \"ftp\": expected socks5, socks4, socks4a, http, https or ss");
  bad_url("socks5://192.0.2.1", "--proxy: no port");
  bad_url("socks5://[fd00::2:1080", "--proxy: an IPv6 address without its closing ']'");
  bad_url("socks5://fd00::2:1080", "--proxy: address:");
  bad_url("http://proxy.example:3128", "--proxy: address:");
  bad_url("socks5://192.0.2.1:99999", "--proxy: port:");
  bad_url("socks5://u:s3cr3t%zz@192.0.2.1:1080", "--proxy: password: bad percent-encoding");
  bad_url("socks5://u%00:s3cr3t@192.0.2.1:1080", "--proxy: username: bad percent-encoding");
  bad_url("socks5://u%0a:s3cr3t@192.0.2.1:1080", "--proxy: username:");
  bad_url("socks5://u:@192.0.2.1:1080", "--proxy: [upstream proxy1] username: set without");
  bad_url("socks4://u:s3cr3t@192.0.2.1:1080", "--proxy: [upstream proxy1] password: set for type = socks4");
  bad_url("http://192.0.2.1:3128/path", "--proxy: a path or query");
  bad_url("http://192.0.2.1:3128#no/name", "is not an upstream name");
  bad_url("http://192.0.2.1:3128#direct", "--proxy: [upstream direct]: direct is an outbound of [rules]");
  struct s5_config c;
  char err[1024];
  char *argv[] = {"s5tund", "--socks5", "127.0.0.1:1", "--proxy", "socks5://127.0.0.1:2", NULL};
  CHECK(run(&c, argv, err, sizeof err) == S5_ARGS_EXIT_BAD && strstr(err, "choose one") != NULL,
        "--socks5 with --proxy: [%s]", err);
  const char *f = write_ini("up.ini", "[upstream a]\n");
  char *argv2[] = {"s5tund", "-c", (char *)f, "--socks5", "127.0.0.1:1", NULL};
  CHECK(run(&c, argv2, err, sizeof err) == S5_ARGS_EXIT_BAD && strstr(err, "use --proxy socks5://") != NULL,
        "--socks5 with [upstream]: [%s]", err);
}

/* Shadowsocks: [upstream] type = shadowsocks with method and password; ss:// URLs (SIP002). */
static void test_shadowsocks(void) {
  struct s5_config c;
  char err[1024];
  char *argv[] = {"s5tund",
                  "--proxy",
                  "ss://YWVzLTI1Ni1nY206czNjcjN0@192.0.2.9:8388#ss1",
                  "--proxy",
                  "ss://YWVzLTEyOC1nY206cC93K3g=@[fd00::9]:8389",
                  "--proxy",
                  "ss://chacha20-ietf-poly1305:p%40ss%3Aw@192.0.2.9:8390/",
                  NULL};
  CHECK(run(&c, argv, err, sizeof err) == S5_ARGS_RUN, "ss:// URLs: %s", err);
  const struct s5_upstream_cfg *u = c.upstreams;
  CHECK(c.n_upstreams == 3 && u[0].type == S5_UPSTREAM_SHADOWSOCKS && u[0].ss_method == S5_SS_AES_256_GCM &&
          strcmp(u[0].password, "s3cr3t") == 0 && strcmp(u[0].name, "ss1") == 0 &&
          is_addr(&u[0], "192.0.2.9", 8388),
        "ss:// URL-safe base64 without padding: [%s] [%s]", u[0].name, u[0].password);
  CHECK(u[1].type == S5_UPSTREAM_SHADOWSOCKS && u[1].ss_method == S5_SS_AES_128_GCM &&
          strcmp(u[1].password, "p/w+x") == 0 && is_addr(&u[1], "fd00::9", 8389),
        "ss:// standard base64 with padding, IPv6: [%s]", u[1].password);
  CHECK(u[2].ss_method == S5_SS_CHACHA20_POLY1305 && strcmp(u[2].password, "p@ss:w") == 0 &&
          u[2].username[0] == '\0',
        "ss:// METHOD:PASSWORD percent-encoded: [%s]", u[2].password);
  const char *f =
    write_ini("ss.ini", "[upstream a]\ntype = shadowsocks\nmethod = aes-128-gcm\npassword = pw\n");
  char *argv2[] = {"s5tund", "-c", (char *)f, NULL};
  CHECK(run(&c, argv2, err, sizeof err) == S5_ARGS_RUN && c.upstreams[0].ss_method == S5_SS_AES_128_GCM,
        "type = shadowsocks: %s", err);
  char *out = NULL;
  size_t n = 0;
  char *argv3[] = {"s5tund", "-c", (char *)f, "--check-config", NULL};
  FILE *o = open_memstream(&out, &n), *e = fopen("/dev/null", "w");
  CHECK(s5_args_load_io(&c, 4, argv3, o, e) == S5_ARGS_EXIT_OK, "ss.ini --check-config");
  fclose(o);
  fclose(e);
  CHECK(strstr(out, "type = shadowsocks\n") != NULL &&
          strstr(out, "password = ***\nmethod = aes-128-gcm\n") != NULL && strstr(out, "= pw\n") == NULL,
        "ss.ini --check-config: the password as ***:\n%s", out);
  free(out);
  bad_file("[upstream a]\ntype = shadowsocks\n",
           "bad.ini:1: [upstream a] password: empty: type = shadowsocks needs");
  bad_file(
    "[upstream a]\ntype = shadowsocks\npassword = p\nmethod = 2022-blake3-aes-128-gcm\n",
    "bad.ini:3: [upstream a] password: not a 2022 key: method 2022-blake3-* takes base64 of exactly 16");
  bad_file(
    "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-aes-128-gcm\n"
    "password = BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=\n",
    "bad.ini:4: [upstream a] password: not a 2022 key: method 2022-blake3-* takes base64 of exactly 16");
  bad_file(
    "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-chacha20-poly1305\n"
    "password = BRIfLDlGU2BteoeUoa67yA==\n",
    "bad.ini:4: [upstream a] password: not a 2022 key: method 2022-blake3-* takes base64 of exactly 32");
  const char *f22 = write_ini("ss22.ini",
                              "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-aes-256-gcm\n"
                              "password = BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=\n");
  char *argv22[] = {"s5tund", "-c", (char *)f22, NULL};
  CHECK(run(&c, argv22, err, sizeof err) == S5_ARGS_RUN && c.upstreams[0].ss_method == S5_SS_2022_AES_256_GCM,
        "2022-blake3-aes-256-gcm with a 32-byte key: %s", err);
  /* identity keys (SIP023): iPSK:uPSK for the aes methods, at most four keys */
  const char *feih = write_ini("ss22eih.ini",
                               "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-aes-128-gcm\n"
                               "password = BRIfLDlGU2BteoeUoa67yA==:AAECAwQFBgcICQoLDA0ODw==\n");
  char *argveih[] = {"s5tund", "-c", (char *)feih, NULL};
  CHECK(run(&c, argveih, err, sizeof err) == S5_ARGS_RUN, "2022-blake3-aes-128-gcm with iPSK:uPSK: %s", err);
  bad_file(
    "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-chacha20-poly1305\n"
    "password = BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=:BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=\n",
    "bad.ini:4: [upstream a] password: identity keys (iPSK:uPSK) with method 2022-blake3-chacha20-poly1305");
  bad_file(
    "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-aes-128-gcm\n"
    "password = BRIfLDlGU2BteoeUoa67yA==:BRIfLDlGU2BteoeUoa67yA==:BRIfLDlGU2BteoeUoa67yA==:"
    "BRIfLDlGU2BteoeUoa67yA==:BRIfLDlGU2BteoeUoa67yA==\n",
    "bad.ini:4: [upstream a] password: not a 2022 key: method 2022-blake3-* takes base64 of exactly 16");
  bad_file(
    "[upstream a]\ntype = shadowsocks\nmethod = 2022-blake3-aes-128-gcm\n"
    "password = BRIfLDlGU2BteoeUoa67yA==:\n",
    "bad.ini:4: [upstream a] password: not a 2022 key");
  bad_file("[upstream a]\ntype = shadowsocks\npassword = p\nmethod = rc4-md5\n",
           "bad.ini:4: [upstream a] method:");
  bad_file("[upstream a]\ntype = shadowsocks\nusername = u\npassword = p\n",
           "bad.ini:3: [upstream a] username: set for type = shadowsocks");
  bad_file("[upstream a]\ntype = shadowsocks\npassword = p\ntls = true\n",
           "bad.ini:4: [upstream a] tls: set for type = shadowsocks");
  bad_url("ss://192.0.2.1:8388", "--proxy: no METHOD:PASSWORD");
  bad_url("ss://cmM0LW1kNTpzM2NyM3Q@192.0.2.1:8388", "--proxy: method:");
  bad_url("ss://MjAyMi1ibGFrZTMtYWVzLTEyOC1nY206czNjcjN0@192.0.2.1:8388",
          "--proxy: [upstream proxy1] password: not a 2022 key");
  bad_url("ss://YWVzLTEyOC1nY21zM2NyM3Q@192.0.2.1:8388", "--proxy: userinfo: not METHOD:PASSWORD");
  bad_url("ss://a*b@192.0.2.1:8388", "--proxy: userinfo: neither base64 nor METHOD:PASSWORD");
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_config_upstream.XXXXXX");
  if (mkdtemp(tmpdir) == NULL) return 1;
  test_defaults();
  test_sections();
  test_bad_sections();
  test_round_trips();
  test_tls_keys();
  test_proxy_urls();
  test_bad_urls();
  test_shadowsocks();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) printf("note: could not remove %s\n", tmpdir);
  return check_done();
}
