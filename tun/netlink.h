/* SPDX-License-Identifier: MIT */
/* rtnetlink plumbing shared by link.c (the device) and route.c (auto-route):
 * one request at a time, each acknowledged, with the kernel's extended-ack
 * text kept for the error message. Internal to tun/. */
#ifndef S5_TUN_NETLINK_H
#define S5_TUN_NETLINK_H

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

/* Our requests are a header, a fixed part and at most two small attributes;
 * replies are acks, which with NETLINK_CAP_ACK carry no copy of the request
 * but may carry the kernel's error text. */
#define NL_REQ_MAX 256
#define NL_REPLY_MAX 16384

struct nl_req {
  union {
    struct nlmsghdr h;
    char buf[NL_REQ_MAX];
  } u;
};

/* One rtnetlink conversation: the socket, the sequence number of the last
 * request, and the kernel's extended-ack text for the last error, if any. */
struct nl_conn {
  int fd;
  uint32_t seq;
  char why[128];
};

int s5_nl_open(struct nl_conn *c);
void s5_nl_close(struct nl_conn *c);
/* Starts a request of `type` whose fixed part is `fixed` (fixedlen bytes). */
void s5_nl_init(struct nl_req *r, uint16_t type, uint16_t flags, const void *fixed, size_t fixedlen);
int s5_nl_put_attr(struct nl_req *r, uint16_t type, const void *data, size_t len);
/* Sends one request and waits for its ack. Returns 0 or -errno. */
int s5_nl_talk(struct nl_conn *c, struct nl_req *r);
/* A request with answers (a get or a dump, NLM_F_ACK included): fn sees
 * every answer message; returns at the ack or the end of the dump, with 0
 * or -errno. Answers bigger than NL_REPLY_MAX per read are an error. */
typedef void (*s5_nl_reply_fn)(const struct nlmsghdr *h, void *arg);
int s5_nl_query(struct nl_conn *c, struct nl_req *r, s5_nl_reply_fn fn, void *arg);
/* Error text: s5_nl_what() writes "<what>" and returns its length;
 * s5_nl_fail() appends ": <strerror>[ (<kernel text>)]" and returns err. */
size_t s5_nl_what(char *buf, size_t buflen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int s5_nl_fail(struct nl_conn *c, int err, char *buf, size_t buflen, size_t used);

#endif
