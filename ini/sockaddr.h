/* SPDX-License-Identifier: MIT */
/* Socket addresses of either family, AF_INET or AF_INET6: their parts,
 * their text, and an address read from text. On the lowest floor because
 * the configuration parses them; core/base/addr.h converts lwIP's
 * addresses to and from them. */
#ifndef S5_INI_SOCKADDR_H
#define S5_INI_SOCKADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for "[v6]:65535" and its NUL. */
#define S5_SOCKADDR_STRLEN 56

/* The address's bytes (4 or 16 of them, network order) and their count
 * in *len; NULL (and 0) for any other family. */
const void *s5_sockaddr_raw(const struct sockaddr_storage *ss, size_t *len);

/* A sockaddr_in or sockaddr_in6 in ss from len (4 or 16) bytes and port
 * (host order). Returns 0, or -1 for another len. */
int s5_sockaddr_from_raw(const void *raw, size_t len, uint16_t port, struct sockaddr_storage *ss);

/* The port in host order (0 for another family), and setting it. */
uint16_t s5_sockaddr_port(const struct sockaddr_storage *ss);
void s5_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port);

/* The size of ss's family's struct, for bind, connect and sendto. */
socklen_t s5_sockaddr_len(const struct sockaddr_storage *ss);

/* The address alone as text ("" for another family). Returns buf. */
const char *s5_sockaddr_host(const struct sockaddr_storage *ss, char *buf, size_t len);

/* "a.b.c.d:port" or "[v6]:port" ("-" for another family). Returns buf. */
const char *s5_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len);

/* text's first len bytes as an IPv4 or else an IPv6 address (no port, no
 * brackets, no name): its bytes into addr; returns AF_INET or AF_INET6, or
 * 0 when it is neither. */
int s5_sockaddr_pton(const char *text, size_t len, unsigned char addr[16]);

#endif
