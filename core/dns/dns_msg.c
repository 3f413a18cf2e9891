/* SPDX-License-Identifier: MIT */
/* DNS query parsing and answer building for the mapped resolver.
 *
 * Only what a stub resolver sends is accepted: a query (QR = 0) with one
 * question, no answer or authority records, and at most an EDNS OPT record
 * in the additional section. Anything else that is not a well-formed
 * non-QUERY opcode is "malformed" and dropped by the caller. Names are read
 * without compression (a pointer cannot occur in the first name of a
 * message: there is nothing before it to point to). */
#include "dns/dns_msg.h"

#include "base/assert.h"

#include <string.h>

#define HDR 12
#define FLAG_QR 0x8000u
#define FLAG_AA 0x0400u
#define FLAG_RD 0x0100u
#define FLAG_RA 0x0080u
#define OPCODE(flags) (((flags) >> 11) & 0xfu)
#define EDNS_UDP_SIZE 1232 /* what we advertise (the DNS flag day 2020 value) */
#define RCODE_BADVERS 16

static uint16_t get16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static int label_char_ok(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Reads the question name at msg[off]. Returns the offset after it, or -1. */
static long read_name(const uint8_t *msg, size_t len, size_t off, struct s5_dns_query *q) {
  size_t wire = 0;
  q->name_len = 0;
  q->name_ok = 1;
  for (;;) {
    if (off >= len) return -1;
    uint8_t l = msg[off++];
    wire += 1u + l;
    if (wire > 255) return -1; /* RFC 1035 2.3.4 */
    if (l == 0) break;
    if ((l & 0xc0) != 0) return -1; /* pointer or reserved label type */
    if (off + l > len) return -1;
    if (q->name_len > 0) q->name[q->name_len++] = '.';
    for (size_t i = 0; i < l; i++) {
      uint8_t c = msg[off + i];
      if (c >= 'A' && c <= 'Z') c = (uint8_t)(c - 'A' + 'a');
      if (!label_char_ok(c)) q->name_ok = 0;
      /* the wire limit keeps this within S5_DNS_NAME_MAX */
      q->name[q->name_len++] = (char)c;
    }
    off += l;
  }
  S5_ASSERT(q->name_len <= S5_DNS_NAME_MAX); /* the wire limit, not the buffer, stopped it */
  q->name[q->name_len] = '\0';
  return (long)off;
}

enum s5_dns_parse s5_dns_parse_query(const uint8_t *msg, size_t len, struct s5_dns_query *q) {
  memset(q, 0, sizeof *q);
  if (len < HDR) return S5_DNS_MALFORMED;
  q->id = get16(msg);
  q->flags = get16(msg + 2);
  if (q->flags & FLAG_QR) return S5_DNS_MALFORMED; /* a response: never answer it */
  if (OPCODE(q->flags) != 0) return S5_DNS_NOT_QUERY;
  unsigned qd = get16(msg + 4), an = get16(msg + 6), ns = get16(msg + 8), ar = get16(msg + 10);
  if (qd != 1 || an != 0 || ns != 0) return S5_DNS_MALFORMED;

  long off = read_name(msg, len, HDR, q);
  if (off < 0 || (size_t)off + 4 > len) return S5_DNS_MALFORMED;
  q->qtype = get16(msg + off);
  q->qclass = get16(msg + off + 2);
  off += 4;
  q->question_len = (size_t)off - HDR;
  S5_ASSERT(q->question_len <= S5_DNS_NAME_MAX + 2 + 4);

  /* The additional section: an OPT record (root name, type 41) is all a
   * stub sends; anything else there (TSIG, ...) is ignored, not parsed. */
  if (ar > 0 && (size_t)off + 11 <= len && msg[off] == 0 && get16(msg + off + 1) == S5_DNS_TYPE_OPT) {
    size_t rdlen = get16(msg + off + 9);
    if ((size_t)off + 11 + rdlen > len) return S5_DNS_MALFORMED;
    q->has_opt = 1;
    q->edns_version = msg[off + 6]; /* TTL field: EXT-RCODE, VERSION, DO+Z */
  }
  return S5_DNS_QUERY;
}

unsigned s5_dns_answer_plan(enum s5_dns_parse r, struct s5_dns_query *q, int aaaa, unsigned *rtype) {
  *rtype = 0;
  if (r == S5_DNS_NOT_QUERY) {
    q->question_len = 0;
    q->has_opt = 0;
    return S5_DNS_RCODE_NOTIMP;
  }
  if (q->qclass != S5_DNS_CLASS_IN) return S5_DNS_RCODE_NOTIMP;
  if (!q->name_ok) return S5_DNS_RCODE_REFUSED;
  if (q->name_len > 0 && (q->qtype == S5_DNS_TYPE_A || (q->qtype == S5_DNS_TYPE_AAAA && aaaa)))
    *rtype = q->qtype;
  return S5_DNS_RCODE_NOERROR;
}

int s5_dns_build_response(uint8_t *out, size_t cap, const uint8_t *msg, const struct s5_dns_query *q,
                          unsigned rcode, const uint8_t *addr, size_t addr_len, uint32_t ttl) {
  int badvers = q->has_opt && q->edns_version != 0;
  if (addr != NULL && addr_len != 4 && addr_len != 16) return -1;
  size_t need =
    HDR + q->question_len + (addr != NULL && !badvers ? 12 + addr_len : 0) + (q->has_opt ? 11 : 0);
  if (cap < need) return -1;

  unsigned flags = FLAG_QR | (q->flags & (0xfu << 11)) | FLAG_AA | (q->flags & FLAG_RD) | FLAG_RA;
  if (badvers) {
    addr = NULL;
    rcode = RCODE_BADVERS; /* upper 8 bits go into the OPT record, lower 4 here (0) */
  }
  put16(out, q->id);
  put16(out + 2, flags | (rcode & 0xfu));
  put16(out + 4, q->question_len > 0 ? 1 : 0);
  put16(out + 6, addr != NULL ? 1 : 0);
  put16(out + 8, 0);
  put16(out + 10, q->has_opt ? 1 : 0);
  size_t n = HDR;
  memcpy(out + n, msg + HDR, q->question_len);
  n += q->question_len;
  if (addr != NULL) {
    put16(out + n, 0xc000 | HDR); /* the name: a pointer to the question's */
    put16(out + n + 2, addr_len == 4 ? S5_DNS_TYPE_A : S5_DNS_TYPE_AAAA);
    put16(out + n + 4, S5_DNS_CLASS_IN);
    put16(out + n + 6, ttl >> 16);
    put16(out + n + 8, ttl & 0xffff);
    put16(out + n + 10, (unsigned)addr_len);
    memcpy(out + n + 12, addr, addr_len);
    n += 12 + addr_len;
  }
  if (q->has_opt) {
    out[n] = 0; /* root */
    put16(out + n + 1, S5_DNS_TYPE_OPT);
    put16(out + n + 3, EDNS_UDP_SIZE);  /* CLASS: our UDP payload size */
    out[n + 5] = (uint8_t)(rcode >> 4); /* EXT-RCODE */
    out[n + 6] = 0;                     /* VERSION */
    put16(out + n + 7, 0);              /* DO = 0, Z */
    put16(out + n + 9, 0);              /* RDLEN */
    n += 11;
  }
  S5_ASSERT(n == need);
  return (int)n;
}

size_t s5_dns_frame_kept(const struct s5_dns_frame *f) {
  return f->have < sizeof f->msg ? f->have : sizeof f->msg;
}

size_t s5_dns_frame_feed(struct s5_dns_frame *f, const uint8_t *in, size_t n) {
  if (f->done) {
    f->done = 0;
    f->prefix_have = 0;
    f->have = 0;
  }
  size_t used = 0;
  while (f->prefix_have < 2 && used < n) f->prefix[f->prefix_have++] = in[used++];
  if (f->prefix_have < 2) return used;
  f->len = get16(f->prefix);
  size_t take = n - used < (size_t)(f->len - f->have) ? n - used : (size_t)(f->len - f->have);
  size_t keep = f->have < sizeof f->msg ? sizeof f->msg - f->have : 0;
  if (keep > 0) memcpy(f->msg + f->have, in + used, take < keep ? take : keep);
  f->have = (uint16_t)(f->have + take);
  S5_ASSERT(f->have <= f->len && used + take <= n);
  f->done = f->have == f->len;
  return used + take;
}
