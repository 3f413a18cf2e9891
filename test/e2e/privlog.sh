#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# privlog.sh SOCKET CMD...: execs CMD in a private mount namespace whose
# /dev/log is SOCKET, a syslog listener of the test's own, so that a test of
# `[log] file = syslog` never writes to (or needs) the machine's syslog.
#
# The namespace gets a /dev of its own: a directory in SOCKET's folder with
# the few device nodes s5tund opens bind-mounted from the real /dev, and
# `log` a symlink to SOCKET. Everything goes with the namespace when CMD
# exits. CMD keeps this script's pid (exec all the way).
set -euo pipefail
if [[ ${S5_PRIVLOG_INNER:-} != 1 ]]; then
  S5_PRIVLOG_INNER=1 exec unshare --mount --propagation private "$0" "$@"
fi
unset S5_PRIVLOG_INNER
sock=$1
shift
dev=$(dirname "$sock")/privlog-dev
mkdir -p "$dev/net"
for n in null zero full random urandom net/tun; do
  : >"$dev/$n"
  mount --bind "/dev/$n" "$dev/$n"
done
ln -sfn /proc/self/fd "$dev/fd"
ln -sfn "$sock" "$dev/log"
mount --rbind "$dev" /dev
exec "$@"
