/* SPDX-License-Identifier: MIT */
/* SOCKS5 client messages (RFC 1928, RFC 1929).
 *
 * Encoders write exactly the bytes the RFCs ask for; parsers look at what has
 * arrived so far and never read past len, so that any byte sequence a server
 * (or a fuzzer) sends gives a defined answer. NEED_MORE is only returned when
 * the bytes seen so far are the start of some valid message, so a stream that
 * can never become valid fails at once instead of waiting for a timeout. */
#include "socks5/socks5.h"

#include <netinet/in.h>
#include <string.h>

#include "base/assert.h"
#include "ini/sockaddr.h"

#define SOCKS5_VER 0x05
#define AUTH_VER 0x01 /* RFC 1929 sub-negotiation version */
#define CMD_CONNECT 0x01
#define METHOD_REJECTED 0xFF /* "NO ACCEPTABLE METHODS" */

#define ATYP_IPV4 0x01
#define ATYP_NAME 0x03
#define ATYP_IPV6 0x04

/* VER CMD RSV ATYP, and VER REP RSV ATYP in replies. */
#define HEAD_LEN 4
#define PORT_LEN 2

/* Every message we write fits the buffers sized S5_SOCKS5_MAX_MSG: the
 * longest are RFC 1929's request with a 255-byte user and password, and a
 * CONNECT to a 255-byte name. */
_Static_assert(S5_SOCKS5_MAX_MSG >= 3 + 255 + 255, "an RFC 1929 request fits S5_SOCKS5_MAX_MSG");
_Static_assert(S5_SOCKS5_MAX_MSG >= HEAD_LEN + 1 + 255 + PORT_LEN,
               "a CONNECT to a name fits S5_SOCKS5_MAX_MSG");

/* Length of a user, password or host name field: 1..255 bytes, since the
 * wire length is a single byte and zero is not allowed by either RFC.
 * Returns 0 when the string is missing, empty or too long. strnlen() keeps
 * us from scanning a huge unterminated buffer further than needed. */
static size_t short_field_len(const char *s) {
  size_t n;

  if (s == NULL) return 0;
  n = strnlen(s, 256);
  return n <= 255 ? n : 0;
}

static uint8_t *put_u8(uint8_t *p, uint8_t v) {
  *p = v;
  return p + 1;
}

static uint8_t *put_bytes(uint8_t *p, const void *src, size_t n) {
  memcpy(p, src, n);
  return p + n;
}

/* A length-prefixed field (ULEN UNAME, PLEN PASSWD, len name). */
static uint8_t *put_field(uint8_t *p, const char *s, size_t n) {
  p = put_u8(p, (uint8_t)n);
  return put_bytes(p, s, n);
}

static uint8_t *put_connect_head(uint8_t *p, uint8_t atyp) {
  p = put_u8(p, SOCKS5_VER);
  p = put_u8(p, CMD_CONNECT);
  p = put_u8(p, 0x00); /* RSV */
  return put_u8(p, atyp);
}

int s5_socks5_write_greeting(uint8_t *buf, size_t cap, int with_auth) {
  uint8_t *p = buf;

  if (cap < 3) return S5_SOCKS5_TOO_LONG;
  /* One method only: offering "none" next to user/pass would let a server
   * skip authentication we were told to perform. */
  p = put_u8(p, SOCKS5_VER);
  p = put_u8(p, 1);
  p = put_u8(p, with_auth ? S5_SOCKS5_METHOD_USERPASS : S5_SOCKS5_METHOD_NONE);
  return (int)(p - buf);
}

int s5_socks5_write_auth(uint8_t *buf, size_t cap, const char *user, const char *pass) {
  size_t ulen = short_field_len(user);
  size_t plen = short_field_len(pass);
  uint8_t *p = buf;

  if (ulen == 0 || plen == 0) return S5_SOCKS5_TOO_LONG;
  if (cap < 3 + ulen + plen) return S5_SOCKS5_TOO_LONG;
  p = put_u8(p, AUTH_VER);
  p = put_field(p, user, ulen);
  p = put_field(p, pass, plen);
  S5_ASSERT((size_t)(p - buf) <= cap);
  return (int)(p - buf);
}

/* Port is taken as it is stored in the sockaddr: already network order. */
int s5_socks5_write_connect(uint8_t *buf, size_t cap, const struct sockaddr *dst) {
  const void *addr, *port;
  size_t alen;
  uint8_t atyp;

  if (dst == NULL) return S5_SOCKS5_BAD_MESSAGE;
  addr = s5_sockaddr_raw((const struct sockaddr_storage *)dst, &alen);
  if (addr == NULL) return S5_SOCKS5_BAD_MESSAGE;
  atyp = alen == 4 ? ATYP_IPV4 : ATYP_IPV6;
  uint16_t nport = htons(s5_sockaddr_port((const struct sockaddr_storage *)dst));
  port = &nport;
  if (cap < HEAD_LEN + alen + PORT_LEN) return S5_SOCKS5_TOO_LONG;
  uint8_t *p = put_connect_head(buf, atyp);
  p = put_bytes(p, addr, alen);
  p = put_bytes(p, port, PORT_LEN);
  S5_ASSERT((size_t)(p - buf) <= cap);
  return (int)(p - buf);
}

int s5_socks5_write_connect_name(uint8_t *buf, size_t cap, const char *name, uint16_t port) {
  size_t n = short_field_len(name);
  uint8_t *p = buf;

  if (n == 0) return S5_SOCKS5_TOO_LONG;
  if (cap < HEAD_LEN + 1 + n + PORT_LEN) return S5_SOCKS5_TOO_LONG;
  p = put_connect_head(p, ATYP_NAME);
  p = put_field(p, name, n);
  p = put_u8(p, (uint8_t)(port >> 8));
  p = put_u8(p, (uint8_t)(port & 0xFF));
  S5_ASSERT((size_t)(p - buf) <= cap);
  return (int)(p - buf);
}

int s5_socks5_head(const uint8_t *buf, size_t len, uint8_t ver, size_t need) {
  if (len < 1) return S5_SOCKS5_NEED_MORE;
  if (buf[0] != ver) return S5_SOCKS5_BAD_VERSION;
  return len < need ? S5_SOCKS5_NEED_MORE : 0;
}

int s5_socks5_parse_method(const uint8_t *buf, size_t len, int offered_auth) {
  uint8_t want = offered_auth ? S5_SOCKS5_METHOD_USERPASS : S5_SOCKS5_METHOD_NONE;

  int head = s5_socks5_head(buf, len, SOCKS5_VER, 2);
  if (head < 0) return head;
  /* We offered exactly one method, so anything else, 0xFF included, means
   * the server and we have nothing in common. */
  if (buf[1] != want) return S5_SOCKS5_NO_METHOD;
  return 2;
}

int s5_socks5_parse_auth(const uint8_t *buf, size_t len) {
  int head = s5_socks5_head(buf, len, AUTH_VER, 2);
  if (head < 0) return head;
  if (buf[1] != 0x00) return S5_SOCKS5_AUTH_FAILED;
  return 2;
}

/* Total reply length implied by ATYP (and, for names, the length byte), or
 * NEED_MORE / BAD_MESSAGE. Needs the 4-byte head to be present. */
static int reply_len(const uint8_t *buf, size_t len) {
  switch (buf[3]) {
    case ATYP_IPV4: return HEAD_LEN + 4 + PORT_LEN;
    case ATYP_IPV6: return HEAD_LEN + 16 + PORT_LEN;
    case ATYP_NAME:
      if (len < HEAD_LEN + 1) return S5_SOCKS5_NEED_MORE;
      if (buf[HEAD_LEN] == 0) return S5_SOCKS5_BAD_MESSAGE;
      return HEAD_LEN + 1 + buf[HEAD_LEN] + PORT_LEN;
    default: return S5_SOCKS5_BAD_MESSAGE;
  }
}

/* A refusal is reported as soon as VER and REP are in: the session is going
 * to be closed whatever follows, and some servers send a short or sloppy
 * failure reply and hang up, which would otherwise read as "malformed" or
 * wait for bytes that never come.
 *
 * RSV is not checked: RFC 1928 only calls it "reserved", and accepting any
 * value costs nothing since s5tund ignores the bound address anyway. */
int s5_socks5_parse_reply(const uint8_t *buf, size_t len, uint8_t *rep) {
  int total;

  int head = s5_socks5_head(buf, len, SOCKS5_VER, 2);
  if (head < 0) return head;
  if (rep != NULL) *rep = buf[1];
  if (buf[1] != 0x00) return S5_SOCKS5_REFUSED;
  if (len < HEAD_LEN) return S5_SOCKS5_NEED_MORE;
  total = reply_len(buf, len);
  if (total < 0) return total;
  if (len < (size_t)total) return S5_SOCKS5_NEED_MORE;
  return total;
}

const char *s5_socks5_strerror(int status) {
  switch (status) {
    case S5_SOCKS5_OK: return "success";
    case S5_SOCKS5_NEED_MORE: return "incomplete message";
    case S5_SOCKS5_BAD_VERSION: return "bad protocol version in server reply";
    case S5_SOCKS5_NO_METHOD: return "no acceptable authentication method";
    case S5_SOCKS5_AUTH_FAILED: return "authentication failed";
    case S5_SOCKS5_REFUSED: return "connection refused by proxy";
    case S5_SOCKS5_BAD_MESSAGE: return "malformed message";
    case S5_SOCKS5_TOO_LONG: return "field too long";
    default: return status > 0 ? "success" : "unknown error";
  }
}

const char *s5_socks5_strrep(uint8_t rep) {
  /* Indexed by REP, RFC 1928 section 6. */
  static const char *const text[] = {
    "succeeded",
    "general SOCKS server failure",
    "connection not allowed by ruleset",
    "network unreachable",
    "host unreachable",
    "connection refused",
    "TTL expired",
    "command not supported",
    "address type not supported",
  };

  if (rep < sizeof text / sizeof text[0]) return text[rep];
  return "unknown";
}
