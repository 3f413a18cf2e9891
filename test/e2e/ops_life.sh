# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases of operations, the daemon's life (run.sh runs them;
# ctest e2e.ops.CASE.MODE.qN): reload, readiness, supervision, a dead
# worker, drain, log reopening, syslog, a vanished device, a stalled worker.
# shellcheck source=ops_lib.sh
source "$HERE/ops_lib.sh"

# reload: SIGHUP reads the configuration again. The proxy moves from
# microsocks on MS_PORT to a second one on MS_PORT + 2: a session opened
# before (idling across the reload) still gets its reply through the old
# one, new connections go to the new one (the proxies' established
# connections say which); a key that needs a restart (mtu) warns and keeps
# its value; a file that does not load changes nothing and is reported
# (log with file:line:key, stats); the daemon serves throughout.
rl_established() {   # PORT: connections from C established at a proxy port in S
  in_s ss -Htn state established "( sport = :$1 )" | grep -c "$C_ADDR4" || true
}

rl_stat() {   # NAME: a top-level number of the stats document
  "$S5TUND" --stats "$STATS_SOCK" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

case_reload() {
  local port2=$((MS_PORT + 2)) ini go=$WORK/idle.go ipid rc=0 hpid
  ops_setup
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$port2" >>"$WORK/microsocks2.log" 2>&1 &
  e2e_wait_listen "$port2" "$S_ADDR4"
  ops_start
  ini=$WORK/s5tund.$S5_RUNS.ini
  e2e_wait_ready "$MODE" "$QUEUES"
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" --host "$TGT4" --port "$TGT_PORT" \
    --timeout 30 idle-echo --wait-file "$go" --idle-max 50 >"$WORK/idle.log" 2>&1 &
  ipid=$!
  E2E_LOGS+=("$WORK/idle.log")
  for i in $(seq $((T_START * 10))); do grep -q "idling" "$WORK/idle.log" && break; sleep 0.1; done
  grep -q "idling" "$WORK/idle.log" || fail "the idle connection did not open"
  (($(rl_established "$MS_PORT") >= 1)) || fail "the idle session is not at the first proxy"

  sed -i "s/^port = $MS_PORT\$/port = $port2/" "$ini"
  grep -q "^port = $port2\$" "$ini" || fail "could not edit the proxy port in $ini"
  sed -i "s/^\[tun\]\$/[tun]\nmtu = 1400/" "$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "main configuration reloaded" 10 "'configuration reloaded' line" >/dev/null
  e2e_wait_log "$S5LOG" "warn  main reload: \[tun\] mtu = 1400: needs a restart; keeping mtu = 8500" 10 \
    "warning about [tun] mtu" >/dev/null
  [[ $(in_c cat "/sys/class/net/$TUN/mtu") == 8500 ]] || fail "the device's MTU changed on reload"
  # A new session goes to the new proxy (held open while the proxies are counted).
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" --host "$TGT4" --port "$TGT_PORT" \
    --timeout 30 hold --hold 20 >"$WORK/hold.log" 2>&1 &
  hpid=$!
  for i in $(seq $((T_START * 10))); do (($(rl_established "$port2") >= 1)) && break; sleep 0.1; done
  (($(rl_established "$port2") >= 1)) || fail "no session at the new proxy (port $port2) after the reload"
  (($(rl_established "$MS_PORT") == 1)) || fail "$(rl_established "$MS_PORT") sessions at the old proxy, expected the idle one"
  kill "$hpid" 2>/dev/null || true
  wait "$hpid" 2>/dev/null || true
  client --host "$TGT6" concurrent 8
  # The session opened before the reload still works, through the old proxy.
  touch "$go"
  wait "$ipid" || rc=$?
  ((rc == 0)) || fail "the session opened before the reload failed: $(tail -n 1 "$WORK/idle.log")"
  log "reload: the idle session answered through port $MS_PORT, new ones went to port $port2, mtu kept"
  [[ $(rl_stat reloads) == 1 && $(rl_stat reload_failures) == 0 ]] || fail "stats: reloads $(rl_stat reloads), failures $(rl_stat reload_failures)"

  # Workers restarted after the reload (process mode) start with it too.
  if [[ $MODE == process ]]; then
    local old_pids
    old_pids=$(e2e_workers | tr '\n' ' ')
    # shellcheck disable=SC2086
    kill -KILL $old_pids
    for i in $(seq $((T_START * 10))); do
      [[ $(e2e_workers | wc -l) == "$QUEUES" && -z $(comm -12 <(tr ' ' '\n' <<<"$old_pids" | sort) <(e2e_workers | sort)) ]] && break
      sleep 0.1
    done
    client --host "$TGT4" echo --count 2 --retry-for 20
    ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" --host "$TGT4" --port "$TGT_PORT" \
      --timeout 30 hold --hold 20 >"$WORK/hold2.log" 2>&1 &
    hpid=$!
    for i in $(seq $((T_START * 10))); do (($(rl_established "$port2") >= 1)) && break; sleep 0.1; done
    (($(rl_established "$port2") >= 1)) || fail "a worker restarted after the reload does not use the new proxy"
    (($(rl_established "$MS_PORT") == 0)) || fail "a worker restarted after the reload went to the old proxy"
    kill "$hpid" 2>/dev/null || true
    wait "$hpid" 2>/dev/null || true
    log "workers killed and restarted after the reload use the new proxy"
  fi

  # A file that does not load: nothing changes, the error names file:line:key.
  printf '\n[session]\nbogus = 1\n' >>"$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "error main reload failed, configuration unchanged: $ini:[0-9]+: \[session\] bogus: unknown key" 10 \
    "'reload failed' line naming file, line and key" >/dev/null
  for i in $(seq 50); do [[ $(rl_stat reload_failures) == 1 ]] && break; sleep 0.1; done
  [[ $(rl_stat reload_failures) == 1 && $(rl_stat reloads) == 1 ]] || fail "stats after a bad reload: reloads $(rl_stat reloads), failures $(rl_stat reload_failures)"
  client --host "$TGT4" echo --count 3
  ops_stop_ok
}

# reload_busy: the reload of a 2,000,000-name rules-file (seconds of
# reading and compiling) does not hold up the control loop. Order of
# events, not times: a --stats asked after the SIGHUP is answered while the
# reload still runs (no "configuration reloaded" line yet, reloads 0 in the
# answer); a worker killed meanwhile is noticed at once but restarted only
# after the reload ended (no fork while the compile thread runs); two more
# SIGHUPs make one more reload, not two; SIGTERM during a third reload's
# compile stops the daemon (exit 0) without it. The list starts small (the
# start is quick) and the configuration names the big one for a reload.
rb_count() { grep -c -E -- "$1" "$S5LOG" || true; }   # lines of the log matching ERE

rb_wait_count() {   # ERE N SECS WHAT: at least N such lines within SECS
  local i
  for i in $(seq $(($3 * 10))); do
    (($(rb_count "$1") >= $2)) && return 0
    e2e_s5_alive || fail "s5tund exited waiting for $4"
    sleep 0.1
  done
  fail "no $4 within $3 s ($(rb_count "$1") such lines)"
}

rb_first() { grep -n -m 1 -E -- "$1" "$S5LOG" | cut -d: -f1; }   # ERE: line number of the first match

rb_list() {   # LIST: the configuration's rules-file, the file swapped in whole
  sed "s#^rules-file = .*#rules-file = $1 -> block#" "$RB_INI" >"$RB_INI.new"
  mv "$RB_INI.new" "$RB_INI"
}

rb_stats() {   # the stats document, and the wall time of the call in RB_MS
  local t0 t1
  t0=$(date +%s%N)
  "$S5TUND" --stats "$STATS_SOCK" --json >"$WORK/rb.json" || fail "--stats failed during the reload"
  t1=$(date +%s%N)
  RB_MS=$(((t1 - t0) / 1000000))
}

rb_json() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/rb.json" "$1"; }

case_reload_busy() {
  local t0 t1 n=2000000 pid idx killed restarted reloaded rc
  local hup='main SIGHUP: log reopened' done_re='main configuration reloaded'
  e2e_process_only
  ops_setup
  t0=$(date +%s%N)
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) print "n" i ".big.test" }' >"$WORK/big.txt"
  t1=$(date +%s%N)
  log "reload_busy: $n names ($(($(stat -c %s "$WORK/big.txt") >> 20)) MiB) written in $(((t1 - t0) / 1000000)) ms"
  echo "n1.small.test" >"$WORK/small.txt"
  ops_start "[rules]" "rules-file = $WORK/small.txt -> block"
  RB_INI=$WORK/s5tund.$S5_RUNS.ini
  e2e_wait_ready "$MODE" "$QUEUES"

  # 1: --stats during the compile.
  rb_list "$WORK/big.txt"
  kill -HUP "$S5PID"
  rb_wait_count "$hup" 1 10 "'SIGHUP: log reopened' line"
  rb_stats
  reloaded=$(rb_count "$done_re")
  ((reloaded == 0)) || fail "--stats answered only after the reload (took $RB_MS ms): the control loop waited for the compile"
  [[ $(rb_json reloads) == 0 ]] || fail "--stats during the reload says reloads $(rb_json reloads), expected 0"
  log "reload_busy: --stats answered in $RB_MS ms during the reload"

  # 2: a worker killed during the compile: its death noticed now, its
  # restart (a fork) only once the compile is over.
  pid=$(e2e_workers | head -n 1)
  idx=$(grep -E -m 1 "worker [0-9]+ started \(pid $pid\)" "$S5LOG" | sed -E 's/.*worker ([0-9]+) started.*/\1/')
  [[ -n $idx ]] || fail "no 'worker N started (pid $pid)' line"
  kill -KILL "$pid"
  rb_wait_count "worker $idx killed by " 1 10 "line about worker $idx's death"
  (($(rb_count "$done_re") == 0)) || fail "the death of worker $idx was noticed only after the reload"
  # 3: two more SIGHUPs during it (one at a time: the kernel merges a
  # signal sent while the same one is pending): one more reload, of the
  # small list.
  kill -HUP "$S5PID"
  rb_wait_count "$hup" 2 10 "second 'SIGHUP: log reopened' line"
  kill -HUP "$S5PID"
  rb_wait_count "$hup" 3 10 "third 'SIGHUP: log reopened' line"
  (($(rb_count "$done_re") == 0)) || fail "the first reload ended before the SIGHUPs meant to come during it"
  rb_list "$WORK/small.txt"
  rb_wait_count "$done_re" 2 120 "second 'configuration reloaded' line"
  rb_wait_count "worker $idx started" 2 30 "restart of worker $idx"
  killed=$(rb_first "worker $idx killed by ") reloaded=$(rb_first "$done_re")
  restarted=$(grep -n -E "worker $idx started" "$S5LOG" | sed -n 2p | cut -d: -f1)
  ((killed < reloaded && reloaded < restarted)) \
    || fail "worker $idx: killed at log line $killed, reload done at $reloaded, restarted at $restarted: expected that order"
  rb_stats
  [[ $(rb_json reloads) == 2 && $(rb_json reload_failures) == 0 ]] \
    || fail "stats: reloads $(rb_json reloads), failures $(rb_json reload_failures); expected 2 and 0"
  client --host "$TGT4" echo --count 2 --retry-for "$T_START"
  log "reload_busy: worker $idx restarted after the reload; 3 SIGHUPs made 2 reloads"

  # 4: SIGTERM during a compile: exit 0 without the reload.
  rb_list "$WORK/big.txt"
  kill -HUP "$S5PID"
  rb_wait_count "$hup" 4 10 "fourth 'SIGHUP: log reopened' line"
  rb_stats
  (($(rb_count "$done_re") == 2)) || fail "the third reload ended before the --stats that should run during it"
  t0=$(date +%s%N)
  kill -TERM "$S5PID"
  for _ in $(seq $((T_STOP * 100))); do e2e_pid_running "$S5PID" || break; sleep 0.01; done
  t1=$(date +%s%N)
  e2e_pid_running "$S5PID" && fail "s5tund still running ${T_STOP}s after SIGTERM"
  rc=0
  wait "$S5PID" || rc=$?
  S5PID=""
  ((rc == 0)) || fail "s5tund exited with status $rc after SIGTERM during a reload, expected 0"
  (($(rb_count "$done_re") == 2)) || fail "SIGTERM waited for the reload to end ($(rb_count "$done_re") 'reloaded' lines)"
  (($(rb_count "main Terminated: stopping") == 1)) || fail "no 'Terminated: stopping' line"
  if e2e_sanitizer_reports; then fail "sanitizer reports from s5tund (above)"; fi
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  log "reload_busy: SIGTERM during the compile: exit 0 in $(((t1 - t0) / 1000000)) ms, the reload abandoned"
}

# ready: a stand-in for systemd's notification socket gets READY=1 only
# when traffic flows: right then the pid file holds the daemon's pid and
# new connections work on their first attempt; STOPPING=1 on SIGTERM, and
# the pid file is gone after exit.
case_ready() {
  local nsock=$WORK/notify.sock pidf=$WORK/s5tund.pid lst=$WORK/notify.listening
  local chk=$WORK/notify.checked nlog=$WORK/notify.log npid i rc=0
  ops_setup
  E2E_LOGS+=("$nlog")
  # The listener is bound before the daemon starts; it learns the daemon's
  # pid from a file written right after.
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$HERE/ops.py" notify --socket "$nsock" \
    --pid-file "$pidf" --expect-pid-file "$WORK/s5pid" --host "$TGT4" --port "$TGT_PORT" \
    --conns 8 --stats "$WORK/stats.sock" --tun "$TUN" --queues "$QUEUES" --timeout 40 --listening-file "$lst" --checked-file "$chk" \
    --on-ready "ip route replace 10.201.0.0/24 dev $TUN" \
    --on-ready "ip -6 route replace fd00:201::/64 dev $TUN" >"$nlog" 2>&1 &
  npid=$!
  for i in $(seq $((T_START * 10))); do
    [[ -s $lst ]] && break
    kill -0 "$npid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -s $lst ]] || { cat "$nlog"; fail "the notification listener did not start"; }
  NOTIFY_SOCKET=$nsock ops_start "[run]" "pid-file = $pidf"
  echo "$S5PID" >"$WORK/s5pid"
  for i in $(seq $((T_START * 10))); do
    [[ -s $chk ]] && break
    kill -0 "$npid" 2>/dev/null || break
    e2e_s5_alive || fail "s5tund exited before READY=1"
    sleep 0.1
  done
  [[ -s $chk ]] || { cat "$nlog"; fail "READY=1 checks did not complete within ${T_START}s"; }
  [[ $(cat "$pidf") == "$S5PID" ]] || fail "pid file holds $(cat "$pidf"), expected $S5PID"
  log "READY=1 checked: $(grep -F 'at READY=1' "$nlog" | sed 's/^ops: //')"
  ops_stop_ok
  wait "$npid" || rc=$?
  cat "$nlog"
  ((rc == 0)) || fail "notification listener failed (status $rc)"
  grep -q "STOPPING=1 arrived" "$nlog" || fail "no STOPPING=1"
  [[ ! -e $pidf ]] || fail "pid file $pidf is still there after exit"
  log "STOPPING=1 on SIGTERM, pid file removed"
  e2e_s5_log_clean
}

# supervise: the worker of one queue is killed with SIGKILL 4 times, each
# replacement as soon as it serves. Connections on the other queues echo
# throughout; those on the killed queue end; the device is the same
# (ifindex); the restart delays logged double (as documented: 100 ms, then
# twice the last while workers die within 10 s of starting); the restarts
# counter says 4; new connections work on every queue afterwards. Then
# the supervisor killed as it forks its workers leaves none running.
case_supervise() {
  local kills=4 ifindex out victim lines prev d lived want
  e2e_process_only
  ops_setup
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  ifindex=$(in_c cat "/sys/class/net/$TUN/ifindex")
  out=$(ops supervise --stats "$STATS_SOCK" --host "$TGT4" --port "$TGT_PORT" --conns 12 \
    --kills "$kills") || { printf '%s\n' "$out"; fail "supervise checks failed"; }
  printf '%s\n' "$out"
  victim=$(awk '/^VICTIM /{print $2}' <<<"$out")
  e2e_require_alive "after $kills worker kills"
  [[ $(in_c cat "/sys/class/net/$TUN/ifindex") == "$ifindex" ]] \
    || fail "$TUN has ifindex $(in_c cat "/sys/class/net/$TUN/ifindex") now, was $ifindex: re-created"
  (($(e2e_tun_numqueues) == QUEUES)) || fail "$TUN has $(e2e_tun_numqueues) queues, expected $QUEUES"
  log "$TUN is the same device (ifindex $ifindex) with $QUEUES queues"
  # The supervisor's log: one line per kill for this queue, delays doubling.
  lines=$(grep -E "worker $victim killed by .* after [0-9]+ ms; restarting in [0-9]+ ms" "$S5LOG" || true)
  printf '%s\n' "$lines" | sed 's/^/    /'
  (($(grep -c . <<<"$lines") == kills)) || fail "expected $kills restart lines for worker $victim"
  prev=0
  while read -r lived d; do
    # Documented: 100 ms after a worker that lived 10 s or more (or the
    # first time), otherwise twice the previous delay, at most 30 s.
    if ((prev == 0 || lived >= 10000)); then want=100
    else want=$((prev * 2 > 30000 ? 30000 : prev * 2)); fi
    ((d == want)) || fail "worker $victim lived $lived ms and is restarted in $d ms, expected $want (previous $prev)"
    prev=$d
  done < <(sed -E 's/.* after ([0-9]+) ms; restarting in ([0-9]+) ms.*/\1 \2/' <<<"$lines")
  log "restart delays of worker $victim: $(sed -E 's/.*restarting in ([0-9]+) ms.*/\1/' <<<"$lines" | tr '\n' ' ')ms"
  CLIENT_T=$((T_START + T_STEP)) client --host "$TGT4" --timeout 10 concurrent 32 --retry-for "$T_START"
  client --host "$TGT6" echo
  ops_stop_ok
  supervise_killed_early
}

# The supervisor killed -9 as it forks its workers: a worker forked just
# before, that had not yet asked for its parent's death signal, gets none;
# it must see that its parent is gone and exit rather than serve a queue
# with no supervisor. strace holds every prctl() 0.5 s (the worker's
# first call asks for that signal), so the kill lands in that window.
supervise_killed_early() {
  local ini=$WORK/s5tund.early.ini tracer sup i pat
  command -v strace >/dev/null 2>&1 || fail "strace is missing (run 'make deps')"
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$MS_PORT e2e_write_config "$ini"
  in_c strace -f -qq -o /dev/null -e trace=prctl -e inject=prctl:delay_enter=500000 \
    "$S5TUND" --config "$ini" >>"$WORK/early.log" 2>&1 &
  tracer=$!
  pat="^$S5TUND --config $ini\$" # s5tund's processes, not strace's
  for i in $(seq $((T_START * 20))); do sup=$(pgrep -o -f -- "$pat" || true); [[ -n $sup ]] && break; sleep 0.05; done
  [[ -n $sup ]] || fail "s5tund did not start under strace: $(oneline "$(tail -3 "$WORK/early.log")")"
  for i in $(seq $((T_START * 100))); do pgrep -P "$sup" >/dev/null && break; sleep 0.01; done
  pgrep -P "$sup" >/dev/null || fail "the supervisor forked no worker: $(oneline "$(tail -3 "$WORK/early.log")")"
  kill -KILL "$sup"
  for i in $(seq $((T_STOP * 10))); do pgrep -f -- "$pat" >/dev/null || break; sleep 0.1; done
  if pgrep -fa -- "$pat"; then
    pkill -KILL -f -- "$pat"
    fail "a worker outlived its supervisor, killed -9 as it forked the workers"
  fi
  wait "$tracer" 2>/dev/null || true
  for i in $(seq $((T_STOP * 10))); do e2e_tun_exists || break; sleep 0.1; done
  e2e_tun_exists && fail "$TUN is left after the supervisor and its workers are gone"
  log "supervisor killed -9 as it forked its workers: no worker outlived it"
}

# deadworker (process mode): clients of a worker killed with SIGKILL are
# reset, those of the other workers are untouched. Four phases, each with
# 12 clients (more until two queues have some) mapped to their queues by
# the stats, and one kill 1.5 s after the last started: idle clients
# waiting for a reply the target sends 8 s after their request, clients in
# the middle of a paced download, clients in the middle of a paced upload,
# and idle clients again over IPv6.
# The downloads stop reading 0.7 s before the kill (a reading client's window
# updates would draw a RST from the replacement even without s5tund's help)
# and 2 s after it the killed worker's are in TCP state CLOSE, the others
# ESTABLISHED; then they read on. (The uploads' own retransmissions draw
# that RST: that phase shows only that nothing breaks.)
# Every client of the killed worker gets ECONNRESET within 3 s of the kill
# (issue 10's bound, not a speed: without the resets they wait forever);
# every other client gets its reply, its whole download or its digest; the
# victim queue's tcp_reset_dead_worker grows by its clients and the
# supervisor logs one line with their number. With one queue there are no
# other workers' clients, and only the idle phase. With 4 queues the device has
# no offloads (the probes are written without a virtio header) and the flow
# tables are sized by max-sessions (64) instead of the default.
case_deadworker() {
  e2e_process_only
  ops_setup
  if ((QUEUES >= 4)); then
    CFG_MAX_SESSIONS=64 ops_start "[tun]" "offload = false"
  else
    ops_start
  fi
  e2e_wait_ready "$MODE" "$QUEUES"
  # One queue: every client is the dead worker's, and the probes go out once
  # the replacement serves; one phase (idle) is enough for that path.
  local phases=idle,download,upload,idle6
  ((QUEUES > 1)) || phases=idle
  phases=${OPS_DW_PHASES:-$phases}   # to run some phases only
  ops deadworker --stats "$STATS_SOCK" --log "$S5LOG" --host "$TGT4" --host6 "$TGT6" \
    --port "$TGT_PORT" --conns 12 --phases "$phases"
  e2e_require_alive "after the worker kills"
  CLIENT_T=$((T_START + T_STEP)) client --host "$TGT4" --timeout 10 concurrent 16 --retry-for "$T_START"
  client --host "$TGT6" echo
  ops_stop_ok
}

# drain: drain-timeout = 3, connections open on every queue, SIGTERM: once
# every worker says it drains, new connections (8, at once) are refused with
# a RST (each gets drain-timeout / 2 for it), the open ones still echo; at
# the end of the drain those left open are reset and the daemon exits 0
# (bounded wait).
case_drain() {
  local drain=${OPS_DRAIN_TIMEOUT:-3} rc=0 i
  ops_setup
  ops_start "[run]" "drain-timeout = $drain"
  e2e_wait_ready "$MODE" "$QUEUES"
  local pid=$S5PID
  ops drain --stats "$STATS_SOCK" --pid "$pid" --log "$S5LOG" --queues "$QUEUES" \
    --drain-timeout "$drain" --host "$TGT4" --port "$TGT_PORT" ${OPS_DRAIN_ARGS:+"$OPS_DRAIN_ARGS"}
  for i in $(seq $(((drain + T_STOP) * 10))); do
    e2e_pid_running "$pid" || break
    sleep 0.1
  done
  e2e_pid_running "$pid" && fail "s5tund still running $((drain + T_STOP))s after SIGTERM with drain-timeout = $drain"
  wait "$pid" || rc=$?
  S5PID=""
  ((rc == 0)) || fail "s5tund exited with status $rc after the drain, expected 0"
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  log "s5tund exited 0 after the drain, $TUN is gone"
  e2e_s5_log_clean
}

# drain_idle: as drain, but the open sessions are all on one queue: the
# workers of the other queues have nothing to drain when SIGTERM comes, and
# new connections hashed to their queues must be refused (RST) all the same,
# not left unanswered.
case_drain_idle() {
  # A longer drain: a SYN nobody answers is only seen as such after a while
  # (each new connection gets drain-timeout / 2).
  OPS_DRAIN_ARGS=--idle-queues OPS_DRAIN_TIMEOUT=12 case_drain
}

# drain_close: drain-timeout = 3600; the open sessions end during the drain
# (FIN both ways): the daemon then exits 0 without waiting out the drain
# (a bounded wait far below 3600 s).
case_drain_close() {
  local rc=0 i
  ops_setup
  ops_start "[run]" "drain-timeout = 3600"
  e2e_wait_ready "$MODE" "$QUEUES"
  local pid=$S5PID
  ops drain --stats "$STATS_SOCK" --pid "$pid" --log "$S5LOG" --queues "$QUEUES" \
    --drain-timeout 3600 --close --host "$TGT4" --port "$TGT_PORT"
  for i in $(seq $((T_STOP * 10))); do
    e2e_pid_running "$pid" || break
    sleep 0.1
  done
  e2e_pid_running "$pid" && fail "s5tund still running ${T_STOP}s after its last session ended (drain-timeout 3600)"
  wait "$pid" || rc=$?
  S5PID=""
  ((rc == 0)) || fail "s5tund exited with status $rc, expected 0"
  log "the sessions ended during the drain: s5tund exited 0 without waiting for drain-timeout"
  e2e_s5_log_clean
}

# log_reopen: [log] file = PATH; the file is renamed, SIGHUP: the daemon's
# lines from then on (SIGUSR1 summaries, the workers' lines at shutdown) are
# in a new file at PATH, none in the renamed one.
case_log_reopen() {
  local lf=$WORK/s5tund.file.log old n_old
  ops_setup
  ops_start "[log]" "file = $lf"
  E2E_LOGS+=("$lf" "$lf.1")
  e2e_wait_ready "$MODE" "$QUEUES"
  e2e_wait_log "$lf" " ready: " 10 "'ready' line in $lf" >/dev/null
  # Worker lines reach the file before the rename too (a connection at debug
  # level is not needed: every worker logs "serving TUN queue").
  (($(grep -c " q[0-9]* serving TUN queue" "$lf" || true) == QUEUES)) \
    || fail "$lf lacks a 'serving' line per worker"
  mv "$lf" "$lf.1"
  kill -HUP "$S5PID"
  e2e_wait_log "$lf" "SIGHUP: log reopened" 30 "'log reopened' line in a new $lf" >/dev/null
  n_old=$(wc -l <"$lf.1")
  kill -USR1 "$S5PID"
  e2e_wait_log "$lf" " main total: " 30 "SIGUSR1 total line in the new $lf" >/dev/null
  client --host "$TGT4" echo
  ops_stop_ok
  # Every worker logs when it stops: into the new file.
  local n_new
  n_new=$(grep -c " q[0-9]* stopped (" "$lf" || true)
  ((n_new == QUEUES)) \
    || fail "the new $(basename "$lf") has $n_new worker 'stopped' lines, expected $QUEUES; the renamed file has: $(oneline "$(grep " q[0-9]* stopped (" "$lf.1" || true)")"
  old=$(tail -n +$((n_old + 1)) "$lf.1")
  [[ -z $old ]] || fail "lines written to the renamed file after SIGHUP: $(oneline "$old")"
  log "after rename + SIGHUP every line (main and workers) went to the new $lf; the renamed file got none"
  e2e_s5_log_clean "$lf"
}

# syslog: [log] file = syslog, /dev/log being a listener of the test's own
# (privlog.sh: a private mount namespace, the machine's syslog untouched).
# Every worker logs through it and serves (in process mode each worker
# process reopens the log after closing what it inherited; a worker that
# wrote to the parent's closed syslog fd aborted at start, restarted
# forever); no worker dies, SIGHUP keeps logging, and the workers' lines at
# the stop arrive too.
case_syslog() {
  local sock=$WORK/devlog.sock out=$WORK/syslog.txt i n
  ops_setup
  E2E_LOGS+=("$out")
  : >"$out"
  ip netns exec "$NS_C" "$PY" "$HERE/ops.py" syslogd --socket "$sock" --out "$out" &
  for i in $(seq $((T_START * 10))); do
    [[ -S $sock ]] && break
    sleep 0.1
  done
  [[ -S $sock ]] || fail "the syslog listener did not bind $sock"
  E2E_S5_WRAP=("$HERE/privlog.sh" "$sock")
  ops_start "[log]" "file = syslog"
  E2E_S5_WRAP=()
  e2e_wait_ready "$MODE" "$QUEUES"
  client --host "$TGT4" concurrent 16
  client --host "$TGT6" echo
  e2e_wait_log "$out" "s5tund\[[0-9]+\]: main ready: " 10 "'ready' line in syslog" >/dev/null
  n=$(grep -cE "s5tund\[[0-9]+\]: q[0-9]+ serving TUN queue" "$out" || true)
  ((n == QUEUES)) || fail "syslog got $n 'serving TUN queue' lines, expected $QUEUES: $(oneline "$(cat "$out")")"
  grep -E "killed by|exit code|restarting in" "$out" "$S5LOG" \
    && fail "a worker died with [log] file = syslog"
  kill -HUP "$S5PID"
  e2e_wait_log "$out" "SIGHUP: log reopened" 10 "'log reopened' line in syslog" >/dev/null
  client --host "$TGT4" echo
  ops_stop_ok
  for i in $(seq $((T_STOP * 10))); do
    n=$(grep -cE "s5tund\[[0-9]+\]: q[0-9]+ stopped \(" "$out" || true)
    ((n == QUEUES)) && break
    sleep 0.1
  done
  ((n == QUEUES)) || fail "syslog got $n worker 'stopped' lines, expected $QUEUES"
  [[ $(grep -cv "s5tund\[" "$S5LOG") -le 1 ]] || fail "lines on stderr with [log] file = syslog: $(oneline "$(cat "$S5LOG")")"
  log "syslog: $(wc -l <"$out") lines from main and $QUEUES workers, none died, SIGHUP and stop logged"
}

# vanish: the device is deleted under the running daemon (ip link del): it
# must not sit there serving nothing; it exits 1 at once with a line that
# says what happened (systemd's Restart=on-failure then starts it afresh).
case_vanish() {
  local pid i rc=0 line
  ops_setup
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  pid=$S5PID
  in_c ip link del "$TUN"
  for i in $(seq $((T_STOP * 10))); do
    e2e_pid_running "$pid" || break
    sleep 0.1
  done
  e2e_pid_running "$pid" && fail "s5tund still running ${T_STOP}s after $TUN was deleted"
  wait "$pid" || rc=$?
  S5PID=""
  ((rc == 1)) || fail "s5tund exited with status $rc after $TUN was deleted, expected 1"
  line=$(grep -E "error main $TUN was deleted" "$S5LOG") \
    || fail "no 'error main $TUN was deleted' line: $(oneline "$(tail -5 "$S5LOG")")"
  grep -q "restarting in" "$S5LOG" && fail "workers were restarted on a deleted device"
  log "device deleted: exit status 1, $line"
}

# stall (process mode): a worker stopped with SIGSTOP is reported ("event
# loop has not turned"), and once continued ("turns again"); it was not
# restarted meanwhile, and the device still serves every queue.
case_stall() {
  local victim pid line
  e2e_process_only
  ops_setup
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  victim=$((QUEUES - 1))
  pid=$(in_c "$S5TUND" --stats "$STATS_SOCK" --json | "$PY" -c \
    'import json,sys; print(json.load(sys.stdin)["queues"][int(sys.argv[1])]["pid"])' "$victim")
  ((pid > 0)) || fail "no pid for queue $victim in the stats"
  kill -STOP "$pid"
  line=$(e2e_wait_log "$S5LOG" "queue $victim: worker's event loop has not turned for [0-9]+ ms" 30 \
    "stall report for queue $victim") || { kill -CONT "$pid"; exit 1; }
  log "stopped worker $pid (queue $victim): $line"
  kill -CONT "$pid"
  line=$(e2e_wait_log "$S5LOG" "queue $victim: worker's event loop turns again" 30 \
    "'turns again' for queue $victim")
  log "continued: $line"
  e2e_pid_running "$pid" || fail "worker $pid is gone after SIGCONT"
  grep -q "restarting in" "$S5LOG" && fail "a worker was restarted: $(grep "restarting in" "$S5LOG")"
  CLIENT_T=$((T_START + T_STEP)) client --host "$TGT4" --timeout 10 concurrent 16 --retry-for "$T_START"
  ops_stop_ok
}
