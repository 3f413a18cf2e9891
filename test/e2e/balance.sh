# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# Several upstreams: [balance] strategies, health and failover before the
# SYN-ACK (run.sh runs them; ctest e2e.CASE.MODE.qN). Two microsocks in S,
# a on port 1080 and b on 1088, each binding its outgoing connections to an
# address of its own (BIND_A, BIND_B), so that the target's log (a line per
# connection, with its peer) counts what each upstream carried.
#
#   balance_failover  failover, check-interval = 1: everything through a;
#                     a killed: 100 connections at once, none fails, all
#                     through b, "upstream a is down" once; a restarted: its
#                     check brings it back ("up again"), connections go
#                     through a again. Both killed: 20 clients refused, one
#                     "every upstream is down" line, not one per SYN; both
#                     back: traffic. With optimistic = true (the SYN-ACK
#                     before the CONNECT): a killed, 50 connections, none
#                     fails (the request had not gone out, so the retry on b
#                     is safe), all through b.
#   balance_spread    round-robin with weights 1 and 3 over 200 connections:
#                     exactly 50 and 150 (one ticket counter for all
#                     workers); least-connections with 200 open at once:
#                     each carries at least 80; hash over 16 destinations,
#                     8 connections each: every destination keeps one
#                     upstream, both upstreams used.
#   balance_reload    SIGHUP edits the list under traffic (clients in a
#                     loop all along, none may fail): a alone (pool = 2) ->
#                     a and b round-robin: b's pool warms, 40 connections
#                     split 20/20 -> b alone: a is "removed" in --stats
#                     while a session opened through it before is open, its
#                     pool goes, new connections all through b, the old
#                     session still answers through a (metrics:
#                     s5tund_upstream_up 0 for a), then a leaves the
#                     stats and the metrics -> a and b again: a's counters go on from where
#                     they were.
#   balance_select    [group pin] strategy = select (selected = a), a rule
#                     sending the target there: connections through a (the
#                     session line names pin/a); `s5tund --select pin b`
#                     under a client loop (none may fail): new connections
#                     all through b, a session opened through a before
#                     still echoes; a SIGHUP keeps b; --select of an unknown
#                     group, a failover group or a non-member exits 1 with
#                     the reason; --stats --json, /metrics, --connections
#                     and --explain show the group and its member.

#   balance_groups    [group g1] a, b round-robin is [rules] default; [group
#                     g2] b, a failover takes one destination by a rule: 20
#                     connections to the default split 10/10, 10 to g2's
#                     destination all through b; b killed: 10 more to it,
#                     none fails, all through a; the session lines name the
#                     rule.

MS_B_PORT=1088
METRICS_PORT=9553 # [stats] http, on the client namespace's loopback, when METRICS is set
BIND_A=10.200.0.11
BIND_B=10.200.0.12
declare -A MSB_PID

setup_balance() {
  e2e_topology_up
  ip -n "$NS_S" addr add "$BIND_A/32" dev lo
  ip -n "$NS_S" addr add "$BIND_B/32" dev lo
  # Destinations for the hash: 10.201.0.100..115, port 7000.
  local listen=() i
  for i in $(seq 100 115); do
    ip -n "$NS_S" addr add "10.201.0.$i/32" dev lo
    listen+=(--listen "10.201.0.$i")
  done
  e2e_start_target
  E2E_LOGS+=("$WORK/target2.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/target.py" "${listen[@]}" --port "$TGT_PORT" \
    --ready-file "$WORK/target2.ready" >"$WORK/target2.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/target2.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/target2.ready ]] || fail "the second target.py did not start"
  ms_start a
  ms_start b
}

ms_port() { if [[ $1 == a ]]; then echo "$MS_PORT"; else echo "$MS_B_PORT"; fi; }
ms_bind() { if [[ $1 == a ]]; then echo "$BIND_A"; else echo "$BIND_B"; fi; }

# ms_start a|b: that microsocks, outgoing connections from its address.
ms_start() {
  local port
  port=$(ms_port "$1")
  E2E_LOGS+=("$WORK/microsocks.$1.log")
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$port" -b "$(ms_bind "$1")" >>"$WORK/microsocks.$1.log" 2>&1 &
  MSB_PID[$1]=$!
  e2e_wait_listen "$port" "$S_ADDR4" || fail "microsocks $1 does not listen on $S_ADDR4:$port"
  log "microsocks $1 on $S_ADDR4:$port, from $(ms_bind "$1"), pid ${MSB_PID[$1]}"
}

# ms_kill a|b: SIGKILL, as a crash.
ms_kill() {
  kill -KILL "${MSB_PID[$1]}" 2>/dev/null || true
  wait "${MSB_PID[$1]}" 2>/dev/null || true
  for _ in $(seq $((T_START * 10))); do
    [[ -z $(in_s ss -Hltn "sport = :$(ms_port "$1")") ]] && break
    sleep 0.1
  done
  log "microsocks $1 killed"
}

# carried a|b|dante: connections the targets saw from that upstream.
carried() {
  local from=$S_ADDR4   # danted's external address
  [[ $1 == dante ]] || from=$(ms_bind "$1")
  cat "$WORK/target.log" "$WORK/target2.log" | grep -c "('$from'" || true
}

# expect_carried A B: until the targets saw A from a and B from b (the lines
# come as connections end), then exactly those.
expect_carried() {
  local a b
  for _ in $(seq $((T_START * 10))); do
    a=$(carried a) b=$(carried b)
    ((a >= $1 && b >= $2)) && break
    sleep 0.1
  done
  ((a == $1 && b == $2)) || fail "carried a=$a b=$b, expected a=$1 b=$2"
  log "carried: a=$a b=$b"
}

# start_balance STRATEGY [KEY=VALUE for both upstreams...]: s5tund with
# upstreams a then b (weights WEIGHT_A, WEIGHT_B), check-interval 1.
start_balance() {
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini strategy=$1 u kv
  shift
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  sed -i 's/^level = debug$/&\nsessions = true/' "$ini"   # a line per session, naming its upstream
  for u in a b; do
    printf '%s\n' "" "[upstream $u]" "address = $S_ADDR4" "port = $([[ $u == b ]] && echo "${B_PORT:-$MS_B_PORT}" || echo "${A_PORT:-$MS_PORT}")" \
      "weight = $([[ $u == a ]] && echo "${WEIGHT_A:-1}" || echo "${WEIGHT_B:-1}")" >>"$ini"
    for kv; do echo "${kv%%=*} = ${kv#*=}" >>"$ini"; done
  done
  printf '%s\n' "" "[balance]" "strategy = $strategy" "check-interval = 1" "fail-after = ${FAIL_AFTER:-3}" "" "[stats]" \
    "socket = $WORK/stats.sock" ${METRICS:+"http = 127.0.0.1:$METRICS_PORT"} >>"$ini"
  [[ -z ${BALANCE_EXTRA:-} ]] || printf '%s\n' "" "$BALANCE_EXTRA" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
}

stop_balance() {
  e2e_require_alive "at the end of a step"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
}

# log_clean: no error, and no warning but the upstreams' state changes and
# the failures of sessions that every upstream failed (all down).
log_clean() {
  local bad
  bad=$(e2e_s5_warns | grep -vE "warn .*(upstreams?:? [ab] is|every upstream is down)" |
    grep -vE "warn .*proxy connection failed: connection refused" |
    grep -vE "warn  main worker [0-9]+ killed by Killed" || true)
  [[ -z $bad ]] || fail "s5tund logged errors or warnings ($(basename "$S5LOG")): $(oneline "$bad")"
}

# up_stat NAME FIELD: that upstream's field in --stats --json.
# up_metric NAME: s5tund_upstream_up of upstream NAME on the Prometheus
# endpoint (empty when it has no line).
up_metric() {
  ip netns exec "$NS_C" curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" |
    sed -n "s/^s5tund_upstream_up{upstream=\"$1\"} //p"
}

up_stat() {
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
for u in json.load(sys.stdin)["upstreams"]:
    if u["name"] == sys.argv[1]:
        print(u[sys.argv[2]])' "$1" "$2"
}

# lines ERE: s5tund's warn lines matching (0 when none).
lines() { grep -cE -- "warn .*$1" "$S5LOG" || true; }

case_balance_failover() {
  local a0 b0
  start_balance failover
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 50 --rounds 1 >/dev/null
  expect_carried $((a0 + 50)) "$b0"

  ms_kill a
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 100 --rounds 1 >/dev/null
  expect_carried "$a0" $((b0 + 100))
  e2e_wait_log "$S5LOG" "warn .*upstream a is down: 3 set-ups failed in a row \(connect" 5 >/dev/null
  (($(lines "upstream a is down") == 1)) || fail "'upstream a is down' logged $(lines "upstream a is down") times"
  (($(lines "upstream b is down") == 0)) || fail "b was marked down"
  # --stats: a down (connect), b carried them; the table has a row each.
  up_stat a state | grep -qx down || fail "--stats: a is $(up_stat a state), expected down"
  up_stat a why | grep -qx connect || fail "--stats: a is down for $(up_stat a why), expected connect"
  (($(up_stat a failed_connect) >= 3 && $(up_stat b total) >= 100)) ||
    fail "--stats: a failed_connect $(up_stat a failed_connect), b total $(up_stat b total)"
  (($(up_stat a retried) >= 3)) || fail "--stats: a retried $(up_stat a retried), expected at least 3"
  "$S5TUND" --stats "$WORK/stats.sock" | grep -qE '^b +up ' || fail "--stats table: no row for b"
  # --connections names the upstream of an open session.
  local holder got=""
  client --host "$TGT4" hold --hold 30 >/dev/null &
  holder=$!
  for _ in $(seq $((T_START * 10))); do
    got=$("$S5TUND" --connections "$WORK/stats.sock" --json |
      "$PY" -c 'import json, sys; print(" ".join(c["upstream"] for c in json.load(sys.stdin) if c["state"] == "open"))')
    [[ -n $got ]] && break
    sleep 0.1
  done
  "$S5TUND" --connections "$WORK/stats.sock" | grep -qE "^[0-9]+ +tcp .*$TGT4:$TGT_PORT +b +open " ||
    fail "--connections' table: no open session through b: $("$S5TUND" --connections "$WORK/stats.sock" | oneline)"
  kill "$holder" 2>/dev/null || true
  wait "$holder" 2>/dev/null || true
  [[ $got == b ]] || fail "--connections: the open session's upstream is '$got', expected b"
  # The session log names the upstream that carried each session.
  (($(grep -cE "info .*session s[0-9]+ tcp .* via $S_ADDR4:$MS_B_PORT \(b\): " "$S5LOG") >= 100)) ||
    fail "fewer than 100 session lines name upstream b"

  ms_start a
  e2e_wait_log "$S5LOG" "warn .*upstream a is up again \(its check succeeded\)" "$T_START" >/dev/null
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 50 --rounds 1 >/dev/null
  expect_carried $((a0 + 50)) "$b0"

  # Failover costs no client anything: no warning but a's state.
  local warns
  warns=$(e2e_s5_warns | grep -vE "warn .*upstream a is (down|up again)" || true)
  [[ -z $warns ]] || fail "warnings beyond a's state during failover: $(oneline "$warns")"
  # Process mode: workers killed with sessions open through a; their
  # successors take those sessions off a's open count.
  if [[ $MODE == process ]]; then
    local holders=() w
    for _ in $(seq 10); do
      client --host "$TGT4" hold --hold 60 >/dev/null 2>&1 &
      holders+=($!)
    done
    for _ in $(seq $((T_START * 10))); do (($(up_stat a open) >= 10)) && break; sleep 0.1; done
    (($(up_stat a open) == 10)) || fail "a has $(up_stat a open) sessions open, expected the 10 held"
    for w in $(e2e_workers); do kill -KILL "$w"; done
    for _ in $(seq $((T_START * 10))); do (($(up_stat a open) == 0)) && break; sleep 0.1; done
    (($(up_stat a open) == 0)) || fail "after the workers died a still counts $(up_stat a open) sessions open"
    for w in "${holders[@]}"; do kill "$w" 2>/dev/null || true; wait "$w" 2>/dev/null || true; done
    e2e_wait_device "$MODE" "$QUEUES"
    client --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
    log "workers killed with 10 sessions open through a: a counts 0 open after their successors started"
  fi
  # Every upstream down: refused, one line for the state, not one per SYN.
  ms_kill a
  ms_kill b
  for _ in $(seq 20); do client --host "$TGT4" expect-refused --timeout 15 >/dev/null; done
  e2e_wait_log "$S5LOG" "warn .*every upstream is down, new connections are refused" 5 >/dev/null
  (($(lines "every upstream is down") == 1)) || fail "'every upstream is down' logged $(lines "every upstream is down") times"
  ms_start a
  ms_start b
  e2e_wait_log "$S5LOG" "warn .*upstreams: [ab] is back, new connections are accepted again" "$T_START" >/dev/null
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  log_clean
  stop_balance

  # optimistic: the SYN-ACK goes before the CONNECT; a refused connection
  # to a is retried on b before the request (and the client's bytes) went
  # out. b is danted here: microsocks may drop bytes that follow a CONNECT.
  # Without the pool: a pooled connection to a that died with a takes the
  # request and the client's bytes, and that session is reset instead
  # (docs/upstreams-balance.md).
  e2e_start_dante
  ms_kill a   # before any session: microsocks would drop the bytes behind a CONNECT
  # fail-after = 1000: a is never marked down, so every session tries it first.
  B_PORT=$DANTE_PORT FAIL_AFTER=1000 start_balance failover optimistic=true pool=0
  a0=$(carried a) b0=$(carried dante)
  client --host "$TGT4" concurrent 50 --rounds 1 >/dev/null
  for _ in $(seq $((T_START * 10))); do (($(carried dante) >= b0 + 50)) && break; sleep 0.1; done
  (($(carried a) == a0 && $(carried dante) == b0 + 50)) ||
    fail "optimistic: a carried $(($(carried a) - a0)), danted $(($(carried dante) - b0)) of 50"
  (($(up_stat a retried) >= 50)) || fail "optimistic: a retried $(up_stat a retried), expected every session"
  log "optimistic, a dead: 50 connections through danted, none failed"
  ms_start a
  stop_balance

  # check-target: a check is a CONNECT there. To an address the upstreams
  # cannot reach, a restarted a fails its checks and stays down; reloaded
  # (SIGHUP) with the target's address, the next check brings it back.
  local n0 ini
  start_balance failover "pool=0"
  ini=$WORK/s5tund.$S5_RUNS.ini
  sed -i "s/^check-interval = 1$/&\ncheck-target = 10.201.0.99:$TGT_PORT/" "$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "main configuration reloaded" 10 >/dev/null
  ms_kill a
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  ms_start a
  n0=$(grep -c "upstream a: check failed" "$S5LOG" || true)
  for _ in $(seq $((T_START * 10))); do
    (($(grep -c "upstream a: check failed" "$S5LOG" || true) >= n0 + 2)) && break
    sleep 0.1
  done
  up_stat a state | grep -qx down || fail "check-target unreachable: a is $(up_stat a state), expected down"
  (($(lines "upstream a is up again") == 0)) || fail "a came back though its check-target is unreachable"
  sed -i "s/^check-target = .*/check-target = $TGT4:$TGT_PORT/" "$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "warn .*upstream a is up again \(its check succeeded\)" "$T_START" >/dev/null
  log "check-target: a stayed down while its check could not reach 10.201.0.99, up once it could reach $TGT4"
  stop_balance

  # Replies on their way when a died: a far-away a (a delay relay, 300 ms
  # each way, in front of microsocks a) takes 10 set-ups; then it stops
  # listening (SIGUSR1) and new sessions mark it down and go to b; then
  # the 10 replies arrive. They carry their sessions, but they are no news
  # of a: it stays down (the benchmark's failover row found it flapping:
  # down, up, down in one millisecond, as a late reply brought it back).
  local relay conc
  E2E_LOGS+=("$WORK/relay.log")
  rm -f "$WORK/relay.ready"
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/delayrelay.py" --listen "$S_ADDR4" --port 1095 --to "$S_ADDR4:$MS_PORT" \
    --delay-ms 300 --ready-file "$WORK/relay.ready" >>"$WORK/relay.log" 2>&1 &
  relay=$!
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/relay.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/relay.ready ]] || fail "the delay relay did not start"
  a0=$(carried a) b0=$(carried b)
  A_PORT=1095 start_balance failover pool=0 # its first echo goes through a too
  client --host "$TGT4" concurrent 10 --rounds 1 --timeout 20 >/dev/null &
  conc=$!
  for _ in $(seq $((T_START * 10))); do
    (($(in_s ss -Htn state established "( sport = :1095 )" | wc -l) >= 10)) && break
    sleep 0.05
  done
  kill -USR1 "$relay"
  client --host "$TGT4" concurrent 5 --rounds 1 >/dev/null
  e2e_wait_log "$S5LOG" "warn .*upstream a is down" 5 >/dev/null
  wait "$conc" || fail "the 10 sessions set up through a before it died did not all complete"
  expect_carried $((a0 + 11)) $((b0 + 5))
  (($(lines "upstream a is up again") == 0)) ||
    fail "a came back by late replies: $(oneline "$(grep -E 'upstream a is (down|up again)' "$S5LOG")")"
  up_stat a state | grep -qx down || fail "a is $(up_stat a state) after its late replies, expected down"
  kill "$relay" 2>/dev/null || true
  wait "$relay" 2>/dev/null || true
  log "late replies from a dead upstream: 10 sessions carried, a stays down"
  stop_balance
}

case_balance_spread() {
  local a0 b0 a b i d moved=0
  WEIGHT_A=1 WEIGHT_B=3 start_balance round-robin
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 200 --rounds 1 >/dev/null
  expect_carried $((a0 + 50)) $((b0 + 150))
  stop_balance

  start_balance least-connections
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 200 --rounds 1 >/dev/null
  for _ in $(seq $((T_START * 10))); do
    (($(carried a) + $(carried b) >= a0 + b0 + 200)) && break
    sleep 0.1
  done
  a=$(($(carried a) - a0)) b=$(($(carried b) - b0))
  log "least-connections: a=$a b=$b"
  ((a + b == 200 && a >= 80 && b >= 80)) || fail "least-connections: a=$a b=$b of 200"
  stop_balance

  start_balance hash
  local used_a=0 used_b=0
  for i in $(seq 100 115); do
    d=10.201.0.$i
    a0=$(carried a) b0=$(carried b)
    client --host "$d" concurrent 8 --rounds 1 >/dev/null
    for _ in $(seq $((T_START * 10))); do
      (($(carried a) + $(carried b) >= a0 + b0 + 8)) && break
      sleep 0.1
    done
    a=$(($(carried a) - a0)) b=$(($(carried b) - b0))
    ((a + b == 8 && (a == 0 || b == 0))) || fail "hash: $d went through a $a times, b $b times"
    ((a > 0)) && used_a=$((used_a + 1))
    ((b > 0)) && used_b=$((used_b + 1))
  done
  log "hash: 16 destinations, $used_a through a, $used_b through b, each always the same"
  ((used_a > 0 && used_b > 0)) || fail "hash: one upstream took every destination"
  stop_balance
}

# est PORT: connections from C established at that microsocks port.
est() { in_s ss -Htn state established "( sport = :$1 )" | grep -c "$C_ADDR4" || true; }

# idle_echo_start GO: a connection to the target that idles until the file
# GO appears, then echoes (client.py idle-echo); its pid in IDLE_PID.
idle_echo_start() {
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" --host "$TGT4" --port "$TGT_PORT" \
    --timeout 30 idle-echo --wait-file "$1" --idle-max 100 >"$WORK/idle.log" 2>&1 &
  IDLE_PID=$!
  E2E_LOGS+=("$WORK/idle.log")
  for _ in $(seq $((T_START * 10))); do grep -q "idling" "$WORK/idle.log" && break; sleep 0.1; done
  grep -q "idling" "$WORK/idle.log" || fail "the idle connection did not open"
}

# reload_to STRATEGY UPSTREAM...: the configuration rewritten with these
# upstreams (pool = 2 each), then SIGHUP, until every worker took it.
reload_to() {
  local ini=$WORK/s5tund.$S5_RUNS.ini strategy=$1 u n0
  shift
  sed -i '/^\[upstream /,$d' "$ini"
  for u; do
    printf '%s\n' "[upstream $u]" "address = $S_ADDR4" "port = $(ms_port "$u")" "pool = 2" "" >>"$ini"
  done
  printf '%s\n' "[balance]" "strategy = $strategy" "check-interval = 1" "" "[stats]" "socket = $WORK/stats.sock" \
    ${METRICS:+"http = 127.0.0.1:$METRICS_PORT"} >>"$ini"
  n0=$(grep -c "configuration generation .* taken" "$S5LOG" || true)
  kill -HUP "$S5PID"
  for _ in $(seq $((T_START * 10))); do
    (($(grep -c "configuration generation .* taken" "$S5LOG" || true) >= n0 + QUEUES)) && break
    sleep 0.1
  done
  (($(grep -c "configuration generation .* taken" "$S5LOG" || true) >= n0 + QUEUES)) ||
    fail "not every worker took the reload to $*"
  log "reloaded: $strategy over $*"
}

# wait_est PORT OP N: until the count of established connections at PORT
# satisfies OP N (the pools' warm-ups and flushes take a round trip).
wait_est() {
  for _ in $(seq $((T_START * 10))); do
    (($(est "$1") $2 $3)) && return 0
    sleep 0.1
  done
  fail "connections at port $1: $(est "$1"), expected $2 $3"
}

case_balance_reload() {
  local ini go=$WORK/idle.go ipid lpid rc=0 a0 b0 total_a METRICS=1
  start_balance failover "pool=2"
  ini=$WORK/s5tund.$S5_RUNS.ini
  reload_to failover a
  wait_est "$MS_B_PORT" == 0
  # The session opened now, through a, idles across the reloads.
  idle_echo_start "$go"
  ipid=$IDLE_PID
  # Traffic all along: a client loop that stops at the first failure.
  ip netns exec "$NS_C" bash -c 'while [[ ! -e $1 ]]; do "$2" "$3/client.py" --host "$4" --port "$5" --timeout 10 \
    concurrent 10 --rounds 2 >/dev/null 2>>"$6" || exit 1; done' _ "$go" "$PY" "$E2E_DIR" "$TGT4" "$TGT_PORT" \
    "$WORK/loop.log" &
  lpid=$!
  E2E_LOGS+=("$WORK/loop.log")

  reload_to round-robin a b
  wait_est "$MS_B_PORT" ">=" $((2 * QUEUES))   # b's pools warm, idle
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 40 --rounds 1 >/dev/null
  sleep 1 # the lines come as connections end
  up_stat b state | grep -qx up || fail "--stats: b is $(up_stat b state) after it was added"
  (($(carried b) > b0 && $(carried a) > a0)) || fail "after adding b: a carried $(($(carried a) - a0)), b $(($(carried b) - b0))"

  reload_to failover b
  wait_est "$MS_PORT" == 1                    # a's pools flushed: the idle session alone is left there
  up_stat a state | grep -qx removed || fail "--stats: a is $(up_stat a state), expected removed (a session is open)"
  [[ $(up_metric a) == 0 ]] || fail "metrics: s5tund_upstream_up of removed a is '$(up_metric a)', expected 0"
  [[ $(up_metric b) == 1 ]] || fail "metrics: s5tund_upstream_up of b is '$(up_metric b)', expected 1"
  total_a=$(up_stat a total)
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 30 --rounds 1 >/dev/null
  sleep 1
  (($(carried a) == a0)) || fail "a removed: it still carried $(($(carried a) - a0)) new connections"
  (($(carried b) >= b0 + 30)) || fail "a removed: b carried $(($(carried b) - b0)) of at least 30"
  touch "$go"
  wait "$ipid" || rc=$?
  ((rc == 0)) || fail "the session opened through a before the reloads failed: $(tail -n 1 "$WORK/idle.log")"
  wait "$lpid" || fail "the client loop failed during the reloads: $(tail -n 3 "$WORK/loop.log" | oneline)"
  for _ in $(seq $((T_START * 10))); do [[ -z $(up_stat a state) ]] && break; sleep 0.1; done
  [[ -z $(up_stat a state) ]] || fail "--stats: a still shown ($(up_stat a state)) after its last session ended"
  [[ -z $(up_metric a) ]] || fail "metrics: a still has s5tund_upstream_up $(up_metric a) after its last session ended"

  reload_to round-robin a b
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  (($(up_stat a total) > total_a)) || fail "a back: its total $(up_stat a total) did not go on from $total_a"
  log "reload: b added (pool warm, traffic split), a removed (its session ran on, no new ones), a back (counters kept); no client failed"
  log_clean
  stop_balance
}

case_balance_groups() {
  local ini=$WORK/groups.ini a0 b0 g2=10.201.0.100
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  sed -i 's/^level = debug$/&\nsessions = true/' "$ini"
  printf '%s\n' "" "[upstream a]" "address = $S_ADDR4" "port = $MS_PORT" "" \
    "[upstream b]" "address = $S_ADDR4" "port = $MS_B_PORT" "" \
    "[group g1]" "members = a, b" "strategy = round-robin" "" \
    "[group g2]" "members = b, a" "strategy = failover" "" \
    "[balance]" "check-interval = 1" "" "[stats]" "socket = $WORK/stats.sock" "" \
    "[rules]" "default = g1" "rule = dst:$g2/32 -> g2" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  a0=$(carried a) b0=$(carried b)
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  expect_carried $((a0 + 10)) $((b0 + 10))
  client --host "$g2" concurrent 10 --rounds 1 >/dev/null
  expect_carried $((a0 + 10)) $((b0 + 20))
  local named
  named=$(grep -cE "info .*session s[0-9]+ tcp .* -> $g2:$TGT_PORT via $S_ADDR4:$MS_B_PORT \(g2/b\) by rule groups.ini:[0-9]+: " "$S5LOG")
  ((named == 10)) || fail "$named of g2's 10 session lines name b and the rule"
  ms_kill b
  client --host "$g2" concurrent 10 --rounds 1 >/dev/null
  expect_carried $((a0 + 20)) $((b0 + 20))
  log "two groups: g1 round-robin 10/10, g2 failover b then a (b killed: 10 of 10 through a)"
  ms_start b
  stop_balance
}

# group_stat NAME FIELD: that group's field in --stats --json.
group_stat() {
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
for g in json.load(sys.stdin).get("groups", []):
    if g["name"] == sys.argv[1]:
        print(g[sys.argv[2]])' "$1" "$2"
}

# select_refused GROUP MEMBER MESSAGE-ERE: --select exits 1 saying why.
select_refused() {
  local out rc=0
  out=$("$S5TUND" --select "$1" "$2" "$WORK/stats.sock" 2>&1) || rc=$?
  ((rc == 1)) && grep -qE -- "$3" <<<"$out" || fail "--select $1 $2: exit $rc, '$(oneline "$out")', expected 1 and /$3/"
}

case_balance_select() {
  local ini go=$WORK/idle.go ipid lpid rc=0 ta tb out METRICS=1
  BALANCE_EXTRA=$(printf '%s\n' "[group pin]" "members = a, b" "strategy = select" "selected = a" "" \
    "[group both]" "members = b, a" "" "[rules]" "rule = port:$TGT_PORT -> pin") start_balance failover
  ini=$WORK/s5tund.$S5_RUNS.ini
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  expect_carried 11 0
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* -> $TGT4:$TGT_PORT via $S_ADDR4:$MS_PORT \(pin/a\) by rule " 5 \
    "a session line naming pin/a" >/dev/null
  [[ $(group_stat pin chosen) == a ]] || fail "--stats: pin's chosen is '$(group_stat pin chosen)', expected a"
  # A session through a, open across the choice and the reload.
  idle_echo_start "$go"
  ipid=$IDLE_PID
  "$S5TUND" --connections "$WORK/stats.sock" | grep -q " pin/a " ||
    fail "--connections does not show pin/a: $("$S5TUND" --connections "$WORK/stats.sock" | oneline)"
  # Traffic all along: a client loop that stops at the first failure.
  ip netns exec "$NS_C" bash -c 'while [[ ! -e $1 ]]; do "$2" "$3/client.py" --host "$4" --port "$5" --timeout 10 \
    concurrent 5 --rounds 1 >/dev/null 2>>"$6" || exit 1; done' _ "$go" "$PY" "$E2E_DIR" "$TGT4" "$TGT_PORT" \
    "$WORK/loop.log" &
  lpid=$!
  E2E_LOGS+=("$WORK/loop.log")

  out=$("$S5TUND" --select pin b "$WORK/stats.sock") || fail "--select pin b failed: $out"
  [[ $out == "group pin: b selected (was a) by the operator" ]] || fail "--select pin b printed '$out'"
  e2e_wait_log "$S5LOG" "info .*group pin: b selected \(was a\) by the operator" 5 "the operator's choice logged" >/dev/null
  ta=$(up_stat a total) tb=$(up_stat b total)
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  (($(up_stat a total) == ta && $(up_stat b total) >= tb + 10)) ||
    fail "after --select pin b: a carried $(($(up_stat a total) - ta)) new, b $(($(up_stat b total) - tb)) (of at least 10)"
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* -> $TGT4:$TGT_PORT via $S_ADDR4:$MS_B_PORT \(pin/b\) by rule " 5 \
    "a session line naming pin/b" >/dev/null

  # A reload keeps the live choice.
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "info .*configuration reloaded" "$T_START" "the reload" >/dev/null
  ta=$(up_stat a total) tb=$(up_stat b total)
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  (($(up_stat a total) == ta && $(up_stat b total) >= tb + 10)) ||
    fail "after the reload: a carried $(($(up_stat a total) - ta)) new, b $(($(up_stat b total) - tb)) (of at least 10)"
  touch "$go"
  wait "$ipid" || rc=$?
  ((rc == 0)) || fail "the session opened through a before --select failed: $(tail -n 1 "$WORK/idle.log")"
  wait "$lpid" || fail "the client loop failed across --select and the reload: $(tail -n 3 "$WORK/loop.log" | oneline)"

  select_refused nope b 'no such group \(the groups: pin, both\)'
  select_refused both a 'strategy is failover, not select'
  select_refused pin c '"c" is not a member \(the members: a, b\)'
  [[ $(group_stat pin chosen) == b && $(group_stat pin since) -gt 0 ]] ||
    fail "--stats: pin chosen '$(group_stat pin chosen)' since '$(group_stat pin since)', expected b and a time"
  local metrics # read whole first: grep -q stopping early would fail curl with SIGPIPE under pipefail
  metrics=$(ip netns exec "$NS_C" curl -sf "http://127.0.0.1:$METRICS_PORT/metrics")
  grep -qx 's5tund_group_chosen{group="pin",upstream="b"} 1' <<<"$metrics" || fail "metrics: no s5tund_group_chosen 1 for pin/b"
  "$S5TUND" --stats "$WORK/stats.sock" | grep -qE '^pin +select .* b +\* up ' || fail "--stats: no row marking pin/b"
  "$S5TUND" --config "$ini" --explain "$TGT4:$TGT_PORT" | grep -q "^now      b (the running daemon's" ||
    fail "--explain: $("$S5TUND" --config "$ini" --explain "$TGT4:$TGT_PORT" | oneline)"
  log "select: a, then b by --select under traffic (the open session through a kept echoing), kept over a reload; refusals named"
  log_clean
  stop_balance
}
