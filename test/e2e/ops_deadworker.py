# SPDX-License-Identifier: MIT
"""The operations check of a dead worker in process mode: ops.py deadworker
(its TCP clients reset by the supervisor, phase by phase)."""

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

import e2elib  # noqa: F401
from e2elib import Fail, check, wait_for  # noqa: F401
from e2elib import stats_doc as stats  # noqa: F401
from ops_common import *  # noqa: F401,F403

DW_LATE_MS = 5000     # the idle clients' reply comes this long after their request:
                      # after the kill and DW_BOUND
DW_KILL_AFTER = 1.5   # the worker is killed this long after the last client started
DW_BOUND = 3.0        # issue 10: no client of the dead worker waits longer after the kill
DW_BYTES = 8 << 20    # download / upload size: paced (1.6 MB/s at most), it lasts
                      # well past the kill and DW_LOOK
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
