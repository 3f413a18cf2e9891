# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Cases of the device itself (run.sh): its transmit queue and the drops
# counted in stats and metrics; a persistent device that outlives s5tund;
# a device another program holds.

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
  read -r complete failed <<<"$(device_ab 8000 500)"
  drops=$(device_drops)
  log "txqueuelen 4096: ab -n 8000 -c 500: $complete complete, $failed failed; $drops TX drops at $TUN"
  ((drops == 0)) || fail "$drops packets dropped at $TUN's queue of 4096 under ab -c 500"
  [[ $complete == 8000 ]] || fail "ab: $complete of 8000 complete"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"

  device_start 16
  qlen=$(in_c cat "/sys/class/net/$TUN/tx_queue_len")
  [[ $qlen == 16 ]] || fail "$TUN's txqueuelen is $qlen, want 16"
  read -r complete failed <<<"$(device_ab 1500 500)" # 3 waves of 500: drops in the first
  for _ in $(seq 30); do   # the control loop reads the device once a second; the closes may still drop
    drops=$(device_drops)
    counted=$(device_stat tun_tx_dropped)
    ((counted == drops)) && break
    sleep 0.3
  done
  ((drops > 0)) || fail "no drops at a queue of 16 under ab -c 500: the counter goes untested"
  ((counted == drops)) || fail "stats tun_tx_dropped = $counted, the kernel counts $drops"
  log "txqueuelen 16: ab -n 1500 -c 500: $complete complete; $drops TX drops, counted in stats"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
}

# persist: [tun] persist = true: the device outlives s5tund (SIGTERM, exit
# 0), a new s5tund serves on it, and ip link del removes it.
case_persist() {
  local run info ifindex="" now
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  for run in 1 2; do
    CFG_PERSIST=true start_with_config "$S_ADDR4" "$MS_PORT"
    e2e_wait_ready "$MODE" "$QUEUES"
    if [[ -n $ifindex ]]; then
      # The same device, not a new one under the same name.
      now=$(in_c cat "/sys/class/net/$TUN/ifindex")
      [[ $now == "$ifindex" ]] || fail "run $run: $TUN has ifindex $now, the persistent one had $ifindex"
      log "run $run: serving on the persistent $TUN (ifindex $now)"
    fi
    client --host "$TGT4" echo
    client --host "$TGT6" echo
    e2e_stop_s5tund
    ((S5RC == 0)) || fail "run $run: s5tund exited with $S5RC after SIGTERM, expected 0"
    e2e_tun_exists || fail "run $run: $TUN is gone after s5tund exited, despite persist = true"
    info=$(in_c ip -d link show dev "$TUN")
    [[ $info == *"persist on"* ]] || fail "run $run: $TUN is not a persistent TUN device: $(oneline "$info")"
    [[ $info == *"numqueues 0 "* ]] || fail "run $run: queues still attached after s5tund exited: $(oneline "$info")"
    ifindex=$(in_c cat "/sys/class/net/$TUN/ifindex")
    log "run $run: s5tund exited 0, $TUN is still there: $(grep -o 'tun type.*persist on' <<<"$info")"
  done
  in_c ip link del "$TUN"
  e2e_tun_exists && fail "$TUN still exists after ip link del"
  log "ip link del removed $TUN"
}

# busy_try MODE WHAT: s5tund on busy.ini in C, bounded, which must refuse
# the busy device (exit 1); sets BUSY_OUT and BUSY_ERR, shows its stderr.
busy_try() {
  local rc=0
  in_c timeout -k 5 "$T_STOP" "$S5TUND" --config "$WORK/busy.ini" --mode "$1" --queues 2 \
    >"$WORK/busy.out" 2>"$WORK/busy.err" || rc=$?
  BUSY_OUT=$(cat "$WORK/busy.out")
  BUSY_ERR=$(cat "$WORK/busy.err")
  printf '%s\n' "$BUSY_ERR" | sed "s/^/    $2: /"
  ((rc == 124 || rc == 137)) && fail "$2: s5tund did not exit within ${T_STOP}s"
  ((rc == 1)) || fail "$2: exit status $rc, expected 1"
}

# busy_device: the name is taken by a device s5tund cannot serve (a TAP, a
# dummy or, without that driver, a veth, a single-queue TUN), by a
# persistent multi-queue TUN nobody serves while persist is off, or by a
# running s5tund (busy_device_s5tund): exit 1, a message naming the device
# and what to do, and the device untouched.
case_busy_device() {
  local kind mode out err before after
  e2e_topology_up
  CFG_MODE="" CFG_QUEUES="" CFG_PROXY_ADDR="$S_ADDR4" CFG_PROXY_PORT="$MS_PORT" \
    e2e_write_config "$WORK/busy.ini"
  # Everything about the device but its counters.
  device_state() {
    in_c ip -d -o link show dev "$TUN" | sed 's/ *\\ */ /g'
    in_c ip -o addr show dev "$TUN"
  }
  for kind in tap dummy tun-single-queue; do
    case $kind in
      tap) in_c ip tuntap add mode tap name "$TUN" ;;
      dummy)   # not every kernel has the dummy driver; a veth is as foreign
        if ! in_c ip link add "$TUN" type dummy 2>/dev/null; then
          kind=veth
          in_c ip link add "$TUN" type veth peer name "$TUN-peer"
        fi ;;
      tun-single-queue) in_c ip tuntap add mode tun name "$TUN" ;;
    esac
    in_c ip addr add 192.0.2.1/24 dev "$TUN"
    before=$(device_state)
    for mode in thread process; do
      busy_try "$mode" "$kind, $mode"
      out=$BUSY_OUT err=$BUSY_ERR
      grep -qF "another device has this name" <<<"$err" \
        || fail "$kind, $mode: stderr does not say the name is taken: $(oneline "$err")"
      grep -qF "delete it or set [tun] name" <<<"$err" \
        || fail "$kind, $mode: stderr does not say what to do: $(oneline "$err")"
      grep -qF "$TUN" <<<"$err" || fail "$kind, $mode: stderr does not name $TUN: $(oneline "$err")"
      [[ -z $out ]] || fail "$kind, $mode: s5tund wrote to stdout: $(oneline "$out")"
      after=$(device_state)
      [[ $after == "$before" ]] \
        || fail "$kind, $mode: the existing $TUN was changed: before: $(oneline "$before") after: $(oneline "$after")"
      log "$kind named $TUN, mode $mode: exit 1, says the name is taken and what to do, device untouched"
    done
    in_c ip link del "$TUN"
  done
  busy_device_idle
  busy_device_s5tund
}

# A persistent multi-queue TUN device with no queue attached, s5tund without
# persist = true: it must not take over a device it was not told to keep.
busy_device_idle() {
  local mode err before after
  in_c ip tuntap add mode tun multi_queue name "$TUN"
  before=$(device_state)
  for mode in thread process; do
    busy_try "$mode" "idle persistent $TUN, $mode"
    err=$BUSY_ERR
    grep -qF "$TUN already exists" <<<"$err" || fail "idle persistent $TUN, $mode: stderr does not say $TUN exists: $(oneline "$err")"
    grep -qF "persist = true" <<<"$err" || fail "idle persistent $TUN, $mode: stderr does not mention persist = true: $(oneline "$err")"
    after=$(device_state)
    [[ $after == "$before" ]] || fail "idle persistent $TUN, $mode: changed: before: $(oneline "$before") after: $(oneline "$after")"
    log "idle persistent multi-queue $TUN, persist off, mode $mode: exit 1, device untouched"
  done
  in_c ip link del "$TUN"
}

# Everything of A that B could disturb: its queues, the auto-route rules and
# table, and the device's addresses.
busy_a_state() {
  echo "numqueues $(e2e_tun_numqueues)"
  in_c ip -4 rule show
  in_c ip -6 rule show
  in_c ip -4 route show table 5335
  in_c ip -6 route show table 5335
  in_c ip -o addr show dev "$TUN"
}

busy_tcp_total() {
  "$S5TUND" --stats "$WORK/busy-a.sock" --json | grep -o '"tcp_total":[0-9]*' | head -1 | cut -d: -f2
}

# busy_run_b WHAT INI ARGS...: B in C, bounded; sets B_RC, B_ERR and B_MS.
busy_run_b() {
  local what=$1 ini=$2 t0
  shift 2
  B_RC=0
  t0=$(date +%s%N)
  in_c timeout -k 5 10 "$S5TUND" --config "$ini" "$@" >"$WORK/busy-b.out" 2>"$WORK/busy-b.err" || B_RC=$?
  B_MS=$((($(date +%s%N) - t0) / 1000000))
  B_ERR=$(cat "$WORK/busy-b.err")
  printf '%s\n' "$B_ERR" | sed "s/^/    B ($what): /"
  ((B_RC == 124 || B_RC == 137)) && fail "B ($what): still running after 10 s, it should have refused to start"
  ((B_RC == 1)) || fail "B ($what): exit status $B_RC, expected 1"
  # One line says what is wrong (after the usual "starting" line).
  (($(grep -cE '^[0-9T:.-]+ (error|warn) ' <<<"$B_ERR") == 1)) \
    || fail "B ($what): expected one error line on stderr, got: $(oneline "$B_ERR")"
  return 0
}

# A second s5tund (B) with the same [tun] name as a running one (A), in
# every combination of modes, A once with persist = true: B exits 1 at once
# with one line naming the device and A's pid, and A's queues, rules,
# routes and traffic are as before; B's exit leaves A's rules. A second
# s5tund with another device but auto-route too cannot take A's table and
# rules either.
busy_device_s5tund() {
  local amode bmode ini before after t0 t1 persist
  e2e_start_target
  e2e_start_microsocks
  for amode in thread process; do
    persist=false
    [[ $amode == process ]] && persist=true
    ini=$WORK/busy-a-$amode.ini
    CFG_MODE=$amode CFG_QUEUES=2 CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$MS_PORT CFG_MARK=0x53 \
      CFG_PERSIST=$persist e2e_write_config "$ini"
    printf '%s\n' "" "[tun]" "auto-route = true" "[stats]" "socket = $WORK/busy-a.sock" >>"$ini"
    e2e_start_s5tund --config "$ini"
    e2e_wait_device "$amode" 2
    in_c ip route del 10.201.0.0/24 dev "$TUN"
    in_c ip -6 route del fd00:201::/64 dev "$TUN"
    client --host "$TGT4" echo --count 2 --retry-for 20
    before=$(busy_a_state)
    for bmode in thread process; do
      t0=$(busy_tcp_total)
      busy_run_b "A $amode persist=$persist, B $bmode" "$ini" --mode "$bmode"
      grep -qF "$TUN already exists and is in use (another s5tund? pid $S5PID)" <<<"$B_ERR" \
        || fail "B: stderr does not say '$TUN already exists and is in use (another s5tund? pid $S5PID)': $(oneline "$B_ERR")"
      after=$(busy_a_state)
      [[ $after == "$before" ]] || fail "B changed A's device or routing: before: $(oneline "$before") after: $(oneline "$after")"
      e2e_require_alive "after B"
      client --host "$TGT4" echo --count 2
      client --host "$TGT6" echo --count 2
      t1=$(busy_tcp_total)
      ((t1 >= t0 + 2)) || fail "A counted $((t1 - t0)) new TCP sessions, expected at least 2: the traffic went elsewhere"
      log "A $amode (persist $persist), B $bmode: B exited 1 in $B_MS ms naming A's pid; A's queues, rules, routes unchanged, traffic through A"
    done
    # Another device, but auto-route as well: the table and rules are A's.
    busy_run_b "tun1, auto-route" "$ini" --mode thread --tun tun1
    grep -qF "pid $S5PID" <<<"$B_ERR" || fail "B (tun1): stderr does not name A's pid $S5PID: $(oneline "$B_ERR")"
    grep -qF "auto-route" <<<"$B_ERR" || fail "B (tun1): stderr does not say auto-route is taken: $(oneline "$B_ERR")"
    in_c ip link show dev tun1 >/dev/null 2>&1 && fail "B (tun1) left a device tun1 behind"
    after=$(busy_a_state)
    [[ $after == "$before" ]] || fail "B (tun1) changed A's routing: before: $(oneline "$before") after: $(oneline "$after")"
    log "B with tun1 and auto-route: exit 1 in $B_MS ms, A's rules untouched"
    e2e_stop_s5tund
    ((S5RC == 0)) || fail "A exited with status $S5RC, expected 0"
    [[ -z $(in_c ip -4 rule show pref 5335) && -z $(in_c ip -6 rule show pref 5335) ]] \
      || fail "A's rules are still there after its clean exit"
    if [[ $persist == true ]]; then
      e2e_tun_numqueues | grep -qx 0 || fail "persistent $TUN still has queues after A exited"
      # persist = true reattaches to its own idle device: a new A serves.
      e2e_start_s5tund --config "$ini"
      e2e_wait_ready "$amode" 2
      e2e_stop_s5tund
      ((S5RC == 0)) || fail "A on the idle persistent $TUN exited with status $S5RC"
      in_c ip link del "$TUN"
    fi
  done
}
