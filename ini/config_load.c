/* SPDX-License-Identifier: MIT */
/* Reads the configuration file with inih, which decides what is a comment, a
 * [section] or a key. Three things are done around it:
 *
 *  - Lines reach inih through our own reader, which counts them. Messages
 *    must name the physical line, and inih's count drifts as soon as a line
 *    is longer than its fixed 200-byte buffer (the rest is read as another
 *    "line"). Its lineno callback argument is a build-time option of the
 *    library, so we do not rely on it either.
 *  - Leading blanks are dropped before inih sees a line, so keys may be
 *    indented under their section. inih would otherwise read an indented
 *    line as the continuation of the previous value; we have no multi-line
 *    values.
 *  - The value is taken from the raw line, not from inih, which allows
 *    "double-quoted" values (a password with outer blanks or " ;" in it) and
 *    values too long for inih's buffer (a 255-byte password, a long path).
 *    Unquoted values are cut exactly as inih does: at a ';' after a blank.
 *
 * The file is applied to a scratch copy of the configuration, so a file with
 * an error changes nothing. The first error stops reading: one message. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Debian's libinih is built with INI_HANDLER_LINENO=1 (its calls pass the
 * line number as a fifth argument) although the installed header defaults
 * to 0: declare the handler the way the library calls it. The number itself
 * is ignored (see above), so a library built without it is harmless too. */
#define INI_HANDLER_LINENO 1
#include <ini.h>

#include "ini/internal.h"
#include "ini/keys.h"

struct load {
  FILE *fp;
  const char *path;
  struct s5_config *cfg; /* scratch copy being filled */
  char *line;            /* current physical line, from getline() */
  size_t cap;
  const char *text; /* the same line without its leading blanks */
  unsigned lineno;  /* number of the current line, from 1 */
  unsigned *set_at; /* per key: line where it was set, 0 = not yet */
  /* The upstream sections (upstream_sections.c): the one being read (-1 = another
   * section), per upstream its header's line and its keys' lines. */
  int up;
  bool socks5_seen, upstream_seen; /* a [socks5] header, an [upstream NAME] one */
  unsigned up_line[S5_UPSTREAMS_MAX];
  unsigned *up_set_at; /* [up * key count + key] */
  /* The [group NAME] sections, likewise; members are read once every
   * upstream is known (load_groups), their text kept until then. */
  int gr;
  unsigned gr_line[S5_GROUPS_MAX];
  unsigned *gr_set_at; /* [gr * key count + key] */
  char gr_members[S5_GROUPS_MAX][1024];
  bool failed; /* the one message has been written */
  int read_errno;
  char *err;
  size_t errlen;
  char value[S5_INI_LINE_MAX + 1];
};

/* Section and key names come from the file: keep control bytes out of the
 * terminal. */
static void printable(char *dst, size_t len, const char *src) {
  size_t i;

  for (i = 0; src[i] != '\0' && i + 1 < len; i++)
    dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
  dst[i] = '\0';
}

/* Writes "FILE:LINE: [section] key: what" (parts left out when unknown). */
static void load_fail(struct load *ld, unsigned line, const char *section, const char *name,
                      const char *what) {
  char where[64] = "";
  char sec[64];
  char key[64];

  if (line > 0) snprintf(where, sizeof where, ":%u", line);
  if (name == NULL) {
    snprintf(ld->err, ld->errlen, "%s%s: %s", ld->path, where, what);
  } else {
    printable(sec, sizeof sec, section);
    printable(key, sizeof key, name);
    if (sec[0] == '\0') snprintf(ld->err, ld->errlen, "%s%s: %s: %s", ld->path, where, key, what);
    else snprintf(ld->err, ld->errlen, "%s%s: [%s] %s: %s", ld->path, where, sec, key, what);
  }
  ld->failed = true;
}

/* Skips what inih's own lskip() would skip (any isspace()), so that inih
 * never sees leading blanks and never takes a line for a continuation. */
static const char *skip_blanks(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return s;
}

/* A section header, seen before inih sees it: [upstream NAME] adds an
 * upstream (the first one drops the default [socks5] unless the file wrote
 * [socks5], which must then come first), [group NAME] a group. inih
 * reports a header without its ']' itself. */
static void load_header(struct load *ld) {
  const char *close = strchr(ld->text, ']');
  char inside[128], what[256];
  if (close == NULL) return;
  size_t n = (size_t)(close - ld->text - 1);
  if (n >= sizeof inside) n = sizeof inside - 1;
  memcpy(inside, ld->text + 1, n);
  inside[n] = '\0';
  while (n > 0 && isspace((unsigned char)inside[n - 1])) inside[--n] = '\0';
  const char *p = skip_blanks(inside);
  ld->up = -1;
  ld->gr = -1;
  if (strncmp(p, "group", 5) == 0 && (p[5] == '\0' || isspace((unsigned char)p[5]))) {
    ld->gr = s5_group_add(ld->cfg, skip_blanks(p + 5), what, sizeof what);
    if (ld->gr < 0) load_fail(ld, ld->lineno, NULL, NULL, what);
    else ld->gr_line[ld->gr] = ld->lineno;
  } else if (strncmp(p, "upstream", 8) == 0 && (p[8] == '\0' || isspace((unsigned char)p[8]))) {
    if (!ld->upstream_seen) {
      ld->upstream_seen = true;
      ld->cfg->n_upstreams = ld->socks5_seen ? 1 : 0;
      ld->cfg->socks5_section = ld->socks5_seen;
    }
    int up = s5_upstream_add(ld->cfg, skip_blanks(p + 8), what, sizeof what);
    if (up < 0) {
      load_fail(ld, ld->lineno, NULL, NULL, what);
      return;
    }
    ld->up = up;
    ld->up_line[up] = ld->lineno;
  } else if (strcmp(p, "socks5") == 0) {
    if (ld->upstream_seen) {
      load_fail(ld, ld->lineno, NULL, NULL,
                "[socks5] must come before the [upstream NAME] sections (it is the first upstream)");
      return;
    }
    ld->socks5_seen = true;
  }
}

/* Feeds inih one physical line at a time (see the top of the file). */
static char *load_read(char *buf, int size, void *user) {
  struct load *ld = user;
  const char *sep;
  size_t len;
  ssize_t n;
  char what[128];

  if (ld->failed) return NULL; /* one message is enough: stop here */
  errno = 0;
  n = getline(&ld->line, &ld->cap, ld->fp);
  if (n < 0) {
    if (ferror(ld->fp)) ld->read_errno = errno != 0 ? errno : EIO;
    return NULL;
  }
  ld->lineno++;
  if ((size_t)n != strlen(ld->line)) {
    load_fail(ld, ld->lineno, NULL, NULL,
              "contains a NUL byte (not a text "
              "file?)");
    return NULL;
  }
  if (n > S5_INI_LINE_MAX) {
    snprintf(what, sizeof what, "line is too long (%zd bytes, at most %d)", n, S5_INI_LINE_MAX);
    load_fail(ld, ld->lineno, NULL, NULL, what);
    return NULL;
  }
  ld->text = skip_blanks(ld->line);
  if (ld->text[0] == '[') load_header(ld);
  if (ld->failed) return NULL;
  len = strlen(ld->text);
  if (len < (size_t)size) {
    memcpy(buf, ld->text, len + 1);
    return buf;
  }
  /* Too long for inih's buffer. A comment can be dropped; for a key, inih
   * only needs "key=" since the value is taken from ld->text anyway. */
  if (size < 3) {
    load_fail(ld, ld->lineno, NULL, NULL, "inih line buffer is too small");
    return NULL;
  }
  if (ld->text[0] == ';' || ld->text[0] == '#') {
    memcpy(buf, ";\n", 3);
    return buf;
  }
  sep = strpbrk(ld->text, "=:");
  if (ld->text[0] == '[' || sep == NULL || (size_t)(sep - ld->text) + 3 > (size_t)size) {
    snprintf(what, sizeof what,
             "line is too long for a section header or "
             "key name (at most %d bytes)",
             size - 3);
    load_fail(ld, ld->lineno, NULL, NULL, what);
    return NULL;
  }
  len = (size_t)(sep - ld->text) + 1;
  memcpy(buf, ld->text, len);
  memcpy(buf + len, "\n", 2);
  return buf;
}

/* Copies a "double-quoted" value; \" and \\ are the only escapes, which is
 * all that is needed to write any value back (see types.c). */
static int quoted_value(const char *p, char *out, size_t outlen, char *err, size_t errlen) {
  size_t n = 0;

  for (; *p != '"'; p++) {
    char c = *p;
    if (c == '\0' || c == '\n' || c == '\r') {
      snprintf(err, errlen, "missing closing quote");
      return -1;
    }
    if (c == '\\') {
      c = *++p;
      if (c != '"' && c != '\\') {
        snprintf(err, errlen,
                 "unknown escape in quoted value (only \\\" "
                 "and \\\\)");
        return -1;
      }
    }
    if (n + 1 >= outlen) {
      snprintf(err, errlen, "value is too long");
      return -1;
    }
    out[n++] = c;
  }
  out[n] = '\0';
  for (p++; isspace((unsigned char)*p); p++) continue;
  if (*p != '\0' && *p != ';') {
    snprintf(err, errlen, "unexpected text after the closing quote");
    return -1;
  }
  return 0;
}

/* Finds the value on the raw line: after the first '=' or ':' (inih's key
 * never contains either), either quoted, or up to a ';' that follows a
 * blank, without surrounding blanks. */
static int raw_value(const char *text, char *out, size_t outlen, char *err, size_t errlen) {
  const char *p = strpbrk(text, "=:");
  const char *v;
  const char *end;
  bool was_space = false;

  if (p == NULL) {
    snprintf(err, errlen, "expected \"key = value\"");
    return -1;
  }
  p++;
  for (v = p; isspace((unsigned char)*v); v++) continue;
  if (*v == '"') return quoted_value(v + 1, out, outlen, err, errlen);
  for (end = p; *end != '\0' && !(was_space && *end == ';'); end++) was_space = isspace((unsigned char)*end);
  while (end > v && isspace((unsigned char)end[-1])) end--;
  if (end < v) end = v;
  if ((size_t)(end - v) >= outlen) {
    snprintf(err, errlen, "value is too long");
    return -1;
  }
  memcpy(out, v, (size_t)(end - v));
  out[end - v] = '\0';
  return 0;
}

static int load_key(void *user, const char *section, const char *name, const char *value, int lineno) {
  struct load *ld = user;
  char what[512];
  int key;

  (void)value;  /* taken from the raw line instead */
  (void)lineno; /* counted by load_read() instead */
  if (ld->failed) return 0;
  if (name == NULL) return 1; /* start of a section, if inih was built to report it */
  char upsection[64];
  unsigned *set_at = ld->set_at;
  const char *table = section; /* the section of the key table */
  if (ld->up >= 0) {
    snprintf(upsection, sizeof upsection, "upstream %s", ld->cfg->upstreams[ld->up].name);
    section = upsection;
    table = "upstream";
    set_at = ld->up_set_at + (size_t)ld->up * (size_t)s5_config_key_count();
  } else if (ld->gr >= 0) {
    snprintf(upsection, sizeof upsection, "group %s", ld->cfg->groups[ld->gr].name);
    section = upsection;
    table = "group";
    set_at = ld->gr_set_at + (size_t)ld->gr * (size_t)s5_config_key_count();
  }
  key = s5_config_key_find(table, name);
  if (key < 0) {
    s5_config_key_unknown(table, name, what, sizeof what);
    load_fail(ld, ld->lineno, section, name, what);
    return 0;
  }
  bool repeat = s5_config_key(key)->repeat;
  if (set_at[key] != 0 && !repeat) {
    /* Later-wins would hide typos such as a pasted block: refuse. */
    snprintf(what, sizeof what, "set twice, first at line %u", set_at[key]);
    load_fail(ld, ld->lineno, section, name, what);
    return 0;
  }
  set_at[key] = ld->lineno;
  int rc = raw_value(ld->text, ld->value, sizeof ld->value, what, sizeof what);
  if (rc == 0 && ld->gr >= 0 && s5_config_key(key)->type == &s5_type_members) {
    size_t n = strlen(ld->value);
    rc = n < sizeof ld->gr_members[0] ? 0 : -1; /* read in load_groups */
    if (rc == 0) memcpy(ld->gr_members[ld->gr], ld->value, n + 1);
    else snprintf(what, sizeof what, "too long (%zu bytes at most)", sizeof ld->gr_members[0] - 1);
  } else if (rc == 0) {
    rc = ld->up >= 0   ? s5_upstream_key_set(ld->cfg, key, (unsigned)ld->up, ld->value, what, sizeof what)
         : ld->gr >= 0 ? s5_group_key_set(ld->cfg, key, (unsigned)ld->gr, ld->value, what, sizeof what)
                       : s5_config_key_set(ld->cfg, key, ld->value, what, sizeof what);
  }
  if (rc != 0) {
    load_fail(ld, ld->lineno, section, name, what);
    return 0;
  }
  if (strcmp(section, "rules") == 0) s5_rules_note_line(ld->cfg, ld->path, name, ld->lineno);
  return 1;
}

/* inih only reports the number of a line it could not parse; read that line
 * again to say what kind of line it seemed to be. The line itself is not
 * repeated: it might hold a password. */
static void load_syntax_error(struct load *ld, unsigned line) {
  const char *what = "expected \"key = value\", \"[section]\" or a comment";
  const char *text;
  unsigned n;

  rewind(ld->fp);
  for (n = 0; n < line; n++)
    if (getline(&ld->line, &ld->cap, ld->fp) < 0) break;
  if (n == line) {
    text = skip_blanks(ld->line);
    if (text[0] == '[') what = "section header without a closing ']'";
  }
  load_fail(ld, line, NULL, NULL, what);
}

/* The groups once every section is in: members resolved to upstreams,
 * then each group as a whole; a key left out is blamed on the header. */
static void load_groups(struct load *ld) {
  char what[512], section[64];
  int members = s5_config_key_find("group", "members"), key;
  for (unsigned g = 0; g < ld->cfg->n_groups && !ld->failed; g++) {
    const unsigned *at = ld->gr_set_at + (size_t)g * (size_t)s5_config_key_count();
    snprintf(section, sizeof section, "group %s", ld->cfg->groups[g].name);
    if (at[members] != 0 && s5_group_key_set(ld->cfg, members, g, ld->gr_members[g], what, sizeof what) != 0)
      load_fail(ld, at[members], section, "members", what);
    else if (s5_group_check(ld->cfg, g, &key, what, sizeof what) != 0)
      load_fail(ld, key >= 0 && at[key] != 0 ? at[key] : ld->gr_line[g], section,
                key >= 0 ? s5_config_key_name(key) : NULL, what);
  }
}

/* Rules involving several keys, checked once the whole file is in. */
static void load_check(struct load *ld) {
  char what[256], section[64];
  int key, up;

  if (s5_config_check(ld->cfg, &key, &up, what, sizeof what) == 0) return;
  if (up < 0) {
    load_fail(ld, ld->set_at[key], s5_config_key_section(key), s5_config_key_name(key), what);
    return;
  }
  /* A key left at its default is blamed on its section's header. */
  unsigned line = ld->up_set_at[(size_t)up * (size_t)s5_config_key_count() + (size_t)key];
  snprintf(section, sizeof section, "upstream %s", ld->cfg->upstreams[up].name);
  load_fail(ld, line != 0 ? line : ld->up_line[up], section, s5_config_key_name(key), what);
}

static void load_stream(struct load *ld) {
  char what[256];
  int rc = ini_parse_stream(load_read, ld, load_key, ld);

  /* inih reports the first line it did not like, which includes the line
   * our handler refused; a lower number is an inih syntax error. Reading
   * stopped at our failing line, so ld->lineno is its number. */
  if (rc > 0 && (!ld->failed || (unsigned)rc < ld->lineno)) {
    load_syntax_error(ld, (unsigned)rc);
    return;
  }
  if (ld->failed) return;
  if (rc < 0) {
    load_fail(ld, 0, NULL, NULL, "out of memory");
    return;
  }
  if (ld->read_errno != 0) {
    snprintf(what, sizeof what, "cannot read: %s", strerror(ld->read_errno));
    load_fail(ld, 0, NULL, NULL, what);
    return;
  }
  load_groups(ld);
  if (!ld->failed) load_check(ld);
}

int s5_config_load_file(struct s5_config *cfg, const char *path, char *err, size_t errlen) {
  struct s5_config *scratch;
  struct load *ld;
  char what[256];
  int rc = -1;

  scratch = malloc(sizeof *scratch);
  ld = calloc(1, sizeof *ld);
  if (scratch == NULL || ld == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
  ld->set_at = calloc((size_t)s5_config_key_count(), sizeof *ld->set_at);
  ld->up_set_at = calloc((size_t)s5_config_key_count() * S5_UPSTREAMS_MAX, sizeof *ld->up_set_at);
  ld->gr_set_at = calloc((size_t)s5_config_key_count() * S5_GROUPS_MAX, sizeof *ld->gr_set_at);
  ld->up = -1;
  ld->gr = -1;
  if (ld->set_at == NULL || ld->up_set_at == NULL || ld->gr_set_at == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto out;
  }
  *scratch = *cfg;
  scratch->n_groups = 0; /* the file is their only source */
  memset(scratch->groups, 0, sizeof scratch->groups);
  ld->cfg = scratch;
  ld->path = path;
  ld->err = err;
  ld->errlen = errlen;
  ld->fp = fopen(path, "r");
  if (ld->fp == NULL) {
    snprintf(what, sizeof what, "cannot open: %s", strerror(errno));
    load_fail(ld, 0, NULL, NULL, what);
    goto out;
  }
  load_stream(ld);
  if (!ld->failed) {
    *cfg = *scratch;
    rc = 0;
  }

out:
  if (ld != NULL) {
    if (ld->fp != NULL) fclose(ld->fp);
    free(ld->line);
    free(ld->set_at);
    free(ld->up_set_at);
    free(ld->gr_set_at);
  }
  free(ld);
  free(scratch);
  return rc;
}
