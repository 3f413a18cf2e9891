#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""UDP and DNS client for the s5tund end-to-end tests (stdlib only).

  udpclient.py echo --host H --port P [--port P2 ...] [--sizes 1,100,...]
               [--sources N] [--rounds R] [--timeout S] [--retry-for S]
      N sockets (client source ports) at once, each sending every size to
      every port R times; each reply must come back byte for byte from
      exactly (H, port). Lost datagrams are resent (UDP may drop), bounded.
      --tries T: at most T sends of each datagram (default: until
      --retry-for runs out), so that a refused association fails the echo.
  udpclient.py send --host H --port P [--count N] [--gap S] [--size B]
      Sends N datagrams from one socket, S seconds apart; expects nothing.
  udpclient.py dns --server S --name NAME [--type A|AAAA|TXT|...]
               [--expect-in CIDR | --expect ADDR | --expect-empty]
               [--expect-rcode N] [--print-address]
      One query; checks the answer; prints the first address with
      --print-address.
  udpclient.py dns-garbage --server S
      Sends malformed queries (truncated, QR set, bad labels, pointers,
      random bytes); succeeds when none gets an answer and a valid query
      afterwards does.
  udpclient.py expect-unreachable --host H --port P
      Sends one datagram; succeeds on ICMP port unreachable (ECONNREFUSED
      on the connected socket).
  udpclient.py ping --host H [--expect-reply | --expect-none]
      One ICMP echo (datagram ICMP socket); checks whether a reply came.

Exit status 0 when every check passed, 1 otherwise; the last line says why.
"""

import argparse
import ipaddress
import os
import random
import select
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True


def log(msg):
    print("udpclient: " + msg, flush=True)


def family(host):
    return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET


def norm(addr):
    return (ipaddress.ip_address(addr[0].split("%")[0]), addr[1])


# ---------------------------------------------------------------- echo

def echo_source(args, idx, sizes, errors, stats):
    rng = random.Random(args.seed * 1000 + idx)
    s = socket.socket(family(args.host), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("::" if family(args.host) == socket.AF_INET6 else "0.0.0.0", 0))
    want_host = ipaddress.ip_address(args.host)
    deadline = time.monotonic() + args.retry_for
    sent = set()
    try:
        for r in range(args.rounds):
            for port in args.port:
                for size in sizes:
                    tag = struct.pack("!HHH", idx, r, port)
                    body = tag + rng.randbytes(max(0, size - len(tag)))
                    msg = body[:size]
                    sent.add(msg)
                    tries = 0
                    while True:
                        tries += 1
                        s.sendto(msg, (args.host, port))
                        got = None
                        end = time.monotonic() + args.timeout
                        while time.monotonic() < end:
                            rd, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
                            if not rd:
                                break
                            data, peer = s.recvfrom(65535)
                            if data == msg:
                                got = (data, peer)
                                break
                            if args.strict and data not in sent:
                                errors.append("source %d: got %d bytes that were never sent: %r"
                                              % (idx, len(data), data[:24]))
                                return
                            # a late duplicate of an earlier datagram: ignore
                        if got is not None:
                            break
                        if time.monotonic() >= deadline or (args.tries and tries >= args.tries):
                            errors.append("source %d: %d-byte datagram to port %d: no echo after "
                                          "%d tries" % (idx, size, port, tries))
                            return
                    stats["resent"] += tries - 1
                    src = norm(got[1])
                    if src != (want_host, port):
                        errors.append("source %d: echo of %d bytes came from %s, expected %s port %d"
                                      % (idx, size, got[1], args.host, port))
                        return
                    stats["datagrams"] += 1
                    stats["bytes"] += size
    except OSError as e:
        errors.append("source %d: %s: %s" % (idx, type(e).__name__, e))
    finally:
        s.close()


def cmd_echo(args):
    sizes = [int(x) for x in args.sizes.split(",")]
    errors = []
    stats = {"datagrams": 0, "bytes": 0, "resent": 0}
    threads = [threading.Thread(target=echo_source, args=(args, i, sizes, errors, stats), daemon=True)
               for i in range(args.sources)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        log("echo FAILED: %d error(s); first: %s" % (len(errors), "; ".join(errors[:3])))
        return 1
    log("echo %s ports %s ok: %d sources, %d datagrams (%d bytes, sizes %s) matched byte for byte, "
        "%d resent" % (args.host, ",".join(map(str, args.port)), args.sources, stats["datagrams"],
                       stats["bytes"], args.sizes, stats["resent"]))
    return 0


def cmd_send(args):
    s = socket.socket(family(args.host), socket.SOCK_DGRAM)
    try:
        for i in range(args.count):
            if i:
                time.sleep(args.gap)
            s.sendto(os.urandom(args.size), (args.host, args.port))
    finally:
        s.close()
    log("sent %d datagrams of %d bytes to %s port %d" % (args.count, args.size, args.host, args.port))
    return 0


# ---------------------------------------------------------------- DNS

TYPES = {"A": 1, "NS": 2, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33, "HTTPS": 65, "ANY": 255}


def dns_query_bytes(qid, name, qtype, opt=False):
    hdr = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 1 if opt else 0)
    q = b""
    for label in name.strip(".").split("."):
        if label:
            q += bytes([len(label)]) + label.encode()
    q += b"\x00" + struct.pack("!HH", qtype, 1)
    if opt:
        q += b"\x00" + struct.pack("!HHIH", 41, 1232, 0, 0)
    return hdr + q


def skip_name(msg, off):
    while True:
        l = msg[off]
        if l == 0:
            return off + 1
        if l & 0xC0 == 0xC0:
            return off + 2
        off += 1 + l


def dns_parse(msg):
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    off = 12
    for _ in range(qd):
        off = skip_name(msg, off) + 4
    answers = []
    for _ in range(an):
        off = skip_name(msg, off)
        t, c, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        answers.append((t, msg[off:off + rdlen], ttl))
        off += rdlen
    return qid, flags & 0xF, answers


def dns_exchange(server, msg, timeout, tries=5):
    s = socket.socket(family(server), socket.SOCK_DGRAM)
    try:
        for _ in range(tries):
            s.sendto(msg, (server, 53))
            rd, _, _ = select.select([s], [], [], timeout)
            if rd:
                data, _ = s.recvfrom(65535)
                return data
        return None
    finally:
        s.close()


def cmd_dns(args):
    qtype = TYPES.get(args.type.upper()) or int(args.type)
    qid = random.randrange(65536)
    reply = dns_exchange(args.server, dns_query_bytes(qid, args.name, qtype, args.edns), args.timeout)
    if reply is None:
        log("dns %s %s @%s FAILED: no answer" % (args.name, args.type, args.server))
        return 1
    rid, rcode, answers = dns_parse(reply)
    if rid != qid:
        log("dns FAILED: answer id %d, query id %d" % (rid, qid))
        return 1
    addrs = []
    for t, rdata, _ in answers:
        if t == 1 and len(rdata) == 4:
            addrs.append(str(ipaddress.IPv4Address(rdata)))
        elif t == 28 and len(rdata) == 16:
            addrs.append(str(ipaddress.IPv6Address(rdata)))
    what = "dns %s %s @%s: rcode %d, answers %s" % (args.name, args.type, args.server, rcode, addrs)
    if rcode != args.expect_rcode:
        log(what + " FAILED: expected rcode %d" % args.expect_rcode)
        return 1
    if args.expect_empty and answers:
        log(what + " FAILED: expected no answer")
        return 1
    if args.expect and args.expect not in addrs:
        log(what + " FAILED: expected %s" % args.expect)
        return 1
    if args.expect_in:
        net = ipaddress.ip_network(args.expect_in)
        if not addrs or not all(ipaddress.ip_address(a) in net for a in addrs):
            log(what + " FAILED: expected addresses in %s" % net)
            return 1
    if args.print_address:
        print(addrs[0] if addrs else "")
    log(what + " ok")
    return 0


def cmd_dns_garbage(args):
    good = dns_query_bytes(0x4242, "probe.test", 1)
    rng = random.Random(7)
    bad = [
        b"",                                   # empty
        b"\x12",                               # 1 byte
        good[:11],                             # header cut short
        good[:20],                             # name cut short
        good[:-2],                             # class cut short
        good[:2] + b"\x81\x00" + good[4:],     # QR set: a response
        good[:4] + b"\x00\x02" + good[6:],     # QDCOUNT 2
        good[:4] + b"\x00\x00" + good[6:],     # QDCOUNT 0
        good[:12] + b"\xc0\x0c" + good[-4:],   # pointer in the question
        good[:12] + b"\x40abc\x00" + good[-4:],   # reserved label type
        good[:12] + b"\x3f" + b"a" * 10,       # label longer than the rest
        good[:12] + (b"\x3f" + b"a" * 63) * 5 + b"\x00" + good[-4:],   # name > 255
        good[:-4] + b"\x00\x01",               # no class
        good[:10] + b"\x00\x01" + good[12:] + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\xff\xff",  # OPT RDLEN beyond the end
    ] + [rng.randbytes(rng.randrange(1, 600)) for _ in range(50)]
    s = socket.socket(family(args.server), socket.SOCK_DGRAM)
    answered = 0
    try:
        for m in bad:
            # random bytes that happen to form a valid query are fine to answer
            s.sendto(m, (args.server, 53))
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            rd, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
            if not rd:
                break
            data, _ = s.recvfrom(65535)
            if data[:2] == good[:2]:   # every crafted one carries the good query's id
                answered += 1
    finally:
        s.close()
    if answered:
        log("dns-garbage FAILED: %d malformed queries were answered" % answered)
        return 1
    reply = dns_exchange(args.server, good, args.timeout)
    if reply is None:
        log("dns-garbage FAILED: no answer to a valid query after the garbage")
        return 1
    log("dns-garbage ok: %d malformed queries sent, none answered (the well-formed-prefix "
        "ones), a valid query is answered afterwards" % len(bad))
    return 0


# ---------------------------------------------------------------- ICMP

def cmd_expect_unreachable(args):
    s = socket.socket(family(args.host), socket.SOCK_DGRAM)
    s.settimeout(args.timeout)
    try:
        s.connect((args.host, args.port))
        for _ in range(3):
            s.send(b"anyone there?")
            try:
                s.recv(65535)
                log("expect-unreachable FAILED: got an answer")
                return 1
            except ConnectionRefusedError:
                log("expect-unreachable %s port %d ok: ICMP port unreachable" % (args.host, args.port))
                return 0
            except socket.timeout:
                continue
    finally:
        s.close()
    log("expect-unreachable FAILED: no ICMP port unreachable within %d tries" % 3)
    return 1


def inet_checksum(b):
    if len(b) % 2:
        b += b"\x00"
    total = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def cmd_ping(args):
    """Raw ICMP socket (we are root): IPv4 needs our checksum and delivers
    the IP header; ICMPv6 has both done by the kernel."""
    v6 = family(args.host) == socket.AF_INET6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    s = socket.socket(family(args.host), socket.SOCK_RAW, proto)
    ident = os.getpid() & 0xFFFF
    got = False
    # Three tries; expecting none, they share one --timeout (a reply through
    # the tunnel takes milliseconds), so that silence costs --timeout once.
    wait = args.timeout / 3 if args.expect_none else args.timeout
    try:
        for seq in range(3):
            body = struct.pack("!HH", ident, seq) + b"s5tund ping"
            pkt = struct.pack("!BBH", 128 if v6 else 8, 0, 0) + body
            if not v6:
                pkt = pkt[:2] + struct.pack("!H", inet_checksum(pkt)) + pkt[4:]
            s.sendto(pkt, (args.host, 0))
            end = time.monotonic() + wait
            while time.monotonic() < end and not got:
                rd, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
                if not rd:
                    break
                data, _ = s.recvfrom(2048)
                icmp = data if v6 else data[(data[0] & 0x0F) * 4:]
                if len(icmp) >= 8 and icmp[0] == (129 if v6 else 0) and icmp[4:8] == body[:4]:
                    got = True
            if got:
                break
    finally:
        s.close()
    if args.expect_reply and not got:
        log("ping %s FAILED: no echo reply" % args.host)
        return 1
    if args.expect_none and got:
        log("ping %s FAILED: got an echo reply, expected none" % args.host)
        return 1
    log("ping %s ok: %s" % (args.host, "echo reply" if got else "no reply"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("echo")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, action="append", required=True)
    p.add_argument("--sizes", default="1,2,100,512,1400,1472,4000,8000")
    p.add_argument("--sources", type=int, default=1)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--retry-for", type=float, default=30.0)
    p.add_argument("--tries", type=int, default=0)
    p.add_argument("--strict", action="store_true",
                   help="fail on any datagram that is not a copy of one sent")
    p.set_defaults(fn=cmd_echo)
    p = sub.add_parser("send")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--gap", type=float, default=0.1)
    p.add_argument("--size", type=int, default=100)
    p.set_defaults(fn=cmd_send)

    p = sub.add_parser("dns")
    p.add_argument("--server", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--type", default="A")
    p.add_argument("--edns", action="store_true")
    p.add_argument("--expect")
    p.add_argument("--expect-in")
    p.add_argument("--expect-empty", action="store_true")
    p.add_argument("--expect-rcode", type=int, default=0)
    p.add_argument("--print-address", action="store_true")
    p.set_defaults(fn=cmd_dns)
    p = sub.add_parser("dns-garbage")
    p.add_argument("--server", required=True)
    p.set_defaults(fn=cmd_dns_garbage)
    p = sub.add_parser("expect-unreachable")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.set_defaults(fn=cmd_expect_unreachable)
    p = sub.add_parser("ping")
    p.add_argument("--host", required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--expect-reply", action="store_true")
    g.add_argument("--expect-none", action="store_true")
    p.set_defaults(fn=cmd_ping)
    args = ap.parse_args()
    sys.exit(args.fn(args))


if __name__ == "__main__":
    main()
