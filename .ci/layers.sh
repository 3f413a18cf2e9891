#!/bin/sh
# SPDX-License-Identifier: MIT
# The layers, checked over the includes. The floors, bottom up:
# ini < tun < core < threads. A file includes another floor's header only
# with its folder ("ini/config.h", "tun/tun.h", "threads/device/device.h";
# core's by its layer, "shared/stats.h") and only from a floor below its own
# or its own. Inside core/, a file in core/F/ includes "G/name.h" only if G
# is F or a layer F links (directly or through a layer below), as
# core/CMakeLists.txt's s5_layer() calls declare. No include is relative
# ("../") or names a header of the four floors by its bare name. Each
# floor's library links nothing above it. The build enforces the same for
# .c files (test: lint.layers_build); this also covers headers, which are
# not compiled alone. And no file of the four floors is over 500 lines, no
# test script over 1,000. Third-party libraries kept to some layers (RESTRICTED:
# BLAKE3 to core/socks5) are linked and included there only.
set -eu
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

FLOORS = ["ini", "tun", "core", "threads"]
LIBS = {"ini": "s5_ini", "tun": "s5_tun", "core": "s5_core", "threads": "s5_threads"}

cm = open("core/CMakeLists.txt").read()
links = {}
for m in re.finditer(r"s5_layer\((\w+) LINKS ([^)]*?) SOURCES", cm):
    links[m.group(1)] = [l[3:] for l in m.group(2).split() if l.startswith("s5_")]
layers = set(links)

# Third-party libraries only some layers may use: the library, its header,
# the layers. Such a layer names it in PRIVATE_LINKS (so the layers above do
# not see its header); no other layer or floor links it or includes it.
RESTRICTED = {"blake3": ("blake3.h", {"socks5"})}
private = {}
for m in re.finditer(r"s5_layer\((\w+) LINKS ([^)]*?) SOURCES", cm):
    toks = m.group(2).split()
    private[m.group(1)] = toks[toks.index("PRIVATE_LINKS") + 1:] if "PRIVATE_LINKS" in toks else []
    for lib, (_, allowed) in RESTRICTED.items():
        if lib in toks and (m.group(1) not in allowed or lib not in private[m.group(1)]):
            print(f"core/CMakeLists.txt: layer {m.group(1)} links {lib}: only "
                  f"{', '.join(sorted(allowed))} may, in PRIVATE_LINKS")
            sys.exit(1)
restricted_headers = {h: lib for lib, (h, _) in RESTRICTED.items()}

def below(f, seen=None):
    seen = set() if seen is None else seen
    for g in links.get(f, []):
        if g in layers and g not in seen:
            seen.add(g)
            below(g, seen)
    return seen

def sources(root):
    for dp, ds, fs in os.walk(root):
        ds.sort()
        for n in sorted(fs):
            if n.endswith((".c", ".h")):
                yield os.path.join(dp, n)

headers = {os.path.basename(p) for fl in FLOORS for p in sources(fl) if p.endswith(".h")}
# Headers the build writes (core/CMakeLists.txt), which exist in the build
# directory only: the arrows are checked for them, not their presence.
GENERATED = {"base/ossl_redirect.h"}

def floor_of_include(inc):
    top = inc.split("/")[0]
    if top in FLOORS and top != "core":
        return top
    if top in layers:
        return "core"
    return None

bad = []
for fl in FLOORS:
    rank = FLOORS.index(fl)
    for path in sources(fl):
        parts = path.split("/")
        layer = parts[1] if fl == "core" and len(parts) > 2 else None
        for i, line in enumerate(open(path), 1):
            m = re.match(r'\s*#\s*include\s+[<"]([^">]+)[">]', line)
            if m and m.group(1) in restricted_headers:
                lib = restricted_headers[m.group(1)]
                if lib not in private.get(layer, []):
                    bad.append(f'{path}:{i}: "{m.group(1)}": only layer(s) '
                               f"{', '.join(sorted(RESTRICTED[lib][1]))} may use {lib}")
                continue
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            target = floor_of_include(inc)
            if inc.startswith(".."):
                bad.append(f'{path}:{i}: "{inc}": no relative includes')
            elif "/" not in inc and inc in headers:
                bad.append(f'{path}:{i}: "{inc}": name the header with its folder')
            elif target is not None and FLOORS.index(target) > rank:
                bad.append(f'{path}:{i}: "{inc}": {fl}/ is below {target}/ and cannot include it')
            elif fl == "core" and target == "core":
                top = inc.split("/")[0]
                allowed = below(layer) | {layer} if layer in layers else set()
                if top not in allowed:
                    bad.append(f'{path}:{i}: "{inc}": layer {layer} does not link {top} '
                               f"(allowed: {', '.join(sorted(allowed))})")
            if target is not None and inc not in GENERATED and not os.path.exists(("core/" if target == "core" else "") + inc):
                bad.append(f'{path}:{i}: "{inc}": no such header')
        lines = sum(1 for _ in open(path))
        if lines > 500:
            bad.append(f"{path}: {lines} lines, over 500: split it by job")
    # the floor's libraries link nothing above
    for cml in [os.path.join(dp, "CMakeLists.txt") for dp, _, fs in os.walk(fl) if "CMakeLists.txt" in fs]:
        text = open(cml).read()
        for m in re.finditer(r"target_link_libraries\([^)]*\)|s5_layer\([^)]*\)", text):
            for up in FLOORS[rank + 1:]:
                if re.search(r"\b" + LIBS[up] + r"\b", m.group(0)):
                    bad.append(f"{cml}: links {LIBS[up]}, a floor above {fl}/")
            if m.group(0).startswith("target_link_libraries"):
                for lib in RESTRICTED:
                    if re.search(r"\b" + lib + r"\b", m.group(0)):
                        bad.append(f"{cml}: links {lib}, which only layer(s) "
                                   f"{', '.join(sorted(RESTRICTED[lib][1]))} may")
# the test scripts too, split by topic: none over 1,000 lines
for dp, _, fs in os.walk("test"):
    for n in sorted(fs):
        if n.endswith((".sh", ".py")):
            p = os.path.join(dp, n)
            lines = sum(1 for _ in open(p))
            if lines > 1000:
                bad.append(f"{p}: {lines} lines, over 1,000: split it by topic")
if not layers:
    bad.append("core/CMakeLists.txt: no s5_layer() calls found")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
