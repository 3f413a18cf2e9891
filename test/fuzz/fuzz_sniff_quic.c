/* SPDX-License-Identifier: MIT */
/* Fuzz target: the QUIC Initial sniffer (core/sniff/sniff_quic.c), one
 * sniffer fed a client's datagrams until it answers. Byte 0 picks the
 * form of the rest:
 *
 *   even   datagrams as they come: [length (2 bytes)][bytes], repeated
 *   odd    Initial payloads the harness protects as a client would (the
 *          keys of DCID 8394c8f03e515708, AES-128-GCM, header protection),
 *          so the fuzzer reaches the frames: [flags][length (2)][frames],
 *          repeated; flags bits 0-1 the packet number's length - 1, bit 2
 *          this packet shares a datagram with the next, bit 3 one byte of
 *          the packet flipped after protection (at the flags' high nibble
 *          times 7)
 *
 * Promises checked: a name found is a host name as sniff.h says; nothing
 * is read past a datagram (exact heap copies), nothing leaks after
 * s5_quic_sniff_free. S5_FUZZ_TRACE=1 prints each datagram's answer. */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz_sniff.h"

static const uint8_t dcid[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};
static uint8_t key[16], iv[12], hp[16];

static void expand(const uint8_t secret[32], const char *label, uint8_t *out, size_t outlen) {
  uint8_t info[64], block[32];
  size_t ll = strlen(label), n = 0;
  unsigned int mdlen = 0;
  info[n++] = 0, info[n++] = (uint8_t)outlen, info[n++] = (uint8_t)(6 + ll);
  memcpy(info + n, "tls13 ", 6), n += 6;
  memcpy(info + n, label, ll), n += ll;
  info[n++] = 0, info[n++] = 1;
  FUZZ_CHECK(HMAC(EVP_sha256(), secret, 32, info, n, block, &mdlen) != NULL, "HMAC");
  memcpy(out, block, outlen);
}

static void client_keys(void) {
  static const uint8_t salt[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                   0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
  uint8_t initial[32], client[32];
  unsigned int mdlen = 0;
  FUZZ_CHECK(HMAC(EVP_sha256(), salt, sizeof salt, dcid, sizeof dcid, initial, &mdlen) != NULL, "HMAC");
  expand(initial, "client in", client, 32);
  expand(client, "quic key", key, 16);
  expand(client, "quic iv", iv, 12);
  expand(client, "quic hp", hp, 16);
}

/* An Initial carrying frames[0..len) (PADDING added up to 4 bytes, for
 * the sample), written at out; its length. */
static size_t protect(uint8_t *out, uint64_t pn, size_t pn_len, const uint8_t *frames, size_t len) {
  uint8_t plain[1 << 14], mask[16], nonce[12];
  size_t n = 0;
  memcpy(plain, frames, len);
  while (len < 4) plain[len++] = 0;
  out[n++] = (uint8_t)(0xc0 | (pn_len - 1));
  out[n++] = 0, out[n++] = 0, out[n++] = 0, out[n++] = 1;
  out[n++] = sizeof dcid;
  memcpy(out + n, dcid, sizeof dcid), n += sizeof dcid;
  out[n++] = 0; /* SCID */
  out[n++] = 0; /* token */
  size_t plen = pn_len + len + 16;
  out[n++] = (uint8_t)(0x40 | plen >> 8), out[n++] = (uint8_t)plen;
  size_t pn_off = n;
  for (size_t i = 0; i < pn_len; i++) out[n++] = (uint8_t)(pn >> (8 * (pn_len - 1 - i)));
  memcpy(nonce, iv, 12);
  for (size_t i = 0; i < 8; i++) nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int outl = 0, fin = 0;
  FUZZ_CHECK(c != NULL && EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, key, nonce) == 1 &&
               EVP_EncryptUpdate(c, NULL, &outl, out, (int)n) == 1 &&
               EVP_EncryptUpdate(c, out + n, &outl, plain, (int)len) == 1 &&
               EVP_EncryptFinal_ex(c, out + n + outl, &fin) == 1 &&
               EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, out + n + len) == 1,
             "GCM");
  EVP_CIPHER_CTX_free(c);
  n += len + 16;
  c = EVP_CIPHER_CTX_new();
  FUZZ_CHECK(c != NULL && EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, hp, NULL) == 1 &&
               EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
               EVP_EncryptUpdate(c, mask, &outl, out + pn_off + 4, 16) == 1,
             "ECB");
  EVP_CIPHER_CTX_free(c);
  out[0] ^= mask[0] & 0x0f;
  for (size_t i = 0; i < pn_len; i++) out[pn_off + i] ^= mask[1 + i];
  return n;
}

static uint8_t dgram[1 << 17];

static enum s5_sniff feed(struct s5_quic_sniff *q, const uint8_t *d, size_t len,
                          char name[S5_SNIFF_NAME_MAX + 1]) {
  uint8_t *copy = fuzz_dup(d, len);
  if (len == 0) copy[0] = 0; /* never read: len says so */
  enum s5_sniff r = s5_quic_sniff_feed(q, copy, len, name);
  free(copy);
  FUZZ_CHECK(r == S5_SNIFF_MORE || r == S5_SNIFF_FOUND || r == S5_SNIFF_NONE, "answer %d", (int)r);
  if (r == S5_SNIFF_FOUND) fuzz_sniff_name_ok(name);
  if (getenv("S5_FUZZ_TRACE") != NULL)
    fprintf(stderr, "datagram of %zu bytes: %s %s\n", len,
            r == S5_SNIFF_MORE    ? "MORE"
            : r == S5_SNIFF_FOUND ? "FOUND"
                                  : "NONE",
            r == S5_SNIFF_FOUND ? name : "");
  FUZZ_CHECK(q->have <= S5_SNIFF_HOLD_MAX, "have %u", (unsigned)q->have);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int keyed;
  char name[S5_SNIFF_NAME_MAX + 1];
  struct s5_quic_sniff q;
  enum s5_sniff r = S5_SNIFF_MORE;
  size_t at = 1, n = 0;
  uint64_t pn = 0;

  if (size < 1) return 0;
  if (!keyed) client_keys(), keyed = 1;
  s5_quic_sniff_init(&q);
  while (r == S5_SNIFF_MORE && at < size) {
    int coalesce = 0;
    if (data[0] % 2 == 0) {
      if (size - at < 2) break;
      size_t len = (size_t)data[at] << 8 | data[at + 1];
      at += 2;
      if (len > size - at) len = size - at;
      memcpy(dgram, data + at, len);
      n = len;
      at += len;
    } else {
      if (size - at < 3) break;
      uint8_t flags = data[at];
      size_t len = ((size_t)data[at + 1] << 8 | data[at + 2]) & 0x0fff;
      at += 3;
      if (len > size - at) len = size - at;
      size_t start = n;
      n += protect(dgram + n, pn++, (flags & 3) + 1u, data + at, len);
      at += len;
      if (flags & 8) dgram[start + (size_t)(flags >> 4) * 7 % (n - start)] ^= 0x20;
      coalesce = (flags & 4) && n < sizeof dgram / 2;
    }
    if (coalesce) continue;
    r = feed(&q, dgram, n, name);
    n = 0;
  }
  if (r == S5_SNIFF_MORE && n > 0) feed(&q, dgram, n, name);
  s5_quic_sniff_free(&q);
  return 0;
}
