/* SPDX-License-Identifier: MIT */
/* Shadowsocks AEAD framing (core/socks5/ss_aead.c): known answers for the
 * three methods, derived independently with python3-cryptography by
 * ss/vectors.py (its output is the table below); the down stream's
 * decoder on every split of a stream, and on streams cut short, with a
 * length over 0x3FFF, with a bad tag, under a wrong password; the
 * target a Shadowsocks upstream's stream starts with; UDP packets (known
 * answers, bad tags, short packets). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdlib.h>

#include "check.h"
#define S5_OSSL_TABLE_ONLY /* the loader only: this file calls OpenSSL itself */
#include "base/ossl.h"
#include "socks5/ss_aead.h"
#include "socks5/upstream.h"

#define PASSWORD "known-answer password"
#define PLAIN_LEN 20000 /* two chunks: 16256 + 3744 */

static const struct {
  const char *method, *key;
  size_t len;
  const char *head, *sha256; /* the first 18 bytes after the salt: the first length's seal */
} vectors[] = {
  /* python3 test/unit/ss/vectors.py */
  {"chacha20-ietf-poly1305", "47957ea16b4d1663fc5da111a52c70f8da4808563a4a7390863ff8c7739a48ef", 20100,
   "1b6c96a96718289dd6cdf690b9e3c521b7b9",
   "27e8b91d33a70e60243725ec64036d9f0373843d212baf67e5d1b2273c89201f"},
  {"aes-128-gcm", "47957ea16b4d1663fc5da111a52c70f8", 20084, "8df1aa8e00d1a9cb4dd7aa5c72e11e6f0834",
   "e94532ade7c205880d6f1e1497d16f705feec2575688a5c2cfd5fbd245ba0a95"},
  {"aes-256-gcm", "47957ea16b4d1663fc5da111a52c70f8da4808563a4a7390863ff8c7739a48ef", 20100,
   "2030442796663e97a2152151014953529421",
   "843e73cbc700e3269a1688b965f908a28bd952d7e580a582a038a4124ee72f4d"},
};
static const enum s5_ss_method methods[] = {S5_SS_CHACHA20_POLY1305, S5_SS_AES_128_GCM, S5_SS_AES_256_GCM};

static uint8_t plain[PLAIN_LEN];

static void hex(const uint8_t *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* The stream as the client sends it: salt 00 01 02 .., then the chunks. */
static size_t stream(enum s5_ss_method m, const char *password, uint8_t *out) {
  uint8_t key[S5_SS_KEY_MAX];
  size_t klen = s5_ss_key_len(m);
  struct s5_ss_aead a;
  for (size_t i = 0; i < klen; i++) out[i] = (uint8_t)i;
  CHECK(s5_ss_password_key(m, password, key) == 0 && s5_ss_aead_init(&a, m, key, out) == 0, "key, cipher");
  long n = s5_ss_encode(&a, plain, sizeof plain, out + klen);
  s5_ss_aead_free(&a);
  CHECK(n == (long)s5_ss_sealed_len(sizeof plain), "sealed %ld bytes", n);
  return klen + (size_t)(n > 0 ? n : 0);
}

/* The decoder fed s[len] step bytes at a time: 0 and the bytes opened, or the first failure. */
static int decode(enum s5_ss_method m, const char *password, const uint8_t *s, size_t len, size_t step,
                  uint8_t *out, size_t *got, int *partial) {
  static struct s5_ss_dec d;
  uint8_t key[S5_SS_KEY_MAX];
  s5_ss_password_key(m, password, key);
  s5_ss_dec_init(&d, m, key);
  int st = S5_SS_OK;
  *got = 0;
  for (size_t off = 0; off < len && st == S5_SS_OK;) {
    size_t take = len - off < step ? len - off : step;
    if (take > sizeof d.in - d.in_len) take = sizeof d.in - d.in_len;
    memcpy(d.in + d.in_len, s + off, take);
    d.in_len += take, off += take;
    size_t n;
    do {
      st = s5_ss_decode(&d, out + *got, S5_SS_PAYLOAD_MAX, &n);
      *got += n;
    } while (st == S5_SS_OK && n > 0);
  }
  *partial = s5_ss_dec_partial(&d);
  s5_ss_dec_free(&d);
  return st;
}

static void test_vectors(void) {
  static uint8_t s[PLAIN_LEN + 200], back[PLAIN_LEN + S5_SS_PAYLOAD_MAX];
  for (size_t v = 0; v < 3; v++) {
    enum s5_ss_method m = methods[v];
    uint8_t key[S5_SS_KEY_MAX], md[32];
    char k[2 * S5_SS_KEY_MAX + 1], h[37], d[65];
    size_t klen = s5_ss_key_len(m);
    CHECK(s5_ss_password_key(m, PASSWORD, key) == 0, "%s: key", vectors[v].method);
    hex(key, klen, k);
    CHECK(strcmp(k, vectors[v].key) == 0, "%s: key %s, want %s", vectors[v].method, k, vectors[v].key);
    size_t len = stream(m, PASSWORD, s);
    unsigned mdlen = 0;
    EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL);
    hex(s + klen, 18, h);
    hex(md, 32, d);
    CHECK(len == vectors[v].len && strcmp(h, vectors[v].head) == 0 && strcmp(d, vectors[v].sha256) == 0,
          "%s: %zu bytes, head %s, sha256 %s; want %zu, %s, %s", vectors[v].method, len, h, d, vectors[v].len,
          vectors[v].head, vectors[v].sha256);

    size_t steps[] = {1, 7, 18, 19, 4096, (S5_SS_SEAL_MAX + 34), sizeof s};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
      size_t got;
      int partial, st = decode(m, PASSWORD, s, len, steps[i], back, &got, &partial);
      CHECK(st == S5_SS_OK && got == PLAIN_LEN && !partial && memcmp(back, plain, PLAIN_LEN) == 0,
            "%s: decoded in steps of %zu: status %d, %zu bytes, partial %d", vectors[v].method, steps[i], st,
            got, partial);
    }
    /* Cut anywhere inside the salt or a chunk: partial, and only whole chunks out. */
    size_t cuts[] = {
      1, klen - 1, klen + 1, klen + 17, klen + 18, klen + 18 + 100, len - (S5_SS_SEAL_MAX + 34) + 1, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
      size_t got;
      int partial, st = decode(m, PASSWORD, s, cuts[i], 1000, back, &got, &partial);
      CHECK(st == S5_SS_OK && partial && (got == 0 || got == S5_SS_SEAL_MAX) && memcmp(back, plain, got) == 0,
            "%s: cut at %zu: status %d, %zu bytes, partial %d", vectors[v].method, cuts[i], st, got, partial);
    }
    /* A flipped bit in the first length's tag, in the first payload, in the second chunk's length. */
    size_t flips[] = {klen + 3, klen + 18 + 5, klen + 18 + S5_SS_SEAL_MAX + 16 + 1};
    for (size_t i = 0; i < 3; i++) {
      size_t got;
      int partial;
      s[flips[i]] ^= 0x10;
      int st = decode(m, PASSWORD, s, len, 777, back, &got, &partial);
      s[flips[i]] ^= 0x10;
      CHECK(st == S5_SS_BAD_TAG && got == (i < 2 ? 0 : S5_SS_SEAL_MAX),
            "%s: bit flipped at %zu: status %d, %zu bytes", vectors[v].method, flips[i], st, got);
    }
    size_t got;
    int partial, st = decode(m, "another password", s, len, 4096, back, &got, &partial);
    CHECK(st == S5_SS_BAD_TAG && got == 0, "%s: a wrong password: status %d (%s)", vectors[v].method, st,
          s5_ss_status_text(st));
  }
}

/* The pump's reads (core/socks5/ss.c): each takes s5_ss_dec_room(cap)
 * bytes from the socket, then opens what came into the pump's 32 KB. A
 * read takes two chunks (up to 32766 bytes out): half the reads of one
 * chunk each; and none leaves a chunk whole behind it (the pump reads
 * again only when the socket is readable: a chunk left whole would wait
 * for bytes that may never come). */
static void test_reads(void) {
  enum { CAP = 32768, PLAIN = 6 * S5_SS_PAYLOAD_MAX + 100 };
  static uint8_t s[S5_SS_KEY_MAX + PLAIN + 7 * 34], p[PLAIN], out[PLAIN + CAP], tmp[CAP];
  static struct s5_ss_dec d;
  enum s5_ss_method m = S5_SS_AES_128_GCM;
  size_t klen = s5_ss_key_len(m), len = klen, fed = 0, got = 0, reads = 0, turns = 0;
  uint8_t key[S5_SS_KEY_MAX];
  struct s5_ss_aead a;
  for (size_t i = 0; i < PLAIN; i++) p[i] = (uint8_t)(i * 11 + 5);
  for (size_t i = 0; i < klen; i++) s[i] = (uint8_t)(i + 1);
  CHECK(s5_ss_password_key(m, PASSWORD, key) == 0 && s5_ss_aead_init(&a, m, key, s) == 0, "key, cipher");
  long w = s5_ss_encode(&a, p, PLAIN, s + klen);
  s5_ss_aead_free(&a);
  len += (size_t)(w > 0 ? w : 0);
  s5_ss_dec_init(&d, m, key);
  int st = S5_SS_OK;
  while (got < PLAIN && st == S5_SS_OK && turns++ < 100) {
    size_t n = 0, room = s5_ss_dec_room(&d, CAP), take = len - fed < room ? len - fed : room;
    CHECK(room > 0, "no room for a read with %zu bytes held", d.in_len - d.in_off);
    memcpy(d.in + d.in_len, s + fed, take);
    d.in_len += take, fed += take, reads++;
    st = s5_ss_decode(&d, out + got, CAP, &n);
    got += n;
    size_t left = 0;
    if (st == S5_SS_OK) st = s5_ss_decode(&d, tmp, CAP, &left);
    CHECK(left == 0, "read %zu: %zu bytes left whole for a read that may not come", reads, left);
  }
  CHECK(st == S5_SS_OK && got == PLAIN && memcmp(out, p, PLAIN) == 0 && !s5_ss_dec_partial(&d),
        "status %d, %zu of %d bytes", st, got, PLAIN);
  CHECK(reads <= (len + CAP - 1) / CAP, "%zu bytes in %zu reads: one chunk a read, not two", len, reads);
  s5_ss_dec_free(&d);
}

/* The master key remembered per thread: the same as derived each time, per method and password; 2022's is its PSK. */
static void test_master_key(void) {
  for (int round = 0; round < 2; round++) {
    for (size_t v = 0; v < 3; v++) {
      uint8_t k1[S5_SS_KEY_MAX], k2[S5_SS_KEY_MAX], k3[S5_SS_KEY_MAX];
      size_t klen = s5_ss_key_len(methods[v]);
      CHECK(s5_ss_master_key(methods[v], PASSWORD, k1) == 0 &&
              s5_ss_master_key(methods[v], PASSWORD, k2) == 0 &&
              s5_ss_password_key(methods[v], PASSWORD, k3) == 0,
            "%s: keys", vectors[v].method);
      CHECK(memcmp(k1, k3, klen) == 0 && memcmp(k2, k3, klen) == 0, "%s: the remembered key differs",
            vectors[v].method);
      CHECK(s5_ss_master_key(methods[v], "another password", k1) == 0 && memcmp(k1, k3, klen) != 0,
            "%s: another password, the same key", vectors[v].method);
    }
    uint8_t psk[16];
    CHECK(s5_ss_master_key(S5_SS_2022_AES_128_GCM, "AAECAwQFBgcICQoLDA0ODw==", psk) == 0 && psk[0] == 0 &&
            psk[15] == 15,
          "2022: the PSK");
    CHECK(s5_ss_master_key(S5_SS_2022_AES_128_GCM, "not base64", psk) != 0, "2022: a bad PSK taken");
    s5_ss_end(); /* forgotten: the second round derives them again */
  }
}

/* A length of 0x4000, sealed right: refused before any payload is awaited. */
static void test_oversize(void) {
  enum s5_ss_method m = S5_SS_AES_256_GCM;
  uint8_t key[S5_SS_KEY_MAX], s[32 + 18], back[16];
  struct s5_ss_aead a;
  for (size_t i = 0; i < 32; i++) s[i] = (uint8_t)(0xa0 + i);
  s5_ss_password_key(m, PASSWORD, key);
  CHECK(s5_ss_aead_init(&a, m, key, s) == 0, "cipher");
  uint8_t l[2] = {0x40, 0x00};
  CHECK(s5_ss_seal(&a, l, 2, s + 32) == 0, "seal");
  s5_ss_aead_free(&a);
  size_t got;
  int partial, st = decode(m, PASSWORD, s, sizeof s, sizeof s, back, &got, &partial);
  CHECK(st == S5_SS_OVERSIZE && got == 0, "length 0x4000: status %d", st);
  l[0] = 0x3f, l[1] = 0xff; /* the largest allowed: awaits its payload */
  s5_ss_aead_init(&a, m, key, s);
  s5_ss_seal(&a, l, 2, s + 32);
  s5_ss_aead_free(&a);
  st = decode(m, PASSWORD, s, sizeof s, sizeof s, back, &got, &partial);
  CHECK(st == S5_SS_OK && got == 0 && partial, "length 0x3FFF: status %d, partial %d", st, partial);
}

/* UDP: one packet per datagram, salt a0 a1 .., target 192.0.2.7:53 and
 * 100 bytes (python3 test/unit/ss/vectors.py, its UDP rows); opened back;
 * a flipped bit anywhere, a wrong password and a packet shorter than its
 * salt and tag refused. */
static const struct {
  size_t len;
  const char *sha256;
} udp_vectors[] = {
  {155, "57feb66ce5065b7cbf0d06839f1be72f1e92a8994b7361ab5519a3ad25d91360"},
  {139, "bec62a3481b26d03812022ce9240f4fc0a3e22c3766b8e72ca3a1b9cc5f78208"},
  {155, "7ca890b5f9ba8624c6f3533f5c02874b9a9fc89a334a90a9202e5045622f304d"},
};

static void test_udp(void) {
  static const uint8_t target[7] = {1, 192, 0, 2, 7, 0, 53};
  for (size_t v = 0; v < 3; v++) {
    enum s5_ss_method m = methods[v];
    struct s5_ss_udp u, other;
    uint8_t salt[S5_SS_KEY_MAX], pkt[256], md[32];
    char d[65];
    size_t sl = s5_ss_key_len(m), tl = sizeof target + 100;
    for (size_t i = 0; i < sl; i++) salt[i] = (uint8_t)(0xa0 + i);
    CHECK(s5_ss_udp_init(&u, m, PASSWORD) == 0 && s5_ss_udp_init(&other, m, "another password") == 0,
          "%s: UDP init", vectors[v].method);
    memcpy(pkt + sl, target, sizeof target);
    memcpy(pkt + sl + sizeof target, plain, 100);
    long n = s5_ss_udp_seal(&u, salt, pkt, tl);
    unsigned mdlen = 0;
    EVP_Digest(pkt, n > 0 ? (size_t)n : 0, md, &mdlen, EVP_sha256(), NULL);
    hex(md, 32, d);
    CHECK(n == (long)udp_vectors[v].len && strcmp(d, udp_vectors[v].sha256) == 0,
          "%s: UDP packet %ld bytes, sha256 %s; want %zu, %s", vectors[v].method, n, d, udp_vectors[v].len,
          udp_vectors[v].sha256);
    uint8_t copy[256];
    memcpy(copy, pkt, (size_t)n);
    long t = s5_ss_udp_open(&u, copy, (size_t)n);
    CHECK(t == (long)tl && memcmp(copy + sl, target, sizeof target) == 0 &&
            memcmp(copy + sl + sizeof target, plain, 100) == 0,
          "%s: UDP opened: %ld bytes", vectors[v].method, t);
    size_t flips[] = {0, sl - 1, sl, sl + 50, (size_t)n - 1};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
      memcpy(copy, pkt, (size_t)n);
      copy[flips[i]] ^= 0x01;
      t = s5_ss_udp_open(&u, copy, (size_t)n);
      CHECK(t == S5_SS_BAD_TAG, "%s: UDP bit flipped at %zu: %ld", vectors[v].method, flips[i], t);
    }
    memcpy(copy, pkt, (size_t)n);
    t = s5_ss_udp_open(&other, copy, (size_t)n);
    CHECK(t == S5_SS_BAD_TAG, "%s: UDP under a wrong password: %ld", vectors[v].method, t);
    CHECK(s5_ss_udp_open(&u, copy, sl + S5_SS_TAG - 1) == S5_SS_SHORT &&
            s5_ss_udp_open(&u, copy, 0) == S5_SS_SHORT,
          "%s: UDP packet shorter than salt and tag", vectors[v].method);
    /* Salt and tag alone: an empty text, which authenticates (the caller finds no address in it). */
    t = s5_ss_udp_seal(&u, NULL, pkt, 0);
    CHECK(t == (long)(sl + S5_SS_TAG) && s5_ss_udp_open(&u, pkt, (size_t)t) == 0, "%s: UDP empty: %ld",
          vectors[v].method, t);
    /* Random salts: two seals of one text differ, both open. */
    uint8_t a[64], b[64];
    memcpy(a + sl, target, sizeof target), memcpy(b + sl, target, sizeof target);
    long na = s5_ss_udp_seal(&u, NULL, a, sizeof target), nb = s5_ss_udp_seal(&u, NULL, b, sizeof target);
    CHECK(na == nb && memcmp(a, b, (size_t)na) != 0 && s5_ss_udp_open(&u, a, (size_t)na) == 7 &&
            s5_ss_udp_open(&u, b, (size_t)nb) == 7,
          "%s: UDP random salts", vectors[v].method);
    s5_ss_udp_free(&u);
    s5_ss_udp_free(&other);
  }
}

/* The stream's first bytes: SOCKS5's ATYP, address and port, nothing before. */
static void test_target(void) {
  struct s5_upstream_cfg up = {.type = S5_UPSTREAM_SHADOWSOCKS};
  struct s5_target t;
  memset(&t, 0, sizeof t);
  struct sockaddr_in *in = (struct sockaddr_in *)&t.addr;
  in->sin_family = AF_INET, in->sin_port = htons(443), in->sin_addr.s_addr = htonl(0x0a000001);
  uint8_t buf[S5_HTTP_REQUEST_MAX];
  const char *why;
  int n = s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why);
  CHECK(n == 7 && memcmp(buf, "\x01\x0a\x00\x00\x01\x01\xbb", 7) == 0, "IPv4 target: %d bytes", n);
  snprintf(t.name, sizeof t.name, "example.test");
  n = s5_upstream_write_connect(&up, &t, buf, sizeof buf, &why);
  CHECK(
    n == 1 + 1 + 12 + 2 && buf[0] == 3 && buf[1] == 12 && memcmp(buf + 2, "example.test\x01\xbb", 14) == 0,
    "a name: %d bytes", n);
}

int main(void) {
  char e[200];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) != 0) { /* as the daemon at start */
    fprintf(stderr, "%s\n", e);
    return 1;
  }
  for (size_t i = 0; i < sizeof plain; i++) plain[i] = (uint8_t)(i * 7 + 3);
  test_vectors();
  test_reads();
  test_master_key();
  test_oversize();
  test_target();
  test_udp();
  s5_ss_end();
  return check_done();
}
