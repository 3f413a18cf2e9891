/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 UDP (SIP022 section 3.2, 4.1) and identity headers
 * (SIP023, EIH), without I/O.
 *
 * The key chain: the password is the PSK in base64, or for a multi-user
 * server with identity headers `iPSK:...:uPSK` (the aes methods only):
 * the server's identity keys, then the user's. The user's key alone
 * derives the session subkeys; each identity key hides the next key's
 * BLAKE3 hash (its first 16 bytes).
 *
 * aes methods, a packet is [separate header: session id (8), packet id
 * (u64be), AES-ECB with the first key][identity headers, 16 each][AEAD
 * body with subkey BLAKE3 derive_key("shadowsocks 2022 session subkey",
 * uPSK || session id), nonce separate header[4..16]][tag].
 * 2022-blake3-chacha20-poly1305, [random 24-byte nonce][XChaCha20-Poly1305
 * with the PSK: session id, packet id, then the body][tag].
 * The body: the main header (type 0 client / 1 server, timestamp u64be,
 * the server's also the client's session id, padding length u16be,
 * padding), then the SOCKS address (ATYP, address, port) and the payload.
 *
 * Server packets are checked: tag, type, timestamp within 30 s, our session
 * id, and each server session's sliding window of packet ids (duplicates
 * and ids more than S5_SS2022_WINDOW behind the newest refused). Two server
 * sessions are kept, the current and the one before; a third is taken
 * only when the older one has been quiet for 60 s. */
#ifndef S5_CORE_SOCKS5_SS2022_UDP_H
#define S5_CORE_SOCKS5_SS2022_UDP_H

#include <stddef.h>
#include <stdint.h>

#include "socks5/ss2022.h"

#define S5_SS2022_KEYS_MAX 4  /* keys in a chain: up to three identity keys, then the user's */
#define S5_SS2022_WINDOW 1024 /* packet ids remembered behind the newest */
#define S5_SS2022_XNONCE 24

/* A chain's keys (k[n - 1] the user's), and each next key's hash for the identity headers. */
struct s5_ss2022_keys {
  enum s5_ss_method method;
  size_t n;
  uint8_t k[S5_SS2022_KEYS_MAX][S5_SS_KEY_MAX];
  uint8_t next_hash[S5_SS2022_KEYS_MAX][16]; /* BLAKE3(k[i + 1])[0..16], i < n - 1 */
};

/* The chain from the password: 0, or -1 (a part not base64 of the key's
 * length, too many parts, or identity keys with chacha20). */
int s5_ss2022_keys(enum s5_ss_method m, const char *password, struct s5_ss2022_keys *k);
void s5_ss2022_keys_clear(struct s5_ss2022_keys *k);

/* TCP identity headers: (n - 1) * 16 bytes after the salt into out. 0 or -1. */
int s5_ss2022_eih_tcp(const struct s5_ss2022_keys *k, const uint8_t *salt, uint8_t *out);

/* HChaCha20 (draft-irtf-cfrg-xchacha section 2.2): key[32], nonce[16] -> out[32]. */
void s5_hchacha20(const uint8_t *key, const uint8_t *nonce, uint8_t *out);

/* XChaCha20-Poly1305 with OpenSSL's ChaCha20-Poly1305 (ctx: an
 * EVP_CIPHER_CTX set up for it once, EVP_CipherInit_ex with
 * EVP_chacha20_poly1305() and no key; each call keys it): in[len] to out (out may be in), the tag
 * after it (seal) or checked (open; len counts the text without the tag).
 * 0, or -1 (a bad tag, OpenSSL failed). */
int s5_xchacha_seal(void *ctx, const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                    const uint8_t *in, size_t len, uint8_t *out);
int s5_xchacha_open(void *ctx, const uint8_t *key, const uint8_t *nonce, const uint8_t *ad, size_t adlen,
                    const uint8_t *in, size_t len, uint8_t *out);

/* A server session's packet ids seen: the newest and a bitmap behind it. */
struct s5_ss2022_window {
  uint64_t top; /* the newest id + 1; 0: none yet */
  uint64_t bits[S5_SS2022_WINDOW / 64];
};
/* S5_SS_OK when id is new and within the window, else S5_SS2022_REPLAY. */
int s5_ss2022_window_check(const struct s5_ss2022_window *w, uint64_t id);
/* Remembers id (checked, and its packet opened). */
void s5_ss2022_window_mark(struct s5_ss2022_window *w, uint64_t id);

/* One association's client session. */
struct s5_ss2022_udp {
  struct s5_ss2022_keys keys;
  void *ecb[S5_SS2022_KEYS_MAX]; /* EVP_CIPHER_CTX, AES-ECB encrypting with keys.k[i] (aes methods) */
  void *ecb_dec;                 /* AES-ECB decrypting with the user's key: server packets */
  void *aead;                    /* our session's (aes: GCM with its subkey; chacha: re-keyed per packet) */
  void *spare;                   /* aes: a new server session's, until it proves itself */
  uint8_t sid[8];
  uint64_t pid; /* the next packet id */
  struct s5_ss2022_srv {
    int on;
    uint8_t sid[8];
    uint64_t last; /* Unix seconds of its last packet */
    void *aead;    /* aes: GCM with its subkey */
    struct s5_ss2022_window w;
  } srv[2]; /* [0] current, [1] the one before */
};

/* Statuses beyond ss2022.h's: */
#define S5_SS2022_WRONG_SESSION (-14) /* a server packet for another client session */
#define S5_SS2022_TOO_MANY (-15)      /* a third server session while two are live */

/* A new session: session id sid[8] (NULL: random), packet ids from 0. 0, or -1. */
int s5_ss2022_udp_init(struct s5_ss2022_udp *u, enum s5_ss_method m, const char *password,
                       const uint8_t *sid);
void s5_ss2022_udp_free(struct s5_ss2022_udp *u);

/* Bytes before the address in a sealed client packet: the caller puts
 * the address and payload at pkt + s5_ss2022_udp_head(u). */
size_t s5_ss2022_udp_head(const struct s5_ss2022_udp *u);
/* Bytes the seal adds after the text (the tag). */
#define S5_SS2022_UDP_TAIL S5_SS_TAG

/* Seals pkt[head .. head + len) (address, payload) in place with the
 * headers before it and the tag after it; now: Unix seconds. The packet's
 * length, or S5_SS_FAILED. */
long s5_ss2022_udp_seal(struct s5_ss2022_udp *u, uint64_t now, uint8_t *pkt, size_t len);

/* The same as a server (the tests' and the fuzzer's): u made with the
 * user's key alone, its session id the server's; the main header names
 * client_sid, and the text starts at pkt + s5_ss2022_udp_head(u) + 8. */
long s5_ss2022_udp_seal_as(struct s5_ss2022_udp *u, const uint8_t *client_sid, uint64_t now, uint8_t *pkt,
                           size_t len);

/* Opens a server packet pkt[len] in place: the length of the address and
 * payload, which start at pkt + *off; or S5_SS_SHORT, S5_SS_BAD_TAG,
 * S5_SS2022_WRONG_TYPE, S5_SS2022_CLOCK_SKEW, S5_SS2022_WRONG_SESSION,
 * S5_SS2022_REPLAY, S5_SS2022_TOO_MANY, S5_SS_FAILED. */
long s5_ss2022_udp_open(struct s5_ss2022_udp *u, uint64_t now, uint8_t *pkt, size_t len, size_t *off);

/* A status's text (these, ss2022.h's, ss_aead.h's), for the log. */
const char *s5_ss2022_udp_status_text(int status);

#endif
