#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tables of the rows users compare and of the queue sweep (Markdown).

    report_rows.py rows --out DIR --modes "thread process" [--relay-delay-ms MS]
    report_rows.py sweep --out DIR --cases "direct thread-q1 ..." --streams N [--clk-tck HZ]
    report_rows.py upstreams --out DIR [--relay-delay-ms MS] [--clk-tck HZ]
    report_rows.py router --out DIR --modes "thread process" [--clk-tck HZ]

rows: reads $OUT/raw/rows/{direct,MODE}/ (meta and client outputs, written
by rows.sh), prints the tables and exits 1 when a row did not run (a TTFB
variant the binary does not know is skipped with a note, not a failure).
upstreams: reads $OUT/raw/up-{squid,squid-tls,socks5,ss,ss-chain,ss-chacha,ss-chacha-chain,failover}/ (rows_upstream.sh):
squid and the SOCKS5 server side by side, then the failover row; exits 1
when a row did not run.
router: reads $OUT/raw/router-MODE/ (rows_router.sh): the LAN client
against the router host per device MTU, and the connection storm; exits 1
when a row did not run.
sweep: CPU-s/GB of the N-stream iperf3 runs per mode and queue count, with
the ratio to one queue (flat = within 10 %). Never fails on a figure.
"""
import argparse
import os
import sys

import report
from report import fmt, num, read_kv_file, read_kv_line


# The TTFB variants of rows.sh (TTFB_VARIANTS) and their rows' titles; the
# direct path is shown on the first.
TTFB_TITLES = (("nopool", "pool = 0"), ("nopool+pipeline", "pool = 0, pipeline = true"),
               ("pool", "pool = 4 (default)"), ("pool+optimistic", "pool = 4, optimistic = true"))

def load(out, name):
    d = os.path.join(out, "raw", "rows", name)
    return d, read_kv_file(os.path.join(d, "meta"))


def out_kv(d, fname):
    return read_kv_line(os.path.join(d, fname))[0]


def finish(lines, fails, what):
    """Prints a renderer's tables, then what failed; its exit status."""
    print("\n".join(lines))
    if fails:
        print("%s that failed:\n" % what + "\n".join("- " + f for f in fails))
        return 1
    return 0


def read_ab(d):
    """ab's report in d/ab.out: each "Key: values" line as key -> words."""
    ab = {}
    try:
        with open(os.path.join(d, "ab.out")) as f:
            for l in f:
                k, sep, v = l.partition(":")
                if sep:
                    ab[k.strip()] = v.split()
    except OSError:
        pass
    return ab


def ms(us):
    x = num(us)
    return None if x is None else x / 1000.0


def rows_tables(args):
    modes = args.modes.split()
    fails = []
    relay, _ = read_kv_line(os.path.join(args.out, "raw", "rows", "relay.out"))
    rt = num(relay.get("rtt_p50_ms"))
    names = ["direct"] + modes
    data = {n: load(args.out, n) for n in names}
    for n in names:
        d, meta = data[n]
        if not meta:
            fails.append("%s: the rows did not run" % n)
        if "case_rc" in meta:
            fails.append("%s: failed (exit %s): %s" % (n, meta["case_rc"], meta.get("setup", "see its log")))
    lines = ["", "### The rows users compare", ""]
    lines.append("One queue. Delay relay: %s ms each way; its measured round trip (one byte echoed, p50 of "
                 "20) RT = %s ms." % (args.relay_delay_ms, fmt(rt, 1)))
    lines += ["", "| row | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]

    def row(title, key_fn, need=True):
        cells = []
        for n in names:
            d, meta = data[n]
            v, why = key_fn(n, d, meta)
            cells.append(v if v is not None else "–")
            if why and need:
                fails.append("%s: %s: %s" % (n, title, why))
        lines.append("| %s | %s |" % (title, " | ".join(cells)))

    def rc_of(meta, key):
        rc = meta.get(key)
        return None if rc == "0" else ("not run" if rc is None else "exit status %s" % rc)

    def crr(n, d, meta):
        kv = out_kv(d, "crr1k.out")
        if rc_of(meta, "crr1k_rc"):
            return None, rc_of(meta, "crr1k_rc")
        return "%s/s, %s / %s ms" % (fmt(num(kv.get("rate")), 0), fmt(ms(kv.get("total_p50_us")), 2),
                                    fmt(ms(kv.get("total_p99_us")), 2)), None

    def rr(n, d, meta):
        kv = out_kv(d, "rr1k.out")
        if rc_of(meta, "rr1k_rc"):
            return None, rc_of(meta, "rr1k_rc")
        return "%s/s, %s / %s ms" % (fmt(num(kv.get("rate")), 0), fmt(ms(kv.get("lat_p50_us")), 3),
                                    fmt(ms(kv.get("lat_p99_us")), 3)), None

    row("connect-request-response 1 KB: rate, p50 / p99", crr)
    row("request-response 1 KB, one held connection: rate, p50 / p99", rr)

    def ttfb(variant):
        def f(n, d, meta):
            key = "direct" if n == "direct" else variant
            if n == "direct" and variant != TTFB_TITLES[0][0]:
                return "", None
            if "ttfb_%s_skipped" % key in meta:
                return "skipped (key unknown)", None
            if rc_of(meta, "ttfb_%s_rc" % key):
                return None, rc_of(meta, "ttfb_%s_rc" % key)
            kv = out_kv(d, "ttfb_%s.out" % key)
            t = ms(kv.get("ttfb_p50_us"))
            return "%s RT (%s ms, n=%s)" % (fmt(t / rt if t is not None and rt else None, 2), fmt(t, 1),
                                           kv.get("conns", "?")), None
        return f

    for v, title in TTFB_TITLES:
        row("time to first byte, %s (p50)" % title, ttfb(v))

    def mem(what):
        def f(n, d, meta):
            if n == "direct":
                return "", None
            rss, pss = num(meta.get("mem_%s_rss_kb" % what)), num(meta.get("mem_%s_pss_kb" % what))
            if rss is None:
                rc = meta.get("hold_%s_rc" % what.split("_")[0], "0")
                return None, "not measured" + ("" if rc == "0" else " (holder: %s)" % rc)
            return "%s MiB (PSS %s)" % (fmt(rss / 1024, 1), fmt(pss / 1024 if pss else None, 1)), None
        return f

    held = "%s held" % args.hold
    for what, title in (("idle", "RSS after start"), ("tcp_held", "RSS, TCP connections: " + held),
                        ("tcp_closed", "RSS, 3 s after they closed"), ("udp_held", "RSS, UDP flows: " + held),
                        ("udp_closed", "RSS, 7 s after they closed (idle timeout 5 s)")):
        row(title, mem(what))

    def wake(n, d, meta):
        if n == "direct":
            return "", None
        sw, secs = num(meta.get("idle_switches")), num(meta.get("idle_secs"))
        if sw is None or not secs:
            return None, "not measured"
        return "%s per 20 s" % fmt(sw * 20.0 / secs, 0), None

    def ready(n, d, meta):
        if n == "direct":
            return "", None
        r = num(meta.get("ready_ms"))
        return (None, "not measured") if r is None else ("%s ms" % fmt(r, 1), None)

    row("wake-ups while idle (context switches, every thread)", wake)
    row("start to READY=1", ready)
    lines.append("")
    return finish(lines, fails, "Rows")


def sweep_table(args):
    cases = [c for c in args.cases.split() if c != "direct"]
    rows = {}
    for c in cases:
        r = report.collect(args.out, c, [args.streams], args.clk_tck)
        mode, q = c.rsplit("-q", 1)
        rows.setdefault(mode, []).append((int(q), r))
    if all(len(lst) < 2 for lst in rows.values()):
        # the short run measures one queue count: nothing to sweep
        print("\nQueue sweep: one queue count measured (make bench sweeps 1 2 4 8).\n")
        return 0
    lines = ["", "### Queue sweep: CPU-s/GB with %s streams, same cores" % args.streams, "",
             "| mode | queues | up Gbit/s | down Gbit/s | CPU-s/GB up | CPU-s/GB down | vs 1 queue (up, down) |",
             "|---|---|---|---|---|---|---|"]
    worst = 0.0
    for mode, lst in rows.items():
        lst.sort()
        base = lst[0][1]
        for q, r in lst:
            up, down = r.get("cpu_s_per_gb_up"), r.get("cpu_s_per_gb_down")
            ru, rd = report.ratio(up, base.get("cpu_s_per_gb_up")), report.ratio(down, base.get("cpu_s_per_gb_down"))
            for x in (ru, rd):
                if x is not None:
                    worst = max(worst, abs(x - 1))
            g = lambda k: fmt((r.get(k) or {}).get("gbps"), 2)
            lines.append("| %s | %d | %s | %s | %s | %s | %s, %s |" % (
                mode, q, g("up%s" % args.streams), g("down%s" % args.streams), fmt(up, 3), fmt(down, 3),
                fmt(ru, 2), fmt(rd, 2)))
    lines += ["", "Largest change from one queue: %.0f %% (flat means within 10 %%; not asserted: the machine "
              "is shared)." % (worst * 100), ""]
    print("\n".join(lines))
    return 0


UP_TTFB_TITLES = (("nopool", "pool = 0"), ("pool", "pool = 4 (default)"),
                  ("pool+optimistic", "pool = 4, optimistic = true"))


def upstream_tables(args):
    fails = []
    relay, _ = read_kv_line(os.path.join(args.out, "raw", "rows", "relay.out"))
    rt = num(relay.get("rtt_p50_ms"))
    cols = []
    for name in ("squid", "squid-tls", "socks5", "ss", "ss-chain", "ss-chacha", "ss-chacha-chain"):
        d = os.path.join(args.out, "raw", "up-" + name)
        meta = read_kv_file(os.path.join(d, "meta"))
        r = report.collect(args.out, "up-" + name, [1], args.clk_tck, tcp=False)  # its own connection row
        for f in r["fail"]:
            fails.append("%s: %s" % (name, f))
        if "case_rc" in meta:
            fails.append("%s: failed (exit %s)" % (name, meta["case_rc"]))
        title = {"squid": "squid (HTTP CONNECT, Basic)", "squid-tls": "the same squid over TLS (https_port)",
                 "ss": "ss-server (aes-128-gcm), s5tund speaking Shadowsocks",
                 "ss-chain": "the same ss-server through ss-local (SOCKS5)",
                 "ss-chacha": "ss-server (chacha20-ietf-poly1305), s5tund speaking Shadowsocks",
                 "ss-chacha-chain": "that ss-server through ss-local",
                 "dante": "danted (SOCKS5)",
                 "microsocks": "microsocks (SOCKS5)"}.get(meta.get("proxy", name), name)
        cols.append((name, title, d, meta, r))
    mode = cols[0][3].get("mode", "?")
    lines = ["", "### Upstreams side by side: HTTP, HTTPS, SOCKS5, Shadowsocks (and the ss-local chain)", "",
             "%s mode, one queue, each proxy the one `[upstream]`. Delay relay in front of the proxy for the "
             "time to first byte: %s ms each way, RT = %s ms (its measured round trip). Here it also charges "
             "a new connection its TCP handshake, one RT (its first bytes held until one RT after its accept), "
             "in every column, so a time-to-first-byte row counts each round trip a new flow waits for: the "
             "TCP connect to the proxy (none on a pooled connection), the proxy's own handshake (SOCKS5's "
             "greeting; Shadowsocks has none), the request (CONNECT; Shadowsocks sends the target with the "
             "first bytes), then the data. The chain through ss-local pools connections to ss-local, not to "
             "the server, whose connect it makes per flow." % (
                 mode, args.relay_delay_ms, fmt(rt, 1)), "",
             "| row | " + " | ".join(c[1] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]

    def row(title, fn):
        cells = []
        for name, _, d, meta, r in cols:
            v, why = fn(d, meta, r)
            if meta.get("light") == "1" and why == "not run":  # a second method: CPU rows only
                v, why = None, None
            cells.append(v if v is not None else "–")
            if why:
                fails.append("%s: %s: %s" % (name, title, why))
        lines.append("| %s | %s |" % (title, " | ".join(cells)))

    def ttfb(variant):
        def f(d, meta, r):
            rc = meta.get("ttfb_%s_rc" % variant)
            if rc != "0":
                return None, "not run" if rc is None else "exit status %s" % rc
            kv = out_kv(d, "ttfb_%s.out" % variant)
            t = ms(kv.get("ttfb_p50_us"))
            return "%s RT (%s ms)" % (fmt(t / rt if t is not None and rt else None, 2), fmt(t, 1)), None
        return f

    for v, title in UP_TTFB_TITLES:
        row("time to first byte, %s (p50)" % title, ttfb(v))

    def conns(d, meta, r):
        rc = meta.get("rr_rc")
        if rc != "0":
            return None, "not run" if rc is None else "exit status %s" % rc
        kv = out_kv(d, "rr.out")
        rate, ticks = num(kv.get("rate")), num(meta.get("rr_cpu_ticks"))
        n = num(kv.get("conns"))
        per = (ticks / args.clk_tck) / n * 1e6 if ticks is not None and n else None
        return "%s/s (%s µs CPU each)" % (fmt(rate, 0), fmt(per, 0)), None

    row("new connections per second (s5tund's CPU per connection)", conns)

    def per_gb(direction, who):
        def f(d, meta, r):
            run = r.get("%s1" % direction) or {}
            v = run.get("cpu_s_per_gb" if who == "s5tund" else "proxy_cpu_s_per_gb")
            return ("%s (%s Gbit/s)" % (fmt(v, 3), fmt(run.get("gbps"), 2)) if v is not None else None), None
        return f

    row("CPU-s/GB up, s5tund (one stream)", per_gb("up", "s5tund"))
    row("CPU-s/GB down, s5tund", per_gb("down", "s5tund"))
    row("CPU-s/GB up, the proxy", per_gb("up", "proxy"))
    row("CPU-s/GB down, the proxy", per_gb("down", "proxy"))

    def per_gb_with(direction, others):  # s5tund's and others' (proxy_cpu_s_per_gb, client_...)
        def f(d, meta, r):
            run = r.get("%s1" % direction) or {}
            a, b = run.get("cpu_s_per_gb"), run.get(others)
            return (fmt(a + b, 3) if a is not None and b is not None else None), None
        return f

    row("CPU-s/GB up, all (s5tund and the proxy's processes)", per_gb_with("up", "proxy_cpu_s_per_gb"))
    row("CPU-s/GB down, all", per_gb_with("down", "proxy_cpu_s_per_gb"))
    row("CPU-s/GB up, the client's host (s5tund, and the chain's ss-local)", per_gb_with("up", "client_cpu_s_per_gb"))
    row("CPU-s/GB down, the client's host", per_gb_with("down", "client_cpu_s_per_gb"))

    by = {c[0]: c[4] for c in cols}

    def ratio(a, b, direction, others):  # column a's CPU-s/GB over b's, s5tund's plus others'
        va, vb = [((by.get(n) or {}).get("%s1" % direction) or {}) for n in (a, b)]
        sa, sb = [[v.get("cpu_s_per_gb"), v.get(others)] for v in (va, vb)]
        if None in sa or None in sb or not sum(sb):
            return "–"
        return "%s×" % fmt(sum(sa) / sum(sb), 2)

    lines += ["", "Shadowsocks spoken by s5tund against the chain through ss-local, CPU-s/GB (ratio, up / down):", ""]
    for a, b, method in (("ss", "ss-chain", "aes-128-gcm"), ("ss-chacha", "ss-chacha-chain", "chacha20-ietf-poly1305")):
        lines.append("- %s: the client's host %s / %s; all processes %s / %s" % (
            method, ratio(a, b, "up", "client_cpu_s_per_gb"), ratio(a, b, "down", "client_cpu_s_per_gb"),
            ratio(a, b, "up", "proxy_cpu_s_per_gb"), ratio(a, b, "down", "proxy_cpu_s_per_gb")))

    d = os.path.join(args.out, "raw", "up-failover")
    meta = read_kv_file(os.path.join(d, "meta"))
    ab = read_ab(d)
    if meta.get("setup") != "ok" or "case_rc" in meta or meta.get("ab_rc") != "0":
        fails.append("failover: %s" % (meta.get("setup") or "exit %s, ab %s" % (meta.get("case_rc"), meta.get("ab_rc"))))
    first = lambda k: (ab.get(k) or ["–"])[0]
    connect = ab.get("Connect") or ["–"] * 5
    lines += ["", "Failover: two microsocks upstreams (strategy failover, check-interval 1, fail-after 3), "
              "process mode, two queues; `ab -n %s -c %s` (a new connection per request) and the first upstream "
              "killed (SIGKILL) during it." % (meta.get("ab_n", "?"), meta.get("ab_c", "?")), "",
              "| complete | failed | sessions open on the killed one | SYN retransmissions | worst connect | "
              "marked down after | up again while dead | up again after restart |", "|---|---|---|---|---|---|---|---|",
              "| %s | %s | %s | %s | %s ms | %s s | %s | %s s |" % (
                  first("Complete requests"), first("Failed requests"), meta.get("open_on_killed", "–"),
                  meta.get("syn_retrans", "–"), connect[-1], meta.get("down_after_s", "–"),
                  meta.get("up_while_dead", "–"), meta.get("up_after_s", "–")), ""]
    d = os.path.join(args.out, "raw", "up-rules")
    meta = read_kv_file(os.path.join(d, "meta"))
    if "case_rc" in meta or meta.get("setup") != "ok":
        fails.append("rules: %s" % (meta.get("setup") or "exit %s" % meta.get("case_rc")))
    cells = []
    for v in ("none", "lists", "none2", "lists2"):
        rc = meta.get("rr_%s_rc" % v)
        if rc is None:
            continue
        kv = out_kv(d, "rr_%s.out" % v)
        rate, ticks, n = num(kv.get("rate")), num(meta.get("rr_%s_cpu_ticks" % v)), num(kv.get("conns"))
        if rc != "0" or not n:
            fails.append("rules: %s: exit %s" % (v, rc))
        per = (ticks / args.clk_tck) / n * 1e6 if ticks is not None and n else None
        cells.append("| %s | %s/s | %s µs |" % ("100,000 names + 10,000 prefixes" if v.startswith("lists") else
                                               "no rules", fmt(rate, 0), fmt(per, 0)))
    lines += ["", "[rules] with 100,000 names and 10,000 prefixes (none matching) against none, the SOCKS5 "
              "server as the upstream, in turn:", "", "| rules | new connections | s5tund's CPU per connection |",
              "|---|---|---|"] + cells + [""]
    return finish(lines, fails, "Upstream rows")


def router_tables(args):
    fails = []
    lines = ["", "### The router: a LAN client at MTU 1500 against the router host", ""]
    runs = {}
    for mode in args.modes.split():
        d = os.path.join(args.out, "raw", "router-" + mode)
        if not os.path.isdir(d):
            continue  # the short run's one mode
        meta = read_kv_file(os.path.join(d, "meta"))
        if meta.get("setup") != "ok" or "case_rc" in meta or "died" in meta:
            fails.append("%s: %s" % (mode, meta.get("died") or meta.get("setup") or "exit %s" % meta.get("case_rc")))
        runs[mode] = (d, meta)
    if not runs:
        fails.append("no mode ran")
    any_meta = next((m for _, m in runs.values() if m), {})
    mtus = (any_meta.get("mtus") or "").split()
    lines.append("Two queues, through the SOCKS5 server; the LAN client in its own namespace behind the "
                 "router on a veth of MTU %s, forwarded into the device; one TCP stream each way; "
                 "\"writes per MB\": the packets s5tund wrote to the device per MB of the download "
                 "(one per segment without segmentation offload: about 700 at an MSS of 1,460)."
                 % any_meta.get("lan_mtu", "?"))
    lines += ["", "| mode | device MTU | down: host / LAN Gbit/s | LAN ÷ host | up: host / LAN Gbit/s | "
              "LAN ÷ host | writes per MB down: host / LAN |", "|---|---|---|---|---|---|---|"]
    for mode, (d, meta) in runs.items():
        for mtu in mtus:
            cells = [mode, mtu]
            for direction in ("down", "up"):
                g = {}
                for who in ("host", "lan"):
                    name = "%s_m%s_%s" % (who, mtu, direction)
                    bps, nbytes, _, err = report.iperf_result(os.path.join(d, name + ".json"))
                    g[who] = (bps / 1e9 if nbytes else None, nbytes, num(meta.get(name + "_tun_written")))
                    if meta.get(name + "_rc") != "0" or not nbytes:
                        fails.append("%s: %s: exit %s %s" % (mode, name, meta.get(name + "_rc"), err or ""))
                cells.append("%s / %s" % (fmt(g["host"][0], 2) or "–", fmt(g["lan"][0], 2) or "–"))
                cells.append(fmt(report.ratio(g["lan"][0], g["host"][0]), 2) or "–")
                if direction == "down":
                    per_mb = lambda x: fmt(x[2] / (x[1] / 1e6), 0) if x[1] and x[2] is not None else "–"
                    wpm = "%s / %s" % (per_mb(g["host"]), per_mb(g["lan"]))
            cells.append(wpm)
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "A connection storm through the tunnel: `ab -n %s -c %s` from the router host (a new "
              "connection per request), the device's queue as s5tund sets it." % (
                  any_meta.get("ab_n", "?"), any_meta.get("ab_c", "?")), "",
              "| mode | txqueuelen | requests/s | failed | device TX drops | clients' SYN retransmissions | "
              "s5tund's CPU per connection |", "|---|---|---|---|---|---|---|"]
    for mode, (d, meta) in runs.items():
        ab = read_ab(d)
        if meta.get("ab_rc") != "0":
            fails.append("%s: ab exit %s" % (mode, meta.get("ab_rc")))
        done = num((ab.get("Complete requests") or [None])[0])
        ticks = num(meta.get("ab_cpu_ticks"))
        per = (ticks / args.clk_tck) / done * 1e6 if ticks is not None and done else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s µs |" % (
            mode, meta.get("txqueuelen", "–"), (ab.get("Requests per second") or ["–"])[0],
            (ab.get("Failed requests") or ["–"])[0], meta.get("tx_dropped", "–"), meta.get("syn_retrans", "–"),
            fmt(per, 0) or "–"))
    lines.append("")
    return finish(lines, fails, "Router rows")


def main():
    ap = argparse.ArgumentParser(prog="report_rows.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rows")
    r.add_argument("--out", required=True)
    r.add_argument("--modes", required=True)
    r.add_argument("--relay-delay-ms", default="25")
    r.add_argument("--hold", default="1000")
    s = sub.add_parser("sweep")
    s.add_argument("--out", required=True)
    s.add_argument("--cases", required=True)
    s.add_argument("--streams", required=True)
    s.add_argument("--clk-tck", type=float, default=100.0)
    u = sub.add_parser("upstreams")
    u.add_argument("--out", required=True)
    u.add_argument("--relay-delay-ms", default="25")
    u.add_argument("--clk-tck", type=float, default=100.0)
    t = sub.add_parser("router")
    t.add_argument("--out", required=True)
    t.add_argument("--modes", required=True)
    t.add_argument("--clk-tck", type=float, default=100.0)
    args = ap.parse_args()
    return {"rows": rows_tables, "sweep": sweep_table, "upstreams": upstream_tables,
            "router": router_tables}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
