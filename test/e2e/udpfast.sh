# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases for the batched UDP path (core/udp/udp_io.c,
# core/netif/udp_tun.c; run.sh runs them), the topology and rules of udp.sh
# (danted as the proxy, udptarget.py echoing).
#
# CASE   udp_burst   IPv4 and IPv6: 10,000 datagrams through one
#                    association (paced by a window of unanswered ones)
#                    echo back complete and in order; datagrams of mixed
#                    sizes sent in one GSO batch (UDP_SEGMENT with a short
#                    last segment, a sendmmsg of mixed sizes) each arrive
#                    as sent, both ways; s5tund's log shows that it took
#                    and wrote UDP GSO packets on the TUN. Then the same,
#                    shorter, with S5TUND_NO_UDP_OFFLOAD=1 (the plain
#                    per-datagram path, forced).
#                    [session] udp-coalesce: the bursts' echoes, which
#                    queue up at the relay, made the workers wait
#                    (udp_coalesce_waits moved); 500 ping-pongs (one
#                    datagram in flight) made none wait; after a reload
#                    to udp-coalesce = 0, a burst makes none wait

UDP_PORT=7001

start_udptarget() {
  local ready=$WORK/udptarget.ready
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" \
    --port "$UDP_PORT" --ready-file "$ready" >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "udptarget on $TGT4 and [$TGT6] port $UDP_PORT"; return 0; }
    sleep 0.1
  done
  fail "udptarget.py did not start"
}

# The usual configuration, log level debug (the checks read it), a stats
# socket; the file is $S5_CFG.
start_s5() {
  S5_CFG=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT CFG_LOG_LEVEL=debug \
    e2e_write_config "$S5_CFG"
  printf '\n[stats]\nsocket = %s\n' "$WORK/stats.sock" >>"$S5_CFG"
  e2e_start_s5tund --config "$S5_CFG"
  e2e_wait_ready "$MODE" "$QUEUES"
}

waits() {   # udp_coalesce_waits over all queues
  "$S5TUND" --stats "$WORK/stats.sock" --json |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"]["udp_coalesce_waits"])'
}

burst() {   # udpburst.py in C, bounded
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_BULK" "$PY" "$E2E_DIR/udpburst.py" "$@"
}

log_has() {   # ERE WHAT
  grep -qE -- "$1" "$S5LOG" || fail "s5tund's log lacks $2 (/$1/)"
  log "s5tund log: $(grep -m 1 -E -- "$1" "$S5LOG")"
}

case_udp_burst() {
  e2e_topology_up
  e2e_start_target   # e2e_wait_ready exchanges TCP with it
  start_udptarget
  e2e_start_dante
  start_s5
  log_has 'UDP segmentation offload on' "USO on the TUN queue"
  local h w0 w1
  w0=$(waits)
  burst burst --host "$TGT4" --port "$UDP_PORT" --count 500 --size 100 --window 1
  w1=$(waits)
  ((w1 == w0)) || fail "500 ping-pongs (one datagram in flight) made the workers wait $((w1 - w0)) times (udp-coalesce)"
  for h in "$TGT4" "$TGT6"; do
    burst burst --host "$h" --port "$UDP_PORT" --count 10000 --size 1200
    burst gso --host "$h" --port "$UDP_PORT"
  done
  w0=$(waits)
  ((w0 > w1)) || fail "the bursts' echoes queued at the relays but no worker waited (udp_coalesce_waits $w0)"
  log "udp-coalesce: 0 waits for 500 ping-pongs, $((w0 - w1)) waits for the bursts"
  printf '\n[session]\nudp-coalesce = 0\n' >>"$S5_CFG"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "main configuration reloaded" 10 "'configuration reloaded' line" >/dev/null
  burst burst --host "$TGT4" --port "$UDP_PORT" --count 10000 --size 1200
  w1=$(waits)
  ((w1 == w0)) || fail "with udp-coalesce = 0 (reloaded) the workers waited $((w1 - w0)) times"
  # The client's UDP_SEGMENT sends reached s5tund as GSO packets and the
  # echoes of a run went out as one: the offload paths ran, not a fallback.
  log_has 'GSO packet from the TUN split' "a GSO UDP packet taken from the TUN"
  log_has 'written to the TUN as one GSO packet' "a GSO UDP packet written to the TUN"
  e2e_require_alive "after the UDP bursts"

  e2e_stop_s5tund
  S5TUND_NO_UDP_OFFLOAD=1 start_s5
  log_has 'batching and offloads disabled by S5TUND_NO_UDP_OFFLOAD' "the forced fallback"
  for h in "$TGT4" "$TGT6"; do
    burst burst --host "$h" --port "$UDP_PORT" --count 2000 --size 1200
    burst gso --host "$h" --port "$UDP_PORT"
  done
  if grep -qE 'GSO packet|segmentation offload on' "$S5LOG"; then
    fail "S5TUND_NO_UDP_OFFLOAD=1 still used UDP offloads: $(grep -m 1 -E 'GSO packet|segmentation offload on' "$S5LOG")"
  fi
  e2e_require_alive "on the plain UDP path"
}
