/* SPDX-License-Identifier: MIT */
#include "ini/sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

const void *s5_sockaddr_raw(const struct sockaddr_storage *ss, size_t *len) {
  if (ss->ss_family == AF_INET6) {
    *len = 16;
    return &((const struct sockaddr_in6 *)ss)->sin6_addr;
  }
  if (ss->ss_family == AF_INET) {
    *len = 4;
    return &((const struct sockaddr_in *)ss)->sin_addr;
  }
  *len = 0;
  return NULL;
}

int s5_sockaddr_from_raw(const void *raw, size_t len, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (len == 16) {
    ss->ss_family = AF_INET6;
    memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, raw, 16);
  } else if (len == 4) {
    ss->ss_family = AF_INET;
    memcpy(&((struct sockaddr_in *)ss)->sin_addr, raw, 4);
  } else return -1;
  s5_sockaddr_set_port(ss, port);
  return 0;
}

uint16_t s5_sockaddr_port(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
  if (ss->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)ss)->sin_port);
  return 0;
}

void s5_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port) {
  if (ss->ss_family == AF_INET6) ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
  else if (ss->ss_family == AF_INET) ((struct sockaddr_in *)ss)->sin_port = htons(port);
}

socklen_t s5_sockaddr_len(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

const char *s5_sockaddr_host(const struct sockaddr_storage *ss, char *buf, size_t len) {
  size_t n;
  const void *raw = s5_sockaddr_raw(ss, &n);
  if ((raw == NULL || inet_ntop(ss->ss_family, raw, buf, (socklen_t)len) == NULL) && len > 0) buf[0] = '\0';
  return buf;
}

const char *s5_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len) {
  char a[INET6_ADDRSTRLEN];
  if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6) snprintf(buf, len, "-");
  else
    snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", s5_sockaddr_host(ss, a, sizeof a),
             s5_sockaddr_port(ss));
  return buf;
}

int s5_sockaddr_pton(const char *text, size_t len, unsigned char addr[16]) {
  char buf[INET6_ADDRSTRLEN];
  if (len >= sizeof buf) return 0;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (inet_pton(AF_INET, buf, addr) == 1) return AF_INET;
  if (inet_pton(AF_INET6, buf, addr) == 1) return AF_INET6;
  return 0;
}
