#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""DNS over TCP client for the s5tund end-to-end tests (stdlib only):
messages after a 2-byte length (RFC 7766), several on one connection.

  dnstcp.py query --server S --names N1,N2,... [--type A|AAAA]
            [--pieces] [--pad N] [--expect-in CIDR | --expect ADDR]
      One connection; every query written at once (pipelined), or with
      --pieces in pieces of 1 to 3 bytes; each answer must come in order
      (the id of its query), NOERROR with an address as expected. Prints
      "NAME ADDRESS" per answer. --pad N: the first query is padded with
      zero bytes to N bytes (up to 65535, the largest message). Then the
      client closes; the server must close too (EOF, not a reset).
  dnstcp.py malformed --server S
      A query, a 5-byte message that is no query, another query: the first
      is answered, then the connection ends, the third never answered.
  dnstcp.py idle --server S --min SECONDS --max SECONDS
      A query, then nothing: the server must close the connection (EOF)
      between --min and --max seconds after the answer.
  dnstcp.py flood --server S [--count N] [--stall S] [--max-unread B]
      A small receive buffer; N queries written by a thread while nobody
      reads the answers for S seconds: the server must stop reading, so it
      takes (acknowledges) at most B bytes meanwhile (backpressure); then
      every answer must come, in order, and the connection close cleanly.
  dnstcp.py many --server S --count N [--also-from ADDR]
      Opens N connections at once, each answering one query; prints
      "accepted A refused R" (refused: ECONNREFUSED, the server's RST).
      --also-from: while they are open, a query on a connection from ADDR
      (another client address) must be answered.
  dnstcp.py trickle --server S --count N --seconds T [--also-from ADDR] [--same-after S]
      N connections that send the first byte of a message, then one more
      byte a second, never a whole message, for at most T seconds; prints
      "held H closed C refused R" (held: still open at the end). With
      --also-from, a query from ADDR once they are all open must be answered.

Exit status 0 when every check passed, 1 otherwise; the last line says why.
"""

import argparse
import fcntl
import ipaddress
import os
import random
import socket
import struct
import sys
import termios
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from udpclient import TYPES, dns_parse, dns_query_bytes, family  # noqa: E402


class Fail(Exception):
    pass


def log(msg):
    print("dnstcp: " + msg, flush=True)


def frame(msg):
    return struct.pack("!H", len(msg)) + msg


def connect(args, source=None):
    s = socket.create_connection((args.server, 53), timeout=args.timeout,
                                 source_address=(source, 0) if source else None)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_exact(s, n):
    """n bytes, or what came before the end of the connection."""
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def read_message(s):
    """The next message, or None at the end of the connection."""
    hdr = read_exact(s, 2)
    if len(hdr) < 2:
        return None
    (n,) = struct.unpack("!H", hdr)
    msg = read_exact(s, n)
    if len(msg) < n:
        raise Fail("connection ended inside a message (%d of %d bytes)" % (len(msg), n))
    return msg


def expect_eof(s, what):
    try:
        data = s.recv(65535)
    except ConnectionResetError:
        raise Fail("%s: the server reset the connection instead of closing it" % what)
    if data:
        raise Fail("%s: %d more bytes where the end was expected" % (what, len(data)))


def check_answer(args, name, qid, msg):
    rid, rcode, answers = dns_parse(msg)
    if rid != qid:
        raise Fail("answer for %s has id %d, expected %d (out of order?)" % (name, rid, qid))
    addrs = [str(ipaddress.ip_address(rd)) for t, rd, _ in answers if t in (1, 28) and len(rd) in (4, 16)]
    if rcode != 0 or not addrs:
        raise Fail("%s: rcode %d, answers %s" % (name, rcode, addrs))
    if args.expect and args.expect not in addrs:
        raise Fail("%s: %s, expected %s" % (name, addrs, args.expect))
    if args.expect_in and not all(ipaddress.ip_address(a) in ipaddress.ip_network(args.expect_in) for a in addrs):
        raise Fail("%s: %s, expected addresses in %s" % (name, addrs, args.expect_in))
    return addrs[0]


def send_pieces(s, data, rng):
    off = 0
    while off < len(data):
        n = rng.randint(1, 3)
        s.sendall(data[off:off + n])
        off += n
        time.sleep(0.001)


def cmd_query(args):
    qtype = TYPES[args.type.upper()]
    names = args.names.split(",")
    rng = random.Random(args.seed)
    ids = [rng.randrange(65536) for _ in names]
    msgs = [dns_query_bytes(i, n, qtype) for i, n in zip(ids, names)]
    if args.pad:
        msgs[0] += bytes(args.pad - len(msgs[0]))
    data = b"".join(frame(m) for m in msgs)
    with connect(args) as s:
        if args.pieces:
            send_pieces(s, data, rng)
        else:
            s.sendall(data)
        for name, qid in zip(names, ids):
            msg = read_message(s)
            if msg is None:
                raise Fail("connection ended before the answer for %s" % name)
            print("%s %s" % (name, check_answer(args, name, qid, msg)), flush=True)
        s.shutdown(socket.SHUT_WR)
        expect_eof(s, "after the client's FIN")
    log("%d queries on one connection (%s%s) answered in order, then a clean close" %
        (len(names), "pieces of 1-3 bytes" if args.pieces else "pipelined",
         ", the first padded to %d bytes" % args.pad if args.pad else ""))


def cmd_malformed(args):
    good1, good2 = dns_query_bytes(0x1111, "one.test", 1), dns_query_bytes(0x2222, "two.test", 1)
    with connect(args) as s:
        s.sendall(frame(good1) + frame(b"\x12\x34\x00\x00\x00") + frame(good2))
        msg = read_message(s)
        if msg is None or dns_parse(msg)[0] != 0x1111:
            raise Fail("the query before the malformed message got no answer")
        if read_message(s) is not None:
            raise Fail("an answer after the malformed message")
    log("malformed message: the query before it answered, then the connection closed")


def cmd_idle(args):
    with connect(args) as s:
        s.settimeout(args.max + 5)
        s.sendall(frame(dns_query_bytes(0x3333, "idle.test", 1)))
        if read_message(s) is None:
            raise Fail("no answer")
        t0 = time.monotonic()
        expect_eof(s, "idle")
        took = time.monotonic() - t0
    if not args.min <= took <= args.max:
        raise Fail("closed %.1f s after the answer, expected %g..%g s" % (took, args.min, args.max))
    log("idle connection closed by the server after %.1f s" % took)


def cmd_flood(args):
    data = b"".join(frame(dns_query_bytes(i & 0xFFFF, "target.test", 1)) for i in range(args.count))
    s = socket.socket(family(args.server), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)   # before connect: the window follows
    s.settimeout(args.timeout)
    s.connect((args.server, 53))
    sent, errors = [0], []

    def writer():
        try:
            while sent[0] < len(data):
                sent[0] += s.send(data[sent[0]:sent[0] + 4096])
        except OSError as e:
            errors.append(e)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    time.sleep(args.stall)
    # What the server took (acknowledged) is what was written less what
    # still waits in our send queue (SIOCOUTQ: unsent and unacknowledged).
    queued = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
    taken = sent[0] - queued
    if taken > args.max_unread:
        raise Fail("the server took %d of %d bytes while no answer was read (at most %d expected)"
                   % (taken, len(data), args.max_unread))
    with s:
        for i in range(args.count):
            msg = read_message(s)
            if msg is None or dns_parse(msg)[0] != i & 0xFFFF:
                raise Fail("answer %d of %d missing or out of order" % (i, args.count))
        t.join()
        if errors:
            raise Fail("writing: %s" % errors[0])
        s.shutdown(socket.SHUT_WR)
        expect_eof(s, "after the client's FIN")
    log("flood: the server took %d bytes while its answers were not read, then all %d queries (%d bytes) "
        "answered in order" % (taken, args.count, len(data)))


def also_from(args):
    if not args.also_from:
        return
    with connect(args, args.also_from) as s:
        s.sendall(frame(dns_query_bytes(0x4242, "other.test", 1)))
        msg = read_message(s)
        if msg is None or dns_parse(msg)[0] != 0x4242:
            raise Fail("a query from %s got no answer while the others were open" % args.also_from)
    log("a query from %s answered while the others were open" % args.also_from)


def cmd_trickle(args):
    held, refused, closed = [], 0, 0
    msg = frame(dns_query_bytes(0x5151, "trickle.test", 1))
    for _ in range(args.count):
        try:
            s = connect(args)
        except ConnectionRefusedError:
            refused += 1
            continue
        s.setblocking(False)
        held.append([s, 1])
        s.send(msg[:1])
    also_from(args)
    if args.same_after:
        # Another application of the same host (the same address): its query
        # takes the slot of a stuck connection instead of being refused.
        time.sleep(args.same_after)
        try:
            with connect(args) as s:
                s.sendall(frame(dns_query_bytes(0x4343, "same.test", 1)))
                answer = read_message(s)
        except OSError as e:
            raise Fail("a query from the same address while its slots were stuck: %s" % e)
        if answer is None or dns_parse(answer)[0] != 0x4343:
            raise Fail("a query from the same address while its slots were stuck got no answer")
        log("a query from the same address answered while its slots were stuck")
    end = time.monotonic() + args.seconds
    def step(h):   # False once the server closed or reset it
        s, sent = h
        try:
            if s.recv(1) == b"":
                return False
        except BlockingIOError:
            pass
        if sent < len(msg) - 1:
            s.send(msg[sent:sent + 1])
            h[1] += 1
        return True

    while held and time.monotonic() < end:
        time.sleep(1)
        for h in list(held):
            try:
                alive = step(h)
            except BlockingIOError:
                alive = True
            except OSError:
                alive = False
            if not alive:
                closed += 1
                held.remove(h)
                h[0].close()
    for s, _ in held:
        s.close()
    print("held %d closed %d refused %d" % (len(held), closed, refused), flush=True)


def cmd_many(args):
    held, refused = [], 0
    try:
        for i in range(args.count):
            try:
                s = connect(args)
            except ConnectionRefusedError:
                refused += 1
                continue
            held.append(s)
            s.sendall(frame(dns_query_bytes(i & 0xFFFF, "many.test", 1)))
        also_from(args)
        for i, s in enumerate(held):
            msg = read_message(s)
            if msg is None:
                raise Fail("accepted connection %d of %d got no answer" % (i, len(held)))
    finally:
        for s in held:
            s.close()
    print("accepted %d refused %d" % (len(held), refused), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("query")
    p.add_argument("--server", required=True)
    p.add_argument("--names", required=True)
    p.add_argument("--type", default="A")
    p.add_argument("--pieces", action="store_true")
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--expect")
    p.add_argument("--expect-in")
    p.set_defaults(fn=cmd_query)
    p = sub.add_parser("malformed")
    p.add_argument("--server", required=True)
    p.set_defaults(fn=cmd_malformed)
    p = sub.add_parser("idle")
    p.add_argument("--server", required=True)
    p.add_argument("--min", type=float, required=True)
    p.add_argument("--max", type=float, required=True)
    p.set_defaults(fn=cmd_idle)
    p = sub.add_parser("flood")
    p.add_argument("--server", required=True)
    p.add_argument("--count", type=int, default=10000)
    p.add_argument("--stall", type=float, default=2.0)
    p.add_argument("--max-unread", type=int, default=128 * 1024)
    p.set_defaults(fn=cmd_flood)
    p = sub.add_parser("many")
    p.add_argument("--server", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--also-from")
    p.set_defaults(fn=cmd_many)
    p = sub.add_parser("trickle")
    p.add_argument("--server", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--also-from")
    p.add_argument("--same-after", type=float, default=0)
    p.set_defaults(fn=cmd_trickle)
    args = ap.parse_args()
    try:
        args.fn(args)
    except (Fail, OSError) as e:
        log("%s FAILED: %s" % (args.cmd, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
