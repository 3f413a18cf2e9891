/* SPDX-License-Identifier: MIT */
/* The parsers' shared parts: a name's checks, and a ClientHello's body to
 * its server_name (RFC 8446 4.1.2, RFC 6066 3), for TLS and QUIC. */
#include <arpa/inet.h>
#include <string.h>

#include "sniff/sniff_int.h"

const char *s5_name_src_str(enum s5_name_src s) {
  switch (s) {
    case S5_NAME_MAPPED: return "mapped";
    case S5_NAME_TLS: return "tls";
    case S5_NAME_HTTP: return "http";
    case S5_NAME_QUIC: return "quic";
    case S5_NAME_NONE: break;
  }
  return "";
}

int s5_sniff_name(const uint8_t *name, size_t len, char out[S5_SNIFF_NAME_MAX + 1]) {
  if (len > 0 && name[len - 1] == '.') len--;
  if (len == 0 || len > S5_SNIFF_NAME_MAX) return 0;
  size_t label = 0;
  int last_all_digits = 1;
  for (size_t i = 0; i < len; i++) {
    uint8_t c = name[i];
    if (c == '.') {
      if (label == 0) return 0; /* empty label: "..", or a leading dot */
      label = 0;
      last_all_digits = 1;
      out[i] = '.';
      continue;
    }
    if (c >= 'A' && c <= 'Z') c = (uint8_t)(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return 0;
    if (!(c >= '0' && c <= '9')) last_all_digits = 0;
    if (++label > 63) return 0;
    out[i] = (char)c;
  }
  /* The last label all digits: an IPv4 literal ("10.1.2.3", "10.1") or no
   * host name at all (top-level domains are never numeric). */
  if (last_all_digits) return 0;
  out[len] = '\0';
  /* What inet_aton() takes is an address to resolvers too: "0x7f000001". */
  struct in_addr a;
  return inet_aton(out, &a) == 0;
}

static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }

/* The server_name extension's body: a list of names, the first host_name. */
static enum s5_sniff server_name(const uint8_t *p, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  if (len < 2 || get16(p) != len - 2) return S5_SNIFF_NONE;
  p += 2, len -= 2;
  while (len >= 3) {
    uint8_t type = p[0];
    size_t n = get16(p + 1);
    if (n > len - 3) return S5_SNIFF_NONE;
    if (type == 0) return s5_sniff_name(p + 3, n, name) ? S5_SNIFF_FOUND : S5_SNIFF_NONE;
    p += 3 + n, len -= 3 + n;
  }
  return S5_SNIFF_NONE;
}

enum s5_sniff s5_sniff_client_hello(const uint8_t *p, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  size_t at = 2 + 32; /* legacy_version, random */
  if (len < at + 1) return S5_SNIFF_NONE;
  if (p[0] != 3) return S5_SNIFF_NONE;
  size_t n = p[at]; /* legacy_session_id */
  if (n > 32 || n > len - at - 1) return S5_SNIFF_NONE;
  at += 1 + n;
  if (len - at < 2) return S5_SNIFF_NONE;
  n = get16(p + at); /* cipher_suites */
  if (n < 2 || n % 2 != 0 || n > len - at - 2) return S5_SNIFF_NONE;
  at += 2 + n;
  if (len - at < 1) return S5_SNIFF_NONE;
  n = p[at]; /* legacy_compression_methods */
  if (n < 1 || n > len - at - 1) return S5_SNIFF_NONE;
  at += 1 + n;
  if (len - at < 2) return S5_SNIFF_NONE; /* no extensions: no server_name */
  n = get16(p + at);
  at += 2;
  if (n != len - at) return S5_SNIFF_NONE; /* the extensions end the message */
  while (len - at >= 4) {
    uint32_t type = get16(p + at);
    size_t elen = get16(p + at + 2);
    at += 4;
    if (elen > len - at) return S5_SNIFF_NONE;
    if (type == 0) return server_name(p + at, elen, name);
    at += elen;
  }
  return S5_SNIFF_NONE;
}
