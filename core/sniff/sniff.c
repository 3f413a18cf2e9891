/* SPDX-License-Identifier: MIT */
/* The parsers' shared parts. PLACEHOLDER: the TLS, HTTP and QUIC parsers
 * answer NONE until they are written. */
#include <stdlib.h>
#include <string.h>

#include "sniff/sniff.h"

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

enum s5_sniff s5_sniff_tls(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  (void)buf, (void)len, (void)name;
  return S5_SNIFF_NONE;
}

enum s5_sniff s5_sniff_http(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  (void)buf, (void)len, (void)name;
  return S5_SNIFF_NONE;
}

void s5_quic_sniff_init(struct s5_quic_sniff *q) { memset(q, 0, sizeof *q); }

enum s5_sniff s5_quic_sniff_feed(struct s5_quic_sniff *q, const uint8_t *pkt, size_t len,
                                 char name[S5_SNIFF_NAME_MAX + 1]) {
  (void)q, (void)pkt, (void)len, (void)name;
  return S5_SNIFF_NONE;
}

void s5_quic_sniff_free(struct s5_quic_sniff *q) {
  free(q->crypto);
  free(q->seen);
  q->crypto = q->seen = NULL;
}
