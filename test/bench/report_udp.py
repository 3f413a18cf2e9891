# SPDX-License-Identifier: MIT
"""UDP rows of the s5tund benchmark report (test/bench/report.py).

iperf3 -u runs: udpup1, udpdown1 (one flow, -R for download), udpup8,
udpdown8 (8 flows). Each gives the throughput and loss at the receiver and
s5tund's CPU seconds per 10^9 payload bytes received. Kept apart from
report.py so the TCP report stays as it was.
"""

import json
import os

GB = 1e9


def read_meta(path):
    d = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                if k:
                    d[k] = v
    except OSError:
        pass
    return d


def iperf_end(path):
    """(the "end" object, the error) of an iperf3 --json file (TCP and UDP
    runs alike); (None, why) when there is no JSON."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        return None, "no iperf3 JSON (%s)" % e.__class__.__name__
    return d.get("end") or {}, d.get("error") or ""


def udp_result(path):
    """(bits/s, bytes, lost %, error) at the receiver from an iperf3 -u --json file."""
    end, err = iperf_end(path)
    if end is None:
        return 0.0, 0, None, err
    recv = end.get("sum_received") or end.get("sum") or {}
    return (float(recv.get("bits_per_second") or 0), int(recv.get("bytes") or 0),
            recv.get("lost_percent"), err)


def collect(out, r, runs, clk):
    """Adds r["udp"][run] = {gbps, bytes, loss, cpu_s_per_gb, proxy_cpu_s_per_gb}; failures to r["fail"]."""
    d = os.path.join(out, "raw", r["case"])
    meta = read_meta(os.path.join(d, "meta"))
    r["udp"] = {}
    tunnel = r["kind"] == "tunnel"
    for name in runs:
        bps, nbytes, loss, err = udp_result(os.path.join(d, name + ".json"))
        rc = meta.get(name + "_rc")
        x = {"gbps": bps / 1e9 if nbytes else None, "bytes": nbytes, "loss": loss}
        if rc is None:
            if meta.get("setup") == "ok":
                r["fail"].append("%s: not run" % name)
        elif rc != "0" or err or nbytes <= 0:
            r["fail"].append("%s: %s" % (name, err or ("exit status %s" % rc if rc != "0" else "no bytes moved")))
        tb = int(meta.get(name + "_tun_bytes") or 0)
        if tunnel and rc == "0" and nbytes > 0 and tb <= 0:
            r["fail"].append("%s: nothing went through tun0" % name)
        for key, field in (("cpu_s_per_gb", "_cpu_ticks"), ("proxy_cpu_s_per_gb", "_proxy_cpu_ticks")):
            t = meta.get(name + field)
            x[key] = (int(t) / clk) / (nbytes / GB) if (tunnel and t and nbytes) else None
        r["udp"][name] = x


def fmt(x, digits=2):
    return "–" if x is None else "%.*f" % (digits, x)


def table(rows, runs, env, label):
    """Markdown lines: one row per case, per run Gbit/s, loss %, CPU s/GB."""
    if not runs:
        return []
    md = ["", "UDP (iperf3 -u over IPv%s, %s-byte datagrams, %s offered in total per run; 8-flow rows: "
          "each flow an eighth): received Gbit/s, loss %%, s5tund CPU s/GB (the proxy's in parentheses)."
          % (env.get("udp_family", "4"), env.get("udp_len", "?"), env.get("udp_rate", "?")), ""]
    md.append("| case | " + " | ".join(runs) + " |")
    md.append("|---|" + "---:|" * len(runs))
    for r in rows:
        cells = []
        for name in runs:
            x = r.get("udp", {}).get(name)
            if x is None:
                cells.append("–")
                continue
            c = "%s Gb/s, %s%% loss" % (fmt(x["gbps"], 3), fmt(x["loss"], 2))
            if x["cpu_s_per_gb"] is not None:
                c += ", **%s** (%s) s/GB" % (fmt(x["cpu_s_per_gb"]), fmt(x["proxy_cpu_s_per_gb"]))
            cells.append(c)
        md.append("| %s | %s |" % (label(r["case"]), " | ".join(cells)))
    return md
