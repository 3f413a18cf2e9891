#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# s5tund demonstration (make demo): a private pair of network namespaces, a
# real SOCKS5 server (microsocks) and a target server in one, s5tund and a
# client in the other. s5tund runs in thread mode, then in process mode, with
# 2 queues each; the client pushes an upload and a download (SHA-256 checked
# on both ends) and echoes over IPv4 and IPv6 through the TUN device. Then
# two upstreams in failover order, an HTTP proxy (squid, with a password)
# and microsocks, with mapped DNS and a rule by name: traffic goes through
# squid, the name's through microsocks; squid killed, the next connections
# go through microsocks and squid is marked down; squid restarted, its check
# brings it back.
# Everything is removed at the end, also on failure or Ctrl-C.
#
#   test/demo.sh [S5TUND]      (default: build/s5tund; needs root)
set -eEuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=e2e/lib.sh
source "$HERE/e2e/lib.sh"
# shellcheck source=e2e/dnslib.sh
source "$HERE/e2e/dnslib.sh"   # the mapped resolver's addresses; S's hosts file

QUEUES=2
SIZE=${DEMO_SIZE:-32M}

[[ $EUID -eq 0 ]] || { echo "demo: needs root (network namespaces, a TUN device)" >&2; exit 1; }
[[ -c /dev/net/tun ]] || { echo "demo: /dev/net/tun is missing" >&2; exit 1; }
e2e_require_tools
e2e_find_s5tund "${1:-$HERE/../build/s5tund}"
e2e_init demo
udp_install_exit   # S's /etc/netns hosts file (target.test) goes on exit too

stat_of() { in_c cat "/sys/class/net/$TUN/statistics/$1"; }
human() { numfmt --to=iec-i --suffix=B "$1" 2>/dev/null || echo "$1 bytes"; }

banner() { printf '\n==== %s ====\n' "$*"; }

banner "topology"
e2e_topology_up
udp_hosts          # the proxies in S resolve target.test (those started from now on)
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

banner "two upstreams: squid (HTTP CONNECT), then microsocks; a rule by name"
e2e_start_squid
INI=$WORK/demo-upstreams.ini
cat >"$INI" <<EOF
mode = process
queues = $QUEUES
[tun]
name = $TUN
ipv4 = $TUN_IPV4
ipv6 = $TUN_IPV6
[upstream squid]
type = http
address = $S_ADDR4
port = $SQUID_PORT
username = $SQUID_USER
password = $SQUID_PASS
[upstream micro]
address = $S_ADDR4
port = $MS_PORT
[balance]
strategy = failover
[dns]
address = $DNS_ADDR
network = $DNS_POOL
[rules]
rule = full:target.test -> micro
[log]
sessions = true
[stats]
socket = $WORK/stats.sock
EOF
sed 's/^/  | /' "$INI"
e2e_start_s5tund --config "$INI"
e2e_wait_ready process "$QUEUES"
in_c ip route replace "$DNS_POOL" dev "$TUN"
# demo_lines ERE: s5tund's log lines matching it, without the time stamp.
demo_lines() { grep -E -- "$1" "$S5LOG" | cut -d' ' -f2- | sed 's/^/  s5tund: /'; }

echo "  -- 10 connections to $TGT4, by address: the first upstream, squid, carries them"
client --host "$TGT4" concurrent 10 --rounds 1 | sed 's/^/  /'
tunnels=$(grep -c "TCP_TUNNEL/200 .*CONNECT $TGT4:$TGT_PORT $SQUID_USER" "$SQUID_LOG" || true)
echo "  squid's access log: $tunnels CONNECTs of $SQUID_USER tunnelled, the last:"
tail -n 1 "$SQUID_LOG" | sed 's/^/  squid: /'
((tunnels >= 10)) || fail "squid tunnelled $tunnels connections, expected 10 or more"

echo "  -- a name: the mapped resolver answers it, the rule sends it to microsocks"
addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
[[ -n $addr ]] || fail "the mapped resolver did not answer target.test"
echo "  dig @$DNS_ADDR target.test -> $addr (a mapped address; the proxy gets the name)"
"$S5TUND" --config "$INI" --explain "$addr:$TGT_PORT" --name target.test | sed 's/^/  --explain: /'
client --host "$addr" echo --count 3 | sed 's/^/  /'
e2e_wait_log "$S5LOG" "session s[0-9]+ tcp .*\(target\.test\) via $S_ADDR4:$MS_PORT \(micro\) by rule" 10 \
  "a session line naming target.test and micro" | cut -d' ' -f2- | sed 's/^/  s5tund: /'

echo "  -- squid killed (SIGKILL): 20 connections to $TGT4 at once"
kill -KILL "$SQUID_PID"
wait "$SQUID_PID" 2>/dev/null || true
client --host "$TGT4" concurrent 20 --rounds 1 | sed 's/^/  /'
e2e_wait_log "$S5LOG" "upstream squid is down" 10 "squid marked down" >/dev/null
demo_lines "upstream squid is down"
echo "  s5tund --stats (the upstreams):"
"$S5TUND" --stats "$WORK/stats.sock" | sed 's/^/  /'
via=$(grep -cE "session s[0-9]+ tcp .* via $S_ADDR4:$MS_PORT \(micro\)" "$S5LOG" || true)
echo "  sessions carried by micro so far (session log): $via"
((via >= 21)) || fail "micro carried $via sessions, expected at least 21"

echo "  -- squid restarted: a check (every [balance] check-interval, 5 s) brings it back"
e2e_start_squid >/dev/null
e2e_wait_log "$S5LOG" "upstream squid is up again" 30 "squid back up" | cut -d' ' -f2- | sed 's/^/  s5tund: /'
tunnels0=$(grep -c "TCP_TUNNEL/200 .*CONNECT $TGT4:$TGT_PORT" "$SQUID_LOG" || true)
client --host "$TGT4" concurrent 5 --rounds 1 | sed 's/^/  /'
tunnels1=$(grep -c "TCP_TUNNEL/200 .*CONNECT $TGT4:$TGT_PORT" "$SQUID_LOG" || true)
echo "  squid's access log: $((tunnels1 - tunnels0)) more CONNECTs tunnelled"
((tunnels1 - tunnels0 >= 5)) || fail "squid tunnelled $((tunnels1 - tunnels0)) of 5 connections after its return"
e2e_stop_s5tund
((S5RC == 0)) || fail "s5tund exited with status $S5RC"

banner "done"
echo "  everything passed; removing the namespaces"
