#!/bin/bash
# SPDX-License-Identifier: MIT
# deb-check.sh [DEB_DIR]: checks the package .ci/deb.sh built (make deb-check):
#   1. its file list (dpkg -c) has the daemon in /usr/sbin, the unit in
#      (/usr)/lib/systemd/system, the man page, the example config,
#      copyright; and it depends on the shared libuv, inih, nftables and
#      OpenSSL (libssl3, TLS to the proxy and QUIC sniffing), the last two
#      named in debian/control since the daemon loads them (dlopen), and so
#      shlibs does not find them;
#   2. unpacked into a scratch root (dpkg -x), the daemon runs and the
#      installed tree passes .ci/installed-check.sh (s5tund --version,
#      systemd-analyze verify, documentation agrees with unit and binary).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${DEB_DIR:-$src/build-deb}}
case $out in /*) ;; *) out=$src/$out ;; esac
full=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
deb=$out/s5tund_${full}_$(dpkg-architecture -q DEB_HOST_ARCH).deb
[ -f "$deb" ] || { echo "deb-check: no $deb (make deb)" >&2; exit 1; }

fails=0
fail() { echo "deb-check: FAIL: $*"; fails=$((fails + 1)); }

list=$(dpkg -c "$deb" | awk '{ print $NF }')
grep -Eqx '\./(usr/)?lib/systemd/system/s5tund\.service' <<<"$list" ||
  fail "the package has no lib/systemd/system/s5tund.service"
for want in ./usr/sbin/s5tund ./usr/share/man/man8/s5tund.8.gz ./usr/share/doc/s5tund/examples/s5tund.ini \
            ./usr/share/doc/s5tund/copyright ./usr/share/doc/s5tund/README.md.gz; do
  grep -qxF "$want" <<<"$list" || fail "the package has no $want"
done
grep -q '^\./etc/' <<<"$list" && fail "the package ships files in /etc (the configuration is the admin's)"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libuv1 libinih1 libnftables1 libssl3; do
  grep -qw "$lib" <<<"$depends" || fail "Depends: $depends lacks $lib"
done
echo "deb-check: $(grep -c . <<<"$list") entries in ${deb##*/}; Depends: $depends"

root=$out/root
rm -rf "$root"
dpkg -x "$deb" "$root"
"$src/.ci/installed-check.sh" "$root" || fail "installed-check on the unpacked package"

[ $fails -eq 0 ] || { echo "deb-check: $fails failed"; exit 1; }
echo "deb-check: ${deb##*/} passed"
