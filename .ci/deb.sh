#!/bin/bash
# SPDX-License-Identifier: MIT
# make deb: builds the Debian package of the working tree in DEB_DIR
# (default build-deb/, gitignored), offline, and runs lintian on it.
#
#   1. s5tund_V.orig.tar.xz: every file git knows or would add (tracked and
#      untracked-but-not-ignored, as they are in the working tree), without
#      debian/, under s5tund-V/;
#   2. s5tund_V.orig-lwip.tar.xz: Debian's pristine lwip_2.1.3+dfsg1 orig
#      tarball, unchanged (SHA-256 pinned in fetch.cmake): the one a build
#      in BUILD_DIR already downloaded, else apt-get source fetches it
#      (cmake/lwip-orig.cmake);
#   3. s5tund_V.orig-blake3.tar.xz: BLAKE3 1.3.1's reference C code and
#      test vectors (c/, LICENSE, test_vectors/) as third_party/blake3/
#      fetch.cmake takes them from two pinned Debian packages (seeded from
#      BUILD_DIR's download, else fetched; cmake/blake3-orig.cmake),
#      repacked reproducibly;
#   4. the source tree as dpkg-source -x would unpack it (lwip/ and blake3/
#      from the other tarballs, debian/ from the repository), and the source package
#      (.dsc) built from it: proves the multi-tarball format is consistent;
#   5. dpkg-buildpackage -us -uc -b inside a network namespace of its own
#      (unshare -n) with only the loopback up (the fuzz seed replays relay
#      UDP over it), so a build that tried the network fails here;
#   6. lintian on the .changes and the .dsc: any error fails.
# Results: DEB_DIR/s5tund_V-R_ARCH.deb (+ -dbgsym, .changes, .buildinfo,
# .dsc, lintian.txt, build.log).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
out=${DEB_DIR:-$src/build-deb}
case $out in /*) ;; *) out=$src/$out ;; esac
build_dir=${BUILD_DIR:-build}
case $build_dir in /*) ;; *) build_dir=$src/$build_dir ;; esac

die() { echo "deb.sh: $*" >&2; exit 1; }

git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
  die "$src is not a git checkout: the orig tarball is made from git's file list"
for tool in dpkg-buildpackage dpkg-source lintian cmake xz; do
  command -v "$tool" >/dev/null || die "$tool not found (make deb installs what it needs)"
done

# Version: debian/changelog's upstream part must be CMake's project version.
full=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
ver=${full%-*}
cmake_ver=$(sed -n 's/^project(s5tund VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$ver" = "$cmake_ver" ] ||
  die "debian/changelog says $full, CMakeLists.txt project(VERSION) says $cmake_ver: add a changelog entry (dch -v $cmake_ver-1)"
arch=$(dpkg-architecture -q DEB_HOST_ARCH)

mkdir -p "$out"
tree=$out/s5tund-$ver
rm -rf "$tree" "$out"/s5tund_"$ver"* "$out"/s5tund-dbgsym_"$ver"*

# 1. The main orig tarball, reproducible (sorted, owner 0, mtime of HEAD).
mtime=$(git -C "$src" log -1 --format=%ct)
git -C "$src" ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do
    case $f in debian/*) continue ;; esac
    [ -e "$src/$f" ] && printf '%s\0' "$f"   # skip files deleted but not yet committed
  done |
  tar -C "$src" --null -T - --sort=name --owner=0 --group=0 --numeric-owner \
      --mtime="@$mtime" --transform "s,^,s5tund-$ver/," -cf - |
  xz -6 -T1 >"$out/s5tund_$ver.orig.tar.xz"

# 2. lwIP: seed the fetch directory from the build tree, then verify/fetch.
fetch=$out/lwip-fetch
mkdir -p "$fetch/_lwip/download"
for f in "$build_dir"/_lwip/download/lwip_*.orig.tar.xz; do
  [ -f "$f" ] && [ ! -f "$fetch/_lwip/download/${f##*/}" ] && cp "$f" "$fetch/_lwip/download/"
done
log=$(cd "$fetch" && cmake -P "$src/cmake/lwip-orig.cmake" 2>&1) ||
  { echo "$log" >&2; die "no lwIP orig tarball"; }
lwip=${log##*$'\n'}
[ -f "$lwip" ] || { echo "$log" >&2; die "no lwIP orig tarball"; }
cp "$lwip" "$out/s5tund_$ver.orig-lwip.tar.xz"

# 3. BLAKE3: the same, then the tree a configure would use, repacked.
fetch=$out/blake3-fetch
mkdir -p "$fetch/_blake3/download"
for f in "$build_dir"/_blake3/download/*.deb; do
  [ -f "$f" ] && [ ! -f "$fetch/_blake3/download/${f##*/}" ] && cp "$f" "$fetch/_blake3/download/"
done
log=$(cd "$fetch" && cmake -P "$src/cmake/blake3-orig.cmake" 2>&1) ||
  { echo "$log" >&2; die "no BLAKE3 tree"; }
b3=${log##*$'\n'}
[ -f "$b3/c/blake3.h" ] || { echo "$log" >&2; die "no BLAKE3 tree"; }
tar -C "$b3" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
    --transform "s,^\.,blake3-1.3.1," -cf - . |
  xz -6 -T1 >"$out/s5tund_$ver.orig-blake3.tar.xz"

# 4. The unpacked source tree, then the source package from it.
tar -C "$out" -xJf "$out/s5tund_$ver.orig.tar.xz"
mkdir "$tree/lwip" "$tree/blake3"
tar -C "$tree/lwip" --strip-components=1 -xJf "$out/s5tund_$ver.orig-lwip.tar.xz"
tar -C "$tree/blake3" --strip-components=1 -xJf "$out/s5tund_$ver.orig-blake3.tar.xz"
cp -a "$src/debian" "$tree/debian"
(cd "$out" && dpkg-source -b "s5tund-$ver") >"$out/source.log" 2>&1 ||
  { cat "$out/source.log" >&2; die "dpkg-source -b failed"; }

# 5. The binary package, offline.
isolate=()
if unshare -n true 2>/dev/null; then
  isolate=(unshare -n)
elif unshare -rn true 2>/dev/null; then
  isolate=(unshare -rn)   # not root: a user namespace maps us to root in it
else
  echo "deb.sh: warning: cannot unshare a network namespace; building with the network" >&2
fi
echo "deb.sh: dpkg-buildpackage -us -uc -b in $tree ${isolate[*]:+(${isolate[*]})}"
# Our caller's make variables (MAKEFLAGS) must not reach debian/rules.
build=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -us -uc -b)
if [ ${#isolate[@]} -gt 0 ]; then
  build=("${isolate[@]}" sh -c 'ip link set lo up && exec "$@"' sh "${build[@]}")
fi
if ! (cd "$tree" && "${build[@]}") >"$out/build.log" 2>&1; then
  tail -n 60 "$out/build.log" >&2
  die "dpkg-buildpackage failed (whole log: $out/build.log)"
fi
deb=$out/s5tund_${full}_$arch.deb
[ -f "$deb" ] || die "dpkg-buildpackage made no $deb"
# Belt and braces for when no namespace could be had: lwIP came from lwip/,
# BLAKE3 from blake3/.
grep -q 'lwIP: copying .*/lwip (LWIP_SOURCE_DIR)' "$out/build.log" &&
  ! grep -Eq 'lwIP: (fetching|downloading)' "$out/build.log" ||
  die "the package build did not take lwIP from lwip/ (see $out/build.log)"
grep -q 'BLAKE3: using .*/blake3 (BLAKE3_SOURCE_DIR)' "$out/build.log" &&
  ! grep -q 'BLAKE3: fetching' "$out/build.log" ||
  die "the package build did not take BLAKE3 from blake3/ (see $out/build.log)"

# 6. lintian: errors fail, the rest is listed.
echo "deb.sh: lintian"
lintian_rc=0
lintian --fail-on error --display-info \
  "$out/s5tund_${full}_$arch.changes" "$out/s5tund_$full.dsc" >"$out/lintian.txt" 2>&1 || lintian_rc=$?
cat "$out/lintian.txt"
[ "$lintian_rc" -eq 0 ] || die "lintian reports errors (exit $lintian_rc)"
echo "deb.sh: built $deb"
