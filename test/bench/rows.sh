# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# The rows users compare (sourced by run.sh, after its cases): per mode with
# one queue, and for the direct path,
#   - start-to-ready (exec to READY=1) and wake-ups while idle;
#   - memory idle, with HOLD_N TCP connections held, after they close, with
#     HOLD_N UDP flows, after they end;
#   - connect-request-response (1 KB each way, then close) per second and
#     request-response on one held connection, p50/p99;
#   - time to first byte through a proxy RELAY_DELAY_MS away each way (the
#     delay relay), for each variant of TTFB_VARIANTS, in round trips of the
#     relay's measured round trip and in ms.
# Every figure goes to $OUT/raw/rows/NAME/meta; report_rows.py renders them.
# A row that could not run is a failure (run.sh's exit status), except a
# variant whose key this binary does not know: skipped, with a note.

RELAY_DELAY_MS=${BENCH_RELAY_DELAY_MS:-25}
RELAY_PROXY_PORT=1090 # delay relay -> the SOCKS5 server (1090-1093: reserved in S, run.sh)
RELAY_TGT_PORT=1091   # delay relay -> benchsrv's request/response port (direct path)
RELAY_ECHO_PORT=1092  # delay relay -> benchsrv's echo port (the relay's round trip)
RELAY_PIDS=()

# Name and extra [socks5] lines of each TTFB variant ("\n" separates lines).
TTFB_VARIANTS=(
  "nopool|pool = 0"
  "nopool+pipeline|pool = 0\npipeline = true"
  "pool|pool = 4"
  "pool+optimistic|pool = 4\noptimistic = true"
)

# rows_relay_start PORT UPSTREAM [OPTION...]: a delay relay in the server
# namespace on S_ADDR4:PORT, to UPSTREAM (ADDR:PORT), with delayrelay.py's
# OPTIONs (the upstream rows': --connect-round-trip).
rows_relay_start() {
  local port=$1 up=$2
  shift 2
  rm -f "$WORK/relay.$port.ready"
  ip netns exec "$NS_S" "$PY" "$BENCH_DIR/../e2e/delayrelay.py" --listen "$S_ADDR4" --port "$port" --to "$up" \
    --delay-ms "$RELAY_DELAY_MS" --ready-file "$WORK/relay.$port.ready" "$@" >>"$OUT/raw/delayrelay.log" 2>&1 &
  RELAY_PIDS+=($!)
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/relay.$port.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/relay.$port.ready ]] || bench_die "the delay relay on $port did not start ($OUT/raw/delayrelay.log)"
}

# The relays of the rows in the server namespace and their measured round
# trip.
rows_relays_up() {
  rows_relay_start "$RELAY_PROXY_PORT" "$S_ADDR4:$PROXY_PORT"
  rows_relay_start "$RELAY_TGT_PORT" "$TGT4:$RR_PORT"
  rows_relay_start "$RELAY_ECHO_PORT" "$TGT4:$ECHO_PORT"
  mkdir -p "$OUT/raw/rows"
  ip netns exec "$NS_C" "$PY" "$BENCH_DIR/rtprobe.py" --connect "$S_ADDR4:$RELAY_ECHO_PORT" --rounds 20 \
    >"$OUT/raw/rows/relay.out" 2>&1 || bench_die "delay relay probe: $(cat "$OUT/raw/rows/relay.out")"
  bench_log "delay relay ($RELAY_DELAY_MS ms each way): $(cat "$OUT/raw/rows/relay.out")"
}
rows_relays_down() {
  local p
  for p in "${RELAY_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  RELAY_PIDS=()
}

# Context switches (voluntary and not) of every thread of the s5tund tree:
# each is one wake-up of a thread that slept, or a preemption.
tree_switches() {
  local p sum=0 v
  for p in $(tree_pids "$1"); do
    for v in $(cat /proc/"$p"/task/*/status 2>/dev/null | awk '/ctxt_switches:/ {print $2}'); do
      sum=$((sum + v))
    done
  done
  echo "$sum"
}

rows_mem() {   # NAME: RSS and PSS of the tree now
  local a b c d
  read -r a b c d <<<"$(tree_mem "$S5PID")"
  meta "mem_${1}_rss_kb" "$a"
  meta "mem_${1}_pss_kb" "$b"
  say "memory $1: RSS $a kB, PSS $b kB ($c process(es), $d thread(s))"
}

# rows_hold tcp|udp PORT SETTLE: holds HOLD_N connections or flows, reads
# the memory, closes them, waits SETTLE seconds (TIME_WAIT; the UDP idle
# timeout), reads it again.
rows_hold() {
  local kind=$1 port=$2 settle=$3 hpid out=$CASE_DIR/hold_$1.out i rc=0
  ip netns exec "$NS_C" "$OUT/bin/holder" "$kind" -a "$TGT4" -p "$port" -n "$HOLD_N" -t 5000 >"$out" 2>&1 &
  hpid=$!
  for i in $(seq $((HOLD_N / 5 + T_START * 10))); do
    [[ -s $out ]] && break
    e2e_pid_running "$hpid" || break
    sleep 0.1
  done
  if ! grep -q "held=$HOLD_N " "$out"; then
    kill -TERM "$hpid" 2>/dev/null || true
    wait "$hpid" 2>/dev/null || true
    meta "hold_${kind}_rc" "failed: $(head -c 300 "$out")"
    say "hold $kind: FAILED: $(head -c 300 "$out")"
    return 0
  fi
  sleep 1
  rows_mem "${kind}_held"
  kill -TERM "$hpid"
  wait "$hpid" || rc=$?
  meta "hold_${kind}_rc" "$rc"
  say "hold $kind: rc=$rc $(cat "$out")"
  sleep "$settle"
  rows_mem "${kind}_closed"
}

# The 1 KB rows: connect-request-response, and request-response on one
# held connection (the direct path too).
rows_rr() {
  local rc=0
  timeout -k 5 $((${CONN_SECS%.*} + 60)) ip netns exec "$NS_C" "$CONNRATE" rr -a "$TGT4" -p "$RR_PORT" -c "$CONC" \
    -d "$CONN_SECS" -q 1024 -r 1024 -t 5000 >"$CASE_DIR/crr1k.out" 2>&1 || rc=$?
  meta crr1k_rc "$rc"
  say "crr 1 KB: rc=$rc $(head -c 300 "$CASE_DIR/crr1k.out")"
  rc=0
  timeout -k 5 $((${CONN_SECS%.*} + 60)) ip netns exec "$NS_C" "$CONNRATE" ka -a "$TGT4" -p "$KA_PORT" -c 1 \
    -d "$CONN_SECS" -q 1024 -r 1024 -t 5000 >"$CASE_DIR/rr1k.out" 2>&1 || rc=$?
  meta rr1k_rc "$rc"
  say "rr 1 KB held: rc=$rc $(head -c 300 "$CASE_DIR/rr1k.out")"
}

# rows_ttfb NAME ADDR PORT: sequential connections (one at a time) for
# TTFB_SECS: the time to first byte each waits.
rows_ttfb() {
  local name=$1 rc=0
  timeout -k 5 $((TTFB_SECS + 60)) ip netns exec "$NS_C" "$CONNRATE" rr -a "$2" -p "$3" -c 1 -d "$TTFB_SECS" \
    -q 64 -r 128 -t 5000 >"$CASE_DIR/ttfb_$name.out" 2>&1 || rc=$?
  meta "ttfb_${name}_rc" "$rc"
  say "ttfb $name: rc=$rc $(head -c 300 "$CASE_DIR/ttfb_$name.out")"
}

# rows_start CONFIG: s5tund (one queue) under a stand-in notification
# socket; records start-to-ready (exec to READY=1) as ready_ms[_SUFFIX].
rows_start() {
  local cfg=$1 suffix=${2:-} nsock=$WORK/notify.sock lst=$WORK/notify.listening npid t0 i
  rm -f "$lst"
  ip netns exec "$NS_C" "$PY" "$BENCH_DIR/notifywait.py" --socket "$nsock" --listening-file "$lst" \
    --timeout "$T_START" >"$CASE_DIR/notify$suffix.out" 2>&1 &
  npid=$!
  for i in $(seq $((T_START * 10))); do [[ -s $lst ]] && break; sleep 0.1; done
  [[ -s $lst ]] || { meta setup "the notification listener did not start"; exit 1; }
  t0=$EPOCHREALTIME
  NOTIFY_SOCKET=$nsock e2e_start_s5tund -c "$cfg" 3>&-
  wait "$npid" || { meta setup "no READY=1: $(cat "$CASE_DIR/notify$suffix.out"; tail -n 3 "$S5LOG")"; exit 1; }
  meta "ready_ms$suffix" "$(awk -v a="$t0" -v b="$(sed -n 's/^ready_at=//p' "$CASE_DIR/notify$suffix.out")" \
    'BEGIN {printf "%.1f", (b - a) * 1000}')"
  e2e_wait_device "$MODE" 1
}

rows_config() {   # FILE PROXY_PORT EXTRA: one queue, the mode, the extra [socks5] lines
  printf '%s\n' "mode = $MODE" "queues = 1" "[tun]" "name = $TUN" "mtu = $MTU" "ipv4 = $TUN_IPV4" \
    "ipv6 = $TUN_IPV6" "[socks5]" "address = $S_ADDR4" "port = $2" >"$1"
  [[ -z $3 ]] || printf '%b\n' "$3" >>"$1"
  # UDP flows end 5 s after their last datagram, so "after they end" is
  # read within the run (the default is 60 s).
  printf '%s\n' "[session]" "udp-idle-timeout = 5" >>"$1"
}

rows_stop() { case_exit; in_c ip route del 10.201.0.0/24 2>/dev/null || true; }

# One mode: start, idle, memory, the 1 KB rows, then the TTFB variants.
rows_mode() {
  MODE=$1
  local cfg=$WORK/rows-$MODE.ini w0 w1 v name extra
  trap 'case_exit' EXIT
  meta mode "$MODE"
  rows_config "$cfg" "$PROXY_PORT" ""
  rows_start "$cfg"
  sleep 1
  rows_mem idle
  w0=$(tree_switches "$S5PID")
  sleep "$IDLE_SECS"
  w1=$(tree_switches "$S5PID")
  meta idle_secs "$IDLE_SECS"
  meta idle_switches $((w1 - w0))
  say "ready in $(sed -n 's/^ready_ms=//p' "$CASE_DIR/meta") ms; $((w1 - w0)) wake-ups in ${IDLE_SECS}s idle"
  rows_rr
  rows_hold tcp "$ECHO_PORT" 3
  rows_hold udp "$UDP_ECHO_PORT" 7
  e2e_s5_alive || { meta died "during the rows"; exit 1; }
  rows_stop
  for v in "${TTFB_VARIANTS[@]}"; do
    name=${v%%|*} extra=${v#*|}
    rows_config "$cfg" "$RELAY_PROXY_PORT" "$extra"
    if ! "$S5TUND" -c "$cfg" --check-config >/dev/null 2>"$CASE_DIR/check_$name.err"; then
      meta "ttfb_${name}_skipped" "$(tr '\n' ' ' <"$CASE_DIR/check_$name.err" | sed 's/.*: //' | head -c 200)"
      say "ttfb $name: skipped, this binary rejects the key: $(cat "$CASE_DIR/check_$name.err")"
      continue
    fi
    rows_start "$cfg" "_$name"
    # A warm-up exchange (and a moment for a pool to fill) before timing.
    ip netns exec "$NS_C" "$CONNRATE" probe -a "$TGT4" -p "$RR_PORT" -w "$T_START" -t 3000 >/dev/null 2>&1 || true
    sleep 0.5
    rows_ttfb "$name" "$TGT4" "$RR_PORT"
    rows_stop
  done
  trap - EXIT
}

rows_direct() {
  trap 'in_c ip route del 10.201.0.0/24 via "$S_ADDR4" dev veth0 2>/dev/null || true' EXIT
  in_c ip route replace 10.201.0.0/24 via "$S_ADDR4" dev veth0
  rows_rr
  # The same client at the same distance, no tunnel, no proxy: the relay
  # forwards straight to the target.
  rows_ttfb direct "$S_ADDR4" "$RELAY_TGT_PORT"
}

# rows_sub WHAT DIR LOG CMD...: CMD in a subshell (a failure ends that one
# only), in the background (a signal is handled at once), its output in
# LOG, its figures in DIR/meta (CASE_DIR); a failure is reported and
# recorded as case_rc.
rows_sub() {
  local what=$1 log=$3 rc=0
  CASE_DIR=$2
  shift 3
  mkdir -p "$CASE_DIR"
  : >"$CASE_DIR/meta"
  ( "$@" ) 3>&1 >"$log" 2>&1 &
  CASE_PID=$!
  wait "$CASE_PID" || rc=$?
  CASE_PID=""
  if ((rc != 0)); then
    bench_log "$what FAILED (exit $rc); its log, last lines:"
    tail -n 25 "$log" | sed 's/^/    /'
    echo "case_rc=$rc" >>"$CASE_DIR/meta"
  fi
}

rows_direct_sub() { S5PID=""; rows_direct; }

# The modes of the rows: every one; the short run (CI) the last alone
# (process by default), as the router rows: it asserts only that each row
# ran, and thread mode's own data path runs in its iperf3 case.
rows_modes() { if [[ $SHORT == 1 ]]; then echo "${MODES##* }"; else echo "$MODES"; fi; }

# All rows. The relays stay up for the upstream rows (rows_upstream.sh);
# run.sh ends them.
run_rows() {
  local name
  rows_relays_up
  for name in direct $(rows_modes); do
    bench_log "rows $name"
    if [[ $name == direct ]]; then
      rows_sub "rows $name" "$OUT/raw/rows/$name" "$OUT/raw/rows/$name.log" rows_direct_sub
    else
      rows_sub "rows $name" "$OUT/raw/rows/$name" "$OUT/raw/rows/$name.log" rows_mode "$name"
    fi
  done
}
