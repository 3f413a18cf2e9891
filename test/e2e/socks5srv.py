# SPDX-License-Identifier: MIT
"""The server side of SOCKS5 shared by the misbehaving proxies of the s5tund
end-to-end tests (badproxy.py, hostile.py proxy).

Standard library only; run with Debian's /usr/bin/python3.

  handshake(conn)     the greeting (method "no authentication" only) and the
                      request: a Request, or Refused saying why not
  reply(conn, rep)    a reply with BND 0.0.0.0:0
  connect_target      the relay's connection to the requested address
  Relay               both directions of a relayed connection: an EOF passed
                      on as a half-close, a RST as a RST; optionally cut
                      after so many bytes toward the client
  read_to_end, rst_close, wait_out
                      how a peer ended, closing with a RST, until the send
                      queue is empty
  serve(...)          listen, one thread per connection, ready file, until
                      SIGTERM or SIGINT (until_stopped)
"""

import collections
import fcntl
import os
import signal
import socket
import struct
import termios
import threading
import time

import e2elib
from e2elib import say  # noqa: F401 - the servers' log lines (badproxy.py, hostileproxy.py)


def hostport(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


class Refused(Exception):
    """The handshake ended before a request; the text says why."""


class Request(collections.namedtuple("Request", "ver cmd host port")):
    @property
    def dst(self):
        return hostport(self.host, self.port)


def handshake(conn, choose=None):
    """Reads the greeting and the request. Without "no authentication" among
    the methods: answers 0xFF and raises Refused. choose(conn) sends the
    method choice (default: at once); it may raise Refused. The request's
    address: an IPv4 or IPv6 literal or a name; another ATYP raises Refused."""
    ver, nmethods = e2elib.recv_exact(conn, 2)
    methods = e2elib.recv_exact(conn, nmethods)
    if ver != 5 or 0 not in methods:
        conn.sendall(b"\x05\xff")
        raise Refused("no acceptable method (ver %d, methods %r)" % (ver, methods))
    if choose is None:
        conn.sendall(b"\x05\x00")
    else:
        choose(conn)
    ver, cmd, _, atyp = e2elib.recv_exact(conn, 4)
    if atyp == 1:
        host = socket.inet_ntop(socket.AF_INET, e2elib.recv_exact(conn, 4))
    elif atyp == 4:
        host = socket.inet_ntop(socket.AF_INET6, e2elib.recv_exact(conn, 16))
    elif atyp == 3:
        host = e2elib.recv_exact(conn, e2elib.recv_exact(conn, 1)[0]).decode("ascii", "replace")
    else:
        raise Refused("bad ATYP %d" % atyp)
    (port,) = struct.unpack("!H", e2elib.recv_exact(conn, 2))
    return Request(ver, cmd, host, port)


def connect_target(host, port):
    """The relay's own connection to host:port (10 s to connect, then no
    timeout; TCP_NODELAY)."""
    target = socket.create_connection((host, port), timeout=10)
    target.settimeout(None)
    target.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return target


def reply(sock, rep):
    """A reply with code rep and BND 0.0.0.0:0."""
    sock.sendall(b"\x05" + bytes([rep]) + b"\x00\x01" + b"\x00" * 6)


def read_to_end(sock):
    """Reads until the peer ends its side: 'eof' or 'reset'."""
    try:
        while sock.recv(65536):
            pass
        return "eof"
    except ConnectionResetError:
        return "reset"
    except OSError as e:
        return "error %s" % e


def rst_close(sock):
    """Closes with a RST rather than a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


SIOCOUTQNSD = 0x894B   # bytes not yet sent (linux/sockios.h)


def wait_out(sock, what="acked", limit=5.0):
    """Until nothing is left in the send queue, at most limit seconds: a RST
    right after a send would otherwise discard data not yet on the wire.
    what: 'acked' (SIOCOUTQ: sent and acknowledged by the peer's kernel) or
    'sent' (SIOCOUTQNSD: on the wire)."""
    req = termios.TIOCOUTQ if what == "acked" else SIOCOUTQNSD
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if struct.unpack("i", fcntl.ioctl(sock, req, b"\0" * 4))[0] == 0:
            return True
        time.sleep(0.001)
    return False


class Relay:
    """Both directions of one relayed connection, each on its own thread. An
    EOF from either side is passed on as a half-close, a RST as a RST.

    cut: after that many bytes toward the client end both connections,
    cut_how 'fin', 'rst', or 'rst-acked' (a RST once the client's kernel
    acknowledged the bytes, at most 3 s). After run(): ends['client'] and
    ends['target'] (eof, reset, error, cut-HOW, or '-' when that side did not
    end by itself), down (bytes toward the client), first_line (up to 60
    bytes of the client's first line: the target protocol's command)."""

    def __init__(self, client, target, cut=None, cut_how=None):
        self.client, self.target = client, target
        self.cut, self.cut_how = cut, cut_how
        self.down = 0
        self.first_line = bytearray()
        self.ends = {"client": "-", "target": "-"}
        self.aborted = False
        self.lock = threading.Lock()

    def _cut(self, dst, data):
        """Passes on what fits below cut; True once the cut is made."""
        data = data[:self.cut - self.down]
        dst.sendall(data)
        self.down += len(data)
        if self.down < self.cut:
            return False
        if self.cut_how == "rst-acked":
            wait_out(dst, "acked", 3.0)
        with self.lock:
            self.aborted = True
            self.ends["client"] = "cut-" + self.cut_how
        for s in (self.client, self.target):
            if self.cut_how in ("rst", "rst-acked"):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                try:
                    s.shutdown(socket.SHUT_RD)
                except OSError:
                    pass
            else:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return True

    def pump(self, src, dst, name):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    with self.lock:
                        if self.aborted:
                            return
                        self.ends[name] = "eof"
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return
                if name == "client" and len(self.first_line) < 60 and b"\n" not in self.first_line:
                    self.first_line += data[:60]
                if name == "target" and self.cut is not None:
                    if self._cut(dst, data):
                        return
                    continue
                try:
                    dst.sendall(data)
                except OSError:
                    return   # dst is gone: its own pump reports how
        except ConnectionResetError:
            with self.lock:
                if self.aborted:
                    return
                self.aborted = True
                self.ends[name] = "reset"
            # Pass the RST on: linger 0 on the other socket, wake its reader
            # (SHUT_RD sends nothing), and the close in run() sends the RST.
            other = self.target if src is self.client else self.client
            other.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            try:
                other.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        except OSError:
            with self.lock:
                if self.ends[name] == "-" and not self.aborted:
                    self.ends[name] = "error"

    def run(self):
        """Relays until both directions ended, closes both sockets; returns
        "client-end=... target-end=..."."""
        t = threading.Thread(target=self.pump, args=(self.target, self.client, "target"),
                             daemon=True)
        t.start()
        self.pump(self.client, self.target, "client")
        t.join()
        self.client.close()
        self.target.close()
        return "client-end=%s target-end=%s" % (self.ends["client"], self.ends["target"])

    def command(self):
        """The client's first line (the target protocol's command)."""
        return bytes(self.first_line).split(b"\n")[0].decode("ascii", "replace")


def serve(addrs, port, handle, prefix, backlog=128, ready_file=None, note=""):
    """Listens on port of every address in addrs, handle(conn, n) on a thread
    of its own for the n-th connection; writes our pid to ready_file once
    listening; returns the number of connections at SIGTERM or SIGINT."""
    counter = [0]
    lock = threading.Lock()

    def accept_loop(lsock):
        while True:
            conn, _ = lsock.accept()
            with lock:
                counter[0] += 1
                n = counter[0]
            threading.Thread(target=handle, args=(conn, n), daemon=True).start()

    for addr in addrs:
        s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(backlog)
        threading.Thread(target=accept_loop, args=(s,), daemon=True).start()
        say(prefix, "listening on %s port %d%s" % (addr, port, note))
    until_stopped(ready_file)
    return counter[0]


def until_stopped(ready_file=None):
    """Writes our pid to ready_file (when given), then waits for SIGTERM or
    SIGINT."""
    if ready_file:
        with open(ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    while not done.wait(1):
        pass
