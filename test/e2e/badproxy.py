#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A deliberately misbehaving SOCKS5 server for the s5tund end-to-end tests.

  badproxy.py --listen 10.200.0.2 --listen fd00:200::2 --port 1082 \\
              [--ready-file FILE]

It speaks enough RFC 1928 to get a CONNECT request (method "no
authentication" only), then behaves according to the port the CONNECT asks
for, so that one s5tund pointed at one proxy address can meet every kind of
peer in a single run:

  port 7001  hang           never answers the CONNECT; keeps the connection
                            open until s5tund gives up, and logs how s5tund
                            ended it.
  port 7002  data-rst       answers success, sends DATA, waits until s5tund's
                            kernel acknowledged it, then closes with a RST
                            (SO_LINGER {1, 0}).
  port 7003  data-fin       answers success, sends DATA, then half-closes
                            (FIN) and reads until s5tund ends its side, which
                            it logs.
  port 7004  late-data-rst  as data-rst, but 0.3 s after the success reply, so
                            that the bytes reach s5tund after its handshake
                            (data-rst's usually come with the reply), and the
                            RST right behind them (once they are sent, not
                            acknowledged), so that both are usually there
                            when s5tund next reads.
  port 7005  fill-rst       answers success, sends FILL bytes (1 MiB of the
                            pattern 0..255 repeated) then DATA, waits until
                            s5tund's kernel acknowledged all, then a RST. A
                            client that does not read meanwhile makes s5tund
                            stop reading (lwIP's send buffer is full), so the
                            RST is there before s5tund reads the last bytes.
  port 7006  trickle-fin    answers success, sends 256 KiB of the pattern then
                            DATA in pieces of 300 bytes (a pause of 0.2 ms
                            after each, so that s5tund reads them one by one
                            and lwIP queues them as that many pbufs while the
                            client does not read), then a FIN; logs how
                            s5tund ended its side.
  port 7007  fin-slow-read  answers success, sends DATA, half-closes, then
                            reads nothing for SLOW_READ (0.5 s) with a 4 KiB
                            receive buffer, so that what the client sends
                            afterwards waits in s5tund; then reads until
                            s5tund ends its side and logs how many bytes
                            came and how it ended (e2e.port_reuse).
  port 7008  fin-slow-read  the same, SLOWER_READ (3 s) without reading:
                            longer than lwIP's 2-s TIME_WAIT.
  any other  relay          an honest proxy: connects to the requested
                            address (REP 5 "connection refused" when that
                            fails), answers success and relays both ways. An
                            EOF from either side is passed on as a half-close
                            (shutdown SHUT_WR), a RST from either side as a
                            RST. Port 7000 is the tests' target.py.

DATA is the constant below. One log line per connection on stdout, for
example

  badproxy: conn 3 CONNECT 10.201.0.1:7000 relay [HOLD rst1] client-end=reset target-end=-
  badproxy: conn 4 CONNECT 10.201.0.1:7001 hang: client-end=reset

"client" is s5tund (the SOCKS5 client), "target" the connection the relay
opened. "[...]" holds the first line the client sent through the relay (the
target protocol's command), so that a test can find its own connection.
client-end / target-end say how that side ended: eof, reset, or "-" when it
did not end by itself (the relay ended it after the other side's reset).

Standard library only, Debian's /usr/bin/python3; one thread per connection
and one more per relay direction: the tests open a handful of connections.
"""

import argparse
import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from socks5srv import (Refused, Relay, connect_target, handshake, read_to_end, reply,  # noqa: E402
                       rst_close, say, serve, wait_out)

DATA = b"badproxy: these bytes come before the end\n"
PORT_HANG, PORT_DATA_RST, PORT_DATA_FIN, PORT_LATE_DATA_RST = 7001, 7002, 7003, 7004
PORT_FILL_RST = 7005
PORT_TRICKLE_FIN = 7006
TRICKLE_FILL = 256 * 1024   # trickle-fin: that many pattern bytes, then DATA,
TRICKLE_CHUNK = 300         # in pieces of this size
FILL = 1 << 20   # fill-rst: more than lwIP's send buffer (512 KiB) and a client's window
PORT_FIN_SLOW_READ, PORT_FIN_SLOWER_READ = 7007, 7008
SLOW_READ = 0.5    # fin-slow-read: seconds without reading; well under lwIP's 2-s TIME_WAIT
SLOWER_READ = 3.0  # and on 7008, beyond it


def log(msg):
    say("badproxy", msg)


def fill_bytes(n):
    """n bytes of a fixed pattern (client.py read-end --fill checks them)."""
    pattern = bytes(range(256))
    return (pattern * (n // 256 + 1))[:n]


def handle(conn, n):
    what = "?"
    dst = "?"
    try:
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            req = handshake(conn)
        except Refused as e:
            what = str(e)
            conn.close()
            return
        host, port, dst = req.host, req.port, req.dst
        if req.ver != 5 or req.cmd != 1:
            reply(conn, 7)
            what = "not a CONNECT (ver %d cmd %d)" % (req.ver, req.cmd)
            conn.close()
            return
        if port == PORT_HANG:
            what = "hang: client-end=%s" % read_to_end(conn)
            conn.close()
        elif port in (PORT_DATA_RST, PORT_LATE_DATA_RST):
            reply(conn, 0)
            if port == PORT_LATE_DATA_RST:
                time.sleep(0.3)   # s5tund is relaying by now, not in the handshake
                wait = "sent"     # the RST right behind the bytes
            else:
                wait = "acked"
            conn.sendall(DATA)
            done = wait_out(conn, wait)
            rst_close(conn)
            what = "data-rst: %d bytes %s, then a RST" % (
                len(DATA), wait if done else "NOT %s within 5 s" % wait)
        elif port == PORT_FILL_RST:
            reply(conn, 0)
            conn.sendall(fill_bytes(FILL) + DATA)
            done = wait_out(conn, "acked", limit=10.0)
            rst_close(conn)
            what = "fill-rst: %d bytes %s, then a RST" % (
                FILL + len(DATA), "acked" if done else "NOT acked within 10 s")
        elif port == PORT_TRICKLE_FIN:
            reply(conn, 0)
            data = fill_bytes(TRICKLE_FILL) + DATA
            for i in range(0, len(data), TRICKLE_CHUNK):
                conn.sendall(data[i:i + TRICKLE_CHUNK])
                time.sleep(0.0002)   # one segment each, read one by one by s5tund
            conn.shutdown(socket.SHUT_WR)
            what = "trickle-fin: %d bytes in pieces of %d, then a FIN, client-end=%s" % (
                len(data), TRICKLE_CHUNK, read_to_end(conn))
            conn.close()
        elif port in (PORT_FIN_SLOW_READ, PORT_FIN_SLOWER_READ):
            pause = SLOW_READ if port == PORT_FIN_SLOW_READ else SLOWER_READ
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reply(conn, 0)
            conn.sendall(DATA)
            conn.shutdown(socket.SHUT_WR)
            time.sleep(pause)
            got, end = 0, "eof"
            try:
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += len(chunk)
            except ConnectionResetError:
                end = "reset"
            except OSError as e:
                end = "error %s" % e
            what = "fin-slow-read %.1f s: sent %d bytes and a FIN, then client-end=%s after %d bytes" % (
                pause, len(DATA), end, got)
            conn.close()
        elif port == PORT_DATA_FIN:
            reply(conn, 0)
            conn.sendall(DATA)
            conn.shutdown(socket.SHUT_WR)
            what = "data-fin: sent %d bytes and a FIN, client-end=%s" % (len(DATA), read_to_end(conn))
            conn.close()
        else:
            try:
                target = connect_target(host, port)
            except OSError as e:
                reply(conn, 5)
                what = "relay: connecting failed: %s" % e
                conn.close()
                return
            reply(conn, 0)
            relay = Relay(conn, target)
            ends = relay.run()
            what = "relay [%s] %s" % (relay.command(), ends)
    except (OSError, ValueError) as e:
        what = "%s: error %s: %s" % (what, type(e).__name__, e)
        conn.close()
    finally:
        log("conn %d CONNECT %s %s" % (n, dst, what))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--port", type=int, default=1082)
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    serve(args.listen, args.port, handle, "badproxy", backlog=128, ready_file=args.ready_file)
    log("stopping")


if __name__ == "__main__":
    main()
