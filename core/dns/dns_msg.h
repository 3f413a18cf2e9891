/* SPDX-License-Identifier: MIT */
/* DNS messages for the mapped resolver (RFC 1035, RFC 6891 for EDNS):
 * parsing a query and building its answer, and cutting a TCP byte stream
 * into messages (RFC 7766). Pure functions over byte buffers, no I/O, no
 * allocation, so they can be fuzzed on their own. */
#ifndef S5_CORE_DNS_MSG_H
#define S5_CORE_DNS_MSG_H

#include <stddef.h>
#include <stdint.h>

#define S5_DNS_TYPE_A 1
#define S5_DNS_TYPE_AAAA 28
#define S5_DNS_TYPE_OPT 41
#define S5_DNS_CLASS_IN 1

#define S5_DNS_RCODE_NOERROR 0
#define S5_DNS_RCODE_FORMERR 1
#define S5_DNS_RCODE_SERVFAIL 2
#define S5_DNS_RCODE_NXDOMAIN 3
#define S5_DNS_RCODE_NOTIMP 4
#define S5_DNS_RCODE_REFUSED 5

/* Longest name in text form without the final dot (RFC 1035: 255 bytes on
 * the wire, which is 253 characters of text). */
#define S5_DNS_NAME_MAX 253

/* Our answers fit in this: header, question, one AAAA (or A) record, an
 * OPT record. */
#define S5_DNS_ANSWER_MAX (12 + (S5_DNS_NAME_MAX + 2) + 4 + 28 + 11)

/* Queries are small; the part of a message beyond this is never needed
 * (header, one question of at most 259 bytes, the start of an OPT record). */
#define S5_DNS_QUERY_READ 1024
/* A question (the longest name, its type and class) fits what is read. */
_Static_assert(12 + (S5_DNS_NAME_MAX + 2) + 4 <= S5_DNS_QUERY_READ,
               "a query's question fits S5_DNS_QUERY_READ");

/* What parsing a query found. */
enum s5_dns_parse {
  S5_DNS_QUERY = 0,      /* a standard query with one question: answer it */
  S5_DNS_NOT_QUERY = 1,  /* a well-formed header with OPCODE != QUERY: answer NOTIMP */
  S5_DNS_MALFORMED = -1, /* not a query we can answer: drop it */
};

struct s5_dns_query {
  uint16_t id;
  uint16_t flags; /* as received */
  uint16_t qtype, qclass;
  size_t question_len;            /* bytes of the question (name, type, class) after the header */
  char name[S5_DNS_NAME_MAX + 1]; /* lowercase text, no final dot; "" for the root */
  size_t name_len;
  int name_ok; /* every label is made of [a-z0-9_-] (so it can go to a proxy as text) */
  int has_opt; /* the query carried an EDNS OPT record */
  uint8_t edns_version;
};

/* Parses the len bytes of a DNS message sent to the resolver. */
enum s5_dns_parse s5_dns_parse_query(const uint8_t *msg, size_t len, struct s5_dns_query *q);

/* The mapped resolver's choice for a parsed query (r is not MALFORMED):
 * returns the RCODE and sets *rtype to the record to answer with,
 * S5_DNS_TYPE_A, S5_DNS_TYPE_AAAA, or 0 for none (AAAA only when aaaa is
 * set: an IPv6 pool exists; otherwise "no data"). For S5_DNS_NOT_QUERY it
 * clears q's question and OPT: that answer is the header alone. One place
 * for this choice, used by core/dns/dns.c and the fuzz target's oracle. */
unsigned s5_dns_answer_plan(enum s5_dns_parse r, struct s5_dns_query *q, int aaaa, unsigned *rtype);

/* Builds the response to q (msg is the query it was parsed from; its
 * question is copied as it was, letter case included) into out. rcode is a
 * 4-bit RCODE. addr (network order) adds one record with the given ttl: an
 * A record when addr_len is 4, AAAA when it is 16; NULL gives no answer. A query with OPT gets an OPT back (and
 * BADVERS if it asked for an EDNS version other than 0). For
 * S5_DNS_NOT_QUERY, q->question_len must be 0: the header alone is sent.
 * Returns the length, or -1 when out is too small. */
int s5_dns_build_response(uint8_t *out, size_t cap, const uint8_t *msg, const struct s5_dns_query *q,
                          unsigned rcode, const uint8_t *addr, size_t addr_len, uint32_t ttl);

/* A TCP stream of messages, each after a 2-byte length (RFC 1035 4.2.2,
 * RFC 7766): one message at a time, of which only the first
 * S5_DNS_QUERY_READ bytes are kept (the rest is counted and skipped, as a
 * datagram's is), so a reader's memory does not depend on what it is sent.
 * Zero it to start. */
struct s5_dns_frame {
  uint8_t msg[S5_DNS_QUERY_READ]; /* the message's first bytes */
  uint16_t len;                   /* its length, from the prefix */
  uint16_t have;                  /* bytes of it received (kept or skipped) */
  uint8_t prefix[2];
  uint8_t prefix_have; /* bytes of the prefix received */
  uint8_t done;        /* a whole message is in: the next feed starts another */
};
/* A message's length is 16 bits on the wire; what is kept of it, less. */
_Static_assert(S5_DNS_QUERY_READ <= 0xffff, "struct s5_dns_frame: kept bytes counted in 16 bits");

/* Takes bytes of the stream, stopping at the end of a message. Returns how
 * many of the n it used; f->done tells whether a message is complete: its
 * first s5_dns_frame_kept(f) bytes are in f->msg (a length of 0 is a
 * message too, empty, and the caller's to refuse). */
size_t s5_dns_frame_feed(struct s5_dns_frame *f, const uint8_t *in, size_t n);
size_t s5_dns_frame_kept(const struct s5_dns_frame *f);

#endif
