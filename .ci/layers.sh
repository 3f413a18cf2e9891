#!/bin/sh
# SPDX-License-Identifier: MIT
# core/'s layers, checked over the includes: a file in core/F/ includes
# "G/name.h" only if G is F or a layer F links (directly or through a
# layer below), as core/CMakeLists.txt's s5_layer() calls declare; nothing
# in core/ includes with "../" or a core header by its bare name. The build
# enforces the same for .c files (a layer's include directory holds only its
# own folder); this also covers headers, which are not compiled alone. And no
# file in core/, ini/, threads/ or tun/ is over 500 lines.
set -eu
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

cm = open("core/CMakeLists.txt").read()
links = {}
for m in re.finditer(r"s5_layer\((\w+) LINKS ([^)]*?) SOURCES", cm):
    links[m.group(1)] = [l[3:] for l in m.group(2).split() if l.startswith("s5_")]
layers = set(links)

def below(f, seen=None):
    seen = set() if seen is None else seen
    for g in links.get(f, []):
        if g in layers and g not in seen:
            seen.add(g)
            below(g, seen)
    return seen

headers = {n for d in layers for n in os.listdir(f"core/{d}") if n.endswith(".h")}
bad = []
for d in sorted(layers):
    allowed = below(d) | {d}
    for n in sorted(os.listdir(f"core/{d}")):
        if not n.endswith((".c", ".h")):
            continue
        path = f"core/{d}/{n}"
        for i, line in enumerate(open(path), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            top = inc.split("/")[0]
            if inc.startswith(".."):
                bad.append(f'{path}:{i}: "{inc}": no relative includes')
            elif "/" not in inc and inc in headers:
                bad.append(f'{path}:{i}: "{inc}": name core headers with their folder')
            elif top in layers and top not in allowed:
                bad.append(f'{path}:{i}: "{inc}": layer {d} does not link {top} '
                           f"(allowed: {', '.join(sorted(allowed))})")
for root in ("core", "ini", "threads", "tun"):
    for dp, _, fs in os.walk(root):
        for n in fs:
            if n.endswith((".c", ".h")):
                p = os.path.join(dp, n)
                lines = sum(1 for _ in open(p))
                if lines > 500:
                    bad.append(f"{p}: {lines} lines, over 500: split it by job")
if not layers:
    bad.append("core/CMakeLists.txt: no s5_layer() calls found")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
