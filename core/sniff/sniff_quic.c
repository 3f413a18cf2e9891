/* SPDX-License-Identifier: MIT */
/* QUIC Initial: PLACEHOLDER answering NONE until it is written. */
#include <stdlib.h>
#include <string.h>

#include "sniff/sniff_int.h"

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
