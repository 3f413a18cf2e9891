#!/usr/bin/python3
"""Hostile and broken peers for the s5tund end-to-end tests (hostile.sh).

Three roles, standard library only (Debian's /usr/bin/python3; the SOCKS5
server side is socks5srv.py's, shared with badproxy.py):

  hostile.py proxy --listen ADDR [--listen ADDR] --port P [--slow-greeting]
                   [--udp-bnd-file F] [--ready-file F]

    A SOCKS5 server (method "no authentication") that answers the greeting
    honestly (one byte per 100 ms with --slow-greeting), then behaves
    according to the port the CONNECT asks for:

      7101 garbage     10 bytes that are no CONNECT reply (rotating: wrong
                       VER; VER 5 with an unknown ATYP; ATYP 3 with length 0;
                       random bytes), then reads until s5tund ends the
                       connection
      7102 truncated   the first 5 bytes of a success reply, then a FIN
      7103 bigdomain   success with BND as ATYP 3, length 255, 255 bogus
                       bytes (binary, NULs included); then an honest relay
                       to port 7000 of the requested address
      7104 bigdomain-cut  ATYP 3, length 255, only 100 of the 255 bytes, FIN
      7105 slow-ok     a success reply one byte per 100 ms (1 s), then an
                       honest relay to port 7000
      7106 slow-late   a success reply with a 250-byte ATYP 3 name, one byte
                       per 100 ms (26 s: past any connect-timeout the tests
                       use); logs how many bytes went out before s5tund
                       gave up
      7107 hang        nothing after the CONNECT; reads until s5tund ends it
      7108 close-fin   a FIN right after the CONNECT request, no reply
      7109 close-rst   a RST right after the CONNECT request, no reply
      7110 cut-fin     success, an honest relay to port 7000, but after
                       65536 bytes toward the client both connections are
                       closed with a FIN
      7111 cut-rst     the same, closed with a RST
      7112 stall-rst   as cut-rst after 2 MiB, once s5tund's kernel took them
                       (or 3 s passed): with a client that does not read
                       yet, the bytes and the RST wait unread in s5tund's
                       socket together
      other            an honest relay (EOF passed on as a half-close, RST
                       as RST)

    UDP ASSOCIATE is answered with success and the BND.ADDR:PORT read from
    --udp-bnd-file at that moment ("ADDR PORT"; an unreachable relay), and
    the control connection is held until the client ends it. One log line
    per connection: "hostile: conn N MODE ... client-end=eof|reset|-".

  hostile.py sink --listen ADDR [--listen ADDR] [--ports LO-HI] [--ready-file F]

    UDP sockets on every port LO..HI (default 20000-20063) of every ADDR,
    never read: where tunflood's UDP datagrams end, relayed by the proxy,
    without an ICMP error (which would end the proxy's UDP relay).

  hostile.py check CASE --pid PID --stats SOCK --log FILE --proxy-log FILE ...

    Runs in the client namespace: the hostile traffic of CASE through the
    tunnel while a keeper echoes through the same daemon, then the checks:
    the keeper never failed, the hostile sessions ended as they must, the
    counters moved by exactly what was done, every session is gone
    (tcp_active / udp_active 0), the daemon's process tree has as many open
    fds as before, and the daemon logged the case a bounded number of times
    (at most --log-max lines at info or above, never one per session).
    Exit 0 when every check passed; the last line says what failed.
"""

import argparse
import collections
import os
import random
import re
import select
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import Fail, check, wait_for  # noqa: E402
from socks5srv import (Refused, Relay, connect_target, handshake, read_to_end, reply,  # noqa: E402
                       rst_close, say, serve, until_stopped)

P_GARBAGE, P_TRUNC, P_BIGDOM, P_BIGDOM_CUT = 7101, 7102, 7103, 7104
P_SLOW_OK, P_SLOW_LATE, P_HANG, P_CLOSE_FIN = 7105, 7106, 7107, 7108
P_CLOSE_RST, P_CUT_FIN, P_CUT_RST, P_STALL_RST = 7109, 7110, 7111, 7112
RELAY_PORT = 7000          # target.py's port: where the relaying modes go
CUT_AFTER = 65536          # cut-fin / cut-rst: bytes toward the client first
STALL_CUT = 2 << 20        # stall-rst: bytes toward the client first
SLOW = 0.1                 # one byte per 100 ms

POLL = 0.2                 # seconds between two looks at the daemon's stats


# ====================================================================== proxy

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


# ====================================================================== checks

def log(msg):
    say("check", msg)


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
        return e2elib.stats_doc(self.stats_path)["totals"]

    def queue_stats(self):
        return e2elib.stats_doc(self.stats_path)["queues"]

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


FAILS = ("socks5_connect_failed", "socks5_auth_failed", "socks5_refused",
         "socks5_bad_reply", "socks5_timeout")


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
                    got = e2elib.recv_exact(s, len(msg))
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
        log("keeper: %d echoes through the same daemon while the case ran, none failed"
            % self.ok)


def probe(host, port, timeout, send=b"ECHO\nprobe\n"):
    """One connection expected to fail: 'refused', 'reset', 'eof', 'data',
    'timeout' or 'error ...'."""
    s = socket.socket(e2elib.family_of(host), socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return "refused"
        except ConnectionResetError:
            return "reset"
        except socket.timeout:
            return "timeout"
        except OSError as e:
            return "error %s" % e
        try:
            s.sendall(send)
            data = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        except socket.timeout:
            return "timeout"
        except OSError as e:
            return "error %s" % e
        return "data" if data else "eof"
    finally:
        s.close()


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


def expect_refused(args, port, n, conc=100, timeout=30, host=None):
    hosts = [host] if host else [args.host, args.host6]
    res = parallel(lambda i: probe(hosts[i % len(hosts)], port, timeout), list(range(n)), conc)
    c = collections.Counter(res)
    log("%d connections to port %d: %s" % (n, port, dict(c)))
    bad = {k: v for k, v in c.items() if k not in ("refused", "reset")}
    check(not bad, "port %d: connections not refused or reset: %s" % (port, bad))
    return c


def echo_once(host, port, timeout, size, rng_seed):
    msg = random.Random(rng_seed).randbytes(size)
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(b"ECHO\n" + msg)
        got = e2elib.recv_exact(s, len(msg))
    finally:
        s.close()
    return "ok" if got == msg else "mismatch"


def expect_echo(args, port, n, conc=50, timeout=60, size=4096):
    hosts = [args.host, args.host6]
    res = parallel(lambda i: echo_once(hosts[i % 2], port, timeout, size, i), list(range(n)), conc)
    c = collections.Counter(res)
    log("%d echo connections to port %d: %s" % (n, port, dict(c)))
    check(c.get("ok", 0) == n, "port %d: not every echo passed: %s" % (port, dict(c)))


def proxy_lines(args, pattern):
    if not args.proxy_log:
        return []
    rx = re.compile(pattern)
    with open(args.proxy_log, errors="replace") as f:
        return [ln for ln in f if rx.search(ln)]


def wait_proxy_lines(args, pattern, n, bound=60):
    wait_for(lambda: len(proxy_lines(args, pattern)) >= n,
             lambda: "%d lines /%s/ in the proxy's log (have %d)"
             % (n, pattern, len(proxy_lines(args, pattern))), bound, POLL)
    return proxy_lines(args, pattern)


class Case:
    """Snapshot before, checks after: shared by every case."""

    def __init__(self, args):
        self.args = args
        self.d = Daemon(args.pid, args.stats, args.log)
        self.d.warm_queues(args.host, args.port)
        self.quiet()
        self.fd0 = self.d.fds()
        self.kinds0 = self.d.fd_kinds()
        self.pidkinds0 = self.d.fd_kinds(per_pid=True)
        self.rss0 = self.d.rss_kib()
        self.s0 = self.d.stats()
        self.mark = self.d.log_mark()
        log("baseline: %d fds in the process tree (%s), RSS %d KiB, tcp_active %d, udp_active %d"
            % (self.fd0, self.kinds0, self.rss0, self.s0["tcp_active"], self.s0["udp_active"]))

    def quiet(self):
        """No session left from the harness's readiness check."""
        wait_for(lambda: (lambda s: s["tcp_active"] == 0 and s["udp_active"] == 0)(self.d.stats()),
                 "tcp_active and udp_active 0 before the case", 60, POLL)

    def keeper(self, **kw):
        return Keeper(self.args.host, self.args.port, **kw)

    def freed(self, bound=90):
        """Every session gone, fds back to the baseline (bounded waits)."""
        check(self.d.alive(), "s5tund (pid %d) is not running any more" % self.d.pid)
        wait_for(lambda: (lambda s: s["tcp_active"] == 0 and s["udp_active"] == 0)(self.d.stats()),
                 lambda: "tcp_active and udp_active back to 0 (now %s)"
                 % {k: self.d.stats()[k] for k in ("tcp_active", "udp_active")}, bound, POLL)
        try:
            wait_for(lambda: self.d.fds() == self.fd0,
                     "fd count of the process tree back to %d" % self.fd0, bound, POLL)
        except Fail as e:
            raise Fail("%s: now %d, by process and kind %s, before %s"
                       % (e, self.d.fds(), self.d.fd_kinds(per_pid=True), self.pidkinds0))
        self.s1 = self.d.stats()
        log("freed: tcp_active 0, udp_active 0, %d fds as before; RSS %d KiB (was %d)"
            % (self.fd0, self.d.rss_kib(), self.rss0))
        return self.s1

    def d_(self, key):
        return self.s1[key] - self.s0[key]

    def counters(self, **want):
        """Counter deltas: exact values (int) or at least (('>=', n))."""
        for key, v in want.items():
            got = self.d_(key)
            if isinstance(v, tuple):
                check(got >= v[1], "counter %s moved by %d, expected at least %d" % (key, got, v[1]))
            else:
                check(got == v, "counter %s moved by %d, expected exactly %d" % (key, got, v))
        log("counters: %s" % ", ".join("%s +%d" % (k, self.d_(k)) for k in
                                       ("tcp_total",) + FAILS + ("udp_total", "drop_udp",
                                                                 "drop_no_memory"))
            )

    def logs(self, sessions, must_mention=None, unit="hostile sessions"):
        """The daemon logged the case, but a bounded number of times: at most
        --log-max lines at info or above for `sessions` sessions (or other
        units)."""
        lines = self.d.log_since(self.mark)
        loud = [ln for ln in lines if LEVEL_RE.match(ln) and LEVEL_RE.match(ln).group(1) != "debug"]
        kinds = collections.Counter(normalise(ln) for ln in loud)
        log("s5tund wrote %d lines at info or above for %d %s (%d kinds):"
            % (len(loud), sessions, unit, len(kinds)))
        for k, v in kinds.most_common(8):
            log("  %6d x %s" % (v, k[:160]))
        if must_mention:
            check(any(re.search(must_mention, ln) for ln in loud),
                  "no line at info or above mentions /%s/: the case went unreported" % must_mention)
        check(len(loud) <= self.args.log_max,
              "LOG FLOOD: %d lines at info or above for %d %s (at most %d "
              "allowed: one per case, rate-limited; per-session failures belong at debug)"
              % (len(loud), sessions, unit, self.args.log_max))


# ---------------------------------------------------------------- cases

def case_garbage(args):
    n = args.n or 1000
    c = Case(args)
    with c.keeper() as k:
        expect_refused(args, P_GARBAGE, n)
    k.verify()
    wait_proxy_lines(args, r"garbage client-end=(eof|reset)", n)
    c.freed()
    c.counters(socks5_bad_reply=n)
    c.logs(n, must_mention="SOCKS5|handshake")


def case_truncated(args):
    n = args.n or 300
    c = Case(args)
    with c.keeper() as k:
        expect_refused(args, P_TRUNC, n)
    k.verify()
    wait_proxy_lines(args, r"truncated client-end=", n)
    c.freed()
    c.counters(socks5_bad_reply=n)
    c.logs(n, must_mention="SOCKS5|handshake|proxy")


def case_bigdomain(args):
    """A 255-byte bogus domain as BND is a valid reply (RFC 1928 allows any
    octets): the connection works. Cut short, it is a failed handshake."""
    n = args.n or 100
    c = Case(args)
    with c.keeper() as k:
        expect_echo(args, P_BIGDOM, n)
        expect_refused(args, P_BIGDOM_CUT, n)
    k.verify()
    wait_proxy_lines(args, r"bigdomain-cut client-end=", n)
    c.freed()
    c.counters(socks5_bad_reply=n)
    c.logs(n, must_mention="SOCKS5|handshake|proxy")


def case_slow(args):
    """Greeting and reply one byte per 100 ms: within connect-timeout the
    connection works; a reply that would take 26 s fails at connect-timeout."""
    n = args.n or 100
    c = Case(args)
    with c.keeper(timeout=60) as k:
        expect_echo(args, P_SLOW_OK, n, conc=n)
        t0 = time.monotonic()
        expect_refused(args, P_SLOW_LATE, n, conc=n, timeout=60)
        log("slow-late connections refused after %.1f s (connect-timeout %s s)"
            % (time.monotonic() - t0, args.connect_timeout))
    k.verify()
    lines = wait_proxy_lines(args, r"slow-late sent \d+ of \d+ bytes client-end=", n)
    for ln in lines:
        m = re.search(r"sent (\d+) of (\d+)", ln)
        check(int(m.group(1)) < int(m.group(2)),
              "a slow-late reply was sent in full before s5tund gave up: %s" % ln.strip())
    c.freed()
    c.counters(socks5_timeout=n)
    c.logs(n, must_mention="connect-timeout")


def case_hang(args):
    n = args.n or 200
    c = Case(args)
    with c.keeper() as k:
        expect_refused(args, P_HANG, n, conc=n, timeout=60)
    k.verify()
    wait_proxy_lines(args, r"hang client-end=(eof|reset)", n)
    c.freed()
    # Every session but the keeper's timed out: the n connections, and
    # under load a few more, opened by a SYN a client retransmitted just as
    # the reset of its first session crossed it.
    sessions = c.d_("tcp_total") - k.attempts
    c.counters(socks5_timeout=(">=", n))
    check(c.d_("socks5_timeout") == sessions, "%d sessions besides the keeper's, %d counted "
          "as socks5_timeout" % (sessions, c.d_("socks5_timeout")))
    c.logs(n, must_mention="connect-timeout")


def case_close_handshake(args):
    n = args.n or 200
    c = Case(args)
    with c.keeper() as k:
        expect_refused(args, P_CLOSE_FIN, n)
        expect_refused(args, P_CLOSE_RST, n)
    k.verify()
    wait_proxy_lines(args, r"close-fin client-end=", n)
    wait_proxy_lines(args, r"close-rst", n)
    c.freed()
    c.counters(socks5_bad_reply=2 * n)
    c.logs(2 * n, must_mention="handshake|proxy")


def download_cut(host, port, size, seed, timeout, stall=0.0):
    """DOWNLOAD through a proxy that cuts the transfer: (ending, bytes,
    prefix_ok). stall: seconds before the first read."""
    s = socket.create_connection((host, port), timeout=timeout)
    got = bytearray()
    try:
        s.sendall(b"DOWNLOAD %d %d\n" % (size, seed))
        time.sleep(stall)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    ending = "eof"
                    break
                got += chunk
        except ConnectionResetError:
            ending = "reset"
        except socket.timeout:
            ending = "timeout"
    finally:
        s.close()
    # The whole stream, then its start: stream(seed, k) for a k not on a
    # chunk boundary ends differently from a longer stream's first k bytes.
    want = b"".join(e2elib.stream(seed, size))[:len(got)]
    return ending, len(got), bytes(got) == want


def case_close_transfer(args):
    """The proxy ends the connection in the middle of a 4 MiB download, with
    a FIN (the client gets a clean EOF after the bytes it got) or a RST (the
    client gets a reset); what arrived is the start of the stream."""
    n = args.n or 50
    size = 4 << 20
    c = Case(args)
    nstall = max(1, n // 5)
    problems = []
    with c.keeper() as k:
        for port, want, m, stall in ((P_CUT_FIN, "eof", n, 0), (P_CUT_RST, "reset", n, 0),
                                     (P_STALL_RST, "reset", nstall, 4)):
            hosts = [args.host, args.host6]
            res = parallel(lambda i: download_cut(hosts[i % 2], port, 2 * size, i, 60, stall),
                           list(range(m)), m)
            ends = collections.Counter(r[0] if isinstance(r, tuple) else r for r in res)
            log("port %d (%s): %d downloads cut: endings %s, bytes %s" % (
                port, want, m, dict(ends),
                sorted(set(r[1] for r in res if isinstance(r, tuple)))[:5]))
            check(all(isinstance(r, tuple) and r[2] and r[1] < 2 * size for r in res),
                  "port %d: a cut download delivered wrong bytes or all of them: %s"
                  % (port, [r for r in res if not (isinstance(r, tuple) and r[2])][:3]))
            if ends.get(want, 0) != m:
                problems.append("port %d: the proxy ended every transfer with a %s, but not every "
                                "client saw a %s: %s" % (port, want.replace("eof", "FIN").replace(
                                    "reset", "RST"), want, dict(ends)))
    check(not problems, "; ".join(problems))
    k.verify()
    wait_proxy_lines(args, r"cut-fin relay", n)
    wait_proxy_lines(args, r"cut-rst relay", n)
    wait_proxy_lines(args, r"stall-rst relay", nstall)
    c.freed()
    c.counters(tcp_total=(">=", 2 * n + nstall))
    c.logs(2 * n + nstall, must_mention=None)


def udp_send(host, port, n, per_socket, pause, payload=b"hostile udp", wait=1):
    """n datagrams, per_socket from each source socket; after wait seconds,
    returns how many replies came (there must be none: the relay is
    unreachable)."""
    replies = 0
    socks = []
    try:
        for i in range(n):
            if i % per_socket == 0:
                s = socket.socket(e2elib.family_of(host), socket.SOCK_DGRAM)
                s.setblocking(False)
                socks.append(s)
            try:
                socks[-1].sendto(payload, (host, port))
            except OSError:
                pass
            time.sleep(pause)
        time.sleep(wait)
        for s in socks:
            try:
                while s.recv(2048):
                    replies += 1
            except OSError:
                pass
    finally:
        for s in socks:
            s.close()
    return replies


def case_udp_unreachable(args):
    """The proxy answers UDP ASSOCIATE with a relay address that cannot be
    used: an address with no route, the unspecified address with port 0, a
    closed port on the proxy's host. The association must fail cleanly (no
    datagram delivered, udp_active back to 0), be counted as a failure, and
    not be retried and logged once per datagram: after a failure the daemon
    holds new associations back (1 s, doubling up to 30 s), so hundreds of
    datagrams from hundreds of sources cost a handful of UDP ASSOCIATEs."""
    c = Case(args)
    variants = [("10.99.0.1", 4000, "no route"), ("0.0.0.0", 0, "port 0"),
                (args.proxy_addr, 9, "closed port on the proxy's host")]
    per = args.n or 100
    most = 12   # ASSOCIATEs per variant; without the hold-down one per source
    rows = []   # (what, associations, failures counted, ASSOCIATEs at the proxy, datagrams)
    with c.keeper() as k:
        for addr, port, what in variants:
            with open(args.udp_bnd_file, "w") as f:
                f.write("%s %d\n" % (addr, port))
            before = c.d.stats()

            def fails():
                return sum(c.d.stats()[f] - before[f] for f in FAILS)
            # per datagrams from one source, then per sources with one each;
            # then more, until a failure was counted (a hold-down left by
            # the variant before may still refuse the first ones)
            r = udp_send(args.host, 7001, per, per, 0.02)
            r += udp_send(args.host, 7001, per, 1, 0.005)
            sent, deadline = 2 * per, time.time() + 45
            while fails() == 0 and time.time() < deadline:
                r += udp_send(args.host, 7001, 10, 1, 0.05, wait=0)
                sent += 10
            check(r == 0, "%s: %d datagrams came back from an unreachable relay" % (what, r))
            wait_for(lambda: c.d.stats()["udp_active"] == 0,
                     "udp_active back to 0 after relay %s:%d (%s)" % (addr, port, what), 60, POLL)
            after = c.d.stats()
            assocs = after["udp_total"] - before["udp_total"]
            nfails = sum(after[f] - before[f] for f in FAILS)
            conns = len(proxy_lines(args, r"udp-associate bnd=%s:%d " % (re.escape(addr), port)))
            log("relay %s:%d (%s): %d datagrams from %d sources -> %d associations, %d SOCKS5 "
                "failures counted, %d UDP ASSOCIATE at the proxy, drop_udp +%d"
                % (addr, port, what, sent, sent - per + 1, assocs, nfails, conns,
                   after["drop_udp"] - before["drop_udp"]))
            rows.append((what, assocs, nfails, conns, sent))
    k.verify()
    c.freed()
    c.logs(3 * 2 * per, must_mention="UDP|relay|udp")
    for what, assocs, nfails, conns, sent in rows:
        check(nfails >= 1, "relay %s: %d associations failed and no failure counter moved "
              "(socks5_* unchanged): the failure is not counted" % (what, assocs))
        check(conns <= most, "relay %s: %d UDP ASSOCIATEs for %d datagrams: a failed relay is "
              "retried per datagram (at most %d expected)" % (what, conns, sent, most))


def case_idle(args):
    """Connections that open and never send: tcp-idle-timeout frees them
    (each client sees a reset), the rest goes on."""
    n = args.n or 300
    c = Case(args)
    socks = []
    with c.keeper() as k:
        for i in range(n):
            h = args.host if i % 2 == 0 else args.host6
            s = socket.create_connection((h, args.port), timeout=30)
            socks.append(s)
        log("%d silent connections open" % n)
        check(c.d.stats()["tcp_active"] >= n, "tcp_active is %d with %d silent connections open"
              % (c.d.stats()["tcp_active"], n))
        ends = collections.Counter()
        deadline = time.monotonic() + args.idle_timeout + 60
        pending = list(socks)
        while pending and time.monotonic() < deadline:
            r, _, _ = select.select(pending, [], [], 1)
            for s in r:
                try:
                    data = s.recv(16)
                    ends["data" if data else "eof"] += 1
                except ConnectionResetError:
                    ends["reset"] += 1
                except OSError as e:
                    ends["error %s" % e] += 1
                pending.remove(s)
        for s in socks:
            s.close()
        log("silent connections ended: %s, %d still open" % (dict(ends), len(pending)))
        check(not pending, "%d silent connections still open %d s after the idle timeout"
              % (len(pending), 60))
        check(ends.get("reset", 0) == n, "silent connections did not all end with a reset: %s"
              % dict(ends))
    k.verify()
    c.freed()
    c.counters(tcp_total=(">=", n))
    c.logs(n, must_mention="idle")


def halfclose_one(host, port, i, timeout):
    """Three uses of half-close: UPLOAD then FIN, digest back; DOWNLOAD
    after our FIN; ECHO with FIN right after the data, all of it back."""
    rng = random.Random(i)
    kind = i % 3
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        if kind == 0:
            data = rng.randbytes(256 * 1024)
            s.sendall(b"UPLOAD\n" + data)
            s.shutdown(socket.SHUT_WR)
            line = b""
            while not line.endswith(b"\n"):
                chunk = s.recv(100)
                if not chunk:
                    return "upload: EOF before the digest"
                line += chunk
            import hashlib
            return "ok" if line.strip().decode() == hashlib.sha256(data).hexdigest() \
                else "upload: wrong digest"
        if kind == 1:
            size = 2 << 20
            s.sendall(b"DOWNLOAD %d %d\n" % (size, i))
            s.shutdown(socket.SHUT_WR)
            got = e2elib.read_all(s)
            return "ok" if got == b"".join(e2elib.stream(i, size)) else \
                "download after FIN: %d of %d bytes or wrong" % (len(got), size)
        data = rng.randbytes(64 * 1024)
        s.sendall(b"ECHO\n" + data)
        s.shutdown(socket.SHUT_WR)
        got = e2elib.read_all(s)
        return "ok" if got == data else "echo after FIN: %d of %d bytes" % (len(got), len(data))
    except ConnectionResetError:
        return "reset (kind %d)" % kind
    except socket.timeout:
        return "timeout (kind %d)" % kind
    finally:
        s.close()


def case_halfclose(args):
    n = args.n or 60
    c = Case(args)
    with c.keeper() as k:
        hosts = [args.host, args.host6]
        res = parallel(lambda i: halfclose_one(hosts[i % 2], args.port, i, 60), list(range(n)), 30)
        cnt = collections.Counter(res)
        log("%d half-closing clients: %s" % (n, dict(cnt)))
        check(cnt.get("ok", 0) == n, "half-close: data did not all flow back: %s" % dict(cnt))
    k.verify()
    c.freed()
    c.counters(tcp_total=(">=", n))
    c.logs(n)


def checksum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def tcp_packet(src, dst, sport, dport, seq, flags=0x02, ack=0, payload=b""):
    """An IPv4 TCP segment with both checksums; a SYN by default."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 64240, 0, 0) + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum16(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.getrandbits(16), 0, 64, 6, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", checksum16(ip)) + ip[12:]
    return ip + tcp


def syn_flood(dst, dport, n, src=None, spoof_net=None, seed=1, burst=50, pause=0.01):
    """n SYNs to dst:dport from distinct source ports, from src (an address
    of this namespace: its kernel answers the SYN-ACKs with a RST) or from
    random addresses of spoof_net (nobody answers: half-open sessions)."""
    rng = random.Random(seed)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    ports = rng.sample(range(1024, 65535), n)
    sent = 0
    try:
        for i, sport in enumerate(ports):
            s = src or "%s.%d.%d" % (spoof_net, rng.randrange(0, 256), rng.randrange(1, 255))
            pkt = tcp_packet(s, dst, sport, dport, rng.getrandbits(32))
            if i % burst == burst - 1:
                time.sleep(pause)   # a flood, but not one the TUN queue (500 packets) must drop
            while True:
                try:
                    raw.sendto(pkt, (dst, 0))
                    sent += 1
                    break
                except (BlockingIOError, OSError) as e:
                    if getattr(e, "errno", None) in (105, 11):   # ENOBUFS, EAGAIN: pace
                        time.sleep(0.001)
                        continue
                    raise
    finally:
        raw.close()
    return sent


def tun_dropped(dev="tun0"):
    try:
        with open("/sys/class/net/%s/statistics/tx_dropped" % dev) as f:
            return int(f.read())
    except OSError:
        return -1


def case_synflood(args):
    """5000 SYNs from spoofed source ports of the client's own address (its
    kernel resets every SYN-ACK) and 1000 from spoofed addresses that answer
    nothing (half-open until connect-timeout), toward the tunnel, in bursts
    of 100 (the TUN device queues 500 packets: a bigger burst is mostly
    dropped by the kernel before s5tund sees it). Each SYN must become a
    session, and every session must go."""
    n = args.n or 5000
    nspoof = n // 5
    c = Case(args)
    drop0 = tun_dropped()
    with c.keeper(timeout=60) as k:
        sent = syn_flood(args.host, args.port, n, src=args.src)
        sent2 = syn_flood(args.host, args.port, nspoof, spoof_net="10.202", seed=2)
        log("sent %d SYNs from %s (random source ports) and %d from spoofed 10.202.0.0/16 "
            "addresses; tun0 dropped %d packets meanwhile" % (sent, args.src, sent2,
                                                              tun_dropped() - drop0))
        peak = [0]

        def flood_sessions():
            st = c.d.stats()
            peak[0] = max(peak[0], st["tcp_active"])
            with k.lock:
                return st["tcp_total"] - c.s0["tcp_total"] - k.attempts
        # Every SYN either became a session or was dropped by the kernel
        # (the TUN queue was full); enough of them reached the daemon.
        total = sent + sent2
        want = total * 95 // 100

        def accounted():
            return flood_sessions() + tun_dropped() - drop0 >= want
        wait_for(accounted, lambda: "sessions + SYNs dropped by tun0 for at least 95%% of the %d "
                 "SYNs (have %d sessions, %d dropped)"
                 % (total, flood_sessions(), tun_dropped() - drop0), 120, POLL)
        fs = flood_sessions()
        log("%d sessions for %d SYNs, %d dropped by tun0's queue; tcp_active seen up to %d"
            % (fs, total, tun_dropped() - drop0, peak[0]))
        check(fs >= min(500, total // 10), "only %d of %d SYNs became sessions: the flood did "
              "not reach the daemon" % (fs, total))
        time.sleep(1)
    k.verify()
    c.freed(bound=args.connect_timeout + 120)
    c.counters(tcp_total=(">=", fs))
    # The spoofed sources never answer the SYN-ACK: those sessions end at
    # connect-timeout as half-open clients, counted as such and not as
    # proxy timeouts (the proxy did connect). A busy danted may also not
    # finish some CONNECTs in time: those are proxy timeouts, rightly.
    half, s5t = c.d_("tcp_handshake_timeout"), c.d_("socks5_timeout")
    log("tcp_handshake_timeout +%d (half-open clients), socks5_timeout +%d" % (half, s5t))
    check(half >= min(100, sent2 // 10), "only %d half-open sessions counted as "
          "tcp_handshake_timeout for %d SYNs from sources that never answer" % (half, sent2))
    c.logs(sent + sent2)


def hold_open(host, port, timeout, tag):
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        s.sendall(b"HOLD %s\n" % tag.encode())
        line = b""
        while not line.endswith(b"\n"):
            chunk = s.recv(64)
            if not chunk:
                raise ConnectionError("EOF before HELD")
            line += chunk
        return s
    except BaseException:
        s.close()
        raise


def case_fd_exhaustion(args):
    """limit-nofile far below what the connections need: the daemon refuses
    what it cannot carry, survives, says so a bounded number of times, and
    serves again once the connections close."""
    n = args.n or 1000
    c = Case(args)
    held, fails = [], collections.Counter()
    lock = threading.Lock()

    def one(i):
        h = args.host if i % 2 == 0 else args.host6
        try:
            s = hold_open(h, args.port, 30, "fdx%d" % i)
            with lock:
                held.append(s)
            return "held"
        except ConnectionRefusedError:
            return "refused"
        except ConnectionResetError:
            return "reset"
        except socket.timeout:
            return "timeout"
        except OSError as e:
            return "error %s" % e
    res = collections.Counter(parallel(one, list(range(n)), 100))
    # The stats socket itself needs an fd to answer: not asked while none is left.
    log("%d HOLD connections with limit-nofile = %s: %s; fds now %d"
        % (n, args.limit_nofile, dict(res), c.d.fds()))
    check(c.d.alive(), "s5tund died when it ran out of file descriptors")
    check(res.get("held", 0) > 0, "no connection at all was carried")
    check(res.get("refused", 0) + res.get("reset", 0) > 0,
          "every connection was carried: the limit was not reached, the case tests nothing")
    fails.update(res)
    check(set(res) <= {"held", "refused", "reset"},
          "connections neither carried nor refused: %s" % dict(res))
    for s in held:
        s.close()
    log("closed the %d held connections" % len(held))
    c.freed()
    c.counters(socks5_connect_failed=res.get("refused", 0) + res.get("reset", 0))
    with c.keeper() as k:
        time.sleep(2)
    k.verify()
    c.logs(n, must_mention="open files|descriptor|socket")


# ---------------------------------------------------------------- tunflood

FLOOD_MIN = 8.0          # seconds the flood lasts at least,
FLOOD_TAIL = 1.0         # and after the last idle connection's reset,
FLOOD_CAP = 30.0         # but never longer (the reset is then overdue)
FLOOD_MAX_PACKETS = 10_000_000   # per sender, a bound never reached in FLOOD_CAP
FLOOD_PREPARED = 4096    # packets prepared per sender, sent round and round
FLOOD_TCP_PORTS = (20000, 60000)  # destination ports (the target's 7000 is not among them)
FLOOD_UDP_PORTS = (20000, 20063)  # where hostile.py sink listens (no ICMP errors)


def flood_items(kind, idx, args):
    """What sender idx sends, prepared: for kind 'tcp' IPv4 TCP segments
    that belong to no connection, on a raw socket (ACK+PSH with 16
    bytes, from random ports of our own address: lwIP answers each with a
    RST, which our kernel drops), or 16-byte UDP datagrams from 8 sockets to
    the 64 ports of the target's IPv4 and IPv6 addresses where hostile.py
    sink listens (8 associations, each datagram relayed through the proxy).
    Returns ([(socket, packet, address)], the sockets)."""
    rng = random.Random(7700 + idx)
    if kind == "tcp":
        lo, hi = FLOOD_TCP_PORTS
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        addr = (args.host, 0)
        items = [(raw, tcp_packet(args.src, args.host, rng.randrange(1024, 65535),
                                  rng.randrange(lo, hi), rng.getrandbits(32), flags=0x18,
                                  ack=rng.getrandbits(32), payload=b"tunflood%08d" % k), addr)
                 for k in range(FLOOD_PREPARED)]
        return items, [raw]
    socks = []
    for j in range(8):
        fam = socket.AF_INET if j % 2 == 0 else socket.AF_INET6
        u = socket.socket(fam, socket.SOCK_DGRAM)
        u.setblocking(False)
        socks.append(u)
    items = []
    lo, hi = FLOOD_UDP_PORTS
    for k in range(FLOOD_PREPARED):
        u = socks[k % len(socks)]
        host = args.host if u.family == socket.AF_INET else args.host6
        items.append((u, b"tunflood%08d" % k, (host, rng.randint(lo, hi))))
    return items, socks


class Flood:
    """Sender processes, one per kind (see flood_items), that blast their
    prepared packets into tun0 round and round from go() to stop().

    Unpaced, they send as fast as they can; tun0's queue overflows and the
    kernel drops 40-75 % of what enters it, the keeper's segments alike, so
    that a fresh keeper connection whose first data is lost for
    tcp-idle-timeout seconds is reset by the idle timer, as it should be:
    the keeper fails for the kernel's drops, not the daemon's. Paced (the
    default), each sender backs off when tun0 drops (its tx_dropped grew
    during the sender's last 64 sends: the pause after every 64 doubles,
    plus 50 us, up to 20 ms) and speeds up while nothing is dropped (the
    pause shrinks by 1 % per 64): the queue is full at times, s5tund reads
    as much as it can, and the kernel drops about 1 % or less."""

    def __init__(self, kinds, args, paced=True):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        self.kinds, self.paced = kinds, paced
        self.sent, self.errors, self.pauses = (ctx.RawArray("q", len(kinds)) for _ in range(3))
        self.stopped = ctx.RawValue("b", 0)
        self.go_ev = ctx.Event()
        self.procs = [ctx.Process(target=self.sender, args=(kind, i, args), daemon=True)
                      for i, kind in enumerate(kinds)]
        for p in self.procs:
            p.start()

    def sender(self, kind, idx, args):
        """sent[idx] / errors[idx] count the sends our kernel took / refused
        (ENOBUFS, EAGAIN), pauses[idx] the pauses, updated after every 64.
        Ends at stop(), after FLOOD_CAP + 10 s or FLOOD_MAX_PACKETS."""
        items, socks = flood_items(kind, idx, args)
        dropped_fd = os.open("/sys/class/net/tun0/statistics/tx_dropped", os.O_RDONLY)
        self.go_ev.wait()
        deadline = time.monotonic() + FLOOD_CAP + 10
        sent, errors, pauses, stopped = self.sent, self.errors, self.pauses, self.stopped
        n = e = i = np = 0
        pause = 0.0
        drops = int(os.pread(dropped_fd, 32, 0))
        try:
            while not stopped.value and n < FLOOD_MAX_PACKETS and time.monotonic() < deadline:
                if pause > 20e-6:
                    time.sleep(pause)
                    np += 1
                for sock, data, addr in items[i:i + 64]:
                    try:
                        sock.sendto(data, addr)
                        n += 1
                    except OSError:
                        e += 1
                i = (i + 64) % len(items)
                sent[idx], errors[idx], pauses[idx] = n, e, np
                if self.paced:
                    d = int(os.pread(dropped_fd, 32, 0))
                    pause = min(0.02, 2 * pause + 50e-6) if d > drops else 0.99 * pause
                    drops = d
        finally:
            sent[idx], errors[idx], pauses[idx] = n, e, np
            os.close(dropped_fd)
            for sk in socks:
                sk.close()

    def go(self):
        self.go_ev.set()

    def stop(self):
        """Stops the senders and waits for them (bounded); returns how many
        packets they sent."""
        self.stopped.value = 1
        self.go_ev.set()
        for p in self.procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join(5)
        return sum(self.sent)


def tcp_snmp():
    """This namespace's TCP counters (/proc/net/snmp): OutSegs, RetransSegs..."""
    with open("/proc/net/snmp") as f:
        rows = [ln.split() for ln in f if ln.startswith("Tcp:")]
    return dict(zip(rows[0][1:], (int(x) for x in rows[1][1:])))


def case_tunflood(args):
    """Packets blasted into tun0 from several sender processes (TCP segments
    of no connection, UDP datagrams to many ports: see flood_items; paced
    by tun0's drops unless --flood-unpaced: see Flood) for at least
    FLOOD_MIN s: the keeper never fails; idle connections
    opened before the flood (at least one on every queue) are reset by
    tcp-idle-timeout while the flood still runs (the timers fire);
    afterwards every session and fd is freed, the daemon logged the case a
    bounded number of times and serves. The flood must have reached the
    daemon: tun_rx_packets grew by at least --flood-min-read, on every
    queue by at least its 2 * queues-th part.

    What it cannot show on a small machine: that s5tund's read loop is
    bounded. The senders (Python, sharing the CPUs with s5tund) do not keep
    tun0's queue readable without a pause, so a build that reads until
    EAGAIN passed this case too (its timers fired on time, paced or not)."""
    kinds = args.flood.split(",")
    c = Case(args)
    nq = len(c.d.queue_stats())
    flood = Flood(kinds, args, paced=not args.flood_unpaced)
    # Idle connections, each mapped to its queue, until every queue has one
    # (at least 4, IPv4 and IPv6): the timers of flooded queues must fire.
    idle, queues = [], set()
    try:
        while (len(queues) < nq or len(idle) < 4) and len(idle) < 64:
            tag = "flood-idle%d" % len(idle)
            host = args.host if len(idle) % 2 == 0 else args.host6
            sock, q = e2elib.queue_of(args.stats, lambda: hold_open(host, args.port, 30, tag), tag)
            idle.append((sock, q, tag))
            queues.add(q)
        check(len(queues) == nq, "%d idle connections all landed on queues %s of %d"
              % (len(idle), sorted(queues), nq))
        log("%d idle connections (tcp-idle-timeout %d s) on queues %s; %d flood senders (%s), %s"
            % (len(idle), args.idle_timeout, [q for _, q, _ in idle], len(kinds), ",".join(kinds),
               "paced by tun0's drops" if flood.paced else "unpaced"))
        ends = {}
        t0 = [None]

        def watch():
            pending = {sk: tag for sk, _, tag in idle}
            while pending and not flood.stopped.value:
                r, _, _ = select.select(list(pending), [], [], 0.1)
                for sk in r:
                    try:
                        how = "data" if sk.recv(64) else "eof"
                    except ConnectionResetError:
                        how = "reset"
                    except OSError as ex:
                        how = "error %s" % ex
                    ends[pending.pop(sk)] = (how, time.monotonic() - t0[0], sum(flood.sent))
        watcher = threading.Thread(target=watch, daemon=True)
        drop0 = tun_dropped()
        st0, qs0 = c.d.stats(), c.d.queue_stats()
        cpu0, tcp0 = c.d.cpu_seconds(), tcp_snmp()
        with c.keeper(timeout=60) as k:
            # The last activity on the idle connections is now: their
            # timers run from the flood's start.
            for sk, _, _ in idle:
                sk.sendall(b"x")
            t0[0] = time.monotonic()
            flood.go()
            watcher.start()
            while True:
                el = time.monotonic() - t0[0]
                last = max([e[1] for e in ends.values()], default=0.0)
                if el >= FLOOD_CAP or (el >= FLOOD_MIN and len(ends) == len(idle)
                                       and el >= last + FLOOD_TAIL):
                    break
                time.sleep(0.1)
            at_stop = sum(flood.sent)
            total = flood.stop()
            flood_s = time.monotonic() - t0[0]
            watcher.join(5)
            st1, qs1 = c.d.stats(), c.d.queue_stats()
            dropped = tun_dropped() - drop0
            cpu, tcp1 = c.d.cpu_seconds() - cpu0, tcp_snmp()
    finally:
        flood.stop()
        for sk, _, _ in idle:
            sk.close()
    rx = st1["tun_rx_packets"] - st0["tun_rx_packets"]
    rxq = [b["tun_rx_packets"] - a["tun_rx_packets"] for a, b in zip(qs0, qs1)]
    log("flood: %.1f s, %d packets sent (%s; %d sends refused by our kernel, %d pauses); "
        "s5tund read %d packets (tun_rx_packets, per queue %s), tun0 dropped %d (tx_dropped)"
        % (flood_s, total, ", ".join("%s %d" % kn for kn in zip(kinds, flood.sent)),
           sum(flood.errors), sum(flood.pauses), rx, rxq, dropped))
    log("meanwhile: s5tund used %.1f s of CPU; tcp_total +%d, udp_total +%d, drop_udp +%d, "
        "drop_no_memory +%d, bytes_to_proxy +%d; our TCP (the keeper) sent %d segments, %d "
        "of them again" % ((cpu,) + tuple(st1[x] - st0[x] for x in (
            "tcp_total", "udp_total", "drop_udp", "drop_no_memory", "bytes_to_proxy"))
            + (tcp1["OutSegs"] - tcp0["OutSegs"], tcp1["RetransSegs"] - tcp0["RetransSegs"])))
    for tag in sorted(ends, key=lambda t: ends[t][1]):
        how, when, before = ends[tag]
        log("%s ended: %s %.1f s into the flood, after %d of its packets" % (tag, how, when, before))
    k.verify()
    check(len(ends) == len(idle), "idle connections %s not reset %.0f s into the flood "
          "(tcp-idle-timeout %d s): the timers starved"
          % (sorted(set(t for _, _, t in idle) - set(ends)), flood_s, args.idle_timeout))
    bad = {t: e[0] for t, e in ends.items() if e[0] != "reset"}
    check(not bad, "idle connections did not end with a reset: %s" % bad)
    early = [t for t, e in ends.items() if e[2] == 0]
    check(not early, "idle connections %s were reset before the flood sent anything" % early)
    late = [t for t, e in ends.items() if e[2] >= at_stop]
    check(not late, "idle connections %s were reset only after the flood stopped (%d packets)"
          % (late, at_stop))
    check(rx >= args.flood_min_read, "s5tund read only %d packets during the flood (%d sent, "
          "%d dropped by tun0): the flood did not reach the daemon (at least %d expected)"
          % (rx, total, dropped, args.flood_min_read))
    share = args.flood_min_read // (2 * nq)
    check(min(rxq) >= share, "queues read %s packets during the flood: not every queue was "
          "flooded (at least %d each expected)" % (rxq, share))
    c.freed(bound=args.idle_timeout + 120)
    c.counters(tcp_total=(">=", len(idle)))
    c.logs(total, must_mention="idle", unit="flood packets")
    with c.keeper() as k:
        time.sleep(2)
    k.verify()


CASES = {
    "garbage": case_garbage, "truncated": case_truncated, "bigdomain": case_bigdomain,
    "slow": case_slow, "hang": case_hang, "close_handshake": case_close_handshake,
    "close_transfer": case_close_transfer, "udp_unreachable": case_udp_unreachable,
    "idle": case_idle, "halfclose": case_halfclose, "synflood": case_synflood,
    "fd_exhaustion": case_fd_exhaustion, "tunflood": case_tunflood,
}


def cmd_check(args):
    try:
        CASES[args.case](args)
    except (Fail, OSError, ValueError) as e:
        log("FAILED: %s%s" % ("" if isinstance(e, Fail) else type(e).__name__ + ": ", e))
        return 1
    log("PASS: %s" % args.case)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("proxy")
    p.add_argument("--listen", action="append", required=True)
    p.add_argument("--port", type=int, default=1083)
    p.add_argument("--slow-greeting", action="store_true")
    p.add_argument("--udp-bnd-file")
    p.add_argument("--ready-file")
    p = sub.add_parser("sink")
    p.add_argument("--listen", action="append", required=True)
    p.add_argument("--ports", default="%d-%d" % FLOOD_UDP_PORTS)
    p.add_argument("--ready-file")
    p = sub.add_parser("check")
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--proxy-log")
    p.add_argument("--proxy-addr", default="10.200.0.2")
    p.add_argument("--udp-bnd-file")
    p.add_argument("--host", default="10.201.0.1")
    p.add_argument("--host6", default="fd00:201::1")
    p.add_argument("--port", type=int, default=7000)
    p.add_argument("--src", default="10.200.0.1")
    p.add_argument("--n", type=int, default=0)
    p.add_argument("--connect-timeout", type=int, default=10)
    p.add_argument("--idle-timeout", type=int, default=600)
    p.add_argument("--limit-nofile", default="")
    p.add_argument("--log-max", type=int, default=20)
    p.add_argument("--flood", default="tcp,udp",
                   help="tunflood: one sender process per word, tcp or udp")
    p.add_argument("--flood-unpaced", action="store_true",
                   help="tunflood: the senders never pause (see Flood)")
    p.add_argument("--flood-min-read", type=int, default=50000,
                   help="tunflood: packets s5tund must have read during the flood")
    args = ap.parse_args()
    return {"proxy": cmd_proxy, "sink": cmd_sink, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
