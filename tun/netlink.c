/* SPDX-License-Identifier: MIT */
/* rtnetlink plumbing: see netlink.h. */
#include "tun/netlink.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- netlink plumbing --------------------------------------------------- */

int s5_nl_open(struct nl_conn *c) {
  int one = 1;

  c->seq = 0;
  c->why[0] = '\0';
  c->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (c->fd < 0) return -errno;
  /* Extended acks give a reason ("MTU greater than device maximum") on
   * kernels >= 4.12; capped acks keep our request out of the reply. Both
   * are only nice to have, so a kernel that lacks them is not an error. */
  if (setsockopt(c->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one) < 0 && errno != ENOPROTOOPT)
    return -errno;
  if (setsockopt(c->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one) < 0 && errno != ENOPROTOOPT)
    return -errno;
  return 0;
}

void s5_nl_close(struct nl_conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* Starts a request of `type` whose fixed part is `fixed` (fixedlen bytes). */
void s5_nl_init(struct nl_req *r, uint16_t type, uint16_t flags, const void *fixed, size_t fixedlen) {
  memset(r, 0, sizeof *r);
  r->u.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(fixedlen);
  r->u.h.nlmsg_type = type;
  r->u.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  memcpy(NLMSG_DATA(&r->u.h), fixed, fixedlen);
}

int s5_nl_put_attr(struct nl_req *r, uint16_t type, const void *data, size_t len) {
  size_t off = NLMSG_ALIGN(r->u.h.nlmsg_len);
  struct rtattr *rta;

  if (off + RTA_SPACE(len) > sizeof r->u.buf) return -EMSGSIZE;
  rta = (struct rtattr *)(r->u.buf + off);
  rta->rta_type = type;
  rta->rta_len = (unsigned short)RTA_LENGTH(len);
  memcpy(RTA_DATA(rta), data, len);
  r->u.h.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
  return 0;
}

static int nl_send(struct nl_conn *c, struct nl_req *r) {
  struct sockaddr_nl kernel;
  ssize_t n;

  memset(&kernel, 0, sizeof kernel);
  kernel.nl_family = AF_NETLINK;
  r->u.h.nlmsg_seq = ++c->seq;
  do n = sendto(c->fd, r->u.buf, r->u.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  if ((size_t)n != r->u.h.nlmsg_len) return -EIO;
  return 0;
}

/* Copies NLMSGERR_ATTR_MSG out of the TLVs that follow an error ack.
 * Works on offsets from the message start so that a bogus length can only
 * make us give up, never point outside the message. */
static void nl_ack_text(struct nl_conn *c, const struct nlmsghdr *h) {
  const struct nlmsgerr *e = NLMSG_DATA(h);
  const char *base = (const char *)h;
  size_t end = h->nlmsg_len;
  size_t off = NLMSG_LENGTH(sizeof *e);
  const struct nlattr *a;
  size_t len;

  if (!(h->nlmsg_flags & NLM_F_ACK_TLVS)) return;
  /* Without NETLINK_CAP_ACK the payload of our request sits in between. */
  if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
    if (e->msg.nlmsg_len < sizeof e->msg || e->msg.nlmsg_len > end) return;
    off += NLMSG_ALIGN(e->msg.nlmsg_len - sizeof e->msg);
  }
  while (off + NLA_HDRLEN <= end) {
    a = (const struct nlattr *)(base + off);
    if (a->nla_len < NLA_HDRLEN || a->nla_len > end - off) return;
    if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      len = strnlen(base + off + NLA_HDRLEN, a->nla_len - NLA_HDRLEN);
      if (len >= sizeof c->why) len = sizeof c->why - 1;
      memcpy(c->why, base + off + NLA_HDRLEN, len);
      c->why[len] = '\0';
      return;
    }
    off += NLA_ALIGN(a->nla_len);
  }
}

/* Looks for the ack to our last request among the messages in buf.
 * Returns 1 when none is there, else 0 or -errno from the ack. */
static int nl_find_ack(struct nl_conn *c, const char *buf, size_t len) {
  const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
  const struct nlmsgerr *e;
  /* Signed on purpose: NLMSG_NEXT subtracts the aligned length, which can
   * exceed what is left for an unpadded last message; an int goes negative
   * and ends the loop where a size_t would wrap. */
  int left = (int)len;

  for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
    /* Anything else is a late answer to an earlier request: skip it. */
    if (h->nlmsg_seq != c->seq || h->nlmsg_type != NLMSG_ERROR) continue;
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e)) return -EBADMSG;
    e = NLMSG_DATA(h);
    if (e->error == 0) return 0;
    nl_ack_text(c, h);
    /* error is a negative errno; guard against anything else. */
    return e->error < 0 ? e->error : -EPROTO;
  }
  return 1;
}

/* Reads one datagram from the kernel into buf; datagrams from any other
 * sender are skipped. Returns its length, or -errno. */
static ssize_t nl_recv(struct nl_conn *c, char *buf, size_t len) {
  struct sockaddr_nl from;
  struct iovec iov = {buf, len};
  struct msghdr msg;
  ssize_t n;

  for (;;) {
    memset(&msg, 0, sizeof msg);
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    n = recvmsg(c->fd, &msg, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (msg.msg_flags & MSG_TRUNC) return -EMSGSIZE;
    /* Only the kernel (port 0) speaks for the kernel. */
    if (msg.msg_namelen != sizeof from || from.nl_pid != 0) continue;
    return n;
  }
}

static int nl_wait_ack(struct nl_conn *c) {
  /* Aligned for struct nlmsghdr. */
  union {
    struct nlmsghdr h;
    char buf[NL_REPLY_MAX];
  } reply;
  ssize_t n;
  int r;

  for (;;) {
    n = nl_recv(c, reply.buf, sizeof reply.buf);
    if (n < 0) return (int)n;
    r = nl_find_ack(c, reply.buf, (size_t)n);
    if (r <= 0) return r;
  }
}

/* Hands every answer to our last request to fn, until the ack or the end of
 * a dump. Returns 1 while more may come, else 0 or -errno. */
static int nl_take(struct nl_conn *c, const char *buf, size_t len, s5_nl_reply_fn fn, void *arg) {
  const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
  int left = (int)len; /* signed: see nl_find_ack */

  for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
    if (h->nlmsg_seq != c->seq) continue;
    if (h->nlmsg_type == NLMSG_DONE) return 0;
    if (h->nlmsg_type == NLMSG_ERROR) return nl_find_ack(c, (const char *)h, h->nlmsg_len);
    fn(h, arg);
  }
  return 1;
}

int s5_nl_query(struct nl_conn *c, struct nl_req *r, s5_nl_reply_fn fn, void *arg) {
  union {
    struct nlmsghdr h;
    char buf[NL_REPLY_MAX];
  } reply;
  ssize_t n;
  int err;

  c->why[0] = '\0';
  err = nl_send(c, r);
  while (err == 0) {
    n = nl_recv(c, reply.buf, sizeof reply.buf);
    if (n < 0) return (int)n;
    err = nl_take(c, reply.buf, (size_t)n, fn, arg);
    if (err == 1) err = 0;
    else return err;
  }
  return err;
}

/* Sends one request and waits for its ack. Returns 0 or -errno. */
int s5_nl_talk(struct nl_conn *c, struct nl_req *r) {
  int err;

  c->why[0] = '\0';
  err = nl_send(c, r);
  if (err < 0) return err;
  return nl_wait_ack(c);
}

/* ---- batches ----------------------------------------------------------- */

void s5_nl_batch_init(struct nl_batch *b, struct nl_conn *c, int ignore1, int ignore2) {
  b->c = c;
  b->ignore[0] = ignore1;
  b->ignore[1] = ignore2;
  b->err = 0;
  b->n = b->sent = 0;
  b->len = 0;
  c->why[0] = '\0';
}

/* Counts the acks for the batch in buf; keeps the first error that matters. */
static unsigned nl_batch_acks(struct nl_batch *b, const char *buf, size_t len) {
  const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
  int left = (int)len; /* signed: see nl_find_ack */
  unsigned acked = 0;
  for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
    if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq - b->first >= b->n) continue;
    acked++;
    const struct nlmsgerr *e = NLMSG_DATA(h);
    int err = h->nlmsg_len < NLMSG_LENGTH(sizeof *e) ? -EBADMSG : e->error > 0 ? -EPROTO : e->error;
    if (err == 0 || err == b->ignore[0] || err == b->ignore[1] || b->err != 0) continue;
    b->err = err;
    nl_ack_text(b->c, h);
  }
  return acked;
}

/* Sends the queued requests in one datagram and waits for all their acks. */
static int nl_batch_flush(struct nl_batch *b) {
  if (b->n == 0) return 0;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  ssize_t n;
  do n = sendto(b->c->fd, b->u.buf, b->len, 0, (struct sockaddr *)&kernel, sizeof kernel);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  if ((size_t)n != b->len) return -EIO;
  union {
    struct nlmsghdr h;
    char buf[NL_REPLY_MAX];
  } reply;
  for (unsigned acked = 0; acked < b->n;) {
    n = nl_recv(b->c, reply.buf, sizeof reply.buf);
    if (n < 0) return (int)n;
    acked += nl_batch_acks(b, reply.buf, (size_t)n);
  }
  b->sent += b->n;
  b->n = 0;
  b->len = 0;
  return 0;
}

int s5_nl_batch_add(struct nl_batch *b, const struct nl_req *r) {
  size_t len = NLMSG_ALIGN(r->u.h.nlmsg_len);
  if (b->len + len > sizeof b->u.buf || b->n == NL_BATCH_REQS) {
    int e = nl_batch_flush(b);
    if (e < 0) return e;
  }
  struct nlmsghdr *h = (struct nlmsghdr *)(b->u.buf + b->len);
  memcpy(h, r->u.buf, r->u.h.nlmsg_len);
  memset((char *)h + r->u.h.nlmsg_len, 0, len - r->u.h.nlmsg_len);
  h->nlmsg_seq = ++b->c->seq;
  if (b->n == 0) b->first = h->nlmsg_seq;
  b->n++;
  b->len += len;
  return 0;
}

int s5_nl_batch_end(struct nl_batch *b) {
  int e = nl_batch_flush(b);
  return e < 0 ? e : b->err;
}

/* ---- error text --------------------------------------------------------- */

/* "<what>: <strerror>[ (<kernel text>)]", with what already in err. */
int s5_nl_fail(struct nl_conn *c, int err, char *buf, size_t buflen, size_t used) {
  const char *why = c != NULL ? c->why : "";

  if (buf == NULL || buflen == 0 || used >= buflen) return err;
  if (why[0] != '\0') snprintf(buf + used, buflen - used, ": %s (%s)", strerror(-err), why);
  else snprintf(buf + used, buflen - used, ": %s", strerror(-err));
  return err;
}

/* Writes the start of an error message and returns its length (clamped). */
size_t s5_nl_what(char *buf, size_t buflen, const char *fmt, ...) {
  va_list ap;
  int n;

  if (buf == NULL || buflen == 0) return 0;
  va_start(ap, fmt);
  n = vsnprintf(buf, buflen, fmt, ap);
  va_end(ap);
  if (n < 0) {
    buf[0] = '\0';
    return 0;
  }
  return (size_t)n < buflen ? (size_t)n : buflen - 1;
}
