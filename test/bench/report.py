#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Report of the s5tund benchmark (test/bench/run.sh); Python standard library only.

    report.py iperf-line JSON RC     one line summing up an iperf3 --json result
    report.py report --out DIR --streams "1 8" --cases "direct thread-q1 ..." --clk-tck 100

`report` reads DIR/raw/<case>/ (meta, iperf3 JSON, connrate output, memory
samples) and writes DIR/results.csv, DIR/results.md and the gnuplot input
(DIR/chart.gp, chart.dat, chart-cpu.dat). It checks that every case moved
traffic and completed; exit status 1 (with the reasons on stderr) if not.
Speeds are never checked.
"""

import argparse
import csv
import os
import re
import sys

import report_udp

GB = 1e9
KV = re.compile(r'(\w+)=("[^"]*"|\S+)')


def read_kv_file(path):
    d = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if "=" in line:
                    k, v = line.split("=", 1)
                    d[k] = v
    except OSError:
        pass
    return d


def read_kv_line(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}, ""
    d = {}
    for m in KV.finditer(text):
        v = m.group(2)
        d[m.group(1)] = v[1:-1] if v.startswith('"') else v
    return d, text.strip()


def iperf_result(path):
    """(bits/s, bytes, retransmits, error) from an iperf3 --json file."""
    end, err = report_udp.iperf_end(path)
    if end is None:
        return 0.0, 0, None, err
    recv = end.get("sum_received") or {}
    sent = end.get("sum_sent") or {}
    return (float(recv.get("bits_per_second") or 0), int(recv.get("bytes") or 0),
            sent.get("retransmits"), err)


def num(x, default=None):
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def fmt(x, digits=2):
    if x is None:
        return ""
    return "%.*f" % (digits, x)


def ratio(x, base):
    if x is None or not base:
        return None
    return x / base


def cell(x, r, digits=2):
    """'9.41 (0.52×)' for the Markdown table."""
    if x is None:
        return "–"
    s = fmt(x, digits)
    if r is not None:
        s += " (%.2f×)" % r
    return s


def label(case):
    if case == "direct":
        return "direct"
    mode, q = case.rsplit("-q", 1)
    return "%s q%s" % (mode, q)


def collect(out, case, streams, clk, tcp=True):
    d = os.path.join(out, "raw", case)
    meta = read_kv_file(os.path.join(d, "meta"))
    r = {"case": case, "kind": meta.get("kind", "tunnel" if case != "direct" else "direct"),
         "mode": meta.get("mode", ""), "queues": meta.get("queues", ""), "fail": []}
    if not os.path.isdir(d) or not meta:
        r["fail"].append("the case did not start (no results)")
    if meta.get("setup") != "ok":
        why = meta.get("setup")
        if not why:
            why = "set-up failed"
            lines = []
            try:
                with open(os.path.join(out, "raw", case + ".log")) as f:
                    lines = [l.strip() for l in f if "FAIL" in l]
            except OSError:
                pass
            if lines:
                why += ": " + lines[0]
        r["fail"].append(why)
    if "died" in meta:
        r["fail"].append("s5tund died %s (%s)" % (meta["died"], meta.get("s5_gone", "?")))
    elif "s5_gone" in meta and meta.get("setup") == "ok":
        r["fail"].append("s5tund ended by itself (%s)" % meta["s5_gone"])
    if "stop" in meta:
        r["fail"].append("s5tund " + meta["stop"])
    if meta.get("s5_exit") not in (None, "0"):
        r["fail"].append("s5tund exited with status %s after SIGTERM" % meta["s5_exit"])
    tunnel = r["kind"] == "tunnel"
    # CPU ticks and payload bytes summed per direction (the targets are per
    # direction: upload and download cost s5tund differently).
    ticks_by = {"up": 0, "down": 0}
    bytes_by = {"up": 0, "down": 0}
    for direction in ("up", "down"):
        for p in streams:
            name = "%s%s" % (direction, p)
            rc = meta.get(name + "_rc")
            bps, nbytes, retr, err = iperf_result(os.path.join(d, name + ".json"))
            run = {"gbps": bps / 1e9 if nbytes else None, "bytes": nbytes, "retrans": retr}
            if rc is None:
                if meta.get("setup") == "ok":
                    r["fail"].append("%s: not run" % name)
            elif rc != "0" or err or nbytes <= 0:
                why = err or ("exit status %s" % rc if rc != "0" else "no bytes moved")
                if rc == "124":
                    why = "timed out (%s)" % why
                r["fail"].append("%s: %s" % (name, why))
            tb = num(meta.get(name + "_tun_bytes"), 0)
            run["tun_bytes"] = tb
            if tunnel and rc == "0" and nbytes > 0 and tb <= 0:
                r["fail"].append("%s: nothing went through tun0" % name)
            pticks = num(meta.get(name + "_proxy_cpu_ticks"))
            if tunnel and pticks is not None and nbytes > 0:
                run["proxy_cpu_s_per_gb"] = (pticks / clk) / (nbytes / GB)
            cticks = num(meta.get(name + "_client_cpu_ticks"), 0)
            if tunnel and nbytes > 0:
                run["client_cpu_s_per_gb"] = (cticks / clk) / (nbytes / GB)
            ticks = num(meta.get(name + "_cpu_ticks"))
            if tunnel and ticks is not None and nbytes > 0:
                run["cpu_s"] = ticks / clk
                run["cpu_s_per_gb"] = (ticks / clk) / (nbytes / GB)
                ticks_by[direction] += ticks
                bytes_by[direction] += nbytes
            r[name] = run

    def per_gb(ticks, nbytes):
        return (ticks / clk) / (nbytes / GB) if nbytes else None

    r["cpu_s_per_gb"] = per_gb(ticks_by["up"] + ticks_by["down"], bytes_by["up"] + bytes_by["down"])
    r["cpu_s_per_gb_up"] = per_gb(ticks_by["up"], bytes_by["up"])
    r["cpu_s_per_gb_down"] = per_gb(ticks_by["down"], bytes_by["down"])

    samples = []
    try:
        with open(os.path.join(d, "mem.samples")) as f:
            for line in f:
                v = line.split()
                if len(v) == 4 and int(v[2]) > 0:
                    samples.append([int(x) for x in v])
    except (OSError, ValueError):
        pass
    r["rss_idle_mib"] = num(meta.get("rss_idle_kb"))
    r["pss_idle_mib"] = num(meta.get("pss_idle_kb"))
    for k in ("rss_idle_mib", "pss_idle_mib"):
        if r[k] is not None:
            r[k] /= 1024
    r["rss_load_mib"] = max(s[0] for s in samples) / 1024 if samples else None
    r["pss_load_mib"] = max(s[1] for s in samples) / 1024 if samples else None
    r["procs"] = meta.get("procs", "")
    r["threads"] = meta.get("threads", "")
    r["tun_mtu"] = meta.get("tun_mtu", "")
    r["log_warn"] = r["log_error"] = 0
    started = 0
    worker_end = ""
    try:
        with open(os.path.join(d, "s5tund.log")) as f:
            for line in f:
                if re.search(r" worker \d+ started", line):
                    started += 1
                elif not worker_end and re.search(r" worker \d+ (killed|exited|died)", line):
                    worker_end = line.split(None, 3)[-1].strip()
                v = line.split()
                if len(v) > 1 and v[1] == "warn":
                    r["log_warn"] += 1
                elif len(v) > 1 and v[1] == "error":
                    r["log_error"] += 1
    except OSError:
        pass
    q = int(num(meta.get("queues"), 0))
    r["worker_restarts"] = max(0, started - q) if meta.get("mode") == "process" else 0
    if r["worker_restarts"]:
        r["fail"].append("a worker process was restarted %d time(s): %s"
                         % (r["worker_restarts"], worker_end or "see s5tund.log"))

    rr, rr_text = read_kv_line(os.path.join(d, "rr.out"))
    r["conn_per_s"] = num(rr.get("rate"))
    r["conns"] = int(num(rr.get("conns"), 0))
    r["conn_errors"] = int(num(rr.get("errors"), 0))
    r["conn_last_error"] = rr.get("last_error", "")
    r["ttfb_p50_ms"] = num(rr.get("ttfb_p50_us"))
    r["ttfb_p99_ms"] = num(rr.get("ttfb_p99_us"))
    for k in ("ttfb_p50_ms", "ttfb_p99_ms"):
        if r[k] is not None:
            r[k] /= 1000
    ticks = num(meta.get("rr_cpu_ticks"))
    r["conn_cpu_us"] = (ticks / clk * 1e6 / r["conns"]) if (tunnel and ticks is not None and r["conns"]) else None
    if meta.get("setup") == "ok" and "died" not in meta:
        if tcp and (meta.get("rr_rc") != "0" or r["conns"] <= 0):
            r["fail"].append("connections: exit %s, %d completed: %s" % (meta.get("rr_rc"), r["conns"], rr_text[:200]))
    # The direct case: the proxy's own rate to a SOCKS5 client (socks5load).
    s5, s5_text = read_kv_line(os.path.join(d, "socks5.out"))
    r["socks5_conn_per_s"] = num(s5.get("rate"))
    pticks = num(meta.get("socks5_proxy_cpu_ticks"))
    s5_conns = int(num(s5.get("conns"), 0))
    r["socks5_proxy_cpu_us"] = (pticks / clk * 1e6 / s5_conns) if (pticks is not None and s5_conns) else None
    if not tunnel and meta.get("setup") == "ok" and tcp and (meta.get("socks5_rc") != "0" or s5_conns <= 0):
        r["fail"].append("the proxy's own rate (socks5load): exit %s: %s" % (meta.get("socks5_rc"), s5_text[:200]))
    rr1, rr1_text = read_kv_line(os.path.join(d, "rr1.out"))
    r["ttfb1_p50_ms"] = num(rr1.get("ttfb_p50_us"))
    r["ttfb1_p99_ms"] = num(rr1.get("ttfb_p99_us"))
    for k in ("ttfb1_p50_ms", "ttfb1_p99_ms"):
        if r[k] is not None:
            r[k] /= 1000
    if meta.get("setup") == "ok" and "died" not in meta:
        if tcp and (meta.get("rr1_rc") != "0" or int(num(rr1.get("conns"), 0)) <= 0):
            r["fail"].append("sequential connections: exit %s: %s" % (meta.get("rr1_rc"), rr1_text[:200]))
    ka, ka_text = read_kv_line(os.path.join(d, "ka.out"))
    r["ka_req_per_s"] = num(ka.get("rate"))
    r["ka_requests"] = int(num(ka.get("requests"), 0))
    r["ka_errors"] = int(num(ka.get("errors"), 0))
    r["ka_conns"] = int(num(ka.get("conns"), 0))
    r["ka_lat_p50_us"] = num(ka.get("lat_p50_us"))
    r["ka_lat_p99_us"] = num(ka.get("lat_p99_us"))
    ticks = num(meta.get("ka_cpu_ticks"))
    r["ka_cpu_us"] = (ticks / clk * 1e6 / r["ka_requests"]) if (tunnel and ticks is not None and r["ka_requests"]) else None
    pticks = num(meta.get("ka_proxy_cpu_ticks"))
    r["ka_proxy_cpu_us"] = (pticks / clk * 1e6 / r["ka_requests"]) if (tunnel and pticks is not None and r["ka_requests"]) else None
    if meta.get("setup") == "ok" and "died" not in meta:
        if tcp and (meta.get("ka_rc") != "0" or r["ka_requests"] <= 0):
            r["fail"].append("keep-alive requests: exit %s, %d completed: %s"
                             % (meta.get("ka_rc"), r["ka_requests"], ka_text[:200]))
    pp, pp_text = read_kv_line(os.path.join(d, "pp.out"))
    r["rtt_p50_us"] = num(pp.get("rtt_p50_us"))
    r["rtt_p99_us"] = num(pp.get("rtt_p99_us"))
    r["rtt_rounds"] = int(num(pp.get("rounds"), 0))
    if meta.get("setup") == "ok" and "died" not in meta:
        if tcp and (meta.get("pp_rc") != "0" or r["rtt_rounds"] <= 0):
            r["fail"].append("ping-pong: exit %s: %s" % (meta.get("pp_rc"), pp_text[:200]))
    if meta.get("case_rc") and not r["fail"]:
        r["fail"].append("the case ended with status %s" % meta["case_rc"])
    return r


def report(args):
    tcp = "tcp" in args.tests.split()
    streams = args.streams.split() if tcp else []
    cases = args.cases.split()
    runs = ["up%s" % p for p in streams] + ["down%s" % p for p in streams]
    rows = [collect(args.out, c, streams, args.clk_tck, tcp) for c in cases]
    udp_runs = args.udp_runs.split() if "udp" in args.tests.split() else []
    for r in rows:
        report_udp.collect(args.out, r, udp_runs, args.clk_tck)
    env = read_kv_file(os.path.join(args.out, "env.txt"))
    direct = next((r for r in rows if r["case"] == "direct" and not r["fail"]), None)

    proxy_rate = direct["socks5_conn_per_s"] if direct else None

    def base(key, run=None):
        if direct is None:
            return None
        v = direct[run][key] if run else direct[key]
        return v

    # CSV: one row per case, everything measured, ratios to the direct path.
    csv_path = os.path.join(args.out, "results.csv")
    head = ["case", "mode", "queues", "status"]
    for run in runs:
        head += ["%s_gbps" % run, "%s_ratio" % run, "%s_bytes" % run, "%s_retrans" % run,
                 "%s_tun_bytes" % run, "%s_cpu_s" % run, "%s_cpu_s_per_gb" % run,
                 "%s_proxy_cpu_s_per_gb" % run]
    head += ["cpu_s_per_gb", "cpu_s_per_gb_up", "cpu_s_per_gb_down", "rss_idle_mib", "rss_load_mib", "pss_idle_mib", "pss_load_mib",
             "procs", "threads", "conn_per_s", "conn_ratio", "conns", "conn_errors", "conn_cpu_us",
             "proxy_socks5_conn_per_s", "conn_proxy_ratio",
             "ttfb_p50_ms", "ttfb_p99_ms", "ttfb_p50_ratio", "ttfb1_p50_ms", "ttfb1_p99_ms", "rtt_p50_us", "rtt_p99_us",
             "rtt_p50_ratio", "ka_req_per_s", "ka_ratio", "ka_requests", "ka_errors", "ka_conns",
             "ka_cpu_us", "ka_proxy_cpu_us", "ka_lat_p50_us", "ka_lat_p99_us", "ka_lat_p50_ratio", "tun_mtu", "s5tund_log_warn", "s5tund_log_error", "worker_restarts", "failures"]
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for r in rows:
            line = [r["case"], r["mode"] or "", r["queues"] or "", "FAIL" if r["fail"] else "ok"]
            for run in runs:
                x = r[run]
                line += [fmt(x["gbps"], 3), fmt(ratio(x["gbps"], base("gbps", run)), 3), x["bytes"],
                         "" if x["retrans"] is None else x["retrans"], int(x["tun_bytes"]),
                         fmt(x.get("cpu_s"), 2), fmt(x.get("cpu_s_per_gb"), 3),
                         fmt(x.get("proxy_cpu_s_per_gb"), 3)]
            line += [fmt(r["cpu_s_per_gb"], 3), fmt(r["cpu_s_per_gb_up"], 3),
                     fmt(r["cpu_s_per_gb_down"], 3), fmt(r["rss_idle_mib"], 1), fmt(r["rss_load_mib"], 1),
                     fmt(r["pss_idle_mib"], 1), fmt(r["pss_load_mib"], 1), r["procs"], r["threads"],
                     fmt(r["conn_per_s"], 1), fmt(ratio(r["conn_per_s"], base("conn_per_s")), 3),
                     r["conns"], r["conn_errors"], fmt(r["conn_cpu_us"], 1),
                     fmt(r["socks5_conn_per_s"], 1), fmt(ratio(r["conn_per_s"], proxy_rate), 3),
                     fmt(r["ttfb_p50_ms"], 3), fmt(r["ttfb_p99_ms"], 3),
                     fmt(ratio(r["ttfb_p50_ms"], base("ttfb_p50_ms")), 3),
                     fmt(r["ttfb1_p50_ms"], 3), fmt(r["ttfb1_p99_ms"], 3),
                     fmt(r["rtt_p50_us"], 0), fmt(r["rtt_p99_us"], 0),
                     fmt(ratio(r["rtt_p50_us"], base("rtt_p50_us")), 3),
                     fmt(r["ka_req_per_s"], 1), fmt(ratio(r["ka_req_per_s"], base("ka_req_per_s")), 3),
                     r["ka_requests"], r["ka_errors"], r["ka_conns"], fmt(r["ka_cpu_us"], 1),
                     fmt(r["ka_proxy_cpu_us"], 1),
                     fmt(r["ka_lat_p50_us"], 0), fmt(r["ka_lat_p99_us"], 0),
                     fmt(ratio(r["ka_lat_p50_us"], base("ka_lat_p50_us")), 3),
                     r["tun_mtu"], r["log_warn"], r["log_error"], r["worker_restarts"], "; ".join(r["fail"])]
            w.writerow(line)

    # Markdown.
    md = []
    hdr = ["case"]
    hdr += ["up ×%s Gbit/s" % p for p in streams] + ["down ×%s Gbit/s" % p for p in streams]
    hdr += ["CPU s/GB up", "CPU s/GB down", "RSS idle / load MiB", "conn/s", "ka req/s",
            "TTFB p50 / p99 ms", "TTFB 1 conn p50 ms", "RTT p50 / p99 µs", "status"]
    md.append("| " + " | ".join(hdr) + " |")
    md.append("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 2) + ["---"]) + "|")
    for r in rows:
        c = [label(r["case"])]
        for run in runs:
            c.append(cell(r[run]["gbps"], ratio(r[run]["gbps"], base("gbps", run))))
        c.append(cell(r["cpu_s_per_gb_up"], None))
        c.append(cell(r["cpu_s_per_gb_down"], None))
        if r["rss_idle_mib"] is None and r["rss_load_mib"] is None:
            c.append("–")
        else:
            c.append("%s / %s" % (fmt(r["rss_idle_mib"], 1) or "–", fmt(r["rss_load_mib"], 1) or "–"))
        c.append(cell(r["conn_per_s"], ratio(r["conn_per_s"], base("conn_per_s")), 0))
        c.append(cell(r["ka_req_per_s"], ratio(r["ka_req_per_s"], base("ka_req_per_s")), 0))
        if r["ttfb_p50_ms"] is None:
            c.append("–")
        else:
            c.append("%s / %s" % (cell(r["ttfb_p50_ms"], ratio(r["ttfb_p50_ms"], base("ttfb_p50_ms"))),
                                  fmt(r["ttfb_p99_ms"], 2)))
        if r["ttfb1_p50_ms"] is None:
            c.append("–")
        elif r["case"] == "direct" or base("ttfb1_p50_ms") is None:
            c.append(fmt(r["ttfb1_p50_ms"], 2))
        else:   # the target: within 1 ms of the direct path
            c.append("%s (+%s)" % (fmt(r["ttfb1_p50_ms"], 2), fmt(r["ttfb1_p50_ms"] - base("ttfb1_p50_ms"), 2)))
        if r["rtt_p50_us"] is None:
            c.append("–")
        else:
            c.append("%s / %s" % (cell(r["rtt_p50_us"], ratio(r["rtt_p50_us"], base("rtt_p50_us")), 0),
                                  fmt(r["rtt_p99_us"], 0)))
        st = "ok"
        errs = []
        if r["conn_errors"]:
            errs.append("%d conn errors" % r["conn_errors"])
        if r["ka_errors"]:
            errs.append("%d ka errors" % r["ka_errors"])
        if r["fail"]:
            st = "**FAIL**"
        elif errs:
            st = "ok (%s)" % ", ".join(errs)
        c.append(st)
        md.append("| " + " | ".join(c) + " |")
    md.append("")
    md.append("Ratios in parentheses are to the direct path (throughput, conn/s and ka "
              "req/s: higher is better; TTFB and RTT: lower is better). CPU s/GB up / down: "
              "user+system CPU time of the whole s5tund process tree (all threads; in process "
              "mode the supervisor and every worker) per 10^9 payload bytes received by iperf3, "
              "over the upload runs and over the download (-R) runs of the case (both together, "
              "per run, and the SOCKS5 server's own CPU in results.csv). ka req/s: requests per "
              "second on keep-alive connections (latency p50/p99 and s5tund CPU per request in "
              "results.csv). RSS: sum over the tree, idle after start-up and the peak under "
              "load (PSS too in results.csv).")
    md.append("")
    md.append("Setup: %s CPUs (%s), kernel %s; proxy %s in the server namespace; TUN MTU %s, "
              "veth MTU %s; iperf3 %s s per run; %s parallel connections for %s s (64-byte "
              "request, 128-byte response, the server closes); keep-alive: %s connections for "
              "%s s, 64-byte request, 128-byte response, repeated on each; ping-pong %s × 64 "
              "bytes on one connection; %s."
              % (env.get("cpus", "?"), env.get("cpu_model", "?"), env.get("kernel", "?"),
                 env.get("proxy", "?"), env.get("mtu", "?"), env.get("veth_mtu", "?"),
                 env.get("duration", "?"), env.get("conc", "?"), env.get("conn_secs", "?"),
                 env.get("ka_conc", "?"), env.get("conn_secs", "?"), env.get("rounds", "?"), env.get("s5tund_version", "s5tund")))
    if proxy_rate:
        md.append("")
        md.append("New connections against the proxy's own rate: the proxy served a client in the "
                  "client namespace that speaks SOCKS5 itself (socks5load, the same %s clients and "
                  "exchanges) %.0f/s (the proxy's CPU %s µs each); through the tunnel: %s."
                  % (env.get("conc", "?"), proxy_rate, fmt(direct["socks5_proxy_cpu_us"], 0) or "?",
                     "; ".join("%s %s/s (%s of it, s5tund's CPU %s µs each)"
                               % (label(r["case"]), fmt(r["conn_per_s"], 0),
                                  fmt(ratio(r["conn_per_s"], proxy_rate), 2), fmt(r["conn_cpu_us"], 0))
                               for r in rows if r["case"] != "direct" and r["conn_per_s"])))
    md += report_udp.table(rows, udp_runs, env, label)
    failed = [r for r in rows if r["fail"]]
    if failed:
        md.append("")
        md.append("Failures:")
        for r in failed:
            for f in r["fail"]:
                md.append("- %s: %s" % (label(r["case"]), f))
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    # Chart input for gnuplot.
    def v(x):
        return "?" if x is None else "%.4f" % x

    with open(os.path.join(args.out, "chart.dat"), "w") as f:
        f.write("# case " + " ".join(runs) + "  (Gbit/s)\n")
        for r in rows:
            f.write('"%s" %s\n' % (label(r["case"]), " ".join(v(r[run]["gbps"]) for run in runs)))
    with open(os.path.join(args.out, "chart-cpu.dat"), "w") as f:
        f.write("# case " + " ".join(runs) + "  (CPU s/GB)\n")
        for r in rows:
            if r["kind"] == "tunnel":
                f.write('"%s" %s\n' % (label(r["case"]), " ".join(v(r[run].get("cpu_s_per_gb")) for run in runs)))
    have_cpu = any(r[run].get("cpu_s_per_gb") is not None for r in rows for run in runs)
    titles = ["up x%s" % p for p in streams] + ["down x%s" % p for p in streams]
    plot1 = ", ".join("'chart.dat' using %d%s title '%s'" % (i + 2, ":xtic(1)" if i == 0 else "", t)
                      for i, t in enumerate(titles))
    plot2 = ", ".join("'chart-cpu.dat' using %d%s title '%s'" % (i + 2, ":xtic(1)" if i == 0 else "", t)
                      for i, t in enumerate(titles))
    gp = """# gnuplot input written by test/bench/report.py
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1280,960 noenhanced font ",10"
} else {
  set terminal png size 1280,960 noenhanced
}
set output 'chart.png'
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set key outside right top
set multiplot layout %(panels)d,1 title "s5tund benchmark: %(title)s"
set title "iperf3 throughput (receiver), Gbit/s"
set ylabel "Gbit/s"
plot %(plot1)s
%(panel2)s
unset multiplot
""" % {"title": "%s, proxy %s, %s CPUs" % (env.get("date", ""), env.get("proxy", "?"), env.get("cpus", "?")),
       "plot1": plot1, "panels": 2 if have_cpu else 1,
       "panel2": ('set title "s5tund CPU time per GB relayed (whole process tree), CPU s / GB"\n'
                  'set ylabel "CPU s / GB"\nplot ' + plot2) if have_cpu else ""}
    with open(os.path.join(args.out, "chart.gp"), "w") as f:
        f.write(gp)

    if failed:
        for r in failed:
            for f in r["fail"]:
                print("bench: FAIL: %s: %s" % (label(r["case"]), f), file=sys.stderr)
        return 1
    return 0


def iperf_line(path, rc):
    bps, nbytes, retr, err = iperf_result(path)
    if err or rc != "0" or nbytes <= 0:
        return "FAILED (exit %s) %s" % (rc, err)
    s = "%.2f Gbit/s, %.2f GB" % (bps / 1e9, nbytes / GB)
    if retr is not None:
        s += ", %s retransmits" % retr
    return s


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "iperf-line":
        if len(sys.argv) != 4:
            sys.exit("usage: report.py iperf-line JSON RC")
        print(iperf_line(sys.argv[2], sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(prog="report.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--out", required=True)
    rp.add_argument("--streams", required=True)
    rp.add_argument("--cases", required=True)
    rp.add_argument("--clk-tck", type=float, default=100.0)
    rp.add_argument("--tests", default="tcp")
    rp.add_argument("--udp-runs", default="")
    args = ap.parse_args()
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
