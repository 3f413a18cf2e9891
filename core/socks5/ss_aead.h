/* SPDX-License-Identifier: MIT */
/* Shadowsocks AEAD framing (SIP004, "AEAD ciphers" of the 2017 spec),
 * without I/O: the key from the password (OpenSSL's EVP_BytesToKey with
 * MD5, no salt, one round), each direction's subkey HKDF-SHA1(key, salt,
 * "ss-subkey"), chunks [length (2 bytes, big-endian) + tag][payload +
 * tag] with length <= 0x3FFF, the 12-byte nonce a little-endian counter
 * incremented after every seal or open. A stream starts with its salt.
 * AEAD by OpenSSL's EVP (libcrypto). */
#ifndef S5_CORE_SOCKS5_SS_AEAD_H
#define S5_CORE_SOCKS5_SS_AEAD_H

#include <stddef.h>
#include <stdint.h>

#include "ini/config.h"

#define S5_SS_TAG 16
#define S5_SS_KEY_MAX 32
#define S5_SS_PAYLOAD_MAX 0x3FFF /* the most a chunk may carry */
/* The most ours carry: 16,256 bytes, a multiple of 128, which OpenSSL's
 * AES-GCM and ChaCha20-Poly1305 seal at full speed; 0x3FFF's odd tail
 * cost them about 30 % more CPU per byte. */
#define S5_SS_SEAL_MAX 0x3F80
#define S5_SS_CHUNK_MAX (2 + S5_SS_TAG + S5_SS_PAYLOAD_MAX + S5_SS_TAG)
/* A stream's input room: the salt and three chunks whole. A read takes
 * what opens into the pump's 32 KB whole (two chunks, after the part of
 * one held): at most S5_SS_DEC_READ bytes; what is held moves to the
 * front when less than that is left behind it. */
#define S5_SS_DEC_IN (S5_SS_KEY_MAX + 3 * S5_SS_CHUNK_MAX)
#define S5_SS_DEC_READ (32768 + S5_SS_TAG + 3 * (2 + 2 * S5_SS_TAG))

/* Key (and salt) length of the method: 16 for aes-128-gcm (2017 or 2022), else 32. */
size_t s5_ss_key_len(enum s5_ss_method m);

/* The master key from the password (key: s5_ss_key_len bytes). 0 or -1. */
int s5_ss_password_key(enum s5_ss_method m, const char *password, uint8_t *key);

/* The same, or 2022's PSK (base64 of the key), remembered by this thread
 * for the next connection to the same upstream: derived once, not per
 * connection. 0 or -1. */
int s5_ss_master_key(enum s5_ss_method m, const char *password, uint8_t *key);

/* This thread's OpenSSL objects (the ciphers fetched once, one HMAC-SHA1
 * context re-keyed for each subkey) and remembered keys freed and
 * cleared; made again at the next use. The worker calls it at its end. */
void s5_ss_end(void);

/* One direction's AEAD: the subkey's cipher and the nonce counter. */
struct s5_ss_aead {
  void *ctx; /* EVP_CIPHER_CTX */
  uint8_t nonce[12];
};

/* From the master key and that direction's salt; 0 or -1 (out of memory, OpenSSL refused). */
int s5_ss_aead_init(struct s5_ss_aead *a, enum s5_ss_method m, const uint8_t *key, const uint8_t *salt);
/* From the subkey itself (2022's, ss2022.c); the subkey is cleared. 0 or -1. */
int s5_ss_aead_subkey(struct s5_ss_aead *a, enum s5_ss_method m, uint8_t *sub);
void s5_ss_aead_free(struct s5_ss_aead *a);

/* One AEAD operation: in[len] into out[len + S5_SS_TAG] (seal) or
 * in[len + S5_SS_TAG] into out[len] (open, -1 for a bad tag); the nonce
 * counts it. out may be in. 0 or -1. */
int s5_ss_seal(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out);
int s5_ss_open(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out);

/* Bytes s5_ss_encode writes for len bytes (salt excluded). */
size_t s5_ss_sealed_len(size_t len);

/* The up direction: len > 0 plain bytes as chunks into out (room:
 * s5_ss_sealed_len(len)). Returns the bytes written, or -1. */
long s5_ss_encode(struct s5_ss_aead *a, const uint8_t *in, size_t len, uint8_t *out);

/* The down direction: the salt, then chunks. The caller puts the bytes
 * read at in + in_len (room: sizeof in - in_len, never 0 while the
 * decoder waits for more) and adds to in_len; in[in_off..in_len) is not
 * opened yet (moved to the front only when its chunk would not fit). */
struct s5_ss_dec {
  enum s5_ss_method method;
  uint8_t key[S5_SS_KEY_MAX];
  int salted; /* the salt has come: aead is set */
  int plen;   /* a length opened whose payload has not come whole, else -1 */
  struct s5_ss_aead aead;
  size_t in_off, in_len;
  uint8_t in[S5_SS_DEC_IN];
};

enum s5_ss_status {
  S5_SS_OK = 0,
  S5_SS_BAD_TAG = -1,  /* a tag did not verify: a wrong password or method, or tampering */
  S5_SS_OVERSIZE = -2, /* a length beyond 0x3FFF */
  S5_SS_FAILED = -3,   /* OpenSSL failed (out of memory) */
  S5_SS_SHORT = -4,    /* a UDP packet shorter than its salt and tag */
};

void s5_ss_dec_init(struct s5_ss_dec *d, enum s5_ss_method m, const uint8_t *key);
void s5_ss_dec_free(struct s5_ss_dec *d);

/* Opens the whole chunks in[] holds into out while their payload fits in
 * cap: *n bytes written (0: more input needed, or no room for the next
 * chunk when *n == 0 and cap < its length: cap >= S5_SS_PAYLOAD_MAX always
 * suffices). S5_SS_OK or a failure (the stream is over). */
int s5_ss_decode(struct s5_ss_dec *d, uint8_t *out, size_t cap, size_t *n);

/* 1 when in[] holds part of a chunk or of the salt: an end here truncates. */
int s5_ss_dec_partial(const struct s5_ss_dec *d);

/* How many bytes a read may add so that every chunk whole in in[] then
 * opens into cap bytes (nothing is left for a read that might not come):
 * 0 when none. */
size_t s5_ss_dec_room(const struct s5_ss_dec *d, size_t cap);

/* UDP (2017): each packet [salt][AEAD seal of the target address (ATYP,
 * address, port) and payload][tag], with the subkey from that packet's
 * salt and an all-zero nonce; the same form both ways. One per
 * association: the master key and one cipher context, re-keyed for every
 * packet (no allocation per packet; the HMAC context is the thread's). A
 * packet is at most S5_SS_UDP_MAX bytes (what one IPv4 UDP datagram
 * carries). */
#define S5_SS_UDP_MAX 65507
struct s5_ss_udp {
  enum s5_ss_method method;
  void *ctx; /* EVP_CIPHER_CTX */
  uint8_t key[S5_SS_KEY_MAX];
};

/* 0, or -1 (out of memory, OpenSSL refused). */
int s5_ss_udp_init(struct s5_ss_udp *u, enum s5_ss_method m, const char *password);
/* Frees the context and clears the key (a zeroed one: nothing). */
void s5_ss_udp_free(struct s5_ss_udp *u);

/* Seals in place: pkt[salt length..+len) holds the plain text (address and
 * payload); pkt[0..salt length) gets salt (random when NULL), the tag
 * follows the text (room: salt length + len + S5_SS_TAG). Returns the
 * packet's length, or S5_SS_FAILED. */
long s5_ss_udp_seal(struct s5_ss_udp *u, const uint8_t *salt, uint8_t *pkt, size_t len);

/* Opens pkt[len] in place: its plain text at pkt + salt length. Returns
 * the text's length, or S5_SS_SHORT, S5_SS_BAD_TAG, S5_SS_FAILED. */
long s5_ss_udp_open(struct s5_ss_udp *u, uint8_t *pkt, size_t len);

/* Text of a status, for the log. */
const char *s5_ss_status_text(int status);

#endif
