/* SPDX-License-Identifier: MIT */
/* QUIC v1: the ClientHello in a client's Initial packets (RFC 9000 17.2.2,
 * RFC 9001 5). The Initial keys come from the DCID (HKDF-SHA256 with the
 * v1 salt), the header protection is removed with AES-128-ECB over a
 * sample of the payload, the payload opened with AES-128-GCM; then the
 * frames an Initial may carry are read (PADDING, PING, ACK, CRYPTO; any
 * other, CONNECTION_CLOSE included, is NONE) and the CRYPTO data laid at
 * its offsets into a buffer of S5_SNIFF_HOLD_MAX, until the ClientHello
 * at its start is whole. libcrypto (OpenSSL 3) does the cryptography; the
 * parsing is ours, every length checked against the datagram. The
 * algorithms are fetched once per process: OpenSSL 3's implicit fetch at
 * each use made a parse about three times slower (test/bench/sniffbench:
 * about 5.5 us per Initial with a new sniffer). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/ossl.h" /* libcrypto, loaded on demand */
#include "sniff/sniff_int.h"

#define QUIC_V1 0x00000001u
#define QUIC_PAYLOAD_MAX S5_SNIFF_HOLD_MAX /* an Initial's payload, opened on the stack */

static const uint8_t v1_salt[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                    0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};

void s5_quic_sniff_init(struct s5_quic_sniff *q) { memset(q, 0, sizeof *q); }

void s5_quic_sniff_free(struct s5_quic_sniff *q) {
  free(q->crypto);
  free(q->seen);
  q->crypto = q->seen = NULL;
}

/* A variable-length integer (RFC 9000 16): its size, or 0 past end. */
static size_t varint(const uint8_t *p, size_t len, uint64_t *v) {
  if (len < 1) return 0;
  size_t n = (size_t)1 << (p[0] >> 6);
  if (len < n) return 0;
  uint64_t x = p[0] & 0x3f;
  for (size_t i = 1; i < n; i++) x = x << 8 | p[i];
  *v = x;
  return n;
}

static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static EVP_CIPHER *aes_gcm, *aes_ecb;
static EVP_MAC_CTX *hmac_sha256; /* a template: duplicated for each use */

static void fetch(void) {
  aes_gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
  aes_ecb = EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL);
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  if (mac == NULL) return;
  hmac_sha256 = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (hmac_sha256 != NULL && EVP_MAC_CTX_set_params(hmac_sha256, params) != 1) {
    EVP_MAC_CTX_free(hmac_sha256);
    hmac_sha256 = NULL;
  }
}

static int hmac(const uint8_t *key, size_t klen, const uint8_t *data, size_t dlen, uint8_t out[32]) {
  EVP_MAC_CTX *c = EVP_MAC_CTX_dup(hmac_sha256);
  size_t outl = 0;
  int ok = c != NULL && EVP_MAC_init(c, key, klen, NULL) == 1 && EVP_MAC_update(c, data, dlen) == 1 &&
           EVP_MAC_final(c, out, &outl, 32) == 1 && outl == 32;
  EVP_MAC_CTX_free(c);
  return ok;
}

/* HKDF-Expand-Label (RFC 8446 7.1) with an empty context, out <= 32. */
static int expand_label(const uint8_t secret[32], const char *label, uint8_t *out, size_t outlen) {
  uint8_t info[2 + 1 + 6 + 16 + 1 + 1], block[32];
  size_t ll = strlen(label), n = 0;
  info[n++] = 0, info[n++] = (uint8_t)outlen, info[n++] = (uint8_t)(6 + ll);
  memcpy(info + n, "tls13 ", 6), n += 6;
  memcpy(info + n, label, ll), n += ll;
  info[n++] = 0; /* context */
  info[n++] = 1; /* HKDF-Expand's first block: T(1) = HMAC(PRK, info | 0x01) */
  if (!hmac(secret, 32, info, n, block)) return 0;
  memcpy(out, block, outlen);
  return 1;
}

/* libcrypto loaded: by the main process when [sniff] quic came; here too
 * for a worker process forked before the reload that brought it, and for
 * the tests and fuzzers that call the parser alone. A failure is logged
 * once per process; the flows are then not sniffed (NONE). */
static int crypto_loaded(void) {
  static atomic_int said;
  char e[300];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) == 0) return 1;
  if (!atomic_exchange(&said, 1)) s5_error("[sniff] quic: %s: QUIC Initials are not read", e);
  return 0;
}

/* The client's Initial keys for a DCID (RFC 9001 5.2). */
static int initial_keys(struct s5_quic_sniff *q) {
  uint8_t initial[32], client[32];
  if (!crypto_loaded() || pthread_once(&fetch_once, fetch) != 0 || aes_gcm == NULL || aes_ecb == NULL ||
      hmac_sha256 == NULL)
    return 0;
  if (!hmac(v1_salt, sizeof v1_salt, q->dcid, q->dcid_len, initial)) return 0;
  return expand_label(initial, "client in", client, 32) && expand_label(client, "quic key", q->key, 16) &&
         expand_label(client, "quic iv", q->iv, 12) && expand_label(client, "quic hp", q->hp, 16);
}

static int hp_mask(const uint8_t hp[16], const uint8_t sample[16], uint8_t mask[16]) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int outl = 0, ok = c != NULL && EVP_EncryptInit_ex2(c, aes_ecb, hp, NULL, NULL) == 1 &&
                     EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
                     EVP_EncryptUpdate(c, mask, &outl, sample, 16) == 1 && outl == 16;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

/* The payload opened; the associated data is the header with its
 * protection removed: first byte, pkt[1..pn_off), the packet number. */
static int open_payload(const struct s5_quic_sniff *q, const uint8_t nonce[12], uint8_t first,
                        const uint8_t *pkt, size_t pn_off, const uint8_t *pn, size_t pn_len,
                        const uint8_t *ct, size_t ctlen, uint8_t *out) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int outl = 0, fin = 0;
  int ok = c != NULL && EVP_DecryptInit_ex2(c, aes_gcm, q->key, nonce, NULL) == 1 &&
           EVP_DecryptUpdate(c, NULL, &outl, &first, 1) == 1 &&
           EVP_DecryptUpdate(c, NULL, &outl, pkt + 1, (int)pn_off - 1) == 1 &&
           EVP_DecryptUpdate(c, NULL, &outl, pn, (int)pn_len) == 1 &&
           EVP_DecryptUpdate(c, out, &outl, ct, (int)ctlen) == 1 &&
           EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, (void *)(ct + ctlen)) == 1 &&
           EVP_DecryptFinal_ex(c, out + outl, &fin) == 1;
  EVP_CIPHER_CTX_free(c);
  return ok;
}

/* CRYPTO data at off: laid into the buffer, its bytes marked. */
static int crypto_data(struct s5_quic_sniff *q, uint64_t off, const uint8_t *data, size_t len) {
  if (off > S5_SNIFF_HOLD_MAX || len > S5_SNIFF_HOLD_MAX - off) return 0;
  memcpy(q->crypto + off, data, len);
  for (size_t i = (size_t)off; i < off + len; i++) q->seen[i / 8] |= (uint8_t)(1u << (i % 8));
  while (q->have < S5_SNIFF_HOLD_MAX && (q->seen[q->have / 8] >> (q->have % 8) & 1)) q->have++;
  return 1;
}

/* An opened Initial's frames: 1 read, 0 a frame that is not allowed or
 * malformed. */
static int frames(struct s5_quic_sniff *q, const uint8_t *p, size_t len) {
  size_t at = 0, n;
  uint64_t type, v, off, flen, count;
  while (at < len) {
    if ((n = varint(p + at, len - at, &type)) == 0) return 0;
    at += n;
    switch (type) {
      case 0x00: /* PADDING, often hundreds of bytes */
        while (at < len && p[at] == 0) at++;
        break;
      case 0x01: /* PING */ break;
      case 0x02:                      /* ACK */
      case 0x03:                      /* ACK with ECN counts */
        for (int i = 0; i < 3; i++) { /* largest, delay, range count */
          if ((n = varint(p + at, len - at, &count)) == 0) return 0;
          at += n;
        }
        /* count ranges after the first: a gap and a length each. */
        if (count > len) return 0;
        for (uint64_t i = 0; i < 1 + 2 * count + (type == 0x03 ? 3 : 0); i++) {
          if ((n = varint(p + at, len - at, &v)) == 0) return 0;
          at += n;
        }
        break;
      case 0x06: /* CRYPTO */
        if ((n = varint(p + at, len - at, &off)) == 0) return 0;
        at += n;
        if ((n = varint(p + at, len - at, &flen)) == 0) return 0;
        at += n;
        if (flen > len - at || !crypto_data(q, off, p + at, (size_t)flen)) return 0;
        at += (size_t)flen;
        break;
      default: return 0;
    }
  }
  return 1;
}

/* One packet at the start of pkt: its length in *used; 1 an Initial of
 * this sniffer's DCID read, 0 not one (or one that does not open), -1 its
 * frames refused (or no memory for the buffer). */
static int initial(struct s5_quic_sniff *q, const uint8_t *pkt, size_t len, size_t *used) {
  uint8_t plain[QUIC_PAYLOAD_MAX], mask[16], nonce[12], pnb[4];
  uint64_t tlen, plen;
  size_t at, n;

  /* Long header, fixed bit, type Initial; version 1. */
  if (len < 7 || (pkt[0] & 0xf0) != 0xc0) return 0;
  if (((uint32_t)pkt[1] << 24 | (uint32_t)pkt[2] << 16 | (uint32_t)pkt[3] << 8 | pkt[4]) != QUIC_V1) return 0;
  size_t dlen = pkt[5];
  if (dlen == 0 || dlen > 20 || len < 6 + dlen + 1) return 0;
  const uint8_t *dcid = pkt + 6;
  at = 6 + dlen;
  size_t slen = pkt[at++];
  if (slen > 20 || len - at < slen) return 0;
  at += slen;
  if ((n = varint(pkt + at, len - at, &tlen)) == 0 || tlen > len - at - n) return 0;
  at += n + (size_t)tlen;
  if ((n = varint(pkt + at, len - at, &plen)) == 0 || plen > len - at - n) return 0;
  at += n;
  size_t pn_off = at, end = at + (size_t)plen;
  /* The sample is 16 bytes from pn_off + 4; the tag 16 at the end. */
  if (plen < 4 + 16 || plen - 4 > QUIC_PAYLOAD_MAX + 16) return 0;

  if (q->dcid_len == 0) {
    memcpy(q->dcid, dcid, dlen);
    q->dcid_len = (uint8_t)dlen;
    if (!initial_keys(q)) return 0;
  } else if (q->dcid_len != dlen || memcmp(q->dcid, dcid, dlen) != 0) {
    return 0;
  }
  if (!hp_mask(q->hp, pkt + pn_off + 4, mask)) return 0;
  uint8_t first = (uint8_t)(pkt[0] ^ (mask[0] & 0x0f));
  size_t pn_len = (first & 3) + 1;
  uint64_t pn = 0;
  for (size_t i = 0; i < pn_len; i++) {
    pnb[i] = pkt[pn_off + i] ^ mask[1 + i];
    pn = pn << 8 | pnb[i];
  }
  memcpy(nonce, q->iv, 12);
  for (size_t i = 0; i < 8; i++) nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
  size_t ct_off = pn_off + pn_len, ctlen = end - ct_off - 16;
  if (ctlen > QUIC_PAYLOAD_MAX) return 0;
  if (!open_payload(q, nonce, first, pkt, pn_off, pnb, pn_len, pkt + ct_off, ctlen, plain)) return 0;
  *used = end;
  if (q->crypto == NULL) {
    q->crypto = malloc(S5_SNIFF_HOLD_MAX);
    q->seen = calloc(S5_SNIFF_HOLD_MAX / 8, 1);
    if (q->crypto == NULL || q->seen == NULL) return -1;
  }
  return frames(q, plain, ctlen) ? 1 : -1;
}

enum s5_sniff s5_quic_sniff_feed(struct s5_quic_sniff *q, const uint8_t *pkt, size_t len,
                                 char name[S5_SNIFF_NAME_MAX + 1]) {
  size_t used = 0;
  if (initial(q, pkt, len, &used) != 1) return S5_SNIFF_NONE;
  /* Coalesced packets (RFC 9000 12.2): more Initials of the DCID are read;
   * a packet of another type, another DCID or one that does not open is
   * ignored with the rest of the datagram (12.2: receivers SHOULD ignore
   * packets of another DCID after the first), a refused frame is NONE. */
  for (size_t at = used; at < len; at += used) {
    if ((pkt[at] & 0xf0) != 0xc0) break;
    int r = initial(q, pkt + at, len - at, &used);
    if (r == 0) break;
    if (r < 0) return S5_SNIFF_NONE;
  }
  if (q->have < 4) return S5_SNIFF_MORE;
  if (q->crypto[0] != 1) return S5_SNIFF_NONE; /* not a ClientHello */
  size_t need = 4 + ((size_t)q->crypto[1] << 16 | (size_t)q->crypto[2] << 8 | q->crypto[3]);
  if (need > S5_SNIFF_HOLD_MAX) return S5_SNIFF_NONE;
  if (q->have < need) return S5_SNIFF_MORE;
  return s5_sniff_client_hello(q->crypto + 4, need - 4, name);
}
