#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Operations checks of the s5tund end-to-end tests (driven by ops.sh).

  ops.py stats     --stats SOCK --s5tund BIN --pid PID --log FILE --tun DEV
                   --host H [--port P] [--upload N] [--download M]
  ops.py notify    --socket PATH --pid-file F (--expect-pid PID | --expect-pid-file F)
                   --host H [--conns K] [--stats SOCK] [--tun DEV --queues Q]
                   [--on-ready CMD]... [--listening-file F] [--checked-file F]
  ops.py supervise --stats SOCK --host H [--conns N] [--kills K]
  ops.py drain     --stats SOCK --pid PID --log FILE --host H --queues Q
                   --drain-timeout D [--probes K] [--close | --idle-queues]
  ops.py syslogd   --socket PATH --out FILE   (a syslog listener: one line per
                   datagram into FILE, until killed)
  ops.py deadworker --stats SOCK --log FILE --host H --host6 H6 [--conns N] [--phases P,...]
  ops.py metrics   --stats SOCK --s5tund BIN --http ADDR:PORT --mode M --pid PID
                   --host H [--port P]   (the Prometheus endpoint, [stats] http)
  ops.py scrape    --stats SOCK --s5tund BIN --http ADDR:PORT --mode M
                   (one scrape, parsed and checked against --stats --json)

Runs inside namespace C (ip netns exec), talks to target.py through the
tunnel (protocol: e2elib.py) and to s5tund over its stats socket. Every
socket operation has a timeout and every wait a bound; nothing asserts on
speed. Exit status 0 when every check passed, 1 otherwise; the lines
printed say what was checked and what was found.
"""

import argparse
import hashlib
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import Fail, check, wait_for  # noqa: E402
from e2elib import stats_doc as stats  # noqa: E402

# The counters of one queue, in the order of core/shared/stats.h.
COUNTERS = [
    "tun_rx_packets", "tun_rx_bytes", "tun_tx_packets", "tun_tx_bytes",
    "tcp_active", "tcp_total", "tcp_handshake_timeout", "udp_active", "udp_total",
    "udp_coalesce_waits", "dns_hijacked", "mem_trims",
    "bytes_to_proxy", "bytes_from_proxy",
    "socks5_connect_failed", "socks5_auth_failed", "socks5_refused",
    "socks5_bad_reply", "socks5_timeout",
    "pool_hits", "pool_misses", "pool_recycled", "pool_retried", "pool_failed",
    "drop_tun_write", "drop_max_sessions", "drop_draining", "drop_no_memory", "drop_udp",
    "drop_dns", "drop_icmp", "drop_proxy_loop", "restarts", "tun_errors", "tcp_reset_dead_worker", "tcp_untracked",
    "session_log_dropped",
]
S5_FAIL = ["socks5_connect_failed", "socks5_auth_failed", "socks5_refused",
           "socks5_bad_reply", "socks5_timeout"]
DROPS = ["drop_tun_write", "drop_max_sessions", "drop_draining", "drop_no_memory", "drop_udp",
         "drop_dns", "drop_icmp"]

T_WAIT = 30.0   # bound of every wait for a state (seconds): wait_for's default


def log(msg):
    print("ops: " + msg, flush=True)


# ---------------------------------------------------------------- stats socket

def quiet_stats(path, bound=T_WAIT):
    """Two documents in a row with identical counters (nothing moved in
    between, not even a stray IPv6 packet of the kernel): returns the second."""
    prev = [None]

    def same():
        doc = stats(path)
        key = json.dumps([doc["totals"], doc["queues"]], sort_keys=True)
        ok = prev[0] == key
        prev[0] = key
        return doc if ok else None
    return wait_for(same, "two identical stats documents in a row", bound, 0.2)


def delta(after, before):
    return {k: after[k] - before[k] for k in COUNTERS}


# ---------------------------------------------------------------- connections

class EchoConn:
    """An ECHO connection through the tunnel."""

    def __init__(self, host, port, timeout=10.0, tag=""):
        self.tag = tag
        self.sock = e2elib.connect(host, port, timeout)
        self.sock.sendall(b"ECHO\n")
        self.n = 0
        self.queue = None

    def ping(self, size=64):
        msg = (b"%s ping %d " % (self.tag.encode(), self.n)).ljust(size, b".")
        self.n += 1
        self.sock.sendall(msg)
        got = e2elib.recv_exact(self.sock, len(msg))
        if got != msg:
            raise Fail("connection %s: echo came back different" % self.tag)

    def fate(self):
        """Pings once more and says how it went: 'echo', 'reset', 'eof',
        'timeout' or 'error ...'."""
        try:
            self.ping()
            return "echo"
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        except ConnectionError as e:
            return "eof" if "EOF" in str(e) else "error %s" % e
        except socket.timeout:
            return "timeout"
        except OSError as e:
            return "error %s" % e

    def close(self):
        self.sock.close()


def open_mapped(args, path, n, tag="c"):
    """Opens n echo connections one at a time, and finds each one's queue:
    the queue whose tcp_total went up by one while it opened (nothing else
    opens connections meanwhile)."""
    conns = []
    for i in range(n):
        def opener():
            c = EchoConn(args.host, args.port, tag="%s%d" % (tag, i))
            c.ping()
            return c
        c, queue = e2elib.queue_of(path, opener, "%s%d" % (tag, i))
        c.queue = queue
        conns.append(c)
    return conns


def by_queue(conns):
    m = {}
    for c in conns:
        m.setdefault(c.queue, []).append(c)
    return m


# ---------------------------------------------------------------- stats

def parse_table(text, nq):
    """s5tund --stats: header, one row per queue, a total row."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    check(len(lines) == nq + 2, "table has %d lines, expected a header, %d queue rows and a "
          "total row:\n%s" % (len(lines), nq, text))
    head = lines[0].split()
    want = ["queue", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tcp", "tcp_total",
            "udp", "udp_total", "s5_fail", "drops"]
    check(head == want, "table header %s, expected %s" % (head, want))
    rows = {}
    for ln in lines[1:]:
        f = ln.split()
        check(len(f) == len(want), "table row with %d fields: %r" % (len(f), ln))
        rows[f[0]] = [int(x) for x in f[1:]]
    check(sorted(rows) == sorted([str(i) for i in range(nq)] + ["total"]),
          "table rows %s, expected 0..%d and total" % (sorted(rows), nq - 1))
    return rows


def table_values(q):
    return [q["tun_rx_packets"], q["tun_rx_bytes"], q["tun_tx_packets"], q["tun_tx_bytes"],
            q["tcp_active"], q["tcp_total"], q["udp_active"], q["udp_total"],
            sum(q[k] for k in S5_FAIL), sum(q[k] for k in DROPS)]


def check_sums(doc):
    nq = doc["queue_count"]
    check(len(doc["queues"]) == nq, "queue_count %d but %d queues listed" % (nq, len(doc["queues"])))
    check([q["queue"] for q in doc["queues"]] == list(range(nq)), "queues not numbered 0..%d" % (nq - 1))
    for k in COUNTERS:
        s = sum(q[k] for q in doc["queues"])
        check(s == doc["totals"][k], "%s: queues add up to %d, totals say %d" % (k, s, doc["totals"][k]))
        check(k in doc["totals"], "totals lack %s" % k)
    for q in doc["queues"]:
        check(q["ready"] == 1, "queue %d: ready %s" % (q["queue"], q["ready"]))
        # pid: the worker process in process mode; thread mode reports 0.
        check(q["pid"] >= 0, "queue %d: pid %s" % (q["queue"], q["pid"]))


def sysfs(dev, name):
    with open("/sys/class/net/%s/statistics/%s" % (dev, name)) as f:
        return int(f.read())


def cmd_stats(args):
    n_up, n_down = args.upload, args.download
    path = args.stats
    base = quiet_stats(path)
    check_sums(base)
    nq = base["queue_count"]
    log("%d queues; before the transfer: %s" % (nq, {k: base["totals"][k] for k in
        ("tcp_total", "bytes_to_proxy", "bytes_from_proxy", "tun_rx_bytes", "tun_tx_bytes")}))

    # The known transfer: UPLOAD n (length-delimited: microsocks ends both
    # directions at the first EOF), reply sha256 hex + "\n"; DOWNLOAD m seed.
    up_cmd = b"UPLOAD %d\n" % n_up
    s = e2elib.connect(args.host, args.port, 30)
    s.sendall(up_cmd)
    for chunk in e2elib.stream(7, n_up):
        s.sendall(chunk)
    reply = e2elib.read_all(s, 4096)
    s.close()
    check(reply.decode().strip() == e2elib.stream_sha256(7, n_up),
          "upload of %d bytes: target answered %r" % (n_up, bytes(reply[:80])))
    down_cmd = b"DOWNLOAD %d 8\n" % n_down
    s = e2elib.connect(args.host, args.port, 30)
    s.sendall(down_cmd)
    got = 0
    while True:
        chunk = s.recv(1 << 18)
        if not chunk:
            break
        got += len(chunk)
    s.close()
    check(got == n_down, "download: got %d bytes, expected %d" % (got, n_down))
    log("uploaded %d bytes, downloaded %d bytes through the tunnel" % (n_up, n_down))

    # Both sessions have ended (tcp_active back where it was), then quiet.
    wait_for(lambda: stats(path)["totals"]["tcp_active"] == base["totals"]["tcp_active"],
             "tcp_active back to %d" % base["totals"]["tcp_active"])
    after = quiet_stats(path)
    check_sums(after)
    d = delta(after["totals"], base["totals"])
    to_proxy = len(up_cmd) + n_up + len(down_cmd)
    from_proxy = len(reply) + n_down
    log("deltas: %s" % {k: v for k, v in d.items() if v})
    check(d["bytes_to_proxy"] == to_proxy,
          "bytes_to_proxy grew by %d, expected %d (%d-byte command + %d bytes + %d-byte command)"
          % (d["bytes_to_proxy"], to_proxy, len(up_cmd), n_up, len(down_cmd)))
    check(d["bytes_from_proxy"] == from_proxy,
          "bytes_from_proxy grew by %d, expected %d (%d-byte digest line + %d bytes)"
          % (d["bytes_from_proxy"], from_proxy, len(reply), n_down))
    check(d["tcp_total"] == 2, "tcp_total grew by %d, expected 2 (two connections)" % d["tcp_total"])
    # The TUN side carries the payload plus at least one IPv4+TCP header
    # (40 bytes) per segment; with [tun] offload (the default) a segment may
    # be a 64 KiB GSO packet (65495 bytes of payload), so that is the bound.
    # ACKs and headers stay well under the payload again.
    mss = 65495
    for name, payload, other in (("tun_rx_bytes", to_proxy, from_proxy),
                                 ("tun_tx_bytes", from_proxy, to_proxy)):
        low = payload + 40 * -(-payload // mss)
        high = 2 * payload + other // 4 + (1 << 20)
        check(low <= d[name] <= high, "%s grew by %d, expected between %d (payload %d + headers) "
              "and %d" % (name, d[name], low, high, payload))
        log("%s grew by %d: payload %d + %d of headers and ACKs (bounds %d..%d)"
            % (name, d[name], payload, d[name] - payload, low, high))
    for k in S5_FAIL + DROPS + ["restarts", "udp_total", "tcp_handshake_timeout"]:
        check(d[k] == 0, "%s grew by %d during a clean transfer" % (k, d[k]))

    # The kernel's own count of the device: every packet it queued for us
    # and we read, and every packet we wrote, byte for byte.
    # (A stray packet of the kernel's own between the reads: read again.)
    for attempt in range(10):
        after = quiet_stats(path)
        kern = {k: sysfs(args.tun, k) for k in ("tx_bytes", "tx_packets", "rx_bytes", "rx_packets")}
        if stats(path)["totals"] == after["totals"]:
            break
        log("counters moved while reading the kernel's; again")
    else:
        raise Fail("counters never stood still around reading the kernel's")
    t = after["totals"]
    log("kernel %s: tx %d pkts/%d B (to s5tund), rx %d pkts/%d B (from s5tund); s5tund: "
        "tun rx %d pkts/%d B, tun tx %d pkts/%d B" % (args.tun, kern["tx_packets"], kern["tx_bytes"],
                                                      kern["rx_packets"], kern["rx_bytes"],
                                                      t["tun_rx_packets"], t["tun_rx_bytes"],
                                                      t["tun_tx_packets"], t["tun_tx_bytes"]))
    check((t["tun_rx_packets"], t["tun_rx_bytes"]) == (kern["tx_packets"], kern["tx_bytes"]),
          "s5tund read %d packets/%d bytes from %s, the kernel says it handed over %d/%d"
          % (t["tun_rx_packets"], t["tun_rx_bytes"], args.tun, kern["tx_packets"], kern["tx_bytes"]))
    check((t["tun_tx_packets"], t["tun_tx_bytes"]) == (kern["rx_packets"], kern["rx_bytes"]),
          "s5tund wrote %d packets/%d bytes to %s, the kernel says it received %d/%d"
          % (t["tun_tx_packets"], t["tun_tx_bytes"], args.tun, kern["rx_packets"], kern["rx_bytes"]))

    # The table: a row per queue and a total row, equal to the JSON.
    for attempt in range(10):
        j1 = stats(path)
        table = subprocess.run([args.s5tund, "--stats", path], capture_output=True, text=True,
                               timeout=30)
        js = subprocess.run([args.s5tund, "--stats", path, "--json"], capture_output=True,
                            text=True, timeout=30)
        j2 = stats(path)
        if j1["totals"] == j2["totals"] and j1["queues"] == j2["queues"]:
            break
        log("counters moved while the table was printed; again")
    else:
        raise Fail("counters never stood still for the table")
    check(table.returncode == 0 and js.returncode == 0,
          "s5tund --stats exited %d / %d: %s %s" % (table.returncode, js.returncode,
                                                   table.stderr, js.stderr))
    jdoc = json.loads(js.stdout)
    check(jdoc["totals"] == j2["totals"] and jdoc["queues"] == j2["queues"],
          "s5tund --stats --json differs from the socket's document")
    rows = parse_table(table.stdout, nq)
    for i in range(nq):
        check(rows[str(i)] == table_values(j2["queues"][i]),
              "table row %d %s, JSON says %s" % (i, rows[str(i)], table_values(j2["queues"][i])))
    check(rows["total"] == table_values(j2["totals"]),
          "table total %s, JSON totals say %s" % (rows["total"], table_values(j2["totals"])))
    sums = [sum(rows[str(i)][c] for i in range(nq)) for c in range(10)]
    check(sums == rows["total"], "table rows add up to %s, total row says %s" % (sums, rows["total"]))
    log("s5tund --stats: %d queue rows and a total row, equal to the JSON:\n%s"
        % (nq, table.stdout.rstrip()))

    # SIGUSR1: one summary line per queue and one total line in the log.
    with open(args.log, "rb") as f:
        start = len(f.read())
    snap = quiet_stats(path)
    os.kill(args.pid, signal.SIGUSR1)

    def summary():
        with open(args.log, "rb") as f:
            text = f.read()[start:].decode("utf-8", "replace")
        return text if re.search(r" main total: ", text) else None
    text = wait_for(summary, "'total:' summary line in the log after SIGUSR1")
    lines = [ln for ln in text.splitlines() if re.search(r" main (queue \d+|total): ", ln)]
    queues = [int(m.group(1)) for ln in lines for m in [re.search(r" main queue (\d+): ", ln)] if m]
    check(sorted(queues) == list(range(nq)) and len(lines) == nq + 1,
          "after SIGUSR1 the log has summaries for queues %s and %d total line(s), expected each "
          "of 0..%d once and one total:\n%s" % (queues, len(lines) - len(queues), nq - 1, text))
    pat = (r"tun rx (\d+) pkts/(\d+) B, tx (\d+) pkts/(\d+) B; tcp (\d+) active/(\d+) total; "
           r"udp (\d+) active/(\d+) total; to proxy (\d+) B, from proxy (\d+) B; "
           r"socks5 failures (\d+); restarts (\d+)")
    for ln in lines:
        m = re.search(pat, ln)
        check(m is not None, "summary line not in the expected form: %r" % ln)
        q = re.search(r" main queue (\d+): ", ln)
        st = snap["queues"][int(q.group(1))] if q else snap["totals"]
        want = [st["tun_rx_packets"], st["tun_rx_bytes"], st["tun_tx_packets"], st["tun_tx_bytes"],
                st["tcp_active"], st["tcp_total"], st["udp_active"], st["udp_total"],
                st["bytes_to_proxy"], st["bytes_from_proxy"],
                sum(st[k] for k in S5_FAIL), st["restarts"]]
        got = [int(x) for x in m.groups()]
        check(got == want, "summary %r says %s, the stats socket %s" % (ln, got, want))
    log("SIGUSR1: %d summary lines (queues 0..%d and total), numbers equal to the stats socket"
        % (len(lines), nq - 1))
    log("stats ok")
    return 0


# ---------------------------------------------------------------- notify

def cmd_notify(args):
    """A stand-in for systemd's notification socket. On READY=1: the pid file
    holds MAINPID (== --expect-pid), and --conns echo connections through the
    tunnel each succeed on their first attempt, made one after another at
    once. Then (after ops.sh sends SIGTERM) STOPPING=1 must arrive."""
    try:
        os.unlink(args.socket)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.bind(args.socket)
    srv.settimeout(args.timeout)
    log("listening on %s" % args.socket)
    if args.listening_file:
        with open(args.listening_file, "w") as f:
            f.write("%d\n" % os.getpid())
    seen = []

    def receive(what):
        while True:
            try:
                data = srv.recv(4096).decode()
            except socket.timeout:
                raise Fail("no %s within %.0f s (got so far: %r)" % (what, args.timeout, seen))
            seen.append(data)
            fields = dict(ln.split("=", 1) for ln in data.splitlines() if "=" in ln)
            log("notification: %r" % data)
            return fields

    if args.expect_pid is None:
        # The daemon starts after this socket is bound: its pid comes in a file.
        def pid_from_file():
            try:
                with open(args.expect_pid_file) as f:
                    t = f.read().strip()
                return int(t) if t else None
            except FileNotFoundError:
                return None
        args.expect_pid = wait_for(pid_from_file, "pid in %s" % args.expect_pid_file)
    fields = receive("READY=1")
    check(fields.get("READY") == "1", "first notification is not READY=1: %r" % seen)
    # Consistent with READY=1 at once: every queue says it serves, and the
    # device is up with every queue attached.
    if args.stats:
        doc = stats(args.stats)
        check(all(q["ready"] == 1 for q in doc["queues"]),
              "at READY=1 the stats say ready %s" % [q["ready"] for q in doc["queues"]])
    if args.tun:
        link = subprocess.run(["ip", "-d", "link", "show", "dev", args.tun], capture_output=True,
                              text=True, timeout=30).stdout
        check(",UP" in link or "<UP" in link, "at READY=1 %s is not up: %r" % (args.tun, link))
        m = re.search(r"numqueues (\d+)", link)
        check(m is not None and int(m.group(1)) == args.queues,
              "at READY=1 %s has %s queues attached, expected %d" % (args.tun, m and m.group(1), args.queues))
    # The routes into the device are the operator's (systemd runs
    # ExecStartPost= after READY=1 for Type=notify): added now, at once.
    for cmd in args.on_ready:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "at READY=1: %r failed (%d): %s" % (cmd, r.returncode,
                                                                    r.stderr.strip()))
    # Immediately: the pid file, then traffic.
    try:
        with open(args.pid_file) as f:
            pid_text = f.read()
    except OSError as e:
        raise Fail("pid file %s at READY=1: %s" % (args.pid_file, e))
    check(pid_text.strip() == str(args.expect_pid),
          "pid file %s holds %r at READY=1, expected %d" % (args.pid_file, pid_text, args.expect_pid))
    if "MAINPID" in fields:
        check(fields["MAINPID"] == str(args.expect_pid),
              "MAINPID=%s, expected %d" % (fields["MAINPID"], args.expect_pid))
    # At least --conns connections, and on to 64 until every queue had one
    # (the stats socket says which queue took each).
    def queues_missing():
        if not args.stats:
            return False
        return any(q["tcp_total"] == 0 for q in stats(args.stats)["queues"])
    i = 0
    while i < args.conns or (queues_missing() and i < 64):
        try:
            c = EchoConn(args.host, args.port, timeout=10, tag="ready%d" % i)
            c.ping()
            c.ping(3000)
            c.close()
        except (OSError, ConnectionError) as e:
            raise Fail("connection %d right after READY=1 failed on its first attempt: %s: %s"
                       % (i, type(e).__name__, e))
        i += 1
    spread = ""
    if args.stats:
        per_queue = [q["tcp_total"] for q in stats(args.stats)["queues"]]
        check(0 not in per_queue, "after %d connections some queue took none: %s" % (i, per_queue))
        spread = " (per queue: %s)" % per_queue
    log("at READY=1: pid file holds %d, %d connections in a row each worked on the first "
        "attempt%s" % (args.expect_pid, i, spread))
    if args.checked_file:
        with open(args.checked_file, "w") as f:
            f.write("ok\n")
    fields = receive("STOPPING=1")
    check(fields.get("STOPPING") == "1", "notification after READY=1 is not STOPPING=1: %r" % seen)
    log("STOPPING=1 arrived; notifications: %r" % seen)
    srv.close()
    os.unlink(args.socket)
    return 0


# ---------------------------------------------------------------- supervise

def cmd_supervise(args):
    """Kills the worker of one queue with SIGKILL --kills times, each new one
    as soon as it serves, while connections on the other queues echo all the
    time; those must never fail, those on the killed queue must be gone."""
    path = args.stats
    conns = open_mapped(args, path, args.conns)
    m = by_queue(conns)
    while len(m) < 2 and len(conns) < 64:
        conns += open_mapped(args, path, 4, tag="x%d_" % len(conns))
        m = by_queue(conns)
    check(len(m) >= 2, "%d connections all landed on queue %s" % (len(conns), list(m)))
    victim = conns[0].queue
    survivors = [c for c in conns if c.queue != victim]
    doomed = m[victim]
    log("connections per queue: %s; killing the worker of queue %d (%d connections), %d "
        "connections on the other queues must live"
        % ({q: len(v) for q, v in sorted(m.items())}, victim, len(doomed), len(survivors)))

    stop = threading.Event()
    state = {"rounds": 0, "errors": []}

    def pinger():
        while not stop.is_set():
            for c in survivors:
                try:
                    c.ping()
                except (OSError, ConnectionError, Fail) as e:
                    state["errors"].append("%s (queue %d): %s: %s" % (c.tag, c.queue,
                                                                      type(e).__name__, e))
                    stop.set()
                    return
            state["rounds"] += 1
            time.sleep(0.02)

    t = threading.Thread(target=pinger, daemon=True)
    t.start()
    killed = []
    try:
        for k in range(args.kills):
            doc = stats(path)
            q = doc["queues"][victim]
            check(q["ready"] == 1 and q["pid"] > 0, "queue %d before kill %d: ready %d pid %d"
                  % (victim, k + 1, q["ready"], q["pid"]))
            pid = q["pid"]
            r0 = state["rounds"]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

            def replaced():
                qq = stats(path)["queues"][victim]
                return qq if qq["pid"] not in (0, pid) and qq["ready"] == 1 else None
            new = wait_for(replaced, "new serving worker on queue %d after kill %d" % (victim, k + 1),
                           T_WAIT + 31)
            # The others kept echoing while this worker was down: at least one
            # full round over them since the kill (bounded).
            wait_for(lambda: state["rounds"] > r0 + 1 or state["errors"],
                     "echo round over the surviving connections")
            check(not state["errors"], "a connection on another queue failed: %s" % state["errors"])
            log("kill %d: worker %d of queue %d killed, worker %d serves it now; surviving "
                "connections echoed %d rounds meanwhile" % (k + 1, pid, victim, new["pid"],
                                                            state["rounds"] - r0))
    finally:
        stop.set()
        t.join(30)
    check(not state["errors"], "a connection on another queue failed: %s" % state["errors"])
    for c in survivors:
        c.ping(2000)
    log("all %d connections on the other queues still echo after %d kills (%d rounds)"
        % (len(survivors), args.kills, state["rounds"]))
    fates = [(c.tag, c.fate()) for c in doomed]
    alive = [tag for tag, f in fates if f == "echo"]
    check(not alive, "connections %s on the killed queue %d still echo: were they on it?"
          % (alive, victim))
    log("connections on the killed queue ended: %s" % ", ".join("%s %s" % x for x in fates))
    for c in conns:
        c.close()
    doc = stats(path)
    restarts = [q["restarts"] for q in doc["queues"]]
    want = [args.kills if i == victim else 0 for i in range(doc["queue_count"])]
    check(restarts == want and doc["totals"]["restarts"] == args.kills,
          "restarts per queue %s (total %d), expected %s (total %d)"
          % (restarts, doc["totals"]["restarts"], want, args.kills))
    log("restarts per queue %s, total %d" % (restarts, doc["totals"]["restarts"]))
    print("VICTIM %d" % victim)
    print("KILLED %s" % " ".join(str(p) for p in killed))
    log("supervise ok")
    return 0


# ---------------------------------------------------------------- drain

def probe_refused(host, port, timeout=10):
    """(True, how) when a new connection is refused with a RST."""
    s = socket.socket(e2elib.family_of(host), socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
    except ConnectionRefusedError:
        return True, "refused (RST to the SYN)"
    except socket.timeout:
        return False, "neither accepted nor refused within %.1f s" % timeout
    except OSError as e:
        return False, "connect failed with %s" % e
    finally:
        s.close()
    return False, "accepted"


def cmd_drain(args):
    path = args.stats
    conns = open_mapped(args, path, args.conns)
    m = by_queue(conns)
    if args.idle_queues:
        # Sessions on one queue only: the others have none when SIGTERM comes.
        keep = conns[0].queue
        for c in conns:
            if c.queue != keep:
                c.close()
        conns = [c for c in conns if c.queue == keep]
        m = by_queue(conns)
        wait_for(lambda: stats(path)["totals"]["tcp_active"] == len(conns),
                 "tcp_active down to the %d connections kept" % len(conns))
    else:
        while len(m) < args.queues and len(conns) < 64:
            conns += open_mapped(args, path, 2, tag="x%d_" % len(conns))
            m = by_queue(conns)
        check(len(m) == args.queues, "connections landed on queues %s only" % sorted(m))
    log("connections per queue: %s" % {q: len(v) for q, v in sorted(m.items())})
    with open(args.log, "rb") as f:
        start = len(f.read())

    def log_since():
        with open(args.log, "rb") as f:
            return f.read()[start:].decode("utf-8", "replace")

    os.kill(args.pid, signal.SIGTERM)
    log("SIGTERM sent to %d" % args.pid)
    # Every worker has begun draining (it says so) before new connections are tried.
    if args.idle_queues:
        # A worker without sessions stops at once ("stopped"); the others drain.
        wait_for(lambda: len(re.findall(r" q\d+ (draining \d+ TCP sessions|stopped \()", log_since()))
                 >= args.queues, "'draining' or 'stopped' line from each of the %d workers" % args.queues)
    else:
        wait_for(lambda: len(re.findall(r" q\d+ draining \d+ TCP sessions", log_since())) >= args.queues,
                 "'draining' line from each of the %d workers" % args.queues)
    # All at once, so that all of them fall inside the drain.
    probes = [None] * args.probes

    def probe(i):
        probes[i] = probe_refused(args.host, args.port, timeout=args.drain_timeout * 0.5)
    threads = [threading.Thread(target=probe, args=(i,), daemon=True) for i in range(args.probes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = ["%d: %s" % (i, how) for i, (ok, how) in enumerate(probes) if not ok]
    check(not bad, "%d of %d new connections during the drain were not refused with a RST: %s"
          % (len(bad), len(probes), "; ".join(bad)))
    log("%d new connections during the drain: each refused with a RST" % args.probes)
    for c in conns:
        c.ping()
        c.ping(5000)
    log("all %d open connections still echo during the drain" % len(conns))
    if args.close:
        # The sessions end by themselves: the daemon stops without waiting
        # for the (long) drain-timeout; ops.sh waits for the exit.
        for c in conns:
            c.sock.shutdown(socket.SHUT_WR)
            try:
                rest = c.sock.recv(4096)
            except OSError as e:
                raise Fail("%s: after our FIN: %s instead of the echo's EOF" % (c.tag, e))
            check(rest == b"", "%s: after our FIN got %r instead of EOF" % (c.tag, rest))
            c.close()
        log("all %d connections closed cleanly (FIN both ways) during the drain" % len(conns))
        return 0
    # Nobody closes: at the end of drain-timeout each is reset.
    for c in conns:
        c.sock.settimeout(args.drain_timeout + 30)
    for c in conns:
        try:
            data = c.sock.recv(4096)
            what = "eof" if not data else "data %r" % data[:40]
        except ConnectionResetError:
            what = "reset"
        except socket.timeout:
            what = "still open %d s after SIGTERM" % (args.drain_timeout + 30)
        except OSError as e:
            what = "error %s" % e
        check(what == "reset", "%s (queue %d) at the end of the drain: %s, expected a reset"
              % (c.tag, c.queue, what))
        c.close()
    log("all %d connections left open were reset at the end of the drain" % len(conns))
    text = log_since()
    check(re.search(r"resetting \d+ open TCP sessions", text) is not None,
          "no 'resetting N open TCP sessions' line in the log after SIGTERM")
    return 0

# ---------------------------------------------------------------- metrics

# Counters that count what is open now: gauges, named without _total.
GAUGES = {"tcp_active", "udp_active"}
# Families besides one per counter.
EXTRA_FAMILIES = {"s5tund_info", "s5tund_queues", "s5tund_start_time_seconds", "s5tund_queue_ready",
                  "s5tund_tun_tx_dropped",
                  "s5tund_reloads", "s5tund_reload_failures", "s5tund_last_reload_timestamp_seconds",
                  # per upstream (label upstream="NAME"), checked against the document's upstreams[]
                  "s5tund_upstream_up", "s5tund_upstream_state_since_seconds", "s5tund_upstream_failures",
                  "s5tund_upstream_open_sessions", "s5tund_upstream_sessions", "s5tund_upstream_refused",
                  "s5tund_upstream_retried", "s5tund_upstream_bytes_up", "s5tund_upstream_bytes_down",
                  "s5tund_upstream_handshake_seconds"}
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def metric_family(counter):
    """(family name as the Prometheus parser reports it, sample name, type)."""
    if counter in GAUGES:
        return "s5tund_" + counter, "s5tund_" + counter, "gauge"
    base = "s5tund_" + (counter[:-6] if counter.endswith("_total") else counter)
    return base, base + "_total", "counter"


def split_addr(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def http_exchange(addr, data, timeout=10.0, half_close=False):
    """One connection: sends data, reads until the server closes. Returns
    the bytes received (b"" when it closed without an answer)."""
    s = socket.create_connection(addr, timeout=timeout)
    raw = b""
    try:
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass   # closed before all was sent: whatever it answered is read below
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            raw += chunk
    finally:
        s.close()
    return raw


def parse_response(raw, what):
    """(status, headers with lower-case names, body); the head is HTTP/1.1,
    Content-Length is the body's and the connection is closed."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    check(sep, "%s: no complete response head in %r" % (what, raw[:200]))
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.1 (\d{3}) [A-Za-z ]+$", lines[0])
    check(m is not None, "%s: status line %r" % (what, lines[0]))
    headers = {}
    for ln in lines[1:]:
        k, sep, v = ln.partition(":")
        check(sep and k and k == k.strip(), "%s: header line %r" % (what, ln))
        headers[k.lower()] = v.strip()
    check(headers.get("content-length") == str(len(body)),
          "%s: Content-Length %s, body of %d bytes" % (what, headers.get("content-length"), len(body)))
    check(headers.get("connection") == "close", "%s: no 'Connection: close'" % what)
    return int(m.group(1)), headers, body


SCRAPE = (b"GET /metrics HTTP/1.1\r\nHost: %s\r\nUser-Agent: ops.py\r\n"
          b"Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n\r\n")


def scrape(args, path=b"/metrics"):
    """GET /metrics: the families as Debian's prometheus_client parses them,
    by name."""
    from prometheus_client.parser import text_string_to_metric_families
    addr = split_addr(args.http)
    req = SCRAPE.replace(b"/metrics", path) % args.http.encode()
    status, headers, body = parse_response(http_exchange(addr, req), "GET %s" % path.decode())
    check(status == 200, "GET %s: status %d: %r" % (path.decode(), status, body[:200]))
    check(headers.get("content-type") == CONTENT_TYPE,
          "GET %s: Content-Type %r, expected %r" % (path.decode(), headers.get("content-type"), CONTENT_TYPE))
    fams = {}
    for f in text_string_to_metric_families(body.decode("utf-8")):
        check(f.name not in fams, "family %s twice" % f.name)
        fams[f.name] = f
    return fams, body


def json_doc(args):
    """What s5tund --stats SOCK --json prints."""
    out = subprocess.run([args.s5tund, "--stats", args.stats, "--json"], capture_output=True,
                         text=True, timeout=30)
    check(out.returncode == 0, "s5tund --stats --json exited %d: %s" % (out.returncode, out.stderr))
    return json.loads(out.stdout)


def per_queue(fams, counter, nq):
    """The values of a counter's samples, by queue (each queue once, no
    other labels)."""
    fam, sample, mtype = metric_family(counter)
    check(fam in fams, "no family for %s (expected %s)" % (counter, sample))
    f = fams[fam]
    check(f.type == mtype, "%s is a %s, expected a %s" % (sample, f.type, mtype))
    check(f.documentation and f.documentation != counter, "%s has no HELP text" % sample)
    vals = {}
    for smp in f.samples:
        check(smp.name == sample, "family %s has a sample %s, expected %s" % (fam, smp.name, sample))
        check(set(smp.labels) == {"queue"}, "%s: labels %s, expected only queue" % (sample, smp.labels))
        q = int(smp.labels["queue"])
        check(q not in vals, "%s{queue=\"%d\"} twice" % (sample, q))
        check(smp.value == int(smp.value) and smp.value >= 0, "%s: value %r" % (sample, smp.value))
        vals[q] = int(smp.value)
    check(sorted(vals) == list(range(nq)), "%s: queues %s, expected 0..%d" % (sample, sorted(vals), nq - 1))
    return [vals[q] for q in range(nq)]


def check_exposition(args, fams, doc):
    """Every counter of the JSON document, per queue, equal to it (and so
    the sums to its totals); the other families right. Returns the sums."""
    nq = doc["queue_count"]
    counters = list(doc["totals"])
    want = {metric_family(k)[0] for k in counters} | EXTRA_FAMILIES
    check(set(fams) == want, "families: extra %s, missing %s"
          % (sorted(set(fams) - want), sorted(want - set(fams))))
    sums = {}
    for k in counters:
        vals = per_queue(fams, k, nq)
        for q in range(nq):
            check(vals[q] == doc["queues"][q][k], "%s{queue=\"%d\"} is %d, --stats --json says %d"
                  % (metric_family(k)[1], q, vals[q], doc["queues"][q][k]))
        check(sum(vals) == doc["totals"][k], "%s: queues add up to %d, --stats --json totals say %d"
              % (metric_family(k)[1], sum(vals), doc["totals"][k]))
        sums[k] = sum(vals)
    info = fams["s5tund_info"]
    check(info.type == "gauge" and len(info.samples) == 1, "s5tund_info: %s" % info.samples)
    version = subprocess.run([args.s5tund, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.split()[-1]
    check(info.samples[0].labels == {"version": version, "mode": args.mode} and info.samples[0].value == 1,
          "s5tund_info %s %s, expected version %s mode %s, 1" % (info.samples[0].labels,
                                                                 info.samples[0].value, version, args.mode))
    check([s.value for s in fams["s5tund_queues"].samples] == [nq], "s5tund_queues %s, expected %d"
          % (fams["s5tund_queues"].samples, nq))
    check([s.value for s in fams["s5tund_tun_tx_dropped"].samples] == [doc["tun_tx_dropped"]],
          "s5tund_tun_tx_dropped_total %s, the document says %d"
          % (fams["s5tund_tun_tx_dropped"].samples, doc["tun_tx_dropped"]))
    check([s.value for s in fams["s5tund_start_time_seconds"].samples] == [doc["started"]],
          "s5tund_start_time_seconds %s, the document says started %d"
          % (fams["s5tund_start_time_seconds"].samples, doc["started"]))
    for fam, key, mtype in (("s5tund_reloads", "reloads", "counter"),
                            ("s5tund_reload_failures", "reload_failures", "counter"),
                            ("s5tund_last_reload_timestamp_seconds", "last_reload", "gauge")):
        f = fams[fam]
        check(f.type == mtype and [s.value for s in f.samples] == [doc[key]],
              "%s (%s) %s, --stats --json says %s %d" % (fam, f.type, [s.value for s in f.samples], key, doc[key]))
    for u in doc.get("upstreams", []):
        for fam, key in (("s5tund_upstream_sessions", "total"), ("s5tund_upstream_open_sessions", "open"),
                         ("s5tund_upstream_bytes_up", "bytes_up")):
            got = [s.value for s in fams[fam].samples
                   if s.labels.get("upstream") == u["name"] and not s.name.endswith("_created")]
            check(got == [u[key]], "%s{upstream=\"%s\"} %s, --stats --json says %s %d"
                  % (fam, u["name"], got, key, u[key]))
        hs = {s.name: s.value for s in fams["s5tund_upstream_handshake_seconds"].samples
              if s.labels.get("upstream") == u["name"] and s.labels.get("le") in (None, "+Inf")}
        check(hs.get("s5tund_upstream_handshake_seconds_count") == u["total"] and
              hs.get("s5tund_upstream_handshake_seconds_bucket") == u["total"],
              "s5tund_upstream_handshake_seconds{upstream=\"%s\"} %s, --stats --json says total %d"
              % (u["name"], hs, u["total"]))
    ready = {s.labels.get("queue"): s.value for s in fams["s5tund_queue_ready"].samples}
    check(ready == {str(q): 1 for q in range(nq)}, "s5tund_queue_ready %s, expected 1 for 0..%d"
          % (ready, nq - 1))
    return sums


def cross_check(args, bound=T_WAIT):
    """A scrape between two identical --stats --json documents (nothing
    moved meanwhile), checked against them. Returns the sums per counter."""
    def attempt():
        j1 = json_doc(args)
        fams, _ = scrape(args)
        j2 = json_doc(args)
        if j1["totals"] != j2["totals"] or j1["queues"] != j2["queues"]:
            return None
        return check_exposition(args, fams, j2)
    return wait_for(attempt, "a scrape between two identical --stats --json documents", bound, 0.2)


def transfer(args, n_up, n_down):
    """UPLOAD n_up, DOWNLOAD n_down through the tunnel; returns the bytes
    each way the proxy must have seen (commands and replies included)."""
    up_cmd = b"UPLOAD %d\n" % n_up
    s = e2elib.connect(args.host, args.port, 30)
    s.sendall(up_cmd)
    for chunk in e2elib.stream(3, n_up):
        s.sendall(chunk)
    reply = e2elib.read_all(s, 4096)
    s.close()
    check(reply.decode().strip() == e2elib.stream_sha256(3, n_up), "upload: target answered %r" % reply[:80])
    down_cmd = b"DOWNLOAD %d 8\n" % n_down
    s = e2elib.connect(args.host, args.port, 30)
    s.sendall(down_cmd)
    got = len(e2elib.read_all(s, 1 << 18))
    s.close()
    check(got == n_down, "download: got %d bytes, expected %d" % (got, n_down))
    return len(up_cmd) + n_up + len(down_cmd), len(reply) + n_down


def expect_status(args, what, data, want, half_close=False):
    raw = http_exchange(split_addr(args.http), data, half_close=half_close)
    status, headers, body = parse_response(raw, what)
    check(status == want, "%s: status %d, expected %d: %r" % (what, status, want, body[:100]))
    if want == 405:
        check(headers.get("allow") == "GET", "%s: Allow %r, expected GET" % (what, headers.get("allow")))
    log("%s: %d %s" % (what, status, raw.split(b"\r\n")[0].decode()[13:]))


def hostile_requests(args):
    """Garbage, wrong methods and paths, oversized heads: each answered with
    its 4xx and closed."""
    host = b"Host: " + args.http.encode() + b"\r\n"
    expect_status(args, "TLS ClientHello", bytes.fromhex("16030100a5010000a10303") + os.urandom(32) + b"\r\n", 400)
    expect_status(args, "a line of text", b"hello there\r\n\r\n", 400)
    expect_status(args, "binary zeros", b"\0" * 64 + b"\n", 400)
    expect_status(args, "HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400)
    expect_status(args, "POST /metrics", b"POST /metrics HTTP/1.1\r\n" + host + b"Content-Length: 2\r\n\r\nhi", 405)
    expect_status(args, "HEAD /metrics", b"HEAD /metrics HTTP/1.1\r\n" + host + b"\r\n", 405)
    expect_status(args, "GET /other", b"GET /other HTTP/1.1\r\n" + host + b"\r\n", 404)
    expect_status(args, "GET /metrics without Host", b"GET /metrics HTTP/1.1\r\n\r\n", 400)
    expect_status(args, "folded header", b"GET /metrics HTTP/1.1\r\n" + host + b" x\r\n\r\n", 400)
    expect_status(args, "request line of 64 KiB", b"GET /" + b"a" * 65536 + b" HTTP/1.1\r\n" + host + b"\r\n", 414)
    expect_status(args, "headers of 1 MiB", b"GET /metrics HTTP/1.1\r\n" + host +
                  (b"X-Pad: " + b"p" * 1000 + b"\r\n") * 1024 + b"\r\n", 431)
    raw = http_exchange(split_addr(args.http), b"GET /metrics HTTP/1.1\r\n" + host, half_close=True)
    check(raw == b"", "a request cut short by EOF got an answer: %r" % raw[:100])
    log("a request cut short by EOF: closed without an answer")
    # Well-formed, in many small pieces: served.
    s = socket.create_connection(split_addr(args.http), timeout=10)
    for b in SCRAPE % args.http.encode():
        s.send(bytes([b]))
    raw = e2elib.read_all(s, 1 << 20)
    s.close()
    status, _, _ = parse_response(raw, "GET /metrics a byte per write")
    check(status == 200, "GET /metrics a byte per write: status %d" % status)
    status, _, _ = parse_response(http_exchange(split_addr(args.http), b"GET / HTTP/1.0\r\n\r\n"), "GET / HTTP/1.0")
    check(status == 200, "GET / HTTP/1.0: status %d" % status)
    log("a byte per write, and GET / HTTP/1.0: 200")


def slowloris(args, echo, n=40, bound=30.0):
    """n connections that send a request head a byte at a time and never
    finish it: every one is cut (pushed out by a newer one beyond 16, or at
    its 5 s deadline), none answered; meanwhile scrapes are served and a
    connection through the tunnel echoes."""
    addr = split_addr(args.http)
    start = time.monotonic()
    socks = {}
    for i in range(n):
        s = socket.create_connection(addr, timeout=10)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        s.setblocking(False)
        socks[s] = i
    cut = {}
    scrapes = pings = 0
    while socks and time.monotonic() - start < bound:
        ready, _, _ = select.select(list(socks), [], [], 0.3)
        for s in ready:
            try:
                data = s.recv(4096)
            except (ConnectionResetError, BlockingIOError) as e:
                data = b"" if isinstance(e, ConnectionResetError) else None
            if data is None:
                continue
            check(data == b"", "slow connection %d got an answer: %r" % (socks[s], data[:100]))
            cut[socks.pop(s)] = time.monotonic() - start
            s.close()
        for s in list(socks):
            try:
                s.send(b"a")
            except (BrokenPipeError, ConnectionResetError):
                cut[socks.pop(s)] = time.monotonic() - start
                s.close()
        echo.ping()
        pings += 1
        if pings % 3 == 0:
            scrape(args)
            scrapes += 1
    for s in socks:
        s.close()
    check(not socks, "%d of %d slow connections still open after %.0f s: %s"
          % (len(socks), n, bound, sorted(socks.values())))
    early = sum(1 for t in cut.values() if t < 4.0)
    log("slowloris: %d connections cut, %d of them before 4 s (pushed out), the last after %.1f s; "
        "%d scrapes served and %d echoes through the tunnel meanwhile"
        % (len(cut), early, max(cut.values()), scrapes, pings))


def cmd_metrics(args):
    base_doc = json_doc(args)
    base = cross_check(args)
    log("GET /metrics: every counter per queue equals --stats --json (%d families)" % len(scrape(args)[0]))
    _, body = scrape(args, b"/")
    check(body.startswith(b"# HELP s5tund_info "), "GET / is not the exposition: %r" % body[:80])

    # Known traffic: the byte counters move by exactly what was sent; a
    # connection held open shows in the tcp_active gauge.
    to_proxy, from_proxy = transfer(args, 1 << 20, 3 << 20)
    wait_for(lambda: stats(args.stats)["totals"]["tcp_active"] == base["tcp_active"], "tcp_active back")
    held = EchoConn(args.host, args.port, tag="held")
    held.ping()
    after = cross_check(args)
    d = {k: after[k] - base[k] for k in after}
    check(d["bytes_to_proxy"] == to_proxy + len(b"ECHO\n") + 64,
          "s5tund_bytes_to_proxy_total grew by %d, expected %d" % (d["bytes_to_proxy"], to_proxy + 5 + 64))
    check(d["bytes_from_proxy"] == from_proxy + 64,
          "s5tund_bytes_from_proxy_total grew by %d, expected %d" % (d["bytes_from_proxy"], from_proxy + 64))
    check(d["tcp_total"] == 3, "s5tund_tcp_total grew by %d, expected 3" % d["tcp_total"])
    check(d["tcp_active"] == 1, "s5tund_tcp_active grew by %d with one connection held, expected 1"
          % d["tcp_active"])
    log("after %d bytes up and %d down (and one connection held): sums of the scrape equal --stats "
        "--json and moved by exactly that: %s" % (to_proxy, from_proxy, {k: v for k, v in d.items() if v}))

    # A reload (SIGHUP, the same file): counted, and its time, as the JSON says.
    os.kill(args.pid, signal.SIGHUP)
    wait_for(lambda: json_doc(args)["reloads"] == base_doc["reloads"] + 1, "reloads + 1 after SIGHUP")
    doc = json_doc(args)
    check(doc["last_reload"] >= doc["started"], "last_reload %d before started %d" % (doc["last_reload"], doc["started"]))
    cross_check(args)
    log("after SIGHUP: s5tund_reloads_total %d, s5tund_last_reload_timestamp_seconds %d, as --stats --json"
        % (doc["reloads"], doc["last_reload"]))

    hostile_requests(args)
    slowloris(args, held)
    # Still serving, still right, and the tunnel carries traffic as before.
    to_proxy, from_proxy = transfer(args, 1 << 20, 1 << 20)
    held.ping()
    held.close()
    wait_for(lambda: stats(args.stats)["totals"]["tcp_active"] == base["tcp_active"], "tcp_active back")
    cross_check(args)
    log("after the hostile requests: the endpoint serves and agrees with --stats --json; a transfer "
        "through the tunnel and the held connection work")
    return 0


def cmd_scrape(args):
    fams, body = scrape(args)
    cross_check(args)
    log("GET /metrics on %s: %d families, %d bytes, equal to --stats --json" % (args.http, len(fams), len(body)))
    return 0



def cmd_syslogd(args):
    """Receives syslog datagrams on a unix socket (what glibc's syslog(3)
    sends to /dev/log) and appends each as one line to args.out."""
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(args.socket)
    os.chmod(args.socket, 0o666)   # workers may run as another user
    with open(args.out, "ab", buffering=0) as out:
        while True:
            out.write(s.recv(65536).rstrip(b"\n\0") + b"\n")


# ---------------------------------------------------------------- deadworker

DW_LATE_MS = 8000     # the idle clients' reply comes this long after their request
DW_KILL_AFTER = 1.5   # the worker is killed this long after the last client started
DW_BOUND = 3.0        # issue 10: no client of the dead worker waits longer after the kill
DW_BYTES = 12 << 20   # download / upload size: paced, it lasts well past the kill
DW_PIECE = 16384      # paced: one piece per DW_PACE seconds
DW_PACE = 0.01
DW_BUF = 65536        # small socket buffers: a reset is seen right after the buffered data
DW_PAUSE = 0.7        # downloads stop reading this long before the kill ...
DW_LOOK = 2.0         # ... until this long after it, when their TCP state is looked at
TCP_ESTABLISHED, TCP_CLOSE = 1, 7   # tcpi_state (linux/tcp_states.h)


def tcp_state(sock):
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


class DeadWorkerClient:
    """One client in a thread: idle (waits for a LATER reply), download
    (reads a DOWNLOAD, paced) or upload (sends an UPLOAD, paced). outcome:
    'reply'/'complete', 'reset', or what went wrong; doomed clients give up
    DW_BOUND s after the kill (state['kill'])."""

    def __init__(self, host, port, kind, tag, state):
        self.kind, self.tag, self.state = kind, tag, state
        self.queue = None
        self.doomed = False
        self.outcome = None
        self.at = None      # monotonic time of the outcome
        self.moved = 0      # payload bytes received or sent
        self.sock = socket.socket(e2elib.family_of(host), socket.SOCK_STREAM)
        opt = socket.SO_RCVBUF if kind == "download" else socket.SO_SNDBUF
        self.sock.setsockopt(socket.SOL_SOCKET, opt, DW_BUF)
        self.sock.settimeout(10)
        self.sock.connect((host, port))
        self.seed = random.randrange(1 << 30)
        cmd = {"idle": b"LATER %d %s\n" % (DW_LATE_MS, tag.encode()),
               "download": b"DOWNLOAD %d %d\n" % (DW_BYTES, self.seed),
               "upload": b"UPLOAD %d\n" % DW_BYTES}[kind]
        self.sock.sendall(cmd)
        self.sock.settimeout(0.25)

    def given_up(self):
        kill = self.state.get("kill")
        limit = kill + DW_BOUND if self.doomed and kill else self.state["start"] + 90
        return time.monotonic() > limit

    def recv(self, n):
        while True:
            try:
                return self.sock.recv(n)
            except socket.timeout:
                if self.given_up():
                    raise

    def send(self, data):
        while True:
            try:
                return self.sock.send(data)
            except socket.timeout:
                if self.given_up():
                    raise

    def idle(self):
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = self.recv(4096)
            if not chunk:
                return "eof after %r" % buf
            buf += chunk
        return "reply" if buf == b"LATE %s\n" % self.tag.encode() else "wrong reply %r" % buf[:60]

    def download(self):
        h = hashlib.sha256()
        while True:
            while self.state.get("pause") and not self.state.get("resume"):
                time.sleep(0.02)
            chunk = self.recv(DW_PIECE)
            if not chunk:
                break
            h.update(chunk)
            self.moved += len(chunk)
            time.sleep(DW_PACE)
        ok = self.moved == DW_BYTES and h.hexdigest() == e2elib.stream_sha256(self.seed, DW_BYTES)
        return "complete" if ok else "eof after %d bytes (or a wrong digest)" % self.moved

    def upload(self):
        for chunk in e2elib.stream(7, DW_BYTES):
            view = memoryview(chunk)
            while view:
                n = self.send(view[:DW_PIECE])
                view = view[n:]
                self.moved += n
                time.sleep(DW_PACE)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = self.recv(4096)
            if not chunk:
                break
            reply += chunk
        ok = reply.decode(errors="replace").strip() == e2elib.stream_sha256(7, DW_BYTES)
        return "complete" if ok else "digest %r" % reply[:80]

    def run(self):
        try:
            self.outcome = getattr(self, self.kind)()
        except (ConnectionResetError, BrokenPipeError):
            self.outcome = "reset"
        except socket.timeout:
            self.outcome = ("still waiting %.0f s after the kill" % DW_BOUND if self.doomed
                            else "no end within the bound")
        except OSError as e:
            self.outcome = "error %s" % e
        self.at = time.monotonic()


def deadworker_phase(args, phase, log_start):
    """Clients of one kind (phase: idle, download or upload; idle6 etc.: to
    the IPv6 address), each mapped to its queue; the worker of the first
    one's queue is killed DW_KILL_AFTER s after the last started. Its clients
    must be reset within DW_BOUND s; the others must finish untouched."""
    path = args.stats
    kind = phase.rstrip("6")
    host = args.host6 if phase.endswith("6") else args.host
    state = {"start": time.monotonic()}
    clients = []

    def more(n):
        for i in range(n):
            tag = "%s_%d" % (phase, len(clients))
            c, q = e2elib.queue_of(path, lambda: DeadWorkerClient(host, args.port, kind, tag, state), tag)
            c.queue = q
            clients.append(c)
    more(args.conns)
    single = stats(path)["queue_count"] == 1   # nobody survives; the replacement answers
    while not single and len({c.queue for c in clients}) < 2 and len(clients) < 48:
        more(2)
    victim = clients[0].queue
    for c in clients:
        c.doomed = c.queue == victim
    doomed = [c for c in clients if c.doomed]
    others = [c for c in clients if not c.doomed]
    check(doomed and (others or single), "%s: clients on queues %s only"
          % (kind, sorted({c.queue for c in clients})))
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    before = stats(path)
    q = before["queues"][victim]
    check(q["ready"] == 1 and q["pid"] > 0, "queue %d: ready %d pid %d" % (victim, q["ready"], q["pid"]))
    check(q["tcp_active"] == len(doomed), "queue %d has %d active sessions, expected our %d clients"
          % (victim, q["tcp_active"], len(doomed)))
    # Downloads pause around the kill: a client that reads sends window
    # updates, which the replacement would answer with a RST anyway; one
    # that does not read (its window full) sends nothing and is the one that
    # would wait forever.
    if kind == "download":
        time.sleep(DW_KILL_AFTER - DW_PAUSE)
        state["pause"] = True
        time.sleep(DW_PAUSE)
    else:
        time.sleep(DW_KILL_AFTER)
    moved = {c.tag: c.moved for c in doomed}
    state["kill"] = time.monotonic()
    os.kill(q["pid"], signal.SIGKILL)
    log("%s: %d clients per queue %s; killed worker %d of queue %d (%d clients there, %d on the "
        "others)" % (kind, len(clients), {k: sum(c.queue == k for c in clients) for k in
                                          sorted({c.queue for c in clients})},
                     q["pid"], victim, len(doomed), len(others)))
    if kind == "download":
        time.sleep(DW_LOOK)
        states = [(c, tcp_state(c.sock)) for c in clients]
        state["resume"] = True
        bad = ["%s: state %d" % (c.tag, st) for c, st in states if c.doomed and st != TCP_CLOSE]
        check(not bad, "download: clients of the killed worker, not reading, are not reset %.0f s "
              "after the kill: %s" % (DW_LOOK, "; ".join(bad)))
        bad = ["%s: state %d" % (c.tag, st) for c, st in states if not c.doomed and st != TCP_ESTABLISHED]
        check(not bad, "download: clients of the other workers are not established: %s" % "; ".join(bad))
        log("download: %.0f s after the kill the %d clients of the killed worker, not reading since "
            "%.1f s before it, are reset (TCP state CLOSE), the %d others established"
            % (DW_LOOK, len(doomed), DW_PAUSE, len(others)))
    for t in threads:
        t.join(120)
    check(not any(t.is_alive() for t in threads), "%s: a client thread did not end" % kind)
    for c in clients:
        c.sock.close()
    bad = ["%s: %s" % (c.tag, c.outcome) for c in doomed if c.outcome != "reset"]
    check(not bad, "%s: clients of the killed worker (queue %d) not reset within %.0f s of the "
          "kill: %s" % (kind, victim, DW_BOUND, "; ".join(bad)))
    if kind != "idle":
        idle = [t for t, n in moved.items() if n == 0]
        check(not idle, "%s: clients %s had moved no data before the kill" % (kind, idle))
    bad = ["%s (queue %d): %s" % (c.tag, c.queue, c.outcome) for c in others
           if c.outcome not in ("reply", "complete")]
    check(not bad, "%s: clients of the surviving workers were touched: %s" % (kind, "; ".join(bad)))
    log("%s: all %d clients of the killed worker were reset within %.0f s of the kill (after "
        "%s s); all %d others finished"
        % (kind, len(doomed), DW_BOUND, ", ".join("%.2f" % (c.at - state["kill"]) for c in doomed),
           len(others)))

    # The counter and the log line of the supervisor.
    def replaced():
        qq = stats(path)["queues"][victim]
        return qq if qq["ready"] == 1 and qq["pid"] not in (0, q["pid"]) else None
    wait_for(replaced, "a new serving worker on queue %d" % victim)
    after = stats(path)
    d = after["queues"][victim]["tcp_reset_dead_worker"] - q["tcp_reset_dead_worker"]
    check(d == len(doomed), "queue %d: tcp_reset_dead_worker grew by %d, expected %d"
          % (victim, d, len(doomed)))
    with open(args.log, "rb") as f:
        text = f.read()[log_start:].decode("utf-8", "replace")
    lines = re.findall(r"worker %d: resetting (\d+) TCP clients of the dead worker" % victim, text)
    check(lines == [str(len(doomed))], "log after the kill: 'worker %d: resetting N TCP clients' "
          "lines %s, expected one with %d" % (victim, lines, len(doomed)))
    wait_for(lambda: stats(path)["totals"]["tcp_active"] == 0, "every session ended")
    return victim


def cmd_deadworker(args):
    for phase in args.phases.split(","):
        with open(args.log, "rb") as f:
            start = len(f.read())
        deadworker_phase(args, phase, start)
    doc = stats(args.stats)
    log("deadworker ok; tcp_reset_dead_worker per queue %s"
        % [q["tcp_reset_dead_worker"] for q in doc["queues"]])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--host", required=True)
        p.add_argument("--port", type=int, default=7000)

    p = sub.add_parser("stats")
    common(p)
    p.add_argument("--stats", required=True)
    p.add_argument("--s5tund", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--tun", default="tun0")
    p.add_argument("--mtu", type=int, default=8500)
    p.add_argument("--upload", type=e2elib.parse_size, default=e2elib.parse_size("8M"))
    p.add_argument("--download", type=e2elib.parse_size, default=e2elib.parse_size("12M"))
    p.set_defaults(fn=cmd_stats)

    p = sub.add_parser("notify")
    common(p)
    p.add_argument("--socket", required=True)
    p.add_argument("--pid-file", required=True)
    p.add_argument("--expect-pid", type=int)
    p.add_argument("--expect-pid-file", help="where the pid is written once the daemon started")
    p.add_argument("--conns", type=int, default=8)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--stats", help="stats socket: go on until every queue took a connection")
    p.add_argument("--tun", help="the device: up with --queues queues attached at READY=1")
    p.add_argument("--queues", type=int, default=1)
    p.add_argument("--listening-file")
    p.add_argument("--checked-file")
    p.add_argument("--on-ready", action="append", default=[],
                   help="shell command run when READY=1 arrives, before the checks")
    p.set_defaults(fn=cmd_notify)

    p = sub.add_parser("supervise")
    common(p)
    p.add_argument("--stats", required=True)
    p.add_argument("--conns", type=int, default=12)
    p.add_argument("--kills", type=int, default=4)
    p.set_defaults(fn=cmd_supervise)

    p = sub.add_parser("drain")
    common(p)
    p.add_argument("--stats", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--queues", type=int, required=True)
    p.add_argument("--conns", type=int, default=4)
    p.add_argument("--probes", type=int, default=8)
    p.add_argument("--drain-timeout", type=int, required=True)
    p.add_argument("--close", action="store_true")
    p.add_argument("--idle-queues", action="store_true",
                   help="keep sessions on one queue only: the others are idle at SIGTERM")
    p.set_defaults(fn=cmd_drain)

    for name, fn in (("metrics", cmd_metrics), ("scrape", cmd_scrape)):
        p = sub.add_parser(name)
        p.add_argument("--host", default="")
        p.add_argument("--port", type=int, default=7000)
        p.add_argument("--stats", required=True)
        p.add_argument("--s5tund", required=True)
        p.add_argument("--http", required=True, help="the endpoint, ADDR:PORT")
        p.add_argument("--mode", required=True)
        p.add_argument("--pid", type=int, default=0, help="s5tund's: SIGHUP for a reload")
        p.set_defaults(fn=fn)

    p = sub.add_parser("syslogd")
    p.add_argument("--socket", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_syslogd)

    p = sub.add_parser("deadworker")
    common(p)
    p.add_argument("--stats", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--conns", type=int, default=12)
    p.add_argument("--host6", help="the target's IPv6 address, for the phases ending in 6")
    p.add_argument("--phases", default="idle,download,upload,idle6")
    p.set_defaults(fn=cmd_deadworker)

    args = ap.parse_args()
    random.seed(1)
    try:
        rc = args.fn(args)
    except Fail as e:
        log("FAILED: %s" % e)
        return 1
    except (OSError, ConnectionError, ValueError) as e:
        log("FAILED: %s: %s" % (type(e).__name__, e))
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
