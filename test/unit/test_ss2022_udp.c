/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 UDP and identity headers (core/socks5/ss2022_udp.c,
 * ss2022_keys.c): HChaCha20 and XChaCha20-Poly1305 against the vectors of
 * draft-irtf-cfrg-xchacha-03 (2.2.1, A.3.1); a public implementation's
 * session subkey vector; known answers derived
 * independently by ss/vectors2022_udp.py (python3-cryptography, b3sum,
 * the e2e server's own HChaCha20): client packets byte for byte (aes; a
 * chain of two and of three keys: identity headers), chacha20's body,
 * server packets opened, TCP identity headers; key chains accepted and
 * refused; the packet id window (in order, duplicate, out of order, too
 * old, a jump); server packets refused by cause: clock skew at 31 s (30 s
 * passes), another client session id, a client's type, a changed byte, a
 * short one, a duplicate id, a third server session while two are live;
 * a refused packet leaves the window untouched. */
#include <stdlib.h>

#include "check.h"
#include "base/ossl.h"
#include "socks5/ss2022_udp.h"
#include "socks5/upstream.h"

#define NOW 1700000000u

static const struct {
  const char *method, *password, *client, *server, *eih;
} vectors[] = {
  /* python3 test/unit/ss/vectors2022_udp.py */
  {"2022-blake3-aes-128-gcm", "BRIfLDlGU2BteoeUoa67yA==",
   "2e2245befdad6551d921fbf7fe910ce75a314ce1e5f4ed39f46e52fcfa39adc7abc26834e6cd67180963414569e03f9cbabac3198e2ab3",
   "51f41d6831f9e2c6600a1dd2399dc3bc2e5ca4326fa9b8926b2b6784686d2359f7788cc32654ff8c05b8a78bf9fe81f17be1cfb3c15cc3e80b0a6fda562f9b4a82d4",
   ""},
  {"2022-blake3-aes-256-gcm", "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=",
   "a5e262880d5fe2ca4cef89141ed758d8bfd5b3d681bca8555dc9971b19eb961ca2e2605425acb7a4c51b94a23b67733b0c7e3fed7113e7",
   "39b3b8ec2eae29a3b21a4c5e8da8a163549afed117a16a81cb612297976c04203416178c5c691889e0bc889e977aaf8a36ded0e02819ed26857870e3ad4919d9357f",
   ""},
  {"2022-blake3-chacha20-poly1305", "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=",
   "0001020304050607000000000000000500000000006553f1000000010a000001003568656c6c6f",
   "404142434445464748494a4b4c4d4e4f5051525354555657af3ee0ab31c7c51b0c4b541f129bd7b807dd6601ed4c5a8b3fa1f1d631c06063ceadeb1c948f8fac670da53d5fb70e8daba1b54e5b6bd493e81428efbe5bb1ed9813",
   ""},
  {"2022-blake3-aes-128-gcm", "BRIfLDlGU2BteoeUoa67yA==:AAECAwQFBgcICQoLDA0ODw==:EBESExQVFhcYGRobHB0eHw==",
   "2e2245befdad6551d921fbf7fe910ce7328b3995c7a38d5c84ff88ae4260f058513f649337f3fea4e405168a6541b24e3fc8fcfa067d676a24947d2798d12830872a8c0ce6538e903b79d5f7222e94eb3d55b9876d0cb4",
   "ef9089b43a38f3163cb651eca0be29a909edcabdf7fe33d66e50f99c926634da5a401b0f7646d6dee13b634f1d17292147d60cbfb452b7816d9e73dad9ee4150c3b8",
   "78f676a9a87c7a83e9ae5ec50ed7a82bf06725db4361d35388d71e8d2f25ac78"},
  {"2022-blake3-aes-256-gcm",
   "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
   "a5e262880d5fe2ca4cef89141ed758d8800b29bd22be65473145b99f53f7558fbebe0457977e2b14e1c4a4af977ec0b4a72d928f27d2c8ef052044b0128912e826a6b3848d1e23",
   "de7c7b459df4467f8ed826aec7b90d4032cd10e55487da79078613c1105c6b10f872bba66ccd97ec8fbf65a9f5af750c7908eb107eea0546b0458b1cdf37f1750ac2",
   "dbff0357be72d0954fa82462a372cba1"},
};
static const uint8_t csid[8] = {0, 1, 2, 3, 4, 5, 6, 7},
                     ssid[8] = {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7};
static const uint8_t addr[] = {1, 10, 0, 0, 1, 0, 53}; /* 10.0.0.1:53 */

static size_t unhex(const char *s, uint8_t *out) {
  size_t n = strlen(s) / 2;
  for (size_t i = 0; i < n; i++) {
    unsigned v = 0;
    sscanf(s + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
  return n;
}

static enum s5_ss_method method_of(const char *name) {
  return strstr(name, "chacha") ? S5_SS_2022_CHACHA20_POLY1305
         : strstr(name, "128")  ? S5_SS_2022_AES_128_GCM
                                : S5_SS_2022_AES_256_GCM;
}

static void test_xchacha(void) {
  uint8_t key[32], nonce[24], out[32], want[32], pt[200], ct[220], exp[220], ad[12], back[200];
  for (int i = 0; i < 32; i++) key[i] = (uint8_t)i;
  unhex("000000090000004a0000000031415927", nonce);
  unhex("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc", want);
  s5_hchacha20(key, nonce, out);
  CHECK(memcmp(out, want, 32) == 0, "HChaCha20: draft-irtf-cfrg-xchacha-03 2.2.1");
  for (int i = 0; i < 32; i++) key[i] = (uint8_t)(0x80 + i);
  for (int i = 0; i < 24; i++) nonce[i] = (uint8_t)(0x40 + i);
  unhex("50515253c0c1c2c3c4c5c6c7", ad);
  size_t n = unhex(
    "4c616469657320616e642047656e746c656d656e206f662074686520636c617373206f66202739393a20496620"
    "4920636f756c64206f6666657220796f75206f6e6c79206f6e652074697020666f7220746865206675747572"
    "652c2073756e73637265656e20776f756c642062652069742e",
    pt);
  unhex(
    "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64"
    "c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c"
    "97637da9768812f615c68b13b52ec0875924c1c7987947deafd8780acf49",
    exp);
  void *ctx = EVP_CIPHER_CTX_new();
  CHECK(ctx != NULL && EVP_CipherInit_ex(ctx, EVP_chacha20_poly1305(), NULL, NULL, NULL, 1) == 1,
        "a context");
  CHECK(s5_xchacha_seal(ctx, key, nonce, ad, sizeof ad, pt, n, ct) == 0 && memcmp(ct, exp, n + 16) == 0,
        "XChaCha20-Poly1305: draft-irtf-cfrg-xchacha-03 A.3.1, sealed");
  CHECK(s5_xchacha_open(ctx, key, nonce, ad, sizeof ad, exp, n, back) == 0 && memcmp(back, pt, n) == 0,
        "XChaCha20-Poly1305: A.3.1 opened");
  exp[n + 3] ^= 1;
  CHECK(s5_xchacha_open(ctx, key, nonce, ad, sizeof ad, exp, n, back) != 0, "XChaCha20-Poly1305: a bad tag");
  EVP_CIPHER_CTX_free(ctx);
}

/* A public implementation's documented vector (urban-spork's AEAD2022TestCase, Java with Bouncy Castle's
 * BLAKE3): the session subkey of a 32-byte key and salt. Its identity-subkey vector is checked by
 * ss/vectors2022_udp.py, whose identity headers the table below holds. */
static void test_public_subkey(void) {
  uint8_t key[32], salt[32], sub[32], want[32];
  CHECK(s5_b64_key("Lc3tTx0BY6ZJ/fCwOx3JvF0I/anhwJBO5p2+FA5Vce4=", 32, key) == 0 &&
          s5_b64_key("3oFO0VyLyGI4nFN0M9P+62vPND/L6v8IingaPJWTbJA=", 32, salt) == 0 &&
          s5_b64_key("EdNE+4U8dVnHT0+poAFDK2bdlwfrHT61sUNr9WYPh+E=", 32, want) == 0,
        "the vector's base64");
  s5_ss2022_subkey(S5_SS_2022_AES_256_GCM, key, salt, sub);
  CHECK(memcmp(sub, want, 32) == 0, "session subkey: a public implementation's vector");
}

static void test_keys(void) {
  struct s5_ss2022_keys k;
  const char *k16 = "BRIfLDlGU2BteoeUoa67yA==", *k32 = "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=";
  char pw[300];
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_128_GCM, k16, &k) == 0 && k.n == 1, "one key");
  snprintf(pw, sizeof pw, "%s:%s:%s:%s", k16, k16, k16, k16);
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_128_GCM, pw, &k) == 0 && k.n == 4, "four keys");
  snprintf(pw, sizeof pw, "%s:%s:%s:%s:%s", k16, k16, k16, k16, k16);
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_128_GCM, pw, &k) != 0, "five keys: refused");
  snprintf(pw, sizeof pw, "%s:%s", k32, k32);
  CHECK(s5_ss2022_keys(S5_SS_2022_CHACHA20_POLY1305, pw, &k) != 0, "a chain with chacha20: refused");
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_256_GCM, pw, &k) == 0 && k.n == 2, "two keys, aes-256");
  snprintf(pw, sizeof pw, "%s:%s", k32, k16);
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_256_GCM, pw, &k) != 0, "a 16-byte key in an aes-256 chain: refused");
  snprintf(pw, sizeof pw, "%s:", k32);
  CHECK(s5_ss2022_keys(S5_SS_2022_AES_256_GCM, pw, &k) != 0, "an empty part: refused");
  uint8_t psk[32], want[32];
  snprintf(pw, sizeof pw, "%s:%s", k16, "AAECAwQFBgcICQoLDA0ODw==");
  for (int i = 0; i < 16; i++) want[i] = (uint8_t)i;
  CHECK(s5_ss2022_psk(S5_SS_2022_AES_128_GCM, pw, psk) == 0 && memcmp(psk, want, 16) == 0,
        "TCP's PSK of a chain: the user's, the last");
  s5_ss2022_keys_clear(&k);
}

static void test_window(void) {
  struct s5_ss2022_window w;
  memset(&w, 0, sizeof w);
  for (uint64_t i = 0; i < 3; i++) {
    CHECK(s5_ss2022_window_check(&w, i) == S5_SS_OK, "id %llu new", (unsigned long long)i);
    s5_ss2022_window_mark(&w, i);
  }
  CHECK(s5_ss2022_window_check(&w, 1) == S5_SS2022_REPLAY, "a duplicate");
  s5_ss2022_window_mark(&w, 10);
  CHECK(s5_ss2022_window_check(&w, 5) == S5_SS_OK, "out of order, behind the newest: new");
  s5_ss2022_window_mark(&w, 5);
  CHECK(s5_ss2022_window_check(&w, 5) == S5_SS2022_REPLAY, "out of order, then again: a duplicate");
  CHECK(s5_ss2022_window_check(&w, 10) == S5_SS2022_REPLAY, "the newest again");
  s5_ss2022_window_mark(&w, 2000);
  CHECK(s5_ss2022_window_check(&w, 2000 - S5_SS2022_WINDOW) == S5_SS2022_REPLAY, "too old");
  CHECK(s5_ss2022_window_check(&w, 2000 - S5_SS2022_WINDOW + 1) == S5_SS_OK, "the oldest in the window");
  CHECK(s5_ss2022_window_check(&w, 1500) == S5_SS_OK, "skipped by the jump: new");
  s5_ss2022_window_mark(&w, 1500 + 2 * S5_SS2022_WINDOW);
  CHECK(s5_ss2022_window_check(&w, 1500 + S5_SS2022_WINDOW + 5) == S5_SS_OK,
        "a jump past the window clears it");
  CHECK(s5_ss2022_window_check(&w, UINT64_MAX) == S5_SS2022_REPLAY, "the last id: refused");
}

static uint8_t pkt[2048];

static void test_vectors(void) {
  for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
    enum s5_ss_method m = method_of(vectors[v].method);
    struct s5_ss2022_udp u;
    uint8_t want[1024], text[64];
    CHECK(s5_ss2022_udp_init(&u, m, vectors[v].password, csid) == 0, "%zu: init", v);
    u.pid = 5;
    size_t h = s5_ss2022_udp_head(&u), tl = sizeof addr + 5;
    memcpy(text, addr, sizeof addr);
    memcpy(text + sizeof addr, "hello", 5);
    memcpy(pkt + h, text, tl);
    long n = s5_ss2022_udp_seal(&u, NOW, pkt, tl);
    size_t wl = unhex(vectors[v].client, want);
    if (m != S5_SS_2022_CHACHA20_POLY1305) {
      CHECK(n == (long)wl && memcmp(pkt, want, wl) == 0, "%zu %s: client packet byte for byte (%ld)", v,
            vectors[v].method, n);
    } else {
      uint8_t body[128];
      CHECK(n == (long)(S5_SS2022_XNONCE + wl + S5_SS_TAG) &&
              s5_xchacha_open(u.aead, u.keys.k[0], pkt, NULL, 0, pkt + S5_SS2022_XNONCE, wl, body) == 0 &&
              memcmp(body, want, wl) == 0,
            "%zu chacha20: client packet's body", v);
    }
    wl = unhex(vectors[v].server, pkt);
    size_t off = 0;
    n = s5_ss2022_udp_open(&u, NOW, pkt, wl, &off);
    CHECK(
      n == (long)tl && memcmp(pkt + off, addr, sizeof addr) == 0 && memcmp(pkt + off + 7, "world", 5) == 0,
      "%zu %s: server packet opened (%ld)", v, vectors[v].method, n);
    wl = unhex(vectors[v].eih, want);
    uint8_t salt[32], eih[48];
    for (int i = 0; i < 32; i++) salt[i] = (uint8_t)i;
    CHECK(
      s5_ss2022_eih_tcp(&u.keys, salt, eih) == 0 && wl == 16 * (u.keys.n - 1) && memcmp(eih, want, wl) == 0,
      "%zu: TCP identity headers", v);
    s5_ss2022_udp_free(&u);
  }
}

/* A server packet of s (its session id, packet id pid) to client session to, timestamp t. */
static size_t srv_pkt(struct s5_ss2022_udp *s, const uint8_t *to, uint64_t pid, uint64_t t) {
  size_t h = s5_ss2022_udp_head(s) + 8;
  memcpy(pkt + h, addr, sizeof addr);
  memcpy(pkt + h + sizeof addr, "pong", 4);
  s->pid = pid;
  long n = s5_ss2022_udp_seal_as(s, to, t, pkt, sizeof addr + 4);
  CHECK(n > 0, "a server packet sealed");
  return (size_t)n;
}

static long open_at(struct s5_ss2022_udp *c, size_t len, uint64_t now) {
  size_t off;
  return s5_ss2022_udp_open(c, now, pkt, len, &off);
}

static void test_checks(enum s5_ss_method m, const char *pw, const char *user) {
  struct s5_ss2022_udp c, s, s2, s3;
  const uint8_t other[8] = {9, 9, 9, 9, 9, 9, 9, 9}, sid2[8] = {2}, sid3[8] = {3};
  CHECK(s5_ss2022_udp_init(&c, m, pw, csid) == 0 && s5_ss2022_udp_init(&s, m, user, ssid) == 0 &&
          s5_ss2022_udp_init(&s2, m, user, sid2) == 0 && s5_ss2022_udp_init(&s3, m, user, sid3) == 0,
        "init");
  const long ok = sizeof addr + 4;
  for (uint64_t i = 0; i < 3; i++)
    CHECK(open_at(&c, srv_pkt(&s, csid, i, NOW), NOW) == ok, "in order: %llu", (unsigned long long)i);
  CHECK(open_at(&c, srv_pkt(&s, csid, 1, NOW), NOW) == S5_SS2022_REPLAY, "a duplicate id");
  CHECK(
    open_at(&c, srv_pkt(&s, csid, 10, NOW), NOW) == ok && open_at(&c, srv_pkt(&s, csid, 5, NOW), NOW) == ok,
    "out of order");
  CHECK(open_at(&c, srv_pkt(&s, csid, 5, NOW), NOW) == S5_SS2022_REPLAY, "out of order, again");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3000, NOW), NOW) == ok, "a jump");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3000 - S5_SS2022_WINDOW, NOW), NOW) == S5_SS2022_REPLAY, "too old");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3020, NOW + 31), NOW) == S5_SS2022_CLOCK_SKEW, "31 s ahead");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3020, NOW - 31), NOW) == S5_SS2022_CLOCK_SKEW, "31 s behind");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3020, NOW + 30), NOW) == ok,
        "30 s ahead: passes (and the refused "
        "packets left id 3020 unseen)");
  CHECK(open_at(&c, srv_pkt(&s, other, 3021, NOW), NOW) == S5_SS2022_WRONG_SESSION, "another client session");
  size_t n = srv_pkt(&s, csid, 3022, NOW);
  pkt[n - 20] ^= 1;
  CHECK(open_at(&c, n, NOW) == S5_SS_BAD_TAG, "a byte changed");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3022, NOW), NOW) == ok, "then the right one: its id was not taken");
  n = srv_pkt(&s, csid, 3023, NOW);
  pkt[3] ^= 0x40;
  CHECK(open_at(&c, n, NOW) == S5_SS_BAD_TAG, "the separate header or nonce changed");
  CHECK(open_at(&c, 30, NOW) == S5_SS_SHORT, "short");
  memcpy(pkt + s5_ss2022_udp_head(&s), addr, sizeof addr);
  memcpy(pkt + s5_ss2022_udp_head(&s) + sizeof addr, "ping", 4);
  s.pid = 3040;
  n = (size_t)s5_ss2022_udp_seal(&s, NOW, pkt, sizeof addr + 4);
  CHECK(open_at(&c, n, NOW) == S5_SS2022_WRONG_TYPE, "a client packet (type 0)");
  CHECK(open_at(&c, srv_pkt(&s2, csid, 0, NOW), NOW) == ok, "a second server session");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3024, NOW), NOW) == ok, "the first still opens");
  CHECK(open_at(&c, srv_pkt(&s3, csid, 0, NOW + 10), NOW + 10) == S5_SS2022_TOO_MANY,
        "a third while two live");
  CHECK(open_at(&c, srv_pkt(&s2, csid, 1, NOW + 61), NOW + 61) == ok, "the second, a minute later");
  CHECK(open_at(&c, srv_pkt(&s3, csid, 0, NOW + 72), NOW + 72) == ok,
        "a third once the oldest is quiet 60 s");
  CHECK(open_at(&c, srv_pkt(&s2, csid, 2, NOW + 72), NOW + 72) == ok, "the second still opens");
  CHECK(open_at(&c, srv_pkt(&s, csid, 3025, NOW + 72), NOW + 72) == S5_SS2022_TOO_MANY,
        "the first is forgotten");
  s5_ss2022_udp_free(&c);
  s5_ss2022_udp_free(&s);
  s5_ss2022_udp_free(&s2);
  s5_ss2022_udp_free(&s3);
}

/* A 2022 upstream with udp = associate carries UDP (it was refused before SIP022's UDP was done here). */
static void test_upstream_udp(void) {
  static const enum s5_ss_method ms[] = {S5_SS_2022_AES_128_GCM, S5_SS_2022_AES_256_GCM,
                                         S5_SS_2022_CHACHA20_POLY1305};
  for (size_t i = 0; i < 3; i++) {
    struct s5_upstream_cfg up = {.type = S5_UPSTREAM_SHADOWSOCKS, .ss_method = ms[i], .udp = true};
    CHECK(s5_upstream_udp(&up), "method %zu with udp = associate: carries UDP", i);
    up.udp = false;
    CHECK(!s5_upstream_udp(&up), "method %zu with udp = off: none", i);
  }
}

int main(void) {
  char e[200];
  if (s5_ossl_load(S5_OSSL_CRYPTO, e, sizeof e) != 0) { /* as the daemon at start */
    fprintf(stderr, "%s\n", e);
    return 1;
  }
  test_xchacha();
  test_public_subkey();
  test_upstream_udp();
  test_keys();
  test_window();
  test_vectors();
  const char *k32 = "BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=",
             *u32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
  char chain[200];
  snprintf(chain, sizeof chain, "%s:%s", k32, u32);
  test_checks(S5_SS_2022_AES_256_GCM, k32, k32);
  test_checks(S5_SS_2022_AES_128_GCM, "BRIfLDlGU2BteoeUoa67yA==", "BRIfLDlGU2BteoeUoa67yA==");
  test_checks(S5_SS_2022_CHACHA20_POLY1305, k32, k32);
  test_checks(S5_SS_2022_AES_256_GCM, chain,
              u32); /* identity headers: the server answers with the user's key */
  return check_done();
}
