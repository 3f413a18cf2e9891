#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""UDP burst and GSO-boundary client for the s5tund end-to-end tests
(stdlib only; the target is udptarget.py, which echoes every datagram).

  udpburst.py burst --host H --port P [--count N] [--size B] [--window W]
      N numbered datagrams of B bytes through one socket (one association),
      at most W unanswered at a time (the pacing: the proxy keeps up); every
      echo must come back byte for byte and in order. Complete and in order
      here means the target received them so.
  udpburst.py gso --host H --port P
      Datagrams of mixed sizes sent together: with UDP_SEGMENT (runs of one
      size and a short last one: one GSO packet on the TUN) and with one
      sendmmsg() of mixed sizes; each echo must be exactly one datagram as
      sent, in order, both ways.

--timeout S bounds every wait for an echo (nothing hangs); a datagram not
echoed within it fails the run. Exit status 0 when every check passed, 1
otherwise; the last line says why.
"""

import argparse
import ctypes
import ctypes.util
import ipaddress
import socket
import struct
import sys

sys.dont_write_bytecode = True

SOL_UDP = 17
UDP_SEGMENT = 103


def log(msg):
    print("udpburst: " + msg, flush=True)


def connect(host, port, timeout):
    fam = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.connect((host, port))
    s.settimeout(timeout)
    return s


def payload(tag, seq, size):
    """size bytes: tag (1), seq (4), then a pattern that depends on both."""
    head = struct.pack("!BI", tag, seq)
    body = bytes((seq * 7 + i + tag) & 0xFF for i in range(min(size, 256)))
    data = (head + body * (size // max(len(body), 1) + 1))[:size]
    return data if size >= 5 else head[:size]


def expect(s, want, what):
    try:
        got = s.recv(65535)
    except socket.timeout:
        raise SystemExit("udpburst: FAIL: %s: no echo of a %d-byte datagram within the bound" % (what, len(want)))
    if got != want:
        raise SystemExit("udpburst: FAIL: %s: expected %d bytes %r..., got %d bytes %r..." %
                         (what, len(want), want[:8], len(got), got[:8]))


def burst(args):
    s = connect(args.host, args.port, args.timeout)
    sent = recv = 0
    while recv < args.count:
        # One at a time until the first echo: s5tund holds only 32
        # datagrams while the association starts, as a congested network
        # would drop more.
        window = args.window if recv > 0 else 1
        while sent < args.count and sent - recv < window:
            s.send(payload(1, sent, args.size))
            sent += 1
        expect(s, payload(1, recv, args.size), "datagram %d of %d (in order)" % (recv, args.count))
        recv += 1
    log("burst %s port %d ok: %d datagrams of %d bytes, complete and in order" %
        (args.host, args.port, args.count, args.size))


def gso_send(s, seg, count, last, tag):
    """count datagrams of seg bytes and one of last bytes in one send with UDP_SEGMENT."""
    dgrams = [payload(tag, i, seg) for i in range(count)] + ([payload(tag, count, last)] if last else [])
    s.sendmsg([b"".join(dgrams)], [(SOL_UDP, UDP_SEGMENT, struct.pack("=H", seg))])
    return dgrams


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(Iovec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", Msghdr), ("len", ctypes.c_uint)]


def sendmmsg(s, dgrams):
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    bufs = [ctypes.create_string_buffer(d, len(d)) for d in dgrams]
    iovs = (Iovec * len(dgrams))(*[Iovec(ctypes.cast(b, ctypes.c_void_p), len(d)) for b, d in zip(bufs, dgrams)])
    msgs = (Mmsghdr * len(dgrams))()
    for i in range(len(dgrams)):
        msgs[i].hdr.iov = ctypes.pointer(iovs[i])
        msgs[i].hdr.iovlen = 1
    n = libc.sendmmsg(s.fileno(), msgs, len(dgrams), 0)
    if n != len(dgrams):
        raise SystemExit("udpburst: FAIL: sendmmsg sent %d of %d: %s" %
                         (n, len(dgrams), ctypes.get_errno()))


def gso(args):
    s = connect(args.host, args.port, args.timeout)
    shapes = [(1000, 5, 300), (1400, 20, 1), (500, 3, 0), (1200, 40, 1199)]
    n = 0
    for tag, (seg, count, last) in enumerate(shapes, start=10):
        dgrams = gso_send(s, seg, count, last, tag)
        for i, d in enumerate(dgrams):
            expect(s, d, "UDP_SEGMENT %d x %d + %d: datagram %d" % (count, seg, last, i))
        n += len(dgrams)
    sizes = [100, 1400, 1400, 7, 3000, 1400, 1400, 1, 1400, 999, 999, 5000]
    dgrams = [payload(30, i, size) for i, size in enumerate(sizes)]
    sendmmsg(s, dgrams)
    for i, d in enumerate(dgrams):
        expect(s, d, "sendmmsg of mixed sizes: datagram %d (%d bytes)" % (i, len(d)))
    n += len(dgrams)
    log("gso %s port %d ok: %d datagrams in GSO sends and a mixed sendmmsg, each echoed as sent" %
        (args.host, args.port, n))


def main():
    ap = argparse.ArgumentParser(prog="udpburst.py")
    ap.add_argument("--timeout", type=float, default=5.0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("burst", "gso"):
        p = sub.add_parser(name)
        p.add_argument("--host", required=True)
        p.add_argument("--port", type=int, required=True)
        if name == "burst":
            p.add_argument("--count", type=int, default=10000)
            p.add_argument("--size", type=int, default=1200)
            p.add_argument("--window", type=int, default=64)
    args = ap.parse_args()
    (burst if args.cmd == "burst" else gso)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
