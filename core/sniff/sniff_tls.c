/* SPDX-License-Identifier: MIT */
/* TLS: the ClientHello's server_name from the client's first bytes. The
 * handshake message is gathered from as many handshake records as carry
 * it (RFC 8446 5.1: a message may span records; a post-quantum key share
 * makes a ClientHello of 1.8 KB and more, over two TCP segments), then
 * parsed whole. One record holding it all is parsed where it lies. */
#include <string.h>

#include "sniff/sniff_int.h"

#define TLS_HANDSHAKE 22
#define TLS_CLIENT_HELLO 1
#define TLS_RECORD_MAX 16384 /* a plaintext record's fragment (RFC 8446 5.1) */

/* Not decided by what is there: more, unless the holder is full. */
static enum s5_sniff more(size_t len) { return len < S5_SNIFF_HOLD_MAX ? S5_SNIFF_MORE : S5_SNIFF_NONE; }

enum s5_sniff s5_sniff_tls(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]) {
  uint8_t hs[S5_SNIFF_HOLD_MAX]; /* the message, when it spans records */
  size_t have = 0, need = 0, at = 0;

  for (;;) {
    /* A record header, checked as far as it is there. */
    size_t hdr = len - at < 5 ? len - at : 5;
    if (hdr >= 1 && buf[at] != TLS_HANDSHAKE) return S5_SNIFF_NONE;
    if (hdr >= 2 && buf[at + 1] != 3) return S5_SNIFF_NONE;
    if (hdr < 5) return more(len);
    size_t rlen = (size_t)buf[at + 3] << 8 | buf[at + 4];
    if (rlen == 0 || rlen > TLS_RECORD_MAX) return S5_SNIFF_NONE;
    const uint8_t *frag = buf + at + 5;
    size_t avail = len - at - 5 < rlen ? len - at - 5 : rlen;

    if (at == 0 && avail >= 4) {
      if (frag[0] != TLS_CLIENT_HELLO) return S5_SNIFF_NONE;
      need = 4 + ((size_t)frag[1] << 16 | (size_t)frag[2] << 8 | frag[3]);
      if (need + 5 > S5_SNIFF_HOLD_MAX) return S5_SNIFF_NONE;
      if (need <= avail) return s5_sniff_client_hello(frag + 4, need - 4, name);
    }
    /* Gathered: at most need bytes (or the 4 of the header while need is
     * unknown), so hs never holds more than S5_SNIFF_HOLD_MAX. */
    size_t want = need != 0 ? need - have : 4 - have;
    size_t take = avail < want ? avail : want;
    memcpy(hs + have, frag, take);
    have += take;
    if (need == 0 && have >= 4) {
      if (hs[0] != TLS_CLIENT_HELLO) return S5_SNIFF_NONE;
      need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
      if (need + 5 > S5_SNIFF_HOLD_MAX) return S5_SNIFF_NONE;
      want = need - have;
      size_t more_take = avail - take < want ? avail - take : want;
      memcpy(hs + have, frag + take, more_take);
      have += more_take;
    }
    if (need != 0 && have >= need) return s5_sniff_client_hello(hs + 4, need - 4, name);
    if (avail < rlen) return more(len);
    at += 5 + rlen;
    if (at >= S5_SNIFF_HOLD_MAX) return S5_SNIFF_NONE;
  }
}
