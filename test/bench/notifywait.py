#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""notifywait: a stand-in for systemd's notification socket, for the bench.

    notifywait.py --socket PATH --listening-file FILE [--timeout S]

Binds a datagram socket at PATH (the daemon gets it as NOTIFY_SOCKET),
writes FILE once bound, and waits for a datagram with READY=1. Prints
"ready_at=EPOCH_SECONDS" (wall clock, to subtract the bench's own
$EPOCHREALTIME taken just before it started the daemon) and exits 0; exits
1 after S seconds without it.
"""
import argparse
import os
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--listening-file", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(args.socket)
    with open(args.listening_file, "w") as f:
        f.write("listening\n")
    end = time.monotonic() + args.timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            print(f"notifywait: no READY=1 within {args.timeout}s", file=sys.stderr)
            return 1
        s.settimeout(left)
        try:
            msg = s.recv(4096)
        except socket.timeout:
            continue
        if b"READY=1" in msg.split(b"\n"):
            print(f"ready_at={time.time():.6f}")
            return 0


if __name__ == "__main__":
    sys.exit(main())
