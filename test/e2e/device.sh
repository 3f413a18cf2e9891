# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Cases of the device itself (run.sh): its transmit queue and the drops
# counted in stats and metrics.

# device_drops: the transmit drops of tun0 in C, as the kernel counts them.
device_drops() { in_c cat /proc/net/dev | awk -v d="$TUN:" '$1 == d { print $13 }'; }
device_stat() {   # KEY: a top-level number of --stats --json
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
device_start() {  # TXQUEUELEN: s5tund through danted with that [tun] txqueuelen ("" = the default)
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT e2e_write_config "$ini"
  [[ -z $1 ]] || sed -i "/^\[tun\]/a txqueuelen = $1" "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_ready "$MODE" "$QUEUES"
}
device_ab() {     # N C: ab through the tunnel; prints "complete failed"
  local out
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" ab -r -q -s 20 -n "$1" -c "$2" \
    "http://$TGT4:$TGT_PORT/" 2>&1) || true
  echo "$(awk '/^Complete requests:/ { print $3 }' <<<"$out") $(awk '/^Failed requests:/ { print $3 }' <<<"$out")"
}

# [tun] txqueuelen: the default (4096) on the device s5tund creates, and a
# connection storm (ab -c 500) through it drops nothing at the device; a
# short queue (16) under the same storm drops, and stats and metrics count
# what the kernel counts. Thread mode, one queue: one worker drains the
# device slowest (the device and its queue are the same in both modes).
case_txqueue() {
  local qlen drops counted out
  command -v ab >/dev/null 2>&1 || fail "ab is missing (apache2-utils; run 'make deps')"
  e2e_topology_up
  e2e_start_target
  DANTE_LOG_SESSIONS=0 e2e_start_dante
  device_start ""
  qlen=$(in_c cat "/sys/class/net/$TUN/tx_queue_len")
  [[ $qlen == 4096 ]] || fail "$TUN's txqueuelen is $qlen, want the default 4096"
  read -r complete failed <<<"$(device_ab 20000 500)"
  drops=$(device_drops)
  log "txqueuelen 4096: ab -n 20000 -c 500: $complete complete, $failed failed; $drops TX drops at $TUN"
  ((drops == 0)) || fail "$drops packets dropped at $TUN's queue of 4096 under ab -c 500"
  [[ $complete == 20000 ]] || fail "ab: $complete of 20000 complete"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"

  device_start 16
  qlen=$(in_c cat "/sys/class/net/$TUN/tx_queue_len")
  [[ $qlen == 16 ]] || fail "$TUN's txqueuelen is $qlen, want 16"
  read -r complete failed <<<"$(device_ab 4000 500)"
  for _ in $(seq 30); do   # the control loop reads the device once a second; the closes may still drop
    drops=$(device_drops)
    counted=$(device_stat tun_tx_dropped)
    ((counted == drops)) && break
    sleep 0.3
  done
  ((drops > 0)) || fail "no drops at a queue of 16 under ab -c 500: the counter goes untested"
  ((counted == drops)) || fail "stats tun_tx_dropped = $counted, the kernel counts $drops"
  log "txqueuelen 16: ab -n 4000 -c 500: $complete complete; $drops TX drops, counted in stats"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
}
