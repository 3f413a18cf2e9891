/* SPDX-License-Identifier: MIT */
/* The value types of the key table: how a key's text becomes the field at
 * its offset in struct s5_config, and how the field is written back by
 * --check-config. One pair of functions per type, not per key, so that
 * every key of a type is read, bounded and printed alike; the words of the
 * messages come from the parsers in value.c. Every print is the inverse of
 * its parse: what --check-config writes loads back to the same bytes. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ini/internal.h"
#include "ini/keys.h"

void *s5_key_field(const struct s5_key *k, struct s5_config *cfg) { return (char *)cfg + k->offset; }

const void *s5_key_cfield(const struct s5_key *k, const struct s5_config *cfg) {
  return (const char *)cfg + k->offset;
}

/* "name = value", or "name =" for an empty value. */
void s5_key_print_plain(const struct s5_key *k, FILE *out, const char *value) {
  fprintf(out, "%s =%s%s\n", k->name, value[0] != '\0' ? " " : "", value);
}

/* ---- bool, numbers, words ---- */

static int bool_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  return s5_parse_bool(text, s5_key_field(k, cfg), err, errlen);
}

static void bool_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  s5_key_print_plain(k, out, *(const bool *)s5_key_cfield(k, cfg) ? "true" : "false");
}

static int uint_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  unsigned long n;
  if (s5_parse_uint(text, k->min, k->max, &n, err, errlen) != 0) return -1;
  *(unsigned *)s5_key_field(k, cfg) = (unsigned)n;
  return 0;
}

static void uint_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  fprintf(out, "%s = %u\n", k->name, *(const unsigned *)s5_key_cfield(k, cfg));
}

/* queues = 0 means one queue per online CPU, clamped to what the TUN driver
 * allows. The key keeps what was written (so --check-config prints 0 back);
 * cfg->queues gets the resolved count, so nobody downstream ever sees 0. */
static unsigned online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > S5_QUEUES_MAX ? S5_QUEUES_MAX : (unsigned)n;
}

static int queues_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                        size_t errlen) {
  if (uint_parse(k, cfg, text, err, errlen) != 0) return -1;
  unsigned n = *(unsigned *)s5_key_field(k, cfg);
  cfg->queues = n == 0 ? online_cpus() : n;
  return 0;
}

static int mark_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  return s5_parse_u32(text, s5_key_field(k, cfg), err, errlen);
}

/* In hex, as marks are written (ip rule, nft); 0 as the default reads. */
static void mark_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  uint32_t mark = *(const uint32_t *)s5_key_cfield(k, cfg);
  if (mark == 0) fprintf(out, "%s = 0\n", k->name);
  else fprintf(out, "%s = 0x%" PRIx32 "\n", k->name, mark);
}

/* An enum field holds the word's index; a bool field (two words) holds
 * whether it is the second ("off" | "reply"). */
static int enum_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  int i;
  if (s5_parse_word(text, k->words, &i, err, errlen) != 0) return -1;
  if (k->size == sizeof(bool)) *(bool *)s5_key_field(k, cfg) = i != 0;
  else memcpy(s5_key_field(k, cfg), &i, sizeof i);
  return 0;
}

static void enum_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  int i = 0;
  if (k->size == sizeof(bool)) i = *(const bool *)s5_key_cfield(k, cfg);
  else memcpy(&i, s5_key_cfield(k, cfg), sizeof i);
  int n = 0;
  while (k->words[n] != NULL) n++;
  s5_key_print_plain(k, out,
                     i >= 0 && i < n ? k->words[i] : ""); /* "" fails to load: never silently another value */
}

/* ---- text ---- */

/* Stores text into the char[size] field only if it is valid, and clears
 * the rest of the field, so equal values are equal bytes. */
static int text_store(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  char *p = s5_key_field(k, cfg);
  if (s5_parse_text(text, k->size - 1, p, k->size, err, errlen) != 0) return -1;
  size_t len = strlen(p);
  memset(p + len, 0, k->size - len);
  return 0;
}

/* Quotes are needed when the loader would otherwise change the value: outer
 * blanks are stripped, a ';' may start a comment, a leading '"' opens a
 * quoted value. \" and \\ are the loader's only escapes. */
static bool needs_quotes(const char *s) {
  size_t len = strlen(s);
  if (len == 0) return false;
  return isspace((unsigned char)s[0]) || isspace((unsigned char)s[len - 1]) || s[0] == '"' ||
         strchr(s, ';') != NULL;
}

void s5_key_print_quoted(const struct s5_key *k, FILE *out, const char *value) {
  if (!needs_quotes(value)) {
    s5_key_print_plain(k, out, value);
    return;
  }
  fprintf(out, "%s = \"", k->name);
  for (const char *p = value; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\') fputc('\\', out);
    fputc(*p, out);
  }
  fputs("\"\n", out);
}

static void text_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  s5_key_print_quoted(k, out, s5_key_cfield(k, cfg));
}

/* The password is never printed: the output may go into a bug report. */
static void secret_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  s5_key_print_plain(k, out, *(const char *)s5_key_cfield(k, cfg) != '\0' ? "***" : "");
}

/* A user that does not exist is a configuration error, found when the file
 * is checked rather than when a worker drops privileges after the device is
 * up. The primary group comes with it. */
static int user_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  char name[sizeof cfg->run.user];
  char shown[S5_SHOW_MAX];
  uid_t uid = 0;
  gid_t gid = 0;
  if (s5_parse_text(text, sizeof name - 1, name, sizeof name, err, errlen) != 0) return -1;
  if (name[0] != '\0') {
    struct passwd pw, *found = NULL;
    char buf[16384];
    int r = getpwnam_r(name, &pw, buf, sizeof buf, &found);
    if (found == NULL) {
      s5_show(shown, sizeof shown, name);
      if (r == 0 || r == ENOENT || r == ESRCH)
        snprintf(err, errlen, "%s is not a user on this system", shown);
      else snprintf(err, errlen, "looking up %s: %s", shown, strerror(r));
      return -1;
    }
    uid = pw.pw_uid;
    gid = pw.pw_gid;
  }
  if (text_store(k, cfg, name, err, errlen) != 0) return -1;
  cfg->run.uid = uid;
  cfg->run.gid = gid;
  return 0;
}

/* Calls fn for each item of a comma-separated list, blanks around it
 * trimmed. Returns 0, or -1 with err set (by fn, or for an empty item). */
int s5_list_each(const char *text, int (*fn)(char *item, void *arg, char *err, size_t errlen), void *arg,
                 char *err, size_t errlen) {
  char buf[1024];
  if (strlen(text) >= sizeof buf) {
    snprintf(err, errlen, "too long");
    return -1;
  }
  strcpy(buf, text);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
    while (*item == ' ' || *item == '\t') item++;
    char *end = item + strlen(item);
    while (end > item && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
    if (*item == '\0') {
      snprintf(err, errlen, "an empty item in the list");
      return -1;
    }
    if (fn(item, arg, err, errlen) != 0) return -1;
  }
  return 0;
}

/* One uid: a number or a user name, looked up. */
static int uid_parse_one(const char *s, uint32_t *uid, char *err, size_t errlen) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (*s >= '0' && *s <= '9' && *end == '\0' && errno == 0 && v < UINT32_MAX) {
    *uid = (uint32_t)v;
    return 0;
  }
  struct passwd pw, *found = NULL;
  char buf[16384];
  int r = getpwnam_r(s, &pw, buf, sizeof buf, &found);
  if (found == NULL) {
    char shown[S5_SHOW_MAX];
    s5_show(shown, sizeof shown, s);
    snprintf(err, errlen, "%s is neither a uid nor a user on this system", shown);
    (void)r;
    return -1;
  }
  *uid = (uint32_t)pw.pw_uid;
  return 0;
}

/* One item of a uid list: a uid, a user name or a range A-B. */
static int uids_item(char *item, void *arg, char *err, size_t errlen) {
  struct s5_uid_list *l = arg;
  if (l->n == S5_UID_RANGES_MAX) {
    snprintf(err, errlen, "more than %d uids or ranges", S5_UID_RANGES_MAX);
    return -1;
  }
  char *dash = strchr(item, '-');
  uint32_t lo, hi;
  if (dash != NULL && dash != item && dash[1] >= '0' && dash[1] <= '9' && item[0] >= '0' && item[0] <= '9') {
    *dash = '\0';
    if (uid_parse_one(item, &lo, err, errlen) != 0 || uid_parse_one(dash + 1, &hi, err, errlen) != 0)
      return -1;
    if (hi < lo) {
      snprintf(err, errlen, "range %u-%u runs backwards", lo, hi);
      return -1;
    }
  } else {
    if (uid_parse_one(item, &lo, err, errlen) != 0) return -1;
    hi = lo;
  }
  l->r[l->n][0] = lo;
  l->r[l->n][1] = hi;
  l->n++;
  return 0;
}

/* "0, nobody, 1000-1999": uids, user names or ranges, comma-separated. */
static int uids_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  struct s5_uid_list l = {0};
  if (s5_list_each(text, uids_item, &l, err, errlen) != 0) return -1;
  *(struct s5_uid_list *)s5_key_field(k, cfg) = l;
  return 0;
}

/* As numbers: names were resolved when read. */
static void uids_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_uid_list *l = s5_key_cfield(k, cfg);
  char buf[S5_UID_RANGES_MAX * 24] = "";
  for (unsigned i = 0; i < l->n; i++) {
    size_t n = strlen(buf);
    if (l->r[i][0] == l->r[i][1]) snprintf(buf + n, sizeof buf - n, "%s%u", i ? ", " : "", l->r[i][0]);
    else snprintf(buf + n, sizeof buf - n, "%s%u-%u", i ? ", " : "", l->r[i][0], l->r[i][1]);
  }
  s5_key_print_plain(k, out, buf);
}

static int ifname_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                        size_t errlen) {
  char *p = s5_key_field(k, cfg);
  if (s5_parse_ifname(text, p, k->size, err, errlen) != 0) return -1;
  size_t len = strlen(p);
  memset(p + len, 0, k->size - len);
  return 0;
}

/* ---- prefixes ---- */

static int prefix_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                        size_t errlen) {
  return s5_parse_prefix(text, k->family, s5_key_field(k, cfg), err, errlen);
}

static void prefix_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_prefix *p = s5_key_cfield(k, cfg);
  char buf[INET6_ADDRSTRLEN + 8] = "";
  char addr[INET6_ADDRSTRLEN];
  if (p->family != 0 && inet_ntop(p->family, p->addr, addr, sizeof addr) != NULL)
    snprintf(buf, sizeof buf, "%s/%u", addr, p->len);
  s5_key_print_plain(k, out, buf);
}

static uint32_t ipv4_host(const uint8_t *a) {
  return ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
}

/* An IPv4 pool of at least 2 usable addresses (/30); the address must be
 * the network's first (no host bits), so that the file says exactly which
 * addresses are claimed. */
static int pool_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  struct s5_prefix p;
  if (*text == '\0') {
    snprintf(err, errlen, "empty (expected an IPv4 network, e.g. 100.64.0.0/10)");
    return -1;
  }
  if (s5_parse_prefix(text, AF_INET, &p, err, errlen) != 0) return -1;
  if (p.len > 30) {
    snprintf(err, errlen, "prefix length %u is too long: the pool needs at least /30", p.len);
    return -1;
  }
  uint32_t a = ipv4_host(p.addr);
  uint32_t net = a & (0xffffffffu << (32 - p.len));
  if (a != net) {
    snprintf(err, errlen, "has host bits set (the network of /%u starts at %u.%u.%u.%u)", p.len, net >> 24,
             (net >> 16) & 0xff, (net >> 8) & 0xff, net & 0xff);
    return -1;
  }
  *(struct s5_prefix *)s5_key_field(k, cfg) = p;
  return 0;
}

/* An IPv6 pool: the host part holds at least 8 bits (the table's entries
 * are counted in the low 64), and no host bits may be set. */
static int pool6_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                       size_t errlen) {
  struct s5_prefix p;
  if (*text == '\0') {
    memset(s5_key_field(k, cfg), 0, sizeof p);
    return 0;
  }
  if (s5_parse_prefix(text, AF_INET6, &p, err, errlen) != 0) return -1;
  if (p.len < 8 || p.len > 120) {
    snprintf(err, errlen, "prefix length %u out of range 8..120 (e.g. fdff:5335::/96)", p.len);
    return -1;
  }
  for (unsigned bit = p.len; bit < 128; bit++) {
    if (p.addr[bit / 8] & (0x80u >> (bit % 8))) {
      snprintf(err, errlen, "has host bits set beyond /%u", p.len);
      return -1;
    }
  }
  *(struct s5_prefix *)s5_key_field(k, cfg) = p;
  return 0;
}

/* ---- socket addresses ---- */

/* An optional address with a fixed port (max): empty unsets it. */
static int addr_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  socklen_t len;
  if (*text == '\0') {
    memset(s5_key_field(k, cfg), 0, sizeof(struct sockaddr_storage));
    return 0;
  }
  return s5_parse_ip(text, (uint16_t)k->max, s5_key_field(k, cfg), &len, err, errlen);
}

/* The address without its port; empty when unset (family 0). */
static void addr_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct sockaddr_storage *ss = s5_key_cfield(k, cfg);
  char buf[INET6_ADDRSTRLEN];
  s5_key_print_plain(k, out, s5_sockaddr_host(ss, buf, sizeof buf));
}

/* One item of an address list: at most one of each family. */
struct addrs_acc {
  const struct s5_key *k;
  struct sockaddr_storage got[2];
};

static int addrs_item(char *item, void *arg, char *err, size_t errlen) {
  struct addrs_acc *acc = arg;
  struct sockaddr_storage ss;
  socklen_t len;
  if (s5_parse_ip(item, (uint16_t)acc->k->max, &ss, &len, err, errlen) != 0) return -1;
  int i = ss.ss_family == AF_INET6;
  if (acc->got[i].ss_family != 0) {
    snprintf(err, errlen, "two %s addresses (at most one of each family)", i ? "IPv6" : "IPv4");
    return -1;
  }
  acc->got[i] = ss;
  return 0;
}

/* Up to two addresses, one per family, comma-separated: [0] IPv4, [1] IPv6. */
static int addrs_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                       size_t errlen) {
  struct addrs_acc acc = {.k = k};
  memset(acc.got, 0, sizeof acc.got);
  if (s5_list_each(text, addrs_item, &acc, err, errlen) != 0) return -1;
  memcpy(s5_key_field(k, cfg), acc.got, sizeof acc.got);
  return 0;
}

static void addrs_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct sockaddr_storage *ss = s5_key_cfield(k, cfg);
  char buf[2 * INET6_ADDRSTRLEN + 4] = "";
  for (int i = 0; i < 2; i++) {
    char a[INET6_ADDRSTRLEN];
    if (s5_sockaddr_host(&ss[i], a, sizeof a)[0] == '\0') continue;
    size_t n = strlen(buf);
    snprintf(buf + n, sizeof buf - n, "%s%s", n > 0 ? ", " : "", a);
  }
  s5_key_print_plain(k, out, buf);
}

/* The proxy: address and port are two keys but one sockaddr, so each keeps
 * the other half (the defaults set the address first). */
static int proxy_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                       size_t errlen) {
  struct sockaddr_storage *ss = s5_key_field(k, cfg);
  /* The field is the addr of a struct s5_upstream_cfg: its addrlen beside it. */
  struct s5_upstream_cfg *up =
    (struct s5_upstream_cfg *)((char *)ss - offsetof(struct s5_upstream_cfg, addr));
  return s5_parse_ip(text, s5_sockaddr_port(ss), ss, &up->addrlen, err, errlen);
}

static int port_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  struct sockaddr_storage *ss = s5_key_field(k, cfg);
  unsigned long n;
  if (s5_parse_uint(text, 1, 65535, &n, err, errlen) != 0) return -1;
  s5_sockaddr_set_port(ss, (uint16_t)n);
  return 0;
}

static void port_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  fprintf(out, "%s = %u\n", k->name, (unsigned)s5_sockaddr_port(s5_key_cfield(k, cfg)));
}

/* A listening address with its port: "ADDR:PORT", "[V6]:PORT"; empty unsets it. */
static int listen_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                        size_t errlen) {
  if (*text == '\0') {
    memset(s5_key_field(k, cfg), 0, sizeof(struct sockaddr_storage));
    return 0;
  }
  return s5_parse_listen(text, s5_key_field(k, cfg), err, errlen);
}

static void listen_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct sockaddr_storage *ss = s5_key_cfield(k, cfg);
  char buf[S5_SOCKADDR_STRLEN] = "";
  if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6) s5_sockaddr_str(ss, buf, sizeof buf);
  s5_key_print_plain(k, out, buf);
}

const struct s5_key_type s5_type_bool = {"bool", bool_parse, bool_print};
const struct s5_key_type s5_type_uint = {"number", uint_parse, uint_print};
const struct s5_key_type s5_type_queues = {"number", queues_parse, uint_print};
const struct s5_key_type s5_type_mark = {"mark", mark_parse, mark_print};
const struct s5_key_type s5_type_enum = {"word", enum_parse, enum_print};
const struct s5_key_type s5_type_text = {"text", text_store, text_print};
const struct s5_key_type s5_type_secret = {"secret", text_store, secret_print};
const struct s5_key_type s5_type_user = {"user", user_parse, text_print};
const struct s5_key_type s5_type_uids = {"uid list", uids_parse, uids_print};
const struct s5_key_type s5_type_ifname = {"device name", ifname_parse, text_print};
const struct s5_key_type s5_type_prefix = {"address/prefix", prefix_parse, prefix_print};
const struct s5_key_type s5_type_pool = {"IPv4 network", pool_parse, prefix_print};
const struct s5_key_type s5_type_pool6 = {"IPv6 network", pool6_parse, prefix_print};
const struct s5_key_type s5_type_addr = {"address", addr_parse, addr_print};
const struct s5_key_type s5_type_addrs = {"addresses", addrs_parse, addrs_print};
const struct s5_key_type s5_type_proxy = {"address", proxy_parse, addr_print};
const struct s5_key_type s5_type_port = {"port", port_parse, port_print};
const struct s5_key_type s5_type_listen = {"address:port", listen_parse, listen_print};
