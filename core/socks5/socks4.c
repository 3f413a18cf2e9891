/* SPDX-License-Identifier: MIT */
/* SOCKS4 and SOCKS4a client messages (see socks4.h). The parser never reads
 * past len; any byte sequence gives a defined answer. */
#include "socks5/socks4.h"

#include <netinet/in.h>
#include <string.h>

#include "socks5/socks5.h"
#include "ini/sockaddr.h"

#define SOCKS4_VER 0x04
#define CMD_CONNECT 0x01
#define CD_GRANTED 90
#define CD_REJECTED 91
#define CD_NO_IDENTD 92
#define CD_IDENTD_MISMATCH 93

/* VN CD DSTPORT DSTIP, the user id and its NUL; for 4a, the name and its NUL. */
static int put_request(uint8_t *buf, size_t cap, uint16_t port, const uint8_t ip[4], const char *user,
                       const char *name) {
  size_t ulen = strlen(user), nlen = name != NULL ? strlen(name) : 0;
  size_t total = 8 + ulen + 1 + (name != NULL ? nlen + 1 : 0);
  if (ulen > 255 || (name != NULL && (nlen == 0 || nlen > 255)) || total > cap) return S5_SOCKS5_TOO_LONG;
  buf[0] = SOCKS4_VER;
  buf[1] = CMD_CONNECT;
  buf[2] = (uint8_t)(port >> 8);
  buf[3] = (uint8_t)port;
  memcpy(buf + 4, ip, 4);
  memcpy(buf + 8, user, ulen + 1);
  if (name != NULL) memcpy(buf + 8 + ulen + 1, name, nlen + 1);
  return (int)total;
}

int s5_socks4_write_connect(uint8_t *buf, size_t cap, const struct sockaddr *dst, const char *user) {
  if (dst->sa_family != AF_INET) return S5_SOCKS5_BAD_MESSAGE;
  const struct sockaddr_storage *ss = (const struct sockaddr_storage *)dst;
  size_t len;
  return put_request(buf, cap, s5_sockaddr_port(ss), s5_sockaddr_raw(ss, &len), user, NULL);
}

int s5_socks4_write_connect_name(uint8_t *buf, size_t cap, const char *name, uint16_t port,
                                 const char *user) {
  static const uint8_t marker[4] = {0, 0, 0, 1}; /* 0.0.0.x, x != 0: "the name follows" */
  return put_request(buf, cap, port, marker, user, name);
}

int s5_socks4_parse_reply(const uint8_t *buf, size_t len, uint8_t *cd) {
  if (len < 1) return S5_SOCKS5_NEED_MORE;
  /* The reply's VN is 0; some servers echo 4. */
  if (buf[0] != 0 && buf[0] != SOCKS4_VER) return S5_SOCKS5_BAD_VERSION;
  if (len < 2) return S5_SOCKS5_NEED_MORE;
  if (cd != NULL) *cd = buf[1];
  if (buf[1] == CD_REJECTED) return S5_SOCKS5_REFUSED;
  if (buf[1] == CD_NO_IDENTD || buf[1] == CD_IDENTD_MISMATCH) return S5_SOCKS5_AUTH_FAILED;
  if (buf[1] != CD_GRANTED) return S5_SOCKS5_BAD_MESSAGE;
  return len < S5_SOCKS4_REPLY_LEN ? S5_SOCKS5_NEED_MORE : S5_SOCKS4_REPLY_LEN;
}

const char *s5_socks4_strcd(uint8_t cd) {
  switch (cd) {
    case CD_GRANTED: return "request granted";
    case CD_REJECTED: return "request rejected or failed";
    case CD_NO_IDENTD: return "the proxy cannot reach our identd";
    case CD_IDENTD_MISMATCH: return "identd reports another user id";
    default: return "unknown";
  }
}
