/* SPDX-License-Identifier: MIT */
/* Fuzz target: the TLS ClientHello parser (core/sniff/sniff_tls.c), fed
 * what a client's first TCP bytes could be. Byte 0 picks the input's form:
 *
 *   below 0x80  the rest is the byte stream as received
 *   0x80 + k    the rest is a handshake message, put by the harness into
 *               records of k + 1 bytes, and into one record
 *
 * Promises checked: MORE only below S5_SNIFF_HOLD_MAX; a name found is a
 * host name as sniff.h says; every prefix is MORE or the whole's answer
 * with the same name; and a message gives the same answer in records of
 * any size as in one (while both fit the holder). */
#include "fuzz_sniff.h"

static uint8_t framed[2][S5_SNIFF_HOLD_MAX * 7];

static size_t records(uint8_t *out, const uint8_t *msg, size_t len, size_t frag) {
  size_t n = 0;
  for (size_t at = 0; at < len; at += frag) {
    size_t f = len - at < frag ? len - at : frag;
    out[n++] = 22, out[n++] = 3, out[n++] = 1, out[n++] = (uint8_t)(f >> 8), out[n++] = (uint8_t)f;
    memcpy(out + n, msg + at, f);
    n += f;
  }
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char name[S5_SNIFF_NAME_MAX + 1], one_name[S5_SNIFF_NAME_MAX + 1];
  if (size < 1) return 0;
  if (data[0] < 0x80) {
    fuzz_sniff_stream(s5_sniff_tls, data + 1, size - 1, name);
    return 0;
  }
  const uint8_t *msg = data + 1;
  size_t len = size - 1, frag = (size_t)(data[0] & 0x7f) + 1;
  if (len > S5_SNIFF_HOLD_MAX || len == 0) return 0;
  size_t n1 = records(framed[0], msg, len, 16384), nk = records(framed[1], msg, len, frag);
  enum s5_sniff one = fuzz_sniff_run(s5_sniff_tls, framed[0], n1, one_name);
  enum s5_sniff split = fuzz_sniff_stream(s5_sniff_tls, framed[1], nk, name);
  if (nk < S5_SNIFF_HOLD_MAX - 5 && n1 < S5_SNIFF_HOLD_MAX - 5) {
    FUZZ_CHECK(one == split, "one record %d, records of %zu %d", (int)one, frag, (int)split);
    FUZZ_CHECK(one != S5_SNIFF_FOUND || strcmp(name, one_name) == 0, "'%s' in one record, '%s' in records",
               one_name, name);
  }
  return 0;
}
