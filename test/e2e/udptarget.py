#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""UDP echo target for the s5tund end-to-end tests (stdlib only).

  udptarget.py --listen 10.201.0.1 --listen fd00:201::1 --port 7001 \\
               [--port 7002 ...] [--ready-file FILE] [--record FILE]

Every datagram received on any (address, port) is sent back unchanged from
the same socket, so the reply's source is exactly where the client sent it.
With --record, each new (local address, client tag, source address, source
port) is appended to FILE as one line before the echo goes out: the tag is
the first 2 bytes of a udpclient.py echo datagram (its source index), so the
file shows through how many source ports (associations of the proxy) each
client socket reached us.
Logs one line per 1000 datagrams and a summary on SIGTERM. Creates
--ready-file once every socket is bound.
"""

import argparse
import os
import selectors
import signal
import socket
import sys

sys.dont_write_bytecode = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--port", type=int, action="append", required=True)
    ap.add_argument("--ready-file")
    ap.add_argument("--record")
    args = ap.parse_args()

    sel = selectors.DefaultSelector()
    socks = []
    for addr in args.listen:
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        for port in args.port:
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((addr, port))
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            socks.append(s)
            print("udptarget: listening on %s port %d" % (addr, port), flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.signal(signal.SIGINT, lambda *a: stop.append(1))
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    record = open(args.record, "a") if args.record else None
    seen = set()
    n = 0
    while not stop:
        try:
            events = sel.select(0.5)
        except InterruptedError:
            continue
        for key, _ in events:
            s = key.fileobj
            while True:
                try:
                    data, peer = s.recvfrom(65535)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as e:
                    print("udptarget: recv: %s" % e, flush=True)
                    break
                if record is not None and len(data) >= 2:
                    key = (s.getsockname()[0], int.from_bytes(data[:2], "big"), peer[0], peer[1])
                    if key not in seen:
                        seen.add(key)
                        record.write("%s %d %s %d\n" % key)
                        record.flush()
                try:
                    s.sendto(data, peer)
                except OSError as e:
                    print("udptarget: send %d bytes to %s: %s" % (len(data), peer, e), flush=True)
                n += 1
                if n % 1000 == 0:
                    print("udptarget: %d datagrams echoed" % n, flush=True)
    print("udptarget: stopping after %d datagrams" % n, flush=True)


if __name__ == "__main__":
    main()
