#!/bin/bash
# SPDX-License-Identifier: MIT
# installed-check.sh ROOT: checks an installed s5tund tree, as staged by
# `DESTDIR=ROOT cmake --install BUILD` or unpacked from the .deb with
# `dpkg -x`, the way a user would meet it:
#   1. exactly one s5tund.service, whose ExecStart names a binary that is in
#      ROOT and prints "s5tund VERSION" for --version;
#   2. `systemd-analyze verify` accepts the unit: the installed file, with
#      only its ExecStart binary redirected into ROOT (the host has no
#      installed s5tund) and the man page found under ROOT (MANPATH), so
#      Documentation=man:s5tund(8) is checked too; any message about the
#      unit fails, not only the exit status;
#   3. the installed man page and README agree with the unit on the
#      --config path, and with the binary on the --stats default socket.
# Exit 0 when all hold, 1 with one line per failed check otherwise.
set -uo pipefail

root=${1:?usage: installed-check.sh ROOT}
root=$(cd "$root" && pwd)
fails=0
fail() { echo "installed-check: FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "installed-check: ok   $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Reads an installed text file, gzip-compressed or not.
text() { case $1 in *.gz) gzip -dc "$1" ;; *) cat "$1" ;; esac; }

mapfile -t units < <(find "$root" -path '*/systemd/system/s5tund.service')
if [ ${#units[@]} -ne 1 ]; then
  fail "expected one systemd/system/s5tund.service under $root, found ${#units[@]}"
  exit 1
fi
unit=${units[0]}
ok "unit ${unit#$root}"

# 1. ExecStart's binary and its --config argument.
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
read -r -a argv <<<"$exec_line"
bin=${argv[0]:-}
config=""
for ((i = 1; i < ${#argv[@]}; i++)); do
  [ "${argv[i]}" = --config ] && config=${argv[i + 1]:-}
done
if [ "${bin:0:1}" != / ] || [ ! -x "$root$bin" ]; then
  fail "ExecStart=$exec_line: $bin is not an executable in $root"
  exit 1
fi
if version=$("$root$bin" --version 2>&1) && [[ $version =~ ^s5tund\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  ok "$bin --version: $version"
else
  fail "$bin --version printed '$version'"
fi
[ -n "$config" ] || fail "ExecStart=$exec_line passes no --config FILE"

# 2. systemd-analyze verify.
mkdir -p "$tmp/unit"
sed "s|^ExecStart=$bin |ExecStart=$root$bin |" "$unit" >"$tmp/unit/s5tund.service"
man=$(find "$root" -path '*/man8/s5tund.8*' | head -n 1)
[ -n "$man" ] || fail "no man8/s5tund.8 under $root"
man_opt=()
if ! command -v man >/dev/null 2>&1; then
  man_opt=(--man=no)
  echo "installed-check: note: man(1) is not installed: Documentation= not checked"
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
  fail "systemd-analyze not found (make deps installs systemd)"
else
  out=$(MANPATH=${man%/man8/*} SYSTEMD_LOG_COLOR=0 \
        systemd-analyze verify "${man_opt[@]}" "$tmp/unit/s5tund.service" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || grep -q 's5tund' <<<"$out"; then
    fail "systemd-analyze verify (exit $rc):"
    sed 's/^/    /' <<<"$out"
  else
    ok "systemd-analyze verify"
  fi
fi

# 3. The documentation agrees with the unit and the binary.
readme=$(find "$root" -path '*/doc/s5tund/README.md*' | head -n 1)
[ -n "$readme" ] || fail "no doc/s5tund/README.md under $root"
if [ -n "$man" ] && [ -n "$config" ]; then
  # grep reads to the end (no -q): with pipefail, an early exit would make
  # the writer's SIGPIPE fail the test once the text is long enough.
  if text "$man" | sed -n '/^\.Sh FILES/,/^\.Sh /p' | grep -xF ".It Pa $config" >/dev/null; then
    ok "man page FILES names $config"
  else
    fail "the man page's FILES section does not name the unit's --config $config"
  fi
fi
if [ -n "$readme" ] && [ -n "$config" ]; then
  # Every configuration path the README shows under /etc is the unit's.
  others=$(text "$readme" | grep -o '/etc/[^ `)]*\.ini' | sort -u | grep -vxF "$config")
  if text "$readme" | grep -F "$config" >/dev/null && [ -z "$others" ]; then
    ok "README names $config and no other /etc configuration"
  else
    fail "README does not agree with the unit's --config $config (other paths: ${others:-none})"
  fi
fi
# The binary names its default socket when nothing listens there.
out=$("$root$bin" --stats 2>&1)
if [[ $out =~ ^s5tund:\ --stats\ ([^:]+):\  ]]; then
  sock=${BASH_REMATCH[1]}
  if [ -n "$man" ] && text "$man" | sed -n '/^\.It Fl \\-stats/,/^\.It /p' | grep -xF ".Pa $sock )" >/dev/null; then
    ok "man page --stats default is the binary's $sock"
  else
    fail "the man page's --stats default is not the binary's $sock"
  fi
else
  # Something answers at the default socket: a daemon runs on this machine.
  echo "installed-check: note: s5tund --stats printed '${out%%$'\n'*}', not the error naming its default socket: not compared"
fi

[ $fails -eq 0 ] || { echo "installed-check: $fails failed"; exit 1; }
echo "installed-check: all passed"
