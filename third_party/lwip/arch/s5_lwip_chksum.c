/* SPDX-License-Identifier: MIT */
/* The Internet checksum for lwIP (LWIP_CHKSUM), eight bytes at a time.
 *
 * lwIP wants the one's-complement sum of the data as native-order 16-bit
 * words, counted from the start of the data whatever its address. Loads
 * through memcpy are unaligned-safe and compile to plain moves on x86-64
 * and arm64; summing native 32-bit halves into a 64-bit accumulator and
 * folding at the end gives the same 16-bit sum, with no carry handling in
 * the loop (2^32 additions would be needed to overflow). */
#include <stdint.h>
#include <string.h>

#include "lwip/arch.h"

u16_t s5_lwip_chksum(const void *dataptr, int len) {
  const uint8_t *p = dataptr;
  uint64_t sum = 0;
  uint64_t w;
  for (; len >= 32; len -= 32, p += 32) {
    uint64_t a, b, c, d;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    memcpy(&c, p + 16, 8);
    memcpy(&d, p + 24, 8);
    sum += (a & 0xffffffffu) + (a >> 32) + (b & 0xffffffffu) + (b >> 32) + (c & 0xffffffffu) + (c >> 32) +
           (d & 0xffffffffu) + (d >> 32);
  }
  for (; len >= 8; len -= 8, p += 8) {
    memcpy(&w, p, 8);
    sum += (w & 0xffffffffu) + (w >> 32);
  }
  if (len > 0) { /* the tail, zero-padded as the checksum defines it */
    w = 0;
    memcpy(&w, p, (size_t)len);
    sum += (w & 0xffffffffu) + (w >> 32);
  }
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  return (u16_t)sum;
}
