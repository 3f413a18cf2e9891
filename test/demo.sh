#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# s5tund demonstration (make demo): a private pair of network namespaces, a
# real SOCKS5 server (microsocks) and a target server in one, s5tund and a
# client in the other. s5tund runs in thread mode, then in process mode, with
# 2 queues each; the client pushes an upload and a download (SHA-256 checked
# on both ends) and echoes over IPv4 and IPv6 through the TUN device.
# Everything is removed at the end, also on failure or Ctrl-C.
#
#   test/demo.sh [S5TUND]      (default: build/s5tund; needs root)
set -eEuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=e2e/lib.sh
source "$HERE/e2e/lib.sh"

QUEUES=2
SIZE=${DEMO_SIZE:-32M}

[[ $EUID -eq 0 ]] || { echo "demo: needs root (network namespaces, a TUN device)" >&2; exit 1; }
[[ -c /dev/net/tun ]] || { echo "demo: /dev/net/tun is missing" >&2; exit 1; }
e2e_require_tools
e2e_find_s5tund "${1:-$HERE/../build/s5tund}"
e2e_init demo

stat_of() { in_c cat "/sys/class/net/$TUN/statistics/$1"; }
human() { numfmt --to=iec-i --suffix=B "$1" 2>/dev/null || echo "$1 bytes"; }

banner() { printf '\n==== %s ====\n' "$*"; }

banner "topology"
e2e_topology_up
e2e_start_target
e2e_start_microsocks
cat <<EOF
  client namespace $NS_C: s5tund owns $TUN ($TUN_IPV4, $TUN_IPV6),
      routes 10.201.0.0/24 and fd00:201::/64 into $TUN, veth $C_ADDR4
  server namespace $NS_S: microsocks on $S_ADDR4:$MS_PORT,
      target on $TGT4 and [$TGT6] port $TGT_PORT (addresses only there)
EOF

for MODE in thread process; do
  banner "s5tund --mode $MODE --queues $QUEUES"
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$MS_PORT \
    e2e_write_config "$WORK/demo-$MODE.ini"
  sed 's/^/  | /' "$WORK/demo-$MODE.ini"
  e2e_start_s5tund --config "$WORK/demo-$MODE.ini"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip -d link show dev "$TUN" | grep -o 'tun type.*numqueues [0-9]*' | sed 's/^/  /'
  if [[ $MODE == process ]]; then
    echo "  parent pid $S5PID, worker pids: $(e2e_workers | tr '\n' ' ')"
  else
    echo "  pid $S5PID, $(ls "/proc/$S5PID/task" | wc -l) threads"
  fi
  tx0=$(stat_of tx_bytes) rx0=$(stat_of rx_bytes)
  echo "  -- upload and download of $SIZE each way, SHA-256 compared on both ends:"
  CLIENT_T=$T_BULK client --host "$TGT4" --timeout 60 bulk --size "$SIZE" --upload-mode length \
    | sed 's/^/  /'
  echo "  -- echo over IPv4 and IPv6:"
  client --host "$TGT4" echo | sed 's/^/  /'
  client --host "$TGT6" echo | sed 's/^/  /'
  echo "  -- 50 concurrent connections:"
  client --host "$TGT4" concurrent 50 | sed 's/^/  /'
  tx1=$(stat_of tx_bytes) rx1=$(stat_of rx_bytes)
  echo "  -- through $TUN: $(human $((tx1 - tx0))) from the client into s5tund," \
       "$(human $((rx1 - rx0))) from s5tund back to the client (IP packets)"
  size=$(numfmt --from=iec "$SIZE")
  ((tx1 - tx0 >= size && rx1 - rx0 >= size)) || fail "the traffic did not go through $TUN"
  e2e_stop_s5tund
  if e2e_tun_exists; then
    fail "$TUN still exists after s5tund exited"
  fi
  echo "  SIGTERM: s5tund exited with status $S5RC, $TUN removed"
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC"
done

banner "done"
echo "  everything passed; removing the namespaces"
