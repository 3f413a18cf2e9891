# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# The router rows (sourced by run.sh, run after the upstream rows;
# --no-router leaves them out), per mode of MODES (short: the last one)
# with two queues, through the SOCKS5 server:
#   - a LAN client (namespace L, behind C on a veth of MTU 1500, forwarded
#     by C into the device) against the router host itself (C): one TCP
#     stream down and one up, with the device at the bench's MTU and at
#     [tun] mtu = 1500; the packets s5tund wrote to the device per MB of a
#     download tell whether the LAN client got large segments (GSO);
#   - a connection storm: ab -n ROUTER_AB_N -c 500 (a new connection per
#     request, HTTP through the tunnel), the device's transmit drops, the
#     clients' SYN retransmissions and s5tund's CPU per connection.
# Each mode in a subshell with its directory $OUT/raw/router-MODE;
# report_rows.py router renders them.

ROUTER_QUEUES=2
ROUTER_LAN_MTU=1500
if [[ $SHORT == 1 ]]; then
  ROUTER_AB_N=${BENCH_ROUTER_AB_N:-5000}
else
  ROUTER_AB_N=${BENCH_ROUTER_AB_N:-20000}
fi
ROUTER_AB_C=500
NS_L=""
L_ADDR4=10.210.0.2
L_GW4=10.210.0.1

# The LAN: namespace L behind C, C forwarding. Removed by router_lan_down
# (the mode's exit trap); named like C and S, so that a run killed hard
# leaves it to the next one's reaping of stale namespaces (lib.sh).
router_lan_up() {
  NS_L="s5c-lan-$E2E_NAME-$$"
  ip netns add "$NS_L"
  ip link add vethl0 netns "$NS_L" type veth peer name vethl1 netns "$NS_C"
  ip -n "$NS_L" link set lo up
  ip -n "$NS_L" link set vethl0 mtu "$ROUTER_LAN_MTU" up
  ip -n "$NS_C" link set vethl1 mtu "$ROUTER_LAN_MTU" up
  ip -n "$NS_L" addr add "$L_ADDR4/24" dev vethl0
  ip -n "$NS_C" addr add "$L_GW4/24" dev vethl1
  ip -n "$NS_L" route add default via "$L_GW4"
  in_c sysctl -qw net.ipv4.ip_forward=1
}
router_lan_down() {
  [[ -n $NS_L ]] && e2e_ns_destroy "$NS_L"
  NS_L=""
}

# router_start MODE MTU: s5tund with two queues at that MTU, ready.
router_start() {
  e2e_start_s5tund --mode "$1" --queues "$ROUTER_QUEUES" --tun "$TUN" --mtu "$2" \
    --socks5 "$S_ADDR4:$PROXY_PORT" 3>&-
  e2e_wait_device "$1" "$ROUTER_QUEUES"
  ip netns exec "$NS_C" "$CONNRATE" probe -a "$TGT4" -p "$RR_PORT" -w "$T_START" -t 3000 \
    >"$CASE_DIR/probe.out" 2>&1 || { meta setup "no exchange with the target: $(cat "$CASE_DIR/probe.out")"; exit 1; }
}

tun_written() { in_c cat "/sys/class/net/$TUN/statistics/rx_packets"; } # by s5tund, into the device
tun_tx_dropped() { in_c cat "/sys/class/net/$TUN/statistics/tx_dropped"; }
router_syn_retrans() { in_c nstat -az TcpExtTCPSynRetrans | awk '$1 == "TcpExtTCPSynRetrans" {print $2}'; }

# router_iperf NAME WHO DIR: one stream from C (host) or L (lan); the
# packets written to the device during it.
router_iperf() {
  local name=$1 who=$2 dir=$3 w0
  w0=$(tun_written)
  if [[ $who == lan ]]; then IPERF_NS=$NS_L iperf_run "$name" 1 "$dir"; else iperf_run "$name" 1 "$dir"; fi
  meta "${name}_tun_written" $(($(tun_written) - w0))
}

router_mode() {
  local mode=$1 mtu d0 s0 rc=0
  trap 'case_exit; router_lan_down' EXIT
  meta kind tunnel
  meta mode "$mode"
  meta queues "$ROUTER_QUEUES"
  meta lan_mtu "$ROUTER_LAN_MTU"
  router_lan_up
  for mtu in "$MTU" 1500; do
    meta mtus "$(sed -n 's/^mtus=//p' "$CASE_DIR/meta" | tail -n 1) $mtu"
    router_start "$mode" "$mtu"
    meta setup ok
    router_iperf "host_m${mtu}_down" host down
    router_iperf "lan_m${mtu}_down" lan down
    router_iperf "host_m${mtu}_up" host up
    router_iperf "lan_m${mtu}_up" lan up
    e2e_s5_alive || { meta died "during the router rows at MTU $mtu"; exit 1; }
    case_exit
  done
  # The storm, at the bench's MTU: tun0's queue as s5tund sets it.
  router_start "$mode" "$MTU"
  meta txqueuelen "$(in_c cat "/sys/class/net/$TUN/tx_queue_len")"
  meta ab_n "$ROUTER_AB_N"
  meta ab_c "$ROUTER_AB_C"
  d0=$(tun_tx_dropped) s0=$(router_syn_retrans)
  measure_start
  timeout -k 5 300 ip netns exec "$NS_C" ab -q -r -s 30 -n "$ROUTER_AB_N" -c "$ROUTER_AB_C" \
    "http://$TGT4:$RR_PORT/" >"$CASE_DIR/ab.out" 2>&1 || rc=$?
  measure_end ab
  meta ab_rc "$rc"
  meta tx_dropped $(($(tun_tx_dropped) - d0))
  meta syn_retrans $(($(router_syn_retrans) - s0))
  say "storm: ab rc=$rc; $(grep -E '^(Complete|Failed) requests|^Requests per second' "$CASE_DIR/ab.out" | tr -s ' ' | tr '\n' ' ')"
  e2e_s5_alive || { meta died "during the storm"; exit 1; }
  case_exit
  router_lan_down
  trap - EXIT
}

run_router_rows() {
  local mode modes=$MODES
  [[ $SHORT == 1 ]] && modes=${MODES##* } # the CI variant: one mode, the last (process by default)
  for mode in $modes; do
    bench_log "router rows: $mode"
    rows_sub "router rows $mode" "$OUT/raw/router-$mode" "$OUT/raw/router-$mode.log" router_mode "$mode"
  done
}
