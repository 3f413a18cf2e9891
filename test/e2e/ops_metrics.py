# SPDX-License-Identifier: MIT
"""The operations checks of the Prometheus endpoint ([stats] http): ops.py
metrics and ops.py scrape."""

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

# Counters that count what is open now: gauges, named without _total.
GAUGES = {"tcp_active", "udp_active"}
# Families besides one per counter.
EXTRA_FAMILIES = {"s5tund_info", "s5tund_queues", "s5tund_start_time_seconds", "s5tund_queue_ready",
                  "s5tund_tun_tx_dropped",
                  "s5tund_reloads", "s5tund_reload_failures", "s5tund_last_reload_timestamp_seconds",
                  # per upstream (label upstream="NAME"), checked against the document's upstreams[]
                  "s5tund_upstream_up", "s5tund_upstream_state_since_seconds", "s5tund_upstream_failures",
                  "s5tund_upstream_open_sessions", "s5tund_upstream_sessions", "s5tund_upstream_refused",
                  "s5tund_upstream_retried", "s5tund_upstream_stream_bad", "s5tund_upstream_bytes_up",
                  "s5tund_upstream_bytes_down",
                  "s5tund_upstream_handshake_seconds", "s5tund_upstream_tls_handshakes",
                  "s5tund_upstream_tls_resumed", "s5tund_upstream_tls_failures", "s5tund_upstream_tls_info",
                  "s5tund_upstream_ss_failures"}
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
