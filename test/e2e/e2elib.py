# SPDX-License-Identifier: MIT
"""Shared helpers for the s5tund end-to-end test programs (target.py,
client.py, socks5srv.py, and the checks of hostile.py, ops.py and soak.py):

  stream, parse_size, connect, socks5_handshake, ...
                       the target's protocol (below) and a SOCKS5 client
  Fail, check, wait_for, stats_doc, queue_of
                       checks, bounded waits, the stats socket, which queue
                       took a connection
  say                  one whole output line per call, from any thread
  Daemon               the s5tund under test seen from outside: process
                       tree (fds by kind, CPU, RSS), stats, log file
  normalise, LEVEL_RE  the kind of a log line, to count kinds, not sessions
  Keeper               echo connections on a few threads while a case runs:
                       the daemon must keep serving others
  parallel, echo_once  fn over items on n threads; one echo through the
                       tunnel

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
  GET <path> HTTP/1.x  an HTTP request (ab's): the target reads the header,
                       answers "200 OK" with a short body and closes.
"""

import collections
import hashlib
import ipaddress
import json
import os
import random
import re
import socket
import struct
import threading
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


def connect(host, port, timeout, socks5=None, user=None, password=None, bind=None):
    """TCP connection to host:port, directly or through a SOCKS5 proxy
    (socks5 = 'addr:port' string), from the local address bind if given.
    Returns a socket with the given timeout."""
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
        if bind:
            s.bind((bind, 0))
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
    "queues": one object per queue). Asked for with "stats" (a client that
    sends nothing gets it too, after a moment)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(b"stats\n")
        s.shutdown(socket.SHUT_WR)
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


# ---------------------------------------------------------------- output

_out_lock = threading.Lock()


def say(prefix, msg):
    """One log line "PREFIX: MSG" on stdout, whole even from many threads."""
    with _out_lock:
        print("%s: %s" % (prefix, msg), flush=True)


# ---------------------------------------------------------------- the daemon under test

class Daemon:
    """The s5tund under test, seen from outside: its process tree in /proc,
    its stats socket, its log file."""

    def __init__(self, pid, stats_path, log_path):
        self.pid, self.stats_path, self.log_path = pid, stats_path, log_path

    def pids(self):
        out = [self.pid]
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == self.pid:
                out.append(int(p))
        return out

    def alive(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                st = f.read()
        except OSError:
            return False
        return st[st.rindex(")") + 2] not in "ZX"

    def fds(self):
        n = 0
        for p in self.pids():
            try:
                n += len(os.listdir("/proc/%d/fd" % p))
            except OSError:
                pass
        return n

    def fd_kinds(self, per_pid=False):
        """Open fds by kind (socket, anon_inode:[eventfd], /dev/null ...), of
        the whole process tree or per process ("PID/COMM")."""
        per = {}
        for p in self.pids():
            try:
                with open("/proc/%d/comm" % p) as f:
                    comm = f.read().strip()
            except OSError:
                comm = "?"
            kinds = collections.Counter()
            try:
                names = os.listdir("/proc/%d/fd" % p)
            except OSError:
                names = []
            for fd in names:
                try:
                    kinds[re.sub(r"\[\d+\]|:\d+$", "", os.readlink("/proc/%d/fd/%s" % (p, fd)))] += 1
                except OSError:
                    pass
            per["%d/%s" % (p, comm)] = dict(kinds)
        if per_pid:
            return per
        return dict(sum((collections.Counter(k) for k in per.values()), collections.Counter()))

    def cpu_seconds(self):
        """User and system CPU time of the process tree so far."""
        ticks = 0
        for p in self.pids():
            try:
                with open("/proc/%d/stat" % p) as f:
                    st = f.read()
            except OSError:
                continue
            ticks += sum(int(x) for x in st[st.rindex(")") + 2:].split()[11:13])
        return ticks / os.sysconf("SC_CLK_TCK")

    def rss_kib(self):
        total = 0
        for p in self.pids():
            try:
                with open("/proc/%d/status" % p) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total

    def stats(self):
        return stats_doc(self.stats_path)["totals"]

    def queue_stats(self):
        return stats_doc(self.stats_path)["queues"]

    def warm_queues(self, host, port, bound=200):
        """Echo connections until every queue has carried one: libuv opens a
        reserve fd (/dev/null, for EMFILE) per event loop at its first TCP
        handle, once; a baseline taken before that would see it as a leak."""
        for i in range(bound):
            idle = [q["queue"] for q in self.queue_stats() if q["tcp_total"] == 0]
            if not idle:
                return i
            try:
                echo_once(host, port, 30, 16, i)
            except OSError:
                pass
        raise Fail("queues %s carried no connection after %d tries" % (idle, bound))

    def log_mark(self):
        return os.path.getsize(self.log_path)

    def log_since(self, mark):
        with open(self.log_path, "rb") as f:
            f.seek(mark)
            return f.read().decode("utf-8", "replace").splitlines()


LEVEL_RE = re.compile(r"^\S+ (error|warn|info|debug)\s")


def normalise(line):
    """A log line without time, session ids, addresses and numbers: the
    'kind' of message, so that N sessions failing alike count as one kind."""
    m = LEVEL_RE.match(line)
    text = line[m.end():] if m else line
    text = re.sub(r"\b[su]\d+\b", "sN", text)
    text = re.sub(r"\[[0-9a-f:.]+\]:\d+|\d+\.\d+\.\d+\.\d+(:\d+)?", "ADDR", text, flags=re.I)
    text = re.sub(r"\d+", "N", text)
    return ((m.group(1) if m else "?") + " " + text).strip()


class Keeper:
    """Echo connections through the tunnel on a few threads while a case
    runs: the daemon must keep serving others. Any failure is recorded."""

    def __init__(self, host, port, threads=4, timeout=30.0, size=2048):
        self.host, self.port, self.timeout, self.size = host, port, timeout, size
        self.stop_ev = threading.Event()
        self.ok = 0
        self.attempts = 0
        self.errors = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]

    def run(self, i):
        rng = random.Random(1000 + i)
        while not self.stop_ev.is_set():
            msg = rng.randbytes(self.size)
            with self.lock:
                self.attempts += 1
            try:
                s = socket.create_connection((self.host, self.port), timeout=self.timeout)
                try:
                    s.sendall(b"ECHO\n" + msg)
                    got = recv_exact(s, len(msg))
                finally:
                    s.close()
                if got != msg:
                    raise ValueError("echo came back different")
                with self.lock:
                    self.ok += 1
            except (OSError, ValueError, ConnectionError) as e:
                with self.lock:
                    self.errors.append("%s: %s" % (type(e).__name__, e))
                time.sleep(0.2)
            self.stop_ev.wait(0.05)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        for t in self.threads:
            t.join(self.timeout + 10)

    def verify(self, min_ok=1):
        check(not self.errors, "the keeper's echo failed %d times while the case ran "
              "(%d echoes passed): %s" % (len(self.errors), self.ok, self.errors[:3]))
        check(self.ok >= min_ok, "the keeper managed only %d echoes" % self.ok)
        say("check", "keeper: %d echoes through the same daemon while the case ran, none failed"
            % self.ok)


def parallel(fn, items, conc):
    """fn(item) for every item on conc threads; returns the results in order."""
    results = [None] * len(items)
    it = iter(enumerate(items))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                try:
                    i, item = next(it)
                except StopIteration:
                    return
            try:
                results[i] = fn(item)
            except Exception as e:  # noqa: BLE001 - reported as a result
                results[i] = "exception %s: %s" % (type(e).__name__, e)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def echo_once(host, port, timeout, size, rng_seed):
    msg = random.Random(rng_seed).randbytes(size)
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(b"ECHO\n" + msg)
        got = recv_exact(s, len(msg))
    finally:
        s.close()
    return "ok" if got == msg else "mismatch"
