#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tables of the rows users compare and of the queue sweep (Markdown).

    report_rows.py rows --out DIR --modes "thread process" [--relay-delay-ms MS]
    report_rows.py sweep --out DIR --cases "direct thread-q1 ..." --streams N [--clk-tck HZ]

rows: reads $OUT/raw/rows/{direct,MODE}/ (meta and client outputs, written
by rows.sh), prints the tables and exits 1 when a row did not run (a TTFB
variant the binary does not know is skipped with a note, not a failure).
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
    print("\n".join(lines))
    if fails:
        print("Rows that failed:\n" + "\n".join("- " + f for f in fails))
        return 1
    return 0


def sweep_table(args):
    cases = [c for c in args.cases.split() if c != "direct"]
    rows = {}
    for c in cases:
        r = report.collect(args.out, c, [args.streams], args.clk_tck)
        mode, q = c.rsplit("-q", 1)
        rows.setdefault(mode, []).append((int(q), r))
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
    args = ap.parse_args()
    return rows_tables(args) if args.cmd == "rows" else sweep_table(args)


if __name__ == "__main__":
    sys.exit(main())
