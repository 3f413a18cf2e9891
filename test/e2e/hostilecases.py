# SPDX-License-Identifier: MIT
"""The cases of `hostile.py check CASE` (see hostile.py and README.md): the
hostile traffic of each case through the tunnel while a keeper echoes
through the same daemon, then the checks shared by all of them (Case: every
session gone, fds as before, counters moved by exactly what was done, the
daemon's log bounded) and the case's own.

Runs in the client namespace; standard library only. The daemon and the
keeper are e2elib.py's (Daemon, Keeper), the proxy's behaviours
hostileproxy.py's (P_*), the crafted packets flood.py's.
"""

import collections
import random
import re
import select
import socket
import threading
import time

import e2elib
from e2elib import (LEVEL_RE, Daemon, Fail, Keeper, check, echo_once, normalise, parallel, say,
                    wait_for)
from flood import FLOOD_CAP, FLOOD_MIN, FLOOD_TAIL, Flood, syn_flood, tcp_snmp, tun_dropped
from hostileproxy import (P_BIGDOM, P_BIGDOM_CUT, P_CLOSE_FIN, P_CLOSE_RST, P_CUT_FIN, P_CUT_RST,
                          P_GARBAGE, P_HANG, P_SLOW_LATE, P_SLOW_OK, P_STALL_RST, P_TRUNC)

POLL = 0.2                 # seconds between two looks at the daemon's stats


def log(msg):
    say("check", msg)


FAILS = ("socks5_connect_failed", "socks5_auth_failed", "socks5_refused",
         "socks5_bad_reply", "socks5_timeout")


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


def expect_refused(args, port, n, conc=100, timeout=30, host=None):
    hosts = [host] if host else [args.host, args.host6]
    res = parallel(lambda i: probe(hosts[i % len(hosts)], port, timeout), list(range(n)), conc)
    c = collections.Counter(res)
    log("%d connections to port %d: %s" % (n, port, dict(c)))
    bad = {k: v for k, v in c.items() if k not in ("refused", "reset")}
    check(not bad, "port %d: connections not refused or reset: %s" % (port, bad))
    return c


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

    def keeper(self, host=None, **kw):
        return Keeper(host or self.args.host, self.args.port, **kw)

    def freed(self, bound=90):
        """Every session gone, fds back to the baseline (bounded waits)."""
        check(self.d.alive(), "s5tund (pid %d) is not running any more" % self.d.pid)
        wait_for(lambda: (lambda s: s["tcp_active"] == 0 and s["udp_active"] == 0)(self.d.stats()),
                 lambda: "tcp_active and udp_active back to 0 (now %s)"
                 % {k: self.d.stats()[k] for k in ("tcp_active", "udp_active")}, bound, POLL)
        try:
            # At most the baseline: the warm pool's proxy connections come
            # and go (recycled by age), so the baseline may have caught one
            # being replaced; a leak only ever adds.
            wait_for(lambda: self.d.fds() <= self.fd0,
                     "fd count of the process tree back to %d or fewer" % self.fd0, bound, POLL)
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
    # The keeper echoes to the target's IPv6 address, which a rule sends
    # through an upstream of its own (hostile.sh): the flood's 5,000
    # CONNECTs a second overflow danted's accept queue, and a keeper queued
    # behind them would measure danted, not the daemon.
    with c.keeper(host=args.host6, timeout=60) as k:
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
    # proxy timeouts (their upstream, microsocks, connects at once; see
    # hostile.sh). The busy danted may not finish some of the other
    # CONNECTs in time: those are proxy timeouts, rightly.
    half, s5t = c.d_("tcp_handshake_timeout"), c.d_("socks5_timeout")
    log("tcp_handshake_timeout +%d (half-open clients), socks5_timeout +%d" % (half, s5t))
    check(half >= sent2 * 8 // 10, "only %d half-open sessions counted as "
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
