# SPDX-License-Identifier: MIT
"""The misbehaving servers of the hostile tests: `hostile.py proxy` and
`hostile.py sink` (see hostile.py for their command lines and behaviour).

Standard library only; the SOCKS5 server side is socks5srv.py's, shared with
badproxy.py.

  proxy: a SOCKS5 server whose behaviour after the handshake is picked by
         the port the CONNECT asks for (P_* below, one per misbehaviour);
         UDP ASSOCIATE answered with a relay address read from a file
  sink:  UDP sockets that are never read, where tunflood's datagrams end
"""

import random
import socket
import struct
import threading
import time

from socks5srv import (Refused, Relay, connect_target, handshake, read_to_end, reply,
                       rst_close, say, serve, until_stopped)

P_GARBAGE, P_TRUNC, P_BIGDOM, P_BIGDOM_CUT = 7101, 7102, 7103, 7104
P_SLOW_OK, P_SLOW_LATE, P_HANG, P_CLOSE_FIN = 7105, 7106, 7107, 7108
P_CLOSE_RST, P_CUT_FIN, P_CUT_RST, P_STALL_RST = 7109, 7110, 7111, 7112
RELAY_PORT = 7000          # target.py's port: where the relaying modes go
CUT_AFTER = 65536          # cut-fin / cut-rst: bytes toward the client first
STALL_CUT = 2 << 20        # stall-rst: bytes toward the client first
SLOW = 0.1                 # one byte per 100 ms


def send_slow(sock, data):
    """One byte per SLOW seconds; returns how many went out before the peer
    went away."""
    for i in range(len(data)):
        try:
            sock.send(data[i:i + 1])
        except OSError:
            return i
        time.sleep(SLOW)
    return len(data)


def ok_reply():
    return b"\x05\x00\x00\x01" + bytes([10, 200, 0, 2]) + struct.pack("!H", 4242)


def garbage_reply(n):
    rng = random.Random(n)
    kind = n % 4
    if kind == 0:       # wrong version
        return bytes([rng.choice([0, 4, 6, 0x50, 0xff])]) + rng.randbytes(9)
    if kind == 1:       # VER 5, success, unknown address type
        return b"\x05\x00\x00" + bytes([rng.choice([0, 2, 5, 9, 0xff])]) + rng.randbytes(6)
    if kind == 2:       # ATYP 3 with an empty name
        return b"\x05\x00\x00\x03\x00" + rng.randbytes(5)
    b = bytearray(rng.randbytes(10))     # random, but never a valid reply
    if b[0] == 5:
        b[0] = 0x15
    return bytes(b)


def relay_to(conn, host, port, reply_bytes=None, slow=False, cut=None, cut_how=None):
    try:
        target = connect_target(host, port)
    except OSError as e:
        reply(conn, 5)
        conn.close()
        return "connecting to %s:%d failed: %s" % (host, port, e)
    reply_bytes = ok_reply() if reply_bytes is None else reply_bytes
    if slow:
        n = send_slow(conn, reply_bytes)
        if n < len(reply_bytes):
            target.close()
            conn.close()
            return "slow reply cut after %d of %d bytes" % (n, len(reply_bytes))
    else:
        conn.sendall(reply_bytes)
    relay = Relay(conn, target, cut, cut_how)
    ends = relay.run()
    return "relay %s down=%d" % (ends, relay.down)


def proxy_handle(conn, n, args):
    what, dst = "?", "?"
    try:
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def slow_choice(conn):
            if send_slow(conn, b"\x05\x00") < 2:
                raise Refused("slow greeting cut")
        try:
            req = handshake(conn, slow_choice if args.slow_greeting else None)
        except Refused as e:
            what = str(e)
            conn.close()
            return
        host, port, dst = req.host, req.port, req.dst
        if req.cmd == 3:
            try:
                with open(args.udp_bnd_file) as f:
                    baddr, bport = f.read().split()
            except (OSError, TypeError, ValueError):
                baddr, bport = "0.0.0.0", "0"
            ip = socket.inet_pton(socket.AF_INET6 if ":" in baddr else socket.AF_INET, baddr)
            conn.sendall(b"\x05\x00\x00" + (b"\x04" if len(ip) == 16 else b"\x01") + ip
                         + struct.pack("!H", int(bport)))
            what = "udp-associate bnd=%s:%s client-end=%s" % (baddr, bport, read_to_end(conn))
            conn.close()
            return
        if req.cmd != 1:
            reply(conn, 7)
            what = "command %d refused" % req.cmd
            conn.close()
            return
        if port == P_GARBAGE:
            conn.sendall(garbage_reply(n))
            what = "garbage client-end=%s" % read_to_end(conn)
            conn.close()
        elif port == P_TRUNC:
            conn.sendall(ok_reply()[:5])
            conn.shutdown(socket.SHUT_WR)
            what = "truncated client-end=%s" % read_to_end(conn)
            conn.close()
        elif port == P_BIGDOM:
            bogus = bytes(random.Random(n).randbytes(255))
            answer = b"\x05\x00\x00\x03\xff" + bogus + struct.pack("!H", 4242)
            what = "bigdomain " + relay_to(conn, host, RELAY_PORT, answer)
        elif port == P_BIGDOM_CUT:
            conn.sendall(b"\x05\x00\x00\x03\xff" + b"x" * 100)
            conn.shutdown(socket.SHUT_WR)
            what = "bigdomain-cut client-end=%s" % read_to_end(conn)
            conn.close()
        elif port == P_SLOW_OK:
            what = "slow-ok " + relay_to(conn, host, RELAY_PORT, slow=True)
        elif port == P_SLOW_LATE:
            name = b"slow." * 50
            answer = b"\x05\x00\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", 4242)
            sent = send_slow(conn, answer)
            what = "slow-late sent %d of %d bytes client-end=%s" % (sent, len(answer),
                                                                   read_to_end(conn))
            conn.close()
        elif port == P_HANG:
            what = "hang client-end=%s" % read_to_end(conn)
            conn.close()
        elif port == P_CLOSE_FIN:
            conn.shutdown(socket.SHUT_WR)
            what = "close-fin client-end=%s" % read_to_end(conn)
            conn.close()
        elif port == P_CLOSE_RST:
            rst_close(conn)
            what = "close-rst"
        elif port == P_STALL_RST:
            what = "stall-rst " + relay_to(conn, host, RELAY_PORT, cut=STALL_CUT, cut_how="rst-acked")
        elif port in (P_CUT_FIN, P_CUT_RST):
            how = "fin" if port == P_CUT_FIN else "rst"
            what = "cut-%s " % how + relay_to(conn, host, RELAY_PORT, cut=CUT_AFTER, cut_how=how)
        else:
            what = relay_to(conn, host, port, slow=args.slow_greeting)
    except (OSError, ValueError) as e:
        what = "%s: error %s: %s" % (what, type(e).__name__, e)
        conn.close()
    finally:
        say("hostile", "conn %d CONNECT %s %s" % (n, dst, what))


def cmd_proxy(args):
    threading.stack_size(256 * 1024)
    n = serve(args.listen, args.port, lambda conn, n: proxy_handle(conn, n, args), "hostile",
              backlog=4096, ready_file=args.ready_file,
              note=" (slow greeting)" if args.slow_greeting else "")
    say("hostile", "stopping after %d connections" % n)
    return 0


def cmd_sink(args):
    """UDP sockets bound to each --listen address and each port of --ports,
    never read: datagrams to them vanish without an ICMP error (a full
    receive buffer drops them silently), so that a relay sending there goes
    on relaying."""
    lo, hi = (int(x) for x in args.ports.split("-"))
    socks = []
    for addr in args.listen:
        for port in range(lo, hi + 1):
            s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((addr, port))
            socks.append(s)
    say("sink", "%d UDP sockets on %s ports %d-%d, never read" % (len(socks), " ".join(args.listen),
                                                                   lo, hi))
    until_stopped(args.ready_file)
    return 0
