#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Client side of the warm pool's end-to-end tests (pool.sh).

  poolcheck.py rtt --host H --port P [--count N]
      N SOCKS5 greetings to the server at H:P (through the delay relay),
      each on a new connection: prints the median round trip in ms.
  poolcheck.py ttfb --host H --port P [--count N] [--gap S]
      N connections one after the other (S seconds apart) to target.py:
      time from connect() to the first byte of the echo of "ECHO\\nx",
      sent as soon as connect() returned. Prints each time, then the
      fastest and the median in ms.
  poolcheck.py first-try --host H --port P [--count N]
      N connections one after the other, each an echo, none retried: the
      first failure fails the run.

  poolcheck.py first-bytes --host H --port P [--count N] [--gap S]
      N connections one after the other (S seconds apart), each sending
      "ECHO" and a payload of its own right after connect() returned, then
      reading the echo to its end: each must get its whole payload back or
      be reset; a partial or foreign echo (first bytes lost) or a hang fails.
      Prints "ok N reset M".

  poolcheck.py reset-after-data --host H --port P
      [socks5] optimistic with a CONNECT the proxy refuses: the connection
      opens, the request is sent, then the connection is reset (no byte
      back, no FIN).

Times are only printed; pool.sh compares them in round trips of the
relay it measured itself. Standard library only."""
import argparse
import socket
import statistics
import sys
import time


def log(msg):
    print("poolcheck: " + msg, flush=True)


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def one_rtt(host, port, timeout):
    with socket.socket(family(host), socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.connect((host, port))
        t0 = time.monotonic()
        s.sendall(b"\x05\x01\x00")
        got = s.recv(2)
        if got != b"\x05\x00":
            raise RuntimeError("greeting answered %r" % got)
        return (time.monotonic() - t0) * 1000.0


def one_ttfb(host, port, timeout):
    with socket.socket(family(host), socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.monotonic()
        s.connect((host, port))
        t_conn = time.monotonic()
        s.sendall(b"ECHO\nx")
        got = s.recv(1)
        t1 = time.monotonic()
        if got != b"x":
            raise RuntimeError("echo answered %r" % got)
        return (t1 - t0) * 1000.0, (t_conn - t0) * 1000.0


def one_echo(host, port, timeout, i):
    with socket.socket(family(host), socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect((host, port))
        msg = b"pool %d\n" % i
        s.sendall(b"ECHO\n" + msg)
        got = b""
        while len(got) < len(msg):
            chunk = s.recv(len(msg) - len(got))
            if not chunk:
                raise RuntimeError("EOF after %d of %d bytes" % (len(got), len(msg)))
            got += chunk
        if got != msg:
            raise RuntimeError("echo came back different: %r" % got)


def reset_after_data(host, port, timeout):
    with socket.socket(family(host), socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect((host, port))
        log("connected to %s:%d (the SYN was answered before the CONNECT reply)" % (host, port))
        s.sendall(b"ECHO\nthese bytes go behind the CONNECT\n")
        try:
            got = s.recv(100)
        except ConnectionResetError:
            log("reset after the data was sent: ok")
            return 0
        log("FAILED: %s instead of a reset" % ("%d bytes" % len(got) if got else "a FIN"))
        return 1


def first_bytes(host, port, count, gap, timeout):
    ok = reset = 0
    for i in range(count):
        payload = b"first-bytes %d %s\n" % (i, b"y" * 200)
        try:
            with socket.socket(family(host), socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect((host, port))
                s.sendall(b"ECHO\n" + payload)
                s.shutdown(socket.SHUT_WR)
                got = b""
                while True:
                    data = s.recv(65536)
                    if not data:
                        break
                    got += data
        except ConnectionResetError:
            reset += 1
            log("connection %d reset" % i)
            time.sleep(gap)
            continue
        except socket.timeout:
            log("connection %d of %d HUNG (%.0f s without its echo)" % (i + 1, count, timeout))
            return 1
        if got != payload:
            log("connection %d of %d got %r, sent %r: its first bytes were lost" % (i + 1, count, got[:60], payload[:60]))
            return 1
        ok += 1
        time.sleep(gap)
    print("ok %d reset %d" % (ok, reset))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["rtt", "ttfb", "first-try", "reset-after-data", "first-bytes"])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--gap", type=float, default=0.3)
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    if args.what == "rtt":
        times = [one_rtt(args.host, args.port, args.timeout) for _ in range(args.count)]
        log("greeting round trips (ms): " + " ".join("%.1f" % t for t in times))
        print("%.1f" % statistics.median(times))
        return 0
    if args.what == "reset-after-data":
        return reset_after_data(args.host, args.port, args.timeout)
    if args.what == "first-bytes":
        return first_bytes(args.host, args.port, args.count, args.gap, args.timeout)
    if args.what == "ttfb":
        times = []
        for _ in range(args.count):
            first, conn = one_ttfb(args.host, args.port, args.timeout)
            log("connect %.1f ms, first byte %.1f ms" % (conn, first))
            times.append(first)
            time.sleep(args.gap)
        print("%.1f %.1f" % (min(times), statistics.median(times)))
        return 0
    for i in range(args.count):
        try:
            one_echo(args.host, args.port, args.timeout, i)
        except (OSError, RuntimeError) as e:
            log("connection %d of %d FAILED at its first try: %s: %s"
                % (i + 1, args.count, type(e).__name__, e))
            return 1
    log("%d connections, each at its first try" % args.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
