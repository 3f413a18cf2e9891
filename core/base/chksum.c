/* SPDX-License-Identifier: MIT */
/* Pseudo-header sums for partial checksums (see chksum.h). */
#include "base/chksum.h"

#include "lwip/def.h"
#include "lwip/inet_chksum.h"

uint16_t s5_chksum_pseudo_partial(const uint8_t *addrs, int alen, uint8_t proto, size_t len) {
  uint32_t sum = s5_lwip_chksum(addrs, alen);
  sum += lwip_htons(proto) + lwip_htons((u16_t)len);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)sum;
}
