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
/* Many requests in few system calls (a prefix list of 10,000 routes):
 * requests are packed into one buffer, sent together when it is full and
 * at s5_nl_batch_end(), and every ack is read. Errors listed as ignored
 * count as success (a delete of what is already gone); the first other
 * error is kept, with the kernel's text in the connection's why. */
#define NL_BATCH_MAX 32768
/* Every ack is a buffer of its own in our socket's receive queue (about
 * 1 KiB of its budget each): more at once than the default budget (208 KiB)
 * holds and the kernel drops acks with ENOBUFS. */
#define NL_BATCH_REQS 128

struct nl_batch {
  struct nl_conn *c;
  int ignore[2];  /* -errno values that are not errors, 0 = none */
  int err;        /* the first error, 0 = none */
  unsigned n;     /* requests in buf */
  uint32_t first; /* the sequence number of the first of them */
  unsigned sent;  /* requests sent since init, for the log */
  size_t len;
  union {
    struct nlmsghdr h; /* alignment */
    char buf[NL_BATCH_MAX];
  } u;
};

void s5_nl_batch_init(struct nl_batch *b, struct nl_conn *c, int ignore1, int ignore2);
/* Queues one request (sending what is queued first if it does not fit).
 * Returns 0, or -errno of a failed send (errors in acks wait for _end). */
int s5_nl_batch_add(struct nl_batch *b, const struct nl_req *r);
/* Sends what is queued, reads every ack; returns 0 or the first error. */
int s5_nl_batch_end(struct nl_batch *b);

/* Error text: s5_nl_what() writes "<what>" and returns its length;
 * s5_nl_fail() appends ": <strerror>[ (<kernel text>)]" and returns err. */
size_t s5_nl_what(char *buf, size_t buflen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int s5_nl_fail(struct nl_conn *c, int err, char *buf, size_t buflen, size_t used);

#endif
