"""Shared helpers for the s5tund end-to-end test programs (target.py,
client.py, and the checks of hostile.py and ops.py: Fail, check, wait_for,
stats_doc, queue_of).

Standard library only; run with Debian's /usr/bin/python3.

Wire protocol spoken by target.py: the client sends one ASCII command line
terminated by "\\n", then:

  ECHO                 every byte received is sent back; on EOF from the
                       client the target finishes sending and closes
                       (so a half-closed client still gets its echo).
  UPLOAD               the target reads until EOF, then replies with the
                       SHA-256 hex digest of what it read plus "\\n" and
                       closes (needs half-close through every hop).
  UPLOAD <n>           the target reads exactly n bytes, replies with the
                       digest and closes (no half-close needed: for proxies
                       such as microsocks that tear down both directions on
                       the first EOF).
  DOWNLOAD <n> <seed>  the target sends stream(seed, n) and closes.
  HOLD <tag>           the target answers "HELD <tag>\n", then sends nothing
                       and reads until the peer ends the connection; its log
                       line "hold <tag> ended: eof|reset ..." says how it
                       ended (the tests of resets and timeouts wait for it).
  LATER <ms> <tag>     the target sends nothing for ms milliseconds, then
                       "LATE <tag>\n", and closes.
"""

import hashlib
import ipaddress
import json
import random
import socket
import struct
import time

CHUNK = 1 << 20  # generator chunk size: part of the definition of stream()


def stream(seed, n):
    """Yields n deterministic pseudo-random bytes in chunks of at most CHUNK."""
    rng = random.Random(seed)
    left = n
    while left > 0:
        k = min(CHUNK, left)
        yield rng.randbytes(k)
        left -= k


def stream_sha256(seed, n):
    h = hashlib.sha256()
    for chunk in stream(seed, n):
        h.update(chunk)
    return h.hexdigest()


def parse_size(text):
    """'64M', '64MiB', '1k', '12345' -> bytes."""
    t = text.strip().lower()
    if t.endswith("ib"):
        t = t[:-2]
    elif t.endswith("b"):
        t = t[:-1]
    mult = 1
    if t and t[-1] in "kmg":
        mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[t[-1]]
        t = t[:-1]
    return int(t) * mult


def split_hostport(text):
    """'10.0.0.1:80' or '[fd00::1]:80' -> (host, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if not rest.startswith(":"):
            raise ValueError("bad address: %r" % text)
        return host, int(rest[1:])
    host, _, port = text.rpartition(":")
    if not host:
        raise ValueError("bad address: %r" % text)
    return host, int(port)


def family_of(host):
    return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET


class Socks5Error(Exception):
    pass


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("EOF after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def read_all(sock, bufsize=65536):
    """Everything the peer sends until its EOF."""
    buf = bytearray()
    while True:
        chunk = sock.recv(bufsize)
        if not chunk:
            return bytes(buf)
        buf += chunk


def socks5_handshake(sock, host, port, user=None, password=None):
    """Client side of RFC 1928 (+ RFC 1929) CONNECT to an IP literal."""
    if user is not None:
        sock.sendall(b"\x05\x01\x02")
    else:
        sock.sendall(b"\x05\x01\x00")
    ver, method = recv_exact(sock, 2)
    if ver != 5:
        raise Socks5Error("bad version %d in method reply" % ver)
    if method == 0xFF:
        raise Socks5Error("no acceptable method")
    if method == 0x02:
        if user is None:
            raise Socks5Error("server wants username/password")
        u, p = user.encode(), password.encode()
        sock.sendall(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
        _, status = recv_exact(sock, 2)
        if status != 0:
            raise Socks5Error("authentication failed (status %d)" % status)
    elif method != 0x00:
        raise Socks5Error("server chose unoffered method %d" % method)
    addr = ipaddress.ip_address(host)
    if addr.version == 4:
        req = b"\x05\x01\x00\x01" + addr.packed + struct.pack("!H", port)
    else:
        req = b"\x05\x01\x00\x04" + addr.packed + struct.pack("!H", port)
    sock.sendall(req)
    ver, rep, _, atyp = recv_exact(sock, 4)
    if ver != 5:
        raise Socks5Error("bad version %d in CONNECT reply" % ver)
    alen = {1: 4, 4: 16}.get(atyp)
    if alen is None and atyp == 3:
        alen = recv_exact(sock, 1)[0]
    if alen is None:
        raise Socks5Error("bad ATYP %d in CONNECT reply" % atyp)
    recv_exact(sock, alen + 2)
    if rep != 0:
        raise Socks5Error("CONNECT refused, REP=%d" % rep)


def connect(host, port, timeout, socks5=None, user=None, password=None):
    """TCP connection to host:port, directly or through a SOCKS5 proxy
    (socks5 = 'addr:port' string). Returns a socket with the given timeout."""
    if socks5:
        phost, pport = split_hostport(socks5)
        s = socket.socket(family_of(phost), socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect((phost, pport))
            socks5_handshake(s, host, port, user, password)
        except BaseException:
            s.close()
            raise
        return s
    s = socket.socket(family_of(host), socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
    except BaseException:
        s.close()
        raise
    return s


# ---------------------------------------------------------------- checks

class Fail(Exception):
    """A check failed; the text says which and what was found."""


def check(cond, what):
    if not cond:
        raise Fail(what)


def wait_for(pred, what, bound=30.0, interval=0.05):
    """Polls pred() until it returns a true value (returned), at most bound
    seconds; then Fail naming what was waited for (what: a string, or a
    function returning one, called at that moment)."""
    deadline = time.monotonic() + bound
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise Fail("waited %.0f s in vain for: %s" % (bound, what() if callable(what) else what))
        time.sleep(interval)


def stats_doc(path, timeout=10):
    """The JSON document of s5tund's stats socket at path ("totals", and
    "queues": one object per queue)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        text = read_all(s).decode()
    finally:
        s.close()
    doc = json.loads(text)
    check(isinstance(doc.get("queues"), list) and "totals" in doc,
          "stats document without totals or queues: %r" % doc)
    return doc


def queue_of(path, opener, tag):
    """opener() opens one connection through the tunnel (returned); the
    queue that took it: the one whose tcp_total went up meanwhile, by one
    (nothing else may open connections meanwhile). Returns (conn, queue)."""
    before = stats_doc(path)
    t0 = before["totals"]["tcp_total"]
    conn = opener()
    after = wait_for(lambda: (lambda d: d if d["totals"]["tcp_total"] > t0 else None)(stats_doc(path)),
                     "tcp_total increase for connection %s" % tag)
    grew = [q["queue"] for q, p in zip(after["queues"], before["queues"])
            if q["tcp_total"] != p["tcp_total"]]
    check(len(grew) == 1 and after["totals"]["tcp_total"] == t0 + 1,
          "connection %s: tcp_total grew on queues %s by %d in total, expected one queue by 1"
          % (tag, grew, after["totals"]["tcp_total"] - t0))
    return conn, grew[0]
