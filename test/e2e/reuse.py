#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One client source port reused for connection after connection.

  reuse.py --host ADDR --port PORT --src-port N [--count 20] [--gaps 0,0.1]
           [--timeout S]

Each round: a socket with SO_REUSEADDR bound to source port N connects to
the target, asks "DOWNLOAD 64 <round>" and reads the 64 bytes until the
target's EOF (the target closes first), then sends its own FIN and waits
until the socket is CLOSED (TCP_INFO), i.e. until the other end has
acknowledged that FIN: through s5tund, lwIP's pcb of the connection is then
in TIME_WAIT. The next round starts after the next of --gaps (seconds,
cycled), on the same 4-tuple. A refused or timed-out connect, a SYN
retransmitted during the round (TcpExt TCPSynRetrans of the namespace,
/proc/net/netstat: a count, not a time) or a wrong answer is a failure,
and ends the run.

With --upload N (for badproxy's fin-slow-read port) the round sends no
command: it reads the proxy's bytes until its EOF, then sends N bytes of
its own before its FIN, which wait in s5tund while the proxy does not read:
s5tund's side of the connection is then in TIME_WAIT while s5tund still
holds it, finishing the proxy side, when the next round reuses the port.

Prints one line per round and a summary with the connect times; exit
status 0 when every round passed, 1 otherwise.
"""

import argparse
import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

TCP_CLOSE = 7  # tcpi_state, <netinet/tcp.h>
SIZE = 64


def log(msg):
    print("reuse: " + msg, flush=True)


def syn_retrans():
    """TcpExt TCPSynRetrans of this network namespace."""
    with open("/proc/net/netstat") as f:
        lines = [line.split() for line in f]
    for names, values in zip(lines, lines[1:]):
        if names[0] == "TcpExt:" and values[0] == "TcpExt:":
            return int(values[names.index("TCPSynRetrans")])
    raise RuntimeError("no TcpExt TCPSynRetrans in /proc/net/netstat")


def wait_closed(sock, bound):
    """Until the socket's TCP state is CLOSE (our FIN acknowledged)."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] == TCP_CLOSE:
            return True
        time.sleep(0.001)
    return False


def one_round(args, fam, rnd):
    """Returns (connect seconds or None, error text or None)."""
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", args.src_port))
        s.settimeout(args.timeout)
        t0 = time.monotonic()
        try:
            s.connect((args.host, args.port))
        except OSError as e:
            return None, "connect after %.3f s: %s" % (time.monotonic() - t0, e)
        took = time.monotonic() - t0
        if args.upload:
            got = e2elib.read_all(s)
            if not got:
                return took, "nothing from the proxy before its EOF"
            s.sendall(bytes(args.upload))
        else:
            s.sendall(b"DOWNLOAD %d %d\n" % (SIZE, rnd))
            got = e2elib.read_all(s)
            want = b"".join(e2elib.stream(rnd, SIZE))
            if got != want:
                return took, "answer of %d bytes, not the %d expected" % (len(got), SIZE)
        s.shutdown(socket.SHUT_WR)
        if not wait_closed(s, args.timeout):
            return took, "our FIN not acknowledged within %.0f s" % args.timeout
        return took, None
    except OSError as e:
        return None, "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=7000)
    ap.add_argument("--src-port", type=int, required=True)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--gaps", default="0",
                    help="pauses before the next round, seconds, comma-separated, cycled")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--upload", type=int, default=0,
                    help="bytes to send after the answer's EOF (badproxy fin-slow-read)")
    args = ap.parse_args()
    gaps = [float(g) for g in args.gaps.split(",")]
    fam = e2elib.family_of(args.host)

    times = []
    for rnd in range(args.count):
        retrans = syn_retrans()
        took, err = one_round(args, fam, rnd)
        retrans = syn_retrans() - retrans
        if took is not None:
            times.append(took)
            if retrans and not err:
                err = "SYN retransmitted %d times, connected after %.3f s" % (retrans, took)
        if err:
            log("round %d of %d from port %d to %s:%d: FAIL: %s"
                % (rnd, args.count, args.src_port, args.host, args.port, err))
            return 1
        log("round %d: connected in %.1f ms" % (rnd, took * 1000))
        if rnd + 1 < args.count:
            time.sleep(gaps[rnd % len(gaps)])
    times.sort()
    log("%d rounds from port %d to %s:%d, every connect answered at once "
        "(median %.1f ms, max %.1f ms), no SYN retransmitted"
        % (args.count, args.src_port, args.host, args.port,
           times[len(times) // 2] * 1000, times[-1] * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
