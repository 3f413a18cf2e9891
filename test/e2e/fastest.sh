# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# [group NAME] strategy = fastest (run.sh runs it; ctest e2e.CASE.MODE.qN):
# three upstreams, each behind a delay relay of its own whose one-way
# delay the case changes as it runs (delayrelay.py --delay-file): danted
# (10 ms), squid (type = http, Basic; 60 ms) and microsocks (120 ms). A
# SOCKS5 set-up costs two round trips, an HTTP CONNECT one: about 60, 140
# and 500 ms. The
# group probes each with `connect` to a second target (port 7009, so that
# the proxies' logs tell probes from sessions), every second, tolerance 50.
#
#   upstream_fastest  the group takes danted (s5tund's info line; squid may
#                     come first, while danted's cold first probe weighs) and new
#                     connections go through it (danted's log: all of
#                     them; squid's: none). danted moved to 200 ms: the
#                     choice moves to squid within a few probes, and new
#                     connections go through squid (its log). microsocks
#                     moved to 24 ms: once faster than squid by less than
#                     the tolerance (the smoothed figures in s5tund's debug
#                     lines), three probes later the choice has not moved.
#                     microsocks moved to 0 ms: faster by more than the
#                     tolerance, the choice moves to it. Last, a reload to
#                     probe = http://...: a GET through each member (the
#                     web server's log), each timed, none failed. Then the
#                     chosen one killed under ab -c 200: no request fails,
#                     it is marked down.

PROBE_PORT=7009
HTTP_PORT=7010
RELAY_DANTE=1101
RELAY_SQUID=1102
RELAY_MS=1103
declare -A RELAY_PID

setup_fastest() {
  e2e_topology_up
  e2e_start_target
  E2E_LOGS+=("$WORK/target.probe.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/target.py" --listen "$TGT4" --port "$PROBE_PORT" \
    --ready-file "$WORK/target.probe.ready" >"$WORK/target.probe.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/target.probe.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/target.probe.ready ]] || fail "the probes' target.py did not start"
}

# set_delay NAME MS: that relay's one-way delay from now on.
set_delay() {
  echo "$2" >"$WORK/delay.$1.new"
  mv "$WORK/delay.$1.new" "$WORK/delay.$1"
  log "relay $1: $2 ms each way"
}

# relay_start NAME PORT TO MS: a delay relay on S_ADDR4:PORT in front of TO.
relay_start() {
  set_delay "$1" "$4"
  E2E_LOGS+=("$WORK/relay.$1.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/delayrelay.py" --listen "$S_ADDR4" --port "$2" --to "$3" \
    --delay-file "$WORK/delay.$1" --ready-file "$WORK/relay.$1.ready" >>"$WORK/relay.$1.log" 2>&1 &
  RELAY_PID[$1]=$!
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/relay.$1.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/relay.$1.ready ]] || fail "the delay relay of $1 did not start"
}

# warm PORT socks5|http: one CONNECT through the proxy at S_ADDR4:PORT to the
# probes' target, so that what a proxy does once (danted's first client
# takes it ~300 ms) is not taken for its distance.
warm() {
  ip netns exec "$NS_S" timeout -k 2 10 "$PY" - "$S_ADDR4" "$1" "$2" "$TGT4" "$PROBE_PORT" "$SQUID_USER:$SQUID_PASS" <<'PY' ||
import base64, socket, sys
host, port, kind, tgt, tport, cred = sys.argv[1:]
s = socket.create_connection((host, int(port)), timeout=5)
if kind == "socks5":
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(tgt) + int(tport).to_bytes(2, "big"))
    assert s.recv(10)[:2] == b"\x05\x00"
else:
    auth = base64.b64encode(cred.encode()).decode()
    s.sendall(f"CONNECT {tgt}:{tport} HTTP/1.1\r\nHost: {tgt}:{tport}\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
    assert s.recv(100).split(b" ")[1] == b"200"
PY
    fail "no CONNECT through the proxy on port $1 ($2)"
}

count_in() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# sessions_by dante|squid: CONNECTs to the target's port 7000 in that proxy's log.
sessions_by() {
  if [[ $1 == dante ]]; then count_in "$WORK/danted.log" "tcp/connect .* -> .*$TGT4\.$TGT_PORT"
  else count_in "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT "; fi
}

# wait_sessions WHO N: until WHO's log shows N sessions.
wait_sessions() {
  local n=0
  for _ in $(seq $((T_START * 10))); do
    n=$(sessions_by "$1")
    ((n >= $2)) && return 0
    sleep 0.1
  done
  fail "$n sessions in the log of $1 after ${T_START}s, expected $2"
}

changes() { count_in "$S5LOG" "info .*group fast: fastest is now "; }

# chosen WHO: until the last "fastest is now" line names WHO.
chosen() {
  local line
  for _ in $(seq $((T_START * 10))); do
    line=$(grep -E "info .*group fast: fastest is now " "$S5LOG" | tail -1)
    [[ $line == *"fastest is now $1 ("* ]] && break
    sleep 0.1
  done
  [[ $line == *"fastest is now $1 ("* ]] || fail "the fastest is not $1 after ${T_START}s: $(oneline "$line")"
  log "change $(changes): ${line#*info }"
}

# smoothed WHO: its smoothed latency after its last probe (ms; 0 before any).
probes() { count_in "$S5LOG" "debug .*upstream $1: probe [0-9.]+ ms"; }
smoothed() {
  local v
  v=$(grep -E "debug .*upstream $1: probe [0-9.]+ ms, smoothed" "$S5LOG" | tail -1 | sed -E 's/.*smoothed ([0-9.]+) ms.*/\1/')
  echo "${v:-0}"
}
# faster_within: microsocks's smoothed latency below squid's by less than 50 ms.
faster_within() {
  "$PY" -c 'import sys; ms, sq = map(float, sys.argv[1:]); sys.exit(not (0 < ms < sq < ms + 50))' \
    "$(smoothed ms)" "$(smoothed squid)"
}

case_upstream_fastest() {
  e2e_start_dante
  e2e_start_squid
  e2e_start_microsocks
  warm "$DANTE_PORT" socks5
  warm "$SQUID_PORT" http
  warm "$MS_PORT" socks5
  relay_start dante "$RELAY_DANTE" "$S_ADDR4:$DANTE_PORT" 10
  relay_start squid "$RELAY_SQUID" "$S_ADDR4:$SQUID_PORT" 60
  relay_start ms "$RELAY_MS" "$S_ADDR4:$MS_PORT" 120
  local ini=$WORK/fastest.ini d0 s0 n m c
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  printf '%s\n' "" "[upstream dante]" "address = $S_ADDR4" "port = $RELAY_DANTE" "" \
    "[upstream squid]" "type = http" "address = $S_ADDR4" "port = $RELAY_SQUID" "username = $SQUID_USER" \
    "password = \"$SQUID_PASS\"" "" \
    "[upstream ms]" "address = $S_ADDR4" "port = $RELAY_MS" "" \
    "[group fast]" "members = ms, squid, dante" "strategy = fastest" "probe = connect $TGT4:$PROBE_PORT" \
    "probe-interval = 1" "probe-timeout = 3" "tolerance = 50" "" \
    "[rules]" "default = fast" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"

  # The nearest: danted, and every new connection through it.
  chosen dante
  d0=$(sessions_by dante) s0=$(sessions_by squid)
  client --host "$TGT4" concurrent 10 --rounds 1 --timeout 20 >/dev/null
  wait_sessions dante $((d0 + 10))
  (($(sessions_by squid) == s0)) || fail "squid carried $(($(sessions_by squid) - s0)) of 10 while danted is the fastest"

  # danted moves away: squid, within a few probes.
  n=$(probes dante) c=$(changes)
  set_delay dante 200
  chosen squid
  log "the switch took $(($(probes dante) - n)) probes of danted since its delay changed"
  c=$((c + 1))
  (($(changes) == c)) || fail "$(($(changes) - c + 1)) changes for danted's move, expected 1"
  d0=$(sessions_by dante) s0=$(sessions_by squid)
  client --host "$TGT4" concurrent 10 --rounds 1 --timeout 20 >/dev/null
  wait_sessions squid $((s0 + 10))
  (($(sessions_by dante) == d0)) || fail "danted carried $(($(sessions_by dante) - d0)) of 10 while squid is the fastest"

  # microsocks nearer than squid, but by less than the tolerance: once its
  # smoothed figure is below squid's (s5tund's debug lines), three more
  # probes of each and the choice has not moved: the tolerance keeps squid.
  set_delay ms 24
  for _ in $(seq $((T_START * 10))); do
    faster_within && break
    sleep 0.1
  done
  faster_within || fail "microsocks $(smoothed ms) ms, squid $(smoothed squid) ms after ${T_START}s: expected \
microsocks faster by less than 50 ms"
  log "microsocks $(smoothed ms) ms, squid $(smoothed squid) ms (smoothed): faster within the tolerance"
  n=$(probes ms) m=$(probes squid)
  for _ in $(seq $((T_START * 10))); do
    (($(probes ms) >= n + 3 && $(probes squid) >= m + 3)) && break
    sleep 0.1
  done
  (($(probes ms) >= n + 3 && $(probes squid) >= m + 3)) ||
    fail "$(($(probes ms) - n)) probes of microsocks and $(($(probes squid) - m)) of squid in ${T_START}s, expected 3 each"
  log "microsocks $(smoothed ms) ms, squid $(smoothed squid) ms (smoothed), three probes after it was faster"
  (($(changes) == c)) ||
    fail "the choice moved within the tolerance: $(oneline "$(grep -E 'fastest is now' "$S5LOG")")"

  # microsocks beyond the tolerance: it is taken.
  set_delay ms 0
  chosen ms

  # A reload to probe = http://...: each member's next probe is a GET
  # through it (the web server's log: one per member at least), timed.
  E2E_LOGS+=("$WORK/http.log")
  ip netns exec "$NS_S" "$PY" -m http.server --bind "$TGT4" "$HTTP_PORT" >>"$WORK/http.log" 2>&1 &
  RELAY_PID[http]=$!
  e2e_wait_listen "$HTTP_PORT" "$TGT4" || fail "the web server does not listen on $TGT4:$HTTP_PORT"
  sed -i "s|^probe = connect .*|probe = http://$TGT4:$HTTP_PORT/|" "$ini"
  n=$(grep -c "configuration generation .* taken" "$S5LOG" || true)
  local p0 u
  declare -A p0
  for u in dante squid ms; do p0[$u]=$(probes $u); done
  kill -HUP "$S5PID"
  for _ in $(seq $((T_START * 10))); do
    (($(count_in "$WORK/http.log" '"GET / HTTP/1.1" 200') >= 3)) && break
    sleep 0.1
  done
  (($(count_in "$WORK/http.log" '"GET / HTTP/1.1" 200') >= 3)) ||
    fail "$(count_in "$WORK/http.log" '"GET / HTTP/1.1" 200') GETs of the http probe in ${T_START}s, expected 3"
  (($(grep -c "configuration generation .* taken" "$S5LOG" || true) >= n + QUEUES)) || fail "not every worker took the reload"
  for u in dante squid ms; do
    for _ in $(seq $((T_START * 10))); do
      (($(probes $u) > p0[$u] + 1)) && break
      sleep 0.1
    done
    (($(probes $u) > p0[$u] + 1)) || fail "no http probe of $u timed after the reload"
  done
  (($(count_in "$S5LOG" "latency probe failed") == 0)) ||
    fail "failed probes: $(oneline "$(grep -E 'latency probe failed' "$S5LOG")")"
  log "http probes: $(count_in "$WORK/http.log" '"GET / HTTP/1.1" 200') GETs, smoothed dante $(smoothed dante), squid \
$(smoothed squid), microsocks $(smoothed ms) ms"

  # The chosen one killed under ab -c 200: no request fails (its set-ups
  # move to the next member by latency), and it is marked down.
  local line who pid out kc kr kl ke
  line=$(grep -E "info .*group fast: fastest is now " "$S5LOG" | tail -1)
  who=${line#*fastest is now } who=${who%% *}
  case $who in
    ms) pid=$MS_PID ;;
    dante) pid=$DANTE_PID ;;
    squid) pid=$SQUID_PID ;;
    *) fail "no member chosen: $(oneline "$line")" ;;
  esac
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" ab -r -q -s 20 -n 3000 -c 200 "http://$TGT4:$TGT_PORT/" \
    >"$WORK/ab.out" 2>&1 &
  local abpid=$! t0
  t0=$(count_in "$WORK/target.log" " http /")
  for _ in $(seq $((T_START * 10))); do (($(count_in "$WORK/target.log" " http /") >= t0 + 300)) && break; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
  log "killed $who (pid $pid) under ab -c 200"
  wait "$abpid" || true
  out=$(cat "$WORK/ab.out")
  # Connections relaying through it when it died are cut (ab: "Length");
  # a new one that failed would be a connect, receive or exception error.
  local kinds
  kinds=$(sed -nE 's/.*\(Connect: ([0-9]+), Receive: ([0-9]+), Length: ([0-9]+), Exceptions: ([0-9]+)\)/\1 \2 \3 \4/p' <<<"$out")
  [[ $(awk '/^Complete requests:/ { print $3 }' <<<"$out") == 3000 ]] && read -r kc kr kl ke <<<"${kinds:-0 0 0 0}" &&
    ((kc == 0 && kr == 0 && ke == 0)) ||
    fail "ab -c 200 with $who killed: $(grep -E '^(Complete|Failed) requests|\(Connect' <<<"$out" | tr '\n' ' ')"
  e2e_wait_log "$S5LOG" "warn .*upstream $who is down: " 5 "$who marked down" >/dev/null
  log "ab -c 200, $who killed in the middle: 3000 of 3000 complete, no new connection failed (${kl:-0} cut in flight)"

  e2e_require_alive "at the end"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
  (($(count_in "$S5LOG" '^[0-9T:.-]+ error ') == 0)) || fail "errors in s5tund's log" # lines at level error (not a debug line's "lwIP error -14")
  for r in "${!RELAY_PID[@]}"; do kill "${RELAY_PID[$r]}" 2>/dev/null || true; done
}
