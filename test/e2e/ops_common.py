# SPDX-License-Identifier: MIT
"""What the operations checks share (ops.py, ops_metrics.py, ops_deadworker.py):
the counters' names, the stats socket read when it is still, the mapped
echo connections and which queue took them, --stats's table parsed."""

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
    "session_log_dropped", "sniff_tls", "sniff_http", "sniff_quic", "sniff_timeout", "sniff_none", "sniff_skipped",
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
