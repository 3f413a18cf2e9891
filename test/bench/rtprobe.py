#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rtprobe: the round trip through the delay relay (test/e2e/delayrelay.py)
in front of an echo server: one connection, then N rounds of one byte sent
and echoed, each timed; prints "rtt_min_ms=... rtt_p50_ms=... rounds=N".
The bench states time to first byte in multiples of this measured value,
never of the relay's configured delay.

    rtprobe.py --connect ADDR:PORT [--rounds N] [--timeout S]
"""
import argparse
import socket
import statistics
import time


def hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()
    rtts = []
    with socket.create_connection(hostport(args.connect), timeout=args.timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(args.rounds):
            t0 = time.monotonic()
            s.sendall(b"p")
            if not s.recv(1):
                raise SystemExit("rtprobe: the upstream closed before answering")
            rtts.append((time.monotonic() - t0) * 1000.0)
    print(f"rtt_min_ms={min(rtts):.2f} rtt_p50_ms={statistics.median(rtts):.2f} rounds={len(rtts)}")


if __name__ == "__main__":
    main()
