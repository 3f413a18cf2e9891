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
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
from e2elib import Fail, check, wait_for  # noqa: E402,F401
from e2elib import stats_doc as stats  # noqa: E402,F401
from ops_common import *  # noqa: E402,F401,F403
from ops_deadworker import cmd_deadworker  # noqa: E402
from ops_metrics import cmd_metrics, cmd_scrape  # noqa: E402


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
