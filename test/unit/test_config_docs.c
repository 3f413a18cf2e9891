/* SPDX-License-Identifier: MIT */
/* The key table is the one source of truth: this test walks it (and the
 * flag table) and fails when a key or its default is missing from, or
 * different in, the places people read:
 *
 *   - --check-config of the defaults (each key once, printed as its default),
 *   - contrib/s5tund.ini (each key once, commented out, with its default;
 *     the file with those lines uncommented loads to the defaults),
 *   - the man page's key list (".It Cm KEY Pq DEFAULT" under its section)
 *     and its option list (".It Fl \-FLAG"; --stats with its default socket),
 *   - README's configuration reference (the ini block: "key = default")
 *     and its command line,
 *   - --help (every flag),
 *
 * and when test/unit/configs/every_key.ini leaves a key at its default (the
 * round-trip test of unit.config relies on it). Run as
 * "test_config_docs SOURCE-DIR". Prints one line per failed check. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ini/config.h"
#include "ini/internal.h"
#include "ini/keys.h"

#include "check.h"

/* A "[section] key = value" found in a document. */
struct entry {
  char section[32];
  char name[64];
  char value[256];
  int line;
};

struct doc {
  const char *what;
  struct entry e[256];
  int n;
};

static void doc_add(struct doc *d, const char *section, const char *name, size_t namelen, const char *value,
                    size_t valuelen, int line) {
  if (d->n == 256) return;
  struct entry *e = &d->e[d->n++];
  snprintf(e->section, sizeof e->section, "%s", section);
  snprintf(e->name, sizeof e->name, "%.*s", (int)namelen, name);
  snprintf(e->value, sizeof e->value, "%.*s", (int)valuelen, value);
  e->line = line;
}

/* Every key of the table exactly once with its default; nothing else. */
static void doc_compare(const struct doc *d) {
  for (int k = 0; k < s5_config_key_count(); k++) {
    const struct s5_key *key = s5_config_key(k);
    int seen = 0;
    for (int i = 0; i < d->n; i++) {
      const struct entry *e = &d->e[i];
      if (strcmp(e->section, key->section) != 0 || strcmp(e->name, key->name) != 0) continue;
      seen++;
      CHECK(strcmp(e->value, key->def) == 0, "%s:%d: [%s] %s: default is \"%s\" there, \"%s\" in the binary",
            d->what, e->line, key->section, key->name, e->value, key->def);
    }
    CHECK(seen == 1, "%s: [%s] %s: found %d times (want once)", d->what, key->section, key->name, seen);
  }
  for (int i = 0; i < d->n; i++)
    CHECK(s5_config_key_find(d->e[i].section, d->e[i].name) >= 0, "%s:%d: [%s] %s is not a key of the binary",
          d->what, d->e[i].line, d->e[i].section, d->e[i].name);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    printf("FAIL cannot open %s\n", path);
    exit(1);
  }
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      buf = realloc(buf, cap);
      if (buf == NULL) exit(1);
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (buf == NULL) buf = calloc(1, 1);
  buf[len] = '\0';
  return buf;
}

static const char *src;

/* Splits text into lines in place (empty ones included, unlike strtok). */
static char *next_line(char **at) {
  char *line = *at;
  if (line == NULL || *line == '\0') return NULL;
  char *nl = strchr(line, '\n');
  if (nl != NULL) {
    *nl = '\0';
    *at = nl + 1;
  } else {
    *at = line + strlen(line);
  }
  return line;
}

static const char *path_of(const char *rel) {
  static char ring[4][4096];
  static int next;
  char *p = ring[next++ % 4];
  snprintf(p, 4096, "%s/%s", src, rel);
  return p;
}

/* The line number of p in text (from 1), for messages. */
static int line_at(const char *text, const char *p) {
  int n = 1;
  for (; text < p; text++) n += *text == '\n';
  return n;
}

static size_t key_len(const char *s) {
  size_t n = 0;
  while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '-') n++;
  return n;
}

/* A "[name]" line: the section name into section. "[upstream NAME]" (any
 * name) is the section "upstream", whose keys every such section has;
 * "[group NAME]" likewise. */
static bool section_line(const char *line, char *section, size_t len) {
  if (line[0] != '[') return false;
  size_t n = key_len(line + 1);
  if (((n == 8 && strncmp(line + 1, "upstream ", 9) == 0) ||
       (n == 5 && strncmp(line + 1, "group ", 6) == 0)) &&
      strchr(line, ']') != NULL) {
    snprintf(section, len, "%.*s", (int)n, line + 1);
    return true;
  }
  if (line[1 + n] != ']') return false;
  snprintf(section, len, "%.*s", (int)n, line + 1);
  return true;
}

/* "key = value" in the INI syntax of --check-config and the example: the
 * value ends at the line's end (no comments on these lines). */
static void ini_lines(struct doc *d, char *text, const char *comment) {
  char section[32] = "";
  int lineno = 0;
  size_t clen = strlen(comment);
  char *at = text;
  for (char *line; (line = next_line(&at)) != NULL;) {
    lineno++;
    if (section_line(line, section, sizeof section)) continue;
    /* The example's [upstream NAME] is commented out too. */
    if (clen > 0 && strncmp(line, comment, clen) == 0 && section_line(line + clen, section, sizeof section))
      continue;
    if (strncmp(line, comment, clen) != 0) continue;
    const char *p = line + clen;
    size_t n = key_len(p);
    if (n == 0 || strncmp(p + n, " =", 2) != 0) continue;
    const char *v = p + n + 2;
    if (*v == ' ') v++;
    doc_add(d, section, p, n, v, strlen(v), lineno);
  }
}

/* The defaults, with one [upstream NAME] section of defaults after
 * [socks5], and one [group NAME] of defaults (which a file could not hold:
 * a group needs members), so that their keys are printed too. */
static char *print_defaults(void) {
  struct s5_config c;
  char *text = NULL;
  size_t len = 0;
  char tmp[] = "/tmp/test_config_docs.XXXXXX", err[1024] = "";
  const char *ini = "[socks5]\n[upstream x]\n";
  int fd = mkstemp(tmp);
  if (fd < 0 || write(fd, ini, strlen(ini)) != (ssize_t)strlen(ini) || close(fd) != 0) exit(1);
  FILE *out = open_memstream(&text, &len);
  if (out == NULL) exit(1);
  s5_config_defaults(&c);
  CHECK(s5_config_load_file(&c, tmp, err, sizeof err) == 0 && c.n_upstreams == 2, "%s: %s", ini, err);
  CHECK(s5_group_add(&c, "g", err, sizeof err) == 0, "a group of defaults: %s", err);
  unlink(tmp);
  s5_config_print(&c, out);
  fclose(out);
  return text;
}

static void test_check_config(void) {
  static struct doc d = {.what = "--check-config"};
  char *text = print_defaults();
  ini_lines(&d, text, "");
  doc_compare(&d);
  free(text);
}

/* The example: every key commented out with its default; uncommented it
 * must load, and to exactly the defaults. */
static void test_example(void) {
  static struct doc d = {.what = "contrib/s5tund.ini"};
  char *text = read_all(path_of("contrib/s5tund.ini"));
  char *open = strdup(text);
  ini_lines(&d, text, ";");
  doc_compare(&d);

  /* Uncommented, except in the commented-out [upstream NAME] section: that
   * would be one more upstream, not the defaults. */
  char *w = open;
  bool commented_section = false;
  for (char *r = open; *r != '\0'; r++) {
    bool at_start = r == open || r[-1] == '\n';
    if (at_start && r[0] == '[') commented_section = false;
    if (at_start && strncmp(r, ";[", 2) == 0) commented_section = true;
    if (at_start && !commented_section && r[0] == ';' && key_len(r + 1) > 0 &&
        strncmp(r + 1 + key_len(r + 1), " =", 2) == 0)
      continue;
    *w++ = *r;
  }
  *w = '\0';
  char tmp[] = "/tmp/test_config_docs.XXXXXX";
  int fd = mkstemp(tmp);
  if (fd < 0 || write(fd, open, strlen(open)) != (ssize_t)strlen(open) || close(fd) != 0) exit(1);
  struct s5_config c, def;
  char err[1024] = "";
  s5_config_defaults(&c);
  c.tun.mtu = 1300; /* the file must set it back */
  s5_config_defaults(&def);
  int rc = s5_config_load_file(&c, tmp, err, sizeof err);
  CHECK(rc == 0, "contrib/s5tund.ini with its keys uncommented does not load: %s", err);
  CHECK(rc != 0 || memcmp(&c, &def, sizeof c) == 0,
        "contrib/s5tund.ini uncommented differs from the defaults");
  unlink(tmp);
  free(open);
  free(text);
}

/* mdoc: ".Ss \&[tun]\&" starts a section, ".Ss Top level ..." the keys
 * before any; ".It Cm KEY Pq DEFAULT", "empty" for an empty default. */
static void test_man_keys(const char *man) {
  static struct doc d = {.what = "contrib/s5tund.8"};
  const char *start = strstr(man, "\n.Sh CONFIGURATION\n");
  CHECK(start != NULL, "man page: no CONFIGURATION section");
  if (start == NULL) return;
  const char *end = strstr(start + 1, "\n.Sh ");
  char *part = strndup(start, end != NULL ? (size_t)(end - start) : strlen(start));
  char section[32] = "";
  int lineno = line_at(man, start) - 1;
  char *at = part;
  for (char *line; (line = next_line(&at)) != NULL;) {
    lineno++;
    if (strncmp(line, ".Ss ", 4) == 0) {
      const char *p = line + 4;
      if (strncmp(p, "\\&[", 3) == 0) section_line(p + 2, section, sizeof section);
      else section[0] = '\0';
      continue;
    }
    if (strncmp(line, ".It Cm ", 7) != 0) continue;
    const char *p = line + 7;
    size_t n = key_len(p);
    const char *v = strstr(p + n, " Pq ");
    CHECK(v != NULL, "contrib/s5tund.8:%d: %s: want \".It Cm KEY Pq DEFAULT\"", lineno, line);
    if (v == NULL) continue;
    v += 4;
    if (strcmp(v, "empty") == 0) v = "";
    doc_add(&d, section, p, n, v, strlen(v), lineno);
  }
  doc_compare(&d);
  free(part);
}

/* "--log-level" as mdoc writes it: "\-\-log\-level". */
static void man_flag(char *buf, size_t len, const char *name) {
  size_t n = (size_t)snprintf(buf, len, "Fl \\-");
  for (const char *p = name; *p != '\0' && n + 3 < len; p++) {
    if (*p == '-') buf[n++] = '\\';
    buf[n++] = *p;
  }
  buf[n] = '\0';
}

static void test_man_flags(const char *man) {
  const char *start = strstr(man, "\n.Sh OPTIONS\n");
  const char *end = start != NULL ? strstr(start + 1, "\n.Sh ") : NULL;
  CHECK(start != NULL && end != NULL, "man page: no OPTIONS section");
  if (start == NULL || end == NULL) return;
  char *part = strndup(start, (size_t)(end - start));
  for (int i = 0; i < s5_args_flag_count(); i++) {
    char want[64];
    man_flag(want, sizeof want, s5_args_flag_name(i));
    CHECK(strstr(part, want) != NULL, "man page OPTIONS: no %s (flag --%s)", want, s5_args_flag_name(i));
  }
  /* The stats client's default socket, as main() has it. */
  const char *stats = strstr(part, ".It Fl \\-stats");
  const char *next = stats != NULL ? strstr(stats + 1, "\n.It ") : NULL;
  CHECK(stats != NULL && next != NULL, "man page OPTIONS: no .It for --stats");
  if (stats != NULL && next != NULL) {
    char *item = strndup(stats, (size_t)(next - stats));
    CHECK(strstr(item, ".Pa " S5_STATS_DEFAULT_SOCKET) != NULL, "man page: --stats default is not %s:\n%s",
          S5_STATS_DEFAULT_SOCKET, item);
    free(item);
  }
  free(part);
}

/* README: the ini block under "## Configuration" lists "key = default"
 * (aligned, with a "; comment"); the command line after it every flag. */
static void test_readme(void) {
  static struct doc d = {.what = "README.md"};
  char *text = read_all(path_of("README.md"));
  char *start = strstr(text, "\n## Configuration\n");
  CHECK(start != NULL, "README: no Configuration section");
  if (start == NULL) {
    free(text);
    return;
  }
  char *end = strstr(start + 1, "\n## ");
  if (end != NULL) *end = '\0';
  char *block = strstr(start, "```ini\n");
  char *block_end = block != NULL ? strstr(block + 7, "\n```") : NULL;
  CHECK(block != NULL && block_end != NULL, "README: no ```ini block in Configuration");
  for (int i = 0; i < s5_args_flag_count(); i++) {
    char want[64];
    snprintf(want, sizeof want, "--%s", s5_args_flag_name(i));
    CHECK(block_end != NULL && strstr(block_end, want) != NULL, "README Configuration: flag %s not mentioned",
          want);
  }
  if (block == NULL || block_end == NULL) {
    free(text);
    return;
  }
  *block_end = '\0';
  char section[32] = "";
  int lineno = line_at(text, block);
  char *at = block + 7;
  for (char *line; (line = next_line(&at)) != NULL;) {
    lineno++;
    if (section_line(line, section, sizeof section)) continue;
    size_t n = key_len(line);
    if (n == 0) continue;
    const char *p = line + n;
    while (*p == ' ') p++;
    CHECK(*p == '=', "README.md:%d: %s: want \"key = default ; ...\"", lineno, line);
    if (*p != '=') continue;
    p++;
    while (*p == ' ') p++;
    const char *v_end = strstr(p, " ;");
    if (v_end == NULL) v_end = p + strlen(p);
    while (v_end > p && v_end[-1] == ' ') v_end--;
    if (*p == ';') v_end = p;
    doc_add(&d, section, line, n, p, (size_t)(v_end - p), lineno);
  }
  doc_compare(&d);
  free(text);
}

static void test_help(void) {
  struct s5_config c;
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  FILE *err = fopen("/dev/null", "w");
  char *argv[] = {"s5tund", "--help", NULL};
  if (out == NULL || err == NULL) exit(1);
  CHECK(s5_args_load_io(&c, 2, argv, out, err) == S5_ARGS_EXIT_OK, "--help: result");
  fclose(out);
  fclose(err);
  for (int i = 0; i < s5_args_flag_count(); i++) {
    char want[64];
    snprintf(want, sizeof want, "--%s", s5_args_flag_name(i));
    CHECK(strstr(text, want) != NULL, "--help does not list %s:\n%s", want, text);
  }
  CHECK(strstr(text, "--stats") != NULL && strstr(text, "--json") != NULL, "--help lacks --stats/--json");
  free(text);
}

/* every_key.ini: each key printed differently from its default. */
static void test_every_key(void) {
  static struct doc def = {.what = "defaults"}, every = {.what = "every_key.ini"};
  struct s5_config c;
  char err[1024] = "";
  s5_config_defaults(&c);
  if (s5_config_load_file(&c, path_of("test/unit/configs/every_key.ini"), err, sizeof err) != 0) {
    CHECK(false, "every_key.ini does not load: %s", err);
    return;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (out == NULL) exit(1);
  s5_config_print(&c, out);
  fclose(out);
  char *dtext = print_defaults();
  ini_lines(&every, text, "");
  ini_lines(&def, dtext, "");
  CHECK(every.n == s5_config_key_count() && def.n == every.n, "printed %d and %d keys of %d", every.n, def.n,
        s5_config_key_count());
  for (int i = 0; i < every.n && i < def.n; i++) {
    /* include-uid excludes exclude-uid: it is set in every_key_include.ini. */
    if (strcmp(every.e[i].name, "include-uid") == 0) continue;
    /* netns excludes auto-route: it is set in every_key_netns.ini. */
    if (strcmp(every.e[i].name, "netns") == 0) continue;
    CHECK(strcmp(every.e[i].value, def.e[i].value) != 0, "every_key.ini leaves [%s] %s at its default %s",
          every.e[i].section, every.e[i].name, def.e[i].value);
  }
  free(text);
  free(dtext);
  s5_config_defaults(&c);
  CHECK(s5_config_load_file(&c, path_of("test/unit/configs/every_key_include.ini"), err, sizeof err) == 0 &&
          c.tun.include_uid.n == 2 && c.tun.exclude_uid.n == 0,
        "every_key_include.ini sets include-uid (and not exclude-uid): %s", err);
  s5_config_defaults(&c);
  CHECK(s5_config_load_file(&c, path_of("test/unit/configs/every_key_netns.ini"), err, sizeof err) == 0 &&
          strcmp(c.tun.netns, "s5every") == 0,
        "every_key_netns.ini sets netns: %s", err);
}

/* The table itself: sections contiguous (one [section] block each). */
static void test_table(void) {
  for (int k = 1; k < s5_config_key_count(); k++) {
    const char *s = s5_config_key(k)->section;
    if (strcmp(s, s5_config_key(k - 1)->section) == 0) continue;
    for (int j = 0; j < k; j++)
      CHECK(strcmp(s5_config_key(j)->section, s) != 0, "key table: [%s] %s is apart from its section", s,
            s5_config_key(k)->name);
  }
  CHECK(s5_config_key(0)->section[0] == '\0', "key table: the top-level keys come first");
  for (int k = 0; k < s5_config_key_count(); k++)
    CHECK(s5_config_key(k)->doc != NULL && s5_config_key(k)->doc[0] != '\0', "key table: [%s] %s has no doc",
          s5_config_key(k)->section, s5_config_key(k)->name);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SOURCE-DIR\n", argv[0]);
    return 2;
  }
  src = argv[1];
  test_table();
  test_check_config();
  test_example();
  char *man = read_all(path_of("contrib/s5tund.8"));
  test_man_keys(man);
  test_man_flags(man);
  free(man);
  test_readme();
  test_help();
  test_every_key();
  return check_done();
}
