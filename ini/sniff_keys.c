/* SPDX-License-Identifier: MIT */
/* [sniff]'s own key types: a list of ports (tls = 443, 8443) and skip, a
 * list of address prefixes and names (10.0.0.0/8, example.com). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>

#include "ini/internal.h"
#include "ini/keys.h"

static int ports_item(char *item, void *arg, char *err, size_t errlen) {
  struct s5_port_list *l = arg;
  unsigned long v;
  if (s5_parse_uint(item, 1, 65535, &v, err, errlen) != 0) return -1;
  for (unsigned i = 0; i < l->n; i++)
    if (l->port[i] == v) {
      snprintf(err, errlen, "port %lu is listed twice", v);
      return -1;
    }
  if (l->n == S5_SNIFF_PORTS_MAX) {
    snprintf(err, errlen, "more than %d ports", S5_SNIFF_PORTS_MAX);
    return -1;
  }
  l->port[l->n++] = (uint16_t)v;
  return 0;
}

/* "443, 8443": ports, comma-separated; empty = none. */
static int ports_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                       size_t errlen) {
  struct s5_port_list l;
  memset(&l, 0, sizeof l);
  if (s5_list_each(text, ports_item, &l, err, errlen) != 0) return -1;
  *(struct s5_port_list *)s5_key_field(k, cfg) = l;
  return 0;
}

static void ports_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_port_list *l = s5_key_cfield(k, cfg);
  fprintf(out, "%s =", k->name);
  for (unsigned i = 0; i < l->n; i++) fprintf(out, "%s%u", i ? ", " : " ", (unsigned)l->port[i]);
  fputc('\n', out);
}

/* A host name: labels of letters, digits, '-' and '_', 1..63 each. */
static int skip_name(char *item, struct s5_name_list *l, char *err, size_t errlen) {
  size_t n = strlen(item);
  if (n > 0 && item[n - 1] == '.') item[--n] = '\0';
  if (n == 0 || n >= sizeof l->name[0]) {
    snprintf(err, errlen, "\"%s\" is neither an address prefix nor a name of 1..63 characters", item);
    return -1;
  }
  size_t label = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)item[i];
    if (c == '.') {
      if (label == 0) break;
      label = 0;
      continue;
    }
    if (!isalnum(c) && c != '-' && c != '_') {
      label = 0;
      break;
    }
    item[i] = (char)tolower(c);
    label++;
  }
  if (label == 0) {
    snprintf(err, errlen, "\"%s\" is neither an address prefix nor a host name", item);
    return -1;
  }
  if (l->n == S5_SNIFF_SKIP_MAX) {
    snprintf(err, errlen, "more than %d names", S5_SNIFF_SKIP_MAX);
    return -1;
  }
  memcpy(l->name[l->n++], item, n + 1);
  return 0;
}

static int skip_item(char *item, void *arg, char *err, size_t errlen) {
  struct s5_sniff_skip *s = arg;
  struct in_addr a4;
  if (strchr(item, ':') != NULL || strchr(item, '/') != NULL || inet_pton(AF_INET, item, &a4) == 1) {
    if (s->pfx.n == S5_ROUTE_PREFIXES_MAX) {
      snprintf(err, errlen, "more than %d prefixes", S5_ROUTE_PREFIXES_MAX);
      return -1;
    }
    return s5_parse_route_prefix(item, &s->pfx.p[s->pfx.n++], err, errlen);
  }
  return skip_name(item, &s->names, err, errlen);
}

/* "10.0.0.0/8, fd00::/8, example.com": prefixes and names, comma-separated. */
static int skip_parse(const struct s5_key *k, struct s5_config *cfg, const char *text, char *err,
                      size_t errlen) {
  struct s5_sniff_skip s;
  memset(&s, 0, sizeof s);
  if (s5_list_each(text, skip_item, &s, err, errlen) != 0) return -1;
  *(struct s5_sniff_skip *)s5_key_field(k, cfg) = s;
  return 0;
}

static void skip_print(const struct s5_key *k, const struct s5_config *cfg, FILE *out) {
  const struct s5_sniff_skip *s = s5_key_cfield(k, cfg);
  fprintf(out, "%s =", k->name);
  unsigned i = 0;
  for (; i < s->pfx.n; i++) {
    char buf[INET6_ADDRSTRLEN + 8];
    s5_prefix_text(&s->pfx.p[i], buf, sizeof buf);
    fprintf(out, "%s%s", i ? ", " : " ", buf);
  }
  for (unsigned j = 0; j < s->names.n; j++, i++) fprintf(out, "%s%s", i ? ", " : " ", s->names.name[j]);
  fputc('\n', out);
}

const struct s5_key_type s5_type_ports = {"port list", ports_parse, ports_print};
const struct s5_key_type s5_type_sniff_skip = {"prefixes and names", skip_parse, skip_print};
