/* SPDX-License-Identifier: MIT */
/* A destination's name from a flow's first bytes, for flows whose address
 * was not mapped ([sniff]): the server_name of a TLS ClientHello, the Host
 * of an HTTP request, the server_name in a QUIC Initial's ClientHello.
 * Parsers only: no I/O, no allocation in TLS and HTTP, every length checked
 * against what was given. The caller holds the bytes (at most
 * S5_SNIFF_HOLD_MAX) and calls again with more while the answer is MORE.
 *
 *   s5_sniff_tls    the client's first TCP bytes, a ClientHello's SNI
 *   s5_sniff_http   the client's first TCP bytes, an HTTP/1 Host
 *   s5_quic_sniff_* a new UDP association's first datagrams, QUIC Initials
 *
 * A name found is lower-case, a valid host name (letters, digits, '-',
 * '.', '_'; labels of 1..63, 253 in all), NUL-terminated, without a port
 * or a trailing dot; an address literal is not a name (NONE): a numeric
 * last label, or anything inet_aton() takes ("0x7f000001"). name is
 * written only as scratch unless the answer is FOUND. MORE is never given
 * for S5_SNIFF_HOLD_MAX bytes or more, and an answer other than MORE does
 * not change with more bytes (fuzz_sniff_* check both). The TLS and HTTP
 * parsers keep no state: each call parses all len bytes again (a
 * ClientHello in about 0.06 us, test/bench/sniffbench.c). */
#ifndef S5_CORE_SNIFF_H
#define S5_CORE_SNIFF_H

#include <stddef.h>
#include <stdint.h>

#define S5_SNIFF_NAME_MAX 253 /* without the NUL */
/* The client bytes a sniffing session holds at most: a ClientHello of a
 * post-quantum key share (1.8 KB) with room; beyond it, NONE. */
#define S5_SNIFF_HOLD_MAX 8192

enum s5_sniff {
  S5_SNIFF_MORE,  /* not decided yet: call again with more bytes */
  S5_SNIFF_FOUND, /* name filled in */
  S5_SNIFF_NONE,  /* not this protocol, no name in it, or malformed: route by address */
};

/* How a flow's name was learnt, for the logs, --connections and counters. */
enum s5_name_src {
  S5_NAME_NONE,   /* no name: routed by address */
  S5_NAME_MAPPED, /* the mapped DNS table */
  S5_NAME_TLS,
  S5_NAME_HTTP,
  S5_NAME_QUIC,
};
const char *s5_name_src_str(enum s5_name_src s); /* "mapped", "tls", ... ("" for NONE) */

/* TLS: buf holds the first len bytes the client sent. MORE until the
 * records carrying the whole ClientHello are there (it may span records
 * and segments); then FOUND with its server_name, or NONE: another record
 * type first (or between the ClientHello's fragments), an empty or
 * over-16 KB record, another handshake message, a ClientHello longer than
 * the holder, a malformed one, one without a host_name. Bytes after the
 * ClientHello are not read. */
enum s5_sniff s5_sniff_tls(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]);

/* HTTP/1.x: MORE until the request line and the headers up to Host are
 * there (or the header block's end); FOUND with Host's name (its port
 * removed), NONE for anything that is not an HTTP request with a Host. */
enum s5_sniff s5_sniff_http(const uint8_t *buf, size_t len, char name[S5_SNIFF_NAME_MAX + 1]);

/* QUIC v1 (RFC 9000/9001): one per new UDP association. Each datagram the
 * client sends is fed in, until the answer is not MORE; Initial packets of
 * the same DCID (coalesced ones too) are decrypted, their keys derived
 * from the DCID, and their CRYPTO frames laid into a buffer of
 * S5_SNIFF_HOLD_MAX at their offsets (out of order, repeated), until the
 * ClientHello at its start is whole. NONE for a datagram that is not a
 * QUIC v1 Initial of that DCID, one that does not open (a forged or
 * corrupted packet), a payload over S5_SNIFF_HOLD_MAX, a frame an Initial
 * may not carry (or CONNECTION_CLOSE), CRYPTO data beyond the buffer, and
 * a ClientHello without a name: the association is routed by address.
 * The buffers are allocated at the first Initial, freed by _free. */
struct s5_quic_sniff {
  uint8_t dcid[20];
  uint8_t dcid_len;                /* 0: no Initial seen yet */
  uint16_t have;                   /* CRYPTO bytes contiguous from offset 0 */
  uint8_t *crypto;                 /* S5_SNIFF_HOLD_MAX bytes, allocated at the first Initial */
  uint8_t *seen;                   /* a bit per byte of crypto received (out of order) */
  uint8_t key[16], iv[12], hp[16]; /* the client's Initial keys, from dcid */
};
void s5_quic_sniff_init(struct s5_quic_sniff *q);
enum s5_sniff s5_quic_sniff_feed(struct s5_quic_sniff *q, const uint8_t *pkt, size_t len,
                                 char name[S5_SNIFF_NAME_MAX + 1]);
void s5_quic_sniff_free(struct s5_quic_sniff *q);

#endif
