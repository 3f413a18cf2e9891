#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Load and soak traffic for the s5tund end-to-end tests (soak.sh).

Runs in the client namespace; standard library only.

  soak.py load --n 10000 --pid PID --stats SOCK [--host H --host6 H6 --port P]

    Opens N TCP connections through the tunnel (at most --opening at a time
    in their handshake), each exchanging a token with the target's ECHO; all
    N are then held open at once: the stats must show N sessions active,
    every connection exchanges a second token, then all are closed and the
    daemon must return to no session and its baseline fd count.

  soak.py rss --hold 2000 --rounds 5 --pid PID --stats SOCK

    Memory handed back after a load: RSS of the daemon's process tree idle,
    then a load of ROUNDS x HOLD connections (HOLD open through the tunnel
    at once, each exchanging a token with the target's ECHO, then closed),
    then idle again; the same load once more. After each load, once every
    session and fd is gone, RSS must come back within --rss-tolerance
    percent of the idle figure (or --rss-floor KiB above it, whichever is
    more), within --settle seconds.

  soak.py soak --seconds S --pid PID --stats SOCK [--every 5] [--warmup W]

    Mixed traffic for S seconds: TCP connections churning (echo, upload and
    download with SHA-256 on both ends, IPv4 and IPv6), a few long-lived
    ones talking now and then, UDP datagrams from sources that come and go
    (checked byte for byte). Every --every seconds a sample of the daemon's
    process tree (open fds, RSS) and counters (tcp_active, udp_active, ...).
    Then the traffic stops, and the checks: no transfer corrupted or failed;
    after the warm-up neither RSS nor the fd count grew (the last samples
    against the first ones after warm-up, with a tolerance); every session
    gone once the idle timeouts passed; fds back to the baseline. Prints
    the samples table.

Exit status 0 when every check passed.
"""

import argparse
import asyncio
import hashlib
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import Daemon, Fail, check, wait_for  # noqa: E402


def log(msg):
    print("soak: " + msg, flush=True)


# ====================================================================== load

async def load_open(i, host, port, sem, timeout, conns, errors):
    async with sem:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError) as e:
            errors.append("open %d: %s %s" % (i, type(e).__name__, e))
            return
        try:
            token = b"%015d\n" % i
            w.write(b"ECHO\n" + token)
            got = await asyncio.wait_for(r.readexactly(len(token)), timeout)
            if got != token:
                errors.append("conn %d: first token came back as %r" % (i, got))
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
            errors.append("conn %d first exchange: %s %s" % (i, type(e).__name__, e))
        conns[i] = (r, w)


async def load_second(i, rw, sem, timeout, errors):
    r, w = rw
    async with sem:
        try:
            token = b"%014dB\n" % i
            w.write(token)
            got = await asyncio.wait_for(r.readexactly(len(token)), timeout)
            if got != token:
                errors.append("conn %d: second token came back as %r" % (i, got))
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
            errors.append("conn %d second exchange: %s %s" % (i, type(e).__name__, e))


async def load_close(rw):
    r, w = rw
    try:
        w.close()
        await w.wait_closed()
    except OSError:
        pass


async def load_main(args, d):
    hosts = [args.host, args.host6] if args.host6 else [args.host]
    conns = {}
    errors = []
    sem = asyncio.Semaphore(args.opening)
    t0 = time.monotonic()
    tasks = [load_open(i, hosts[i % len(hosts)], args.port, sem, args.timeout, conns, errors)
             for i in range(args.n)]
    # In batches of a thousand so that progress can be shown.
    for b in range(0, len(tasks), 1000):
        await asyncio.gather(*tasks[b:b + 1000])
        log("  %d of %d open (%d errors), %.0f s" % (len(conns), args.n, len(errors),
                                                     time.monotonic() - t0))
    st = d.stats()
    fds, rss = d.fds(), d.rss_kib()
    log("PEAK: %d connections open through the tunnel; stats: tcp_active %d; s5tund "
        "process tree: %d fds, RSS %d KiB" % (len(conns), st["tcp_active"], fds, rss))
    # --connections lists every one of them (workers answer on their loops).
    t1 = time.monotonic()
    listed = json.loads(subprocess.run([args.s5tund, "--connections", d.stats_path, "--json"],
                                       capture_output=True, timeout=30, check=True).stdout)
    took = time.monotonic() - t1
    tcp = sum(1 for c in listed if c["proto"] == "tcp")
    log("--connections: %d TCP sessions listed in %.2f s" % (tcp, took))
    if tcp < len(conns):
        errors.append("--connections listed %d TCP sessions with %d open" % (tcp, len(conns)))
    ok = not errors
    msg = None
    if errors:
        msg = "%d connections failed: %s" % (len(errors), errors[:5])
    elif st["tcp_active"] < args.n:
        msg = "stats show %d active sessions with %d connections open" % (st["tcp_active"], args.n)
    else:
        sem2 = asyncio.Semaphore(1000)
        await asyncio.gather(*[load_second(i, rw, sem2, args.timeout, errors)
                               for i, rw in conns.items()])
        if errors:
            msg = "%d held connections failed their second exchange: %s" % (len(errors),
                                                                            errors[:5])
        else:
            log("all %d held connections exchanged a second token" % len(conns))
    await asyncio.gather(*[load_close(rw) for rw in conns.values()])
    log("closed all %d connections" % len(conns))
    return ok and msg is None, msg, {"conns": len(conns), "active": st["tcp_active"],
                                     "fds": fds, "rss": rss}


def cmd_load(args):
    d = Daemon(args.pid, args.stats, None)
    try:
        d.warm_queues(args.host, args.port)
        wait_for(lambda: d.stats()["tcp_active"] == 0, "tcp_active 0 before the load", 60)
        fd0, rss0 = d.fds(), d.rss_kib()
        log("baseline: %d fds, RSS %d KiB; opening %d connections (%d at a time in their "
            "handshake)" % (fd0, rss0, args.n, args.opening))
        ok, msg, peak = asyncio.run(load_main(args, d))
        check(ok, msg or "load failed")
        check(d.alive(), "s5tund is not running any more")
        wait_for(lambda: d.stats()["tcp_active"] == 0,
                 lambda: "tcp_active back to 0 after closing (now %d)" % d.stats()["tcp_active"], 120)
        # at most the baseline: the warm pool's proxy connections come and go
        wait_for(lambda: d.fds() <= fd0, lambda: "fds back to %d or fewer (now %d)" % (fd0, d.fds()), 120)
        log("after closing: tcp_active 0, %d fds (baseline), RSS %d KiB (baseline %d, peak %d)"
            % (d.fds(), d.rss_kib(), rss0, peak["rss"]))
        log("RESULT load n=%d peak_active=%d peak_fds=%d baseline_fds=%d rss_kib_before=%d "
            "rss_kib_peak=%d rss_kib_after=%d" % (args.n, peak["active"], peak["fds"], fd0,
                                                  rss0, peak["rss"], d.rss_kib()))
    except (Fail, OSError, ValueError) as e:
        log("FAILED: %s%s" % ("" if isinstance(e, Fail) else type(e).__name__ + ": ", e))
        return 1
    log("PASS: load %d" % args.n)
    return 0


# ====================================================================== rss

async def rss_round(args, d, hold, base):
    """HOLD connections open at once (each echoing a token), then closed; the
    tree's RSS at the moment they are all open."""
    hosts = [args.host, args.host6] if args.host6 else [args.host]
    conns, errors = {}, []
    sem = asyncio.Semaphore(args.opening)
    await asyncio.gather(*[load_open(base + i, hosts[i % len(hosts)], args.port, sem,
                                     args.timeout, conns, errors) for i in range(hold)])
    peak = d.rss_kib()
    await asyncio.gather(*[load_close(rw) for rw in conns.values()])
    check(not errors, "%d of %d connections failed: %s" % (len(errors), hold, errors[:5]))
    return peak


def rss_parts(d):
    """RssAnon, RssFile and RssShmem (KiB) summed over the process tree, for
    the log: heap is anonymous; code first run under load stays as file pages."""
    parts = {"RssAnon": 0, "RssFile": 0, "RssShmem": 0}
    for p in d.pids():
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    k = line.split(":")[0]
                    if k in parts:
                        parts[k] += int(line.split()[1])
        except OSError:
            pass
    return "anon %(RssAnon)d, file %(RssFile)d, shmem %(RssShmem)d" % parts


def rss_settled(d, fd0, settle):
    """Sessions and fds back to the baseline; then RSS, polled until it stops
    falling (idle handing back) or settle seconds pass: the lowest seen."""
    wait_for(lambda: d.stats()["tcp_active"] == 0,
             lambda: "tcp_active back to 0 (now %d)" % d.stats()["tcp_active"], 120)
    # at most the baseline: the warm pool's proxy connections come and go
    wait_for(lambda: d.fds() <= fd0, lambda: "fds back to %d or fewer (now %d)" % (fd0, d.fds()), 120)
    low, parts = d.rss_kib(), rss_parts(d)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        time.sleep(0.5)
        rss = d.rss_kib()
        if rss < low:
            low, parts = rss, rss_parts(d)
    log("  settled: RSS %d KiB (%s)" % (low, parts))
    return low


def cmd_rss(args):
    d = Daemon(args.pid, args.stats, None)
    try:
        d.warm_queues(args.host, args.port)
        fd0 = d.fds()
        idle = rss_settled(d, fd0, args.settle)
        limit = max(idle * (100 + args.rss_tolerance) // 100, idle + args.rss_floor)
        log("idle: %d fds, RSS %d KiB; after each load RSS must be at most %d KiB; a load is "
            "%d rounds of %d connections held at once" % (fd0, idle, limit, args.rounds, args.hold))
        figures = []
        for run in (1, 2):
            t0 = time.monotonic()
            peak = 0
            for r in range(args.rounds):
                base = ((run - 1) * args.rounds + r) * args.hold
                peak = max(peak, asyncio.run(rss_round(args, d, args.hold, base)))
            after = rss_settled(d, fd0, args.settle)
            log("load %d: %d connections in %.0f s; RSS peak %d KiB, after %d KiB (idle %d)"
                % (run, args.rounds * args.hold, time.monotonic() - t0, peak, after, idle))
            figures.append((peak, after))
        log("RESULT rss hold=%d rounds=%d rss_kib_idle=%d rss_kib_peak1=%d rss_kib_after1=%d "
            "rss_kib_peak2=%d rss_kib_after2=%d trims=%s"
            % (args.hold, args.rounds, idle, figures[0][0], figures[0][1], figures[1][0],
               figures[1][1], d.stats().get("mem_trims", "-")))
        for run, (peak, after) in enumerate(figures, 1):
            check(after <= limit, "load %d: RSS %d KiB once idle again, more than %d KiB (idle %d "
                  "KiB + %d%% or + %d KiB; peak %d KiB)" % (run, after, limit, idle,
                                                           args.rss_tolerance, args.rss_floor, peak))
    except (Fail, OSError, ValueError) as e:
        log("FAILED: %s%s" % ("" if isinstance(e, Fail) else type(e).__name__ + ": ", e))
        return 1
    log("PASS: rss")
    return 0


# ====================================================================== soak

class Totals:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {"tcp_ops": 0, "tcp_bytes": 0, "udp_sent": 0, "udp_ok": 0, "udp_sources": 0,
                  "long_ops": 0}
        self.corrupt = []
        self.errors = []

    def add(self, key, n=1):
        with self.lock:
            self.c[key] += n

    def bad(self, what, corrupt=False):
        with self.lock:
            (self.corrupt if corrupt else self.errors).append(what)


DIGESTS = {}
DIGEST_LOCK = threading.Lock()


def stream_digest(seed, n):
    key = (seed, n)
    with DIGEST_LOCK:
        if key in DIGESTS:
            return DIGESTS[key]
    h = e2elib.stream_sha256(seed, n)
    with DIGEST_LOCK:
        DIGESTS[key] = h
    return h


def tcp_op(host, port, rng, timeout):
    """One connection, one transfer, verified. Returns bytes moved."""
    kind = rng.random()
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        if kind < 0.4:      # echo, ping-pong in pieces
            total = 0
            s.sendall(b"ECHO\n")
            for _ in range(rng.randint(1, 8)):
                msg = rng.randbytes(rng.choice([1, 100, 1400, 4096, 16384, 65536]))
                s.sendall(msg)
                if e2elib.recv_exact(s, len(msg)) != msg:
                    raise ValueError("echo came back different")
                total += len(msg)
            return total
        if kind < 0.7:      # upload, half-closed, digest back
            data = rng.randbytes(rng.choice([1000, 64 << 10, 256 << 10, 1 << 20]))
            s.sendall(b"UPLOAD\n" + data)
            s.shutdown(socket.SHUT_WR)
            line = e2elib.read_all(s).strip().decode("ascii", "replace")
            if line != hashlib.sha256(data).hexdigest():
                raise ValueError("upload of %d bytes: digest %r" % (len(data), line[:20]))
            return len(data)
        # download of a known stream
        seed = rng.randrange(8)
        n = [4096, 100 << 10, 1 << 20, 3 << 20][seed % 4]
        s.sendall(b"DOWNLOAD %d %d\n" % (n, seed))
        got = e2elib.read_all(s)
        if len(got) != n or hashlib.sha256(got).hexdigest() != stream_digest(seed, n):
            raise ValueError("download of %d bytes: got %d bytes, digest differs" % (n, len(got)))
        return n
    finally:
        s.close()


def tcp_worker(i, hosts, port, stop, tot, timeout):
    rng = random.Random(i)
    while not stop.is_set():
        host = hosts[rng.randrange(len(hosts))]
        try:
            n = tcp_op(host, port, rng, timeout)
            tot.add("tcp_ops")
            tot.add("tcp_bytes", n)
        except ValueError as e:
            tot.bad("tcp %s: %s" % (host, e), corrupt=True)
        except (OSError, ConnectionError) as e:
            tot.bad("tcp %s: %s %s" % (host, type(e).__name__, e))
            stop.wait(0.5)


def long_worker(i, host, port, stop, tot, timeout):
    """A connection that lives the whole run, echoing now and then (well
    within tcp-idle-timeout)."""
    rng = random.Random(100 + i)
    try:
        s = socket.create_connection((host, port), timeout=timeout)
        s.sendall(b"ECHO\n")
        while not stop.wait(rng.uniform(0.5, 2)):
            msg = rng.randbytes(rng.randint(1, 8192))
            s.sendall(msg)
            if e2elib.recv_exact(s, len(msg)) != msg:
                tot.bad("long-lived %d: echo came back different" % i, corrupt=True)
                return
            tot.add("long_ops")
        s.close()
    except (OSError, ConnectionError) as e:
        tot.bad("long-lived %d: %s %s" % (i, type(e).__name__, e))


def udp_worker(i, hosts, ports, stop, tot):
    """Datagrams from one source socket for a while, then a new source (the
    old association expires by udp-idle-timeout). Each datagram carries its
    sequence number and a digest of itself: what comes back must be exactly
    what was sent; a datagram may be lost (UDP), never changed."""
    rng = random.Random(200 + i)
    while not stop.is_set():
        host = hosts[rng.randrange(len(hosts))]
        s = socket.socket(e2elib.family_of(host), socket.SOCK_DGRAM)
        s.settimeout(2)
        tot.add("udp_sources")
        sent = {}
        try:
            for seq in range(rng.randint(20, 200)):
                if stop.is_set():
                    break
                body = rng.randbytes(rng.choice([1, 64, 512, 1200, 1400]))
                payload = struct.pack("!I", seq) + hashlib.sha256(body).digest()[:8] + body
                port = ports[rng.randrange(len(ports))]
                s.sendto(payload, (host, port))
                sent[seq] = payload
                tot.add("udp_sent")
                try:
                    data, src = s.recvfrom(4096)
                except socket.timeout:
                    continue
                rseq = struct.unpack("!I", data[:4])[0] if len(data) >= 4 else -1
                if sent.get(rseq) != data:
                    tot.bad("udp %s: a datagram came back changed (%d bytes)" % (host, len(data)),
                            corrupt=True)
                else:
                    tot.add("udp_ok")
                stop.wait(rng.uniform(0, 0.02))
        except OSError as e:
            tot.bad("udp %s: %s %s" % (host, type(e).__name__, e))
        finally:
            s.close()


def fmt_row(r):
    return "%7.0f %7d %9d %8d %8d %10d %10d %9d %10d" % (
        r["t"], r["fds"], r["rss"], r["tcp_active"], r["udp_active"], r["tcp_total"],
        r["udp_total"], r["tcp_ops"], r["udp_ok"])


HEADER = "%7s %7s %9s %8s %8s %10s %10s %9s %10s" % (
    "t_s", "fds", "rss_kib", "tcp_act", "udp_act", "tcp_total", "udp_total", "tcp_ops", "udp_ok")


def cmd_soak(args):
    d = Daemon(args.pid, args.stats, None)
    tot = Totals()
    stop = threading.Event()
    samples = []
    try:
        d.warm_queues(args.host, args.port)
        wait_for(lambda: (lambda s: s["tcp_active"] == 0 and s["udp_active"] == 0)(d.stats()),
                 "no session before the soak", 120)
        fd0, rss0 = d.fds(), d.rss_kib()
        log("baseline: %d fds, RSS %d KiB; %d s of traffic: %d TCP churners, %d long-lived, "
            "%d UDP sources at a time; a sample every %d s, warm-up %d s"
            % (fd0, rss0, args.seconds, args.tcp, args.long, args.udp, args.every, args.warmup))
        hosts = [args.host, args.host6]
        threads = [threading.Thread(target=tcp_worker, args=(i, hosts, args.port, stop, tot, 60),
                                    daemon=True) for i in range(args.tcp)]
        threads += [threading.Thread(target=long_worker, args=(i, hosts[i % 2], args.port, stop,
                                                               tot, 60), daemon=True)
                    for i in range(args.long)]
        threads += [threading.Thread(target=udp_worker, args=(i, hosts, args.udp_port, stop, tot),
                                     daemon=True) for i in range(args.udp)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        print(HEADER, flush=True)
        next_t = 0.0
        while True:
            now = time.monotonic() - t0
            if now >= next_t:
                st = d.stats()
                with tot.lock:
                    c = dict(tot.c)
                r = {"t": now, "fds": d.fds(), "rss": d.rss_kib(), "tcp_active": st["tcp_active"],
                     "udp_active": st["udp_active"], "tcp_total": st["tcp_total"],
                     "udp_total": st["udp_total"], "tcp_ops": c["tcp_ops"], "udp_ok": c["udp_ok"]}
                samples.append(r)
                print(fmt_row(r), flush=True)
                next_t += args.every
                check(d.alive(), "s5tund died during the soak")
            if now >= args.seconds:
                break
            time.sleep(min(0.5, max(0.05, next_t - now)))
        stop.set()
        for t in threads:
            t.join(90)
        alive = [t for t in threads if t.is_alive()]
        check(not alive, "%d traffic threads did not stop within 90 s (a transfer hangs)"
              % len(alive))
        c = tot.c
        log("traffic: %d TCP transfers (%d MiB), %d long-lived echoes, %d UDP datagrams sent, "
            "%d came back, from %d sources" % (c["tcp_ops"], c["tcp_bytes"] >> 20, c["long_ops"],
                                               c["udp_sent"], c["udp_ok"], c["udp_sources"]))
        check(not tot.corrupt, "CORRUPTED data: %d transfers: %s" % (len(tot.corrupt),
                                                                    tot.corrupt[:5]))
        check(not tot.errors, "%d transfers failed: %s" % (len(tot.errors), tot.errors[:5]))
        check(c["tcp_ops"] > 0 and c["udp_ok"] > 0 and c["long_ops"] > 0,
              "some kind of traffic never got through: %s" % c)

        # Growth after warm-up: the last samples against the first ones.
        post = [r for r in samples if r["t"] >= args.warmup]
        check(len(post) >= 4, "only %d samples after the warm-up: run longer" % len(post))
        w = max(2, len(post) // 5)
        first, last = post[:w], post[-w:]
        rss_a = statistics.median(r["rss"] for r in first)
        rss_b = statistics.median(r["rss"] for r in last)
        rss_tol = rss_a * args.rss_tolerance / 100 + args.rss_slack
        # fds beyond what the live sessions explain (1 per TCP session, 2 per
        # UDP association), which a leak would make grow.
        def excess(r):
            return r["fds"] - fd0 - r["tcp_active"] - 2 * r["udp_active"]
        ex_a = max(excess(r) for r in first)
        ex_b = max(excess(r) for r in last)
        fd_a = max(r["fds"] for r in first)
        fd_b = max(r["fds"] for r in last)
        log("after warm-up (%d s): RSS median %d KiB in the first %d samples, %d KiB in the "
            "last %d (tolerance +%d KiB); fds max %d -> %d, beyond the live sessions %d -> %d"
            % (args.warmup, rss_a, w, rss_b, w, rss_tol, fd_a, fd_b, ex_a, ex_b))
        check(rss_b <= rss_a + rss_tol, "RSS grew after the warm-up: %d KiB -> %d KiB "
              "(tolerance %d KiB)" % (rss_a, rss_b, rss_tol))
        check(ex_b <= ex_a + args.fd_slack,
              "fds not explained by live sessions grew after the warm-up: %d -> %d" % (ex_a, ex_b))

        # Traffic stopped: sessions go (UDP after udp-idle-timeout), fds back.
        t1 = time.monotonic()
        wait_for(lambda: (lambda s: s["tcp_active"] == 0 and s["udp_active"] == 0)(d.stats()),
                 lambda: "tcp_active and udp_active back to 0 after the traffic stopped (now %s)"
                 % {k: d.stats()[k] for k in ("tcp_active", "udp_active")}, args.settle)
        wait_for(lambda: d.fds() == fd0,
                 lambda: "fds back to the baseline %d (now %d)" % (fd0, d.fds()), args.settle)
        rss_end = d.rss_kib()
        log("%.0f s after the traffic stopped: tcp_active 0, udp_active 0, %d fds (baseline %d), "
            "RSS %d KiB" % (time.monotonic() - t1, d.fds(), fd0, rss_end))
        log("RESULT soak seconds=%d samples=%d fds_before=%d fds_peak=%d fds_after=%d "
            "rss_kib_before=%d rss_kib_warm=%d rss_kib_last=%d rss_kib_after=%d tcp_transfers=%d "
            "tcp_mib=%d udp_datagrams=%d udp_back=%d corrupt=0 failed=0"
            % (args.seconds, len(samples), fd0, max(r["fds"] for r in samples), d.fds(), rss0,
               rss_a, rss_b, rss_end, c["tcp_ops"], c["tcp_bytes"] >> 20, c["udp_sent"],
               c["udp_ok"]))
    except (Fail, OSError, ValueError) as e:
        stop.set()
        log("FAILED: %s%s" % ("" if isinstance(e, Fail) else type(e).__name__ + ": ", e))
        return 1
    log("PASS: soak %d s" % args.seconds)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--pid", type=int, required=True)
    common.add_argument("--stats", required=True)
    common.add_argument("--s5tund", default="s5tund", help="the binary, for --connections")
    common.add_argument("--host", default="10.201.0.1")
    common.add_argument("--host6", default="fd00:201::1")
    common.add_argument("--port", type=int, default=7000)
    p = sub.add_parser("load", parents=[common])
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--opening", type=int, default=200)
    p.add_argument("--timeout", type=float, default=120)
    p = sub.add_parser("rss", parents=[common])
    p.add_argument("--hold", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--opening", type=int, default=200)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--settle", type=float, default=5, help="seconds RSS is watched once idle")
    p.add_argument("--rss-tolerance", type=int, default=25, help="percent")
    p.add_argument("--rss-floor", type=int, default=1024, help="KiB")
    p = sub.add_parser("soak", parents=[common])
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--tcp", type=int, default=8)
    p.add_argument("--long", type=int, default=4)
    p.add_argument("--udp", type=int, default=4)
    p.add_argument("--udp-port", type=int, action="append", default=None)
    p.add_argument("--settle", type=int, default=120)
    p.add_argument("--rss-tolerance", type=float, default=10.0, help="percent")
    p.add_argument("--rss-slack", type=int, default=2048, help="KiB")
    p.add_argument("--fd-slack", type=int, default=4)
    args = ap.parse_args()
    if args.cmd == "soak":
        args.udp_port = args.udp_port or [7001, 7002]
        if not args.warmup:
            args.warmup = max(10, args.seconds // 5)
        return cmd_soak(args)
    return cmd_rss(args) if args.cmd == "rss" else cmd_load(args)


if __name__ == "__main__":
    sys.exit(main())
