#!/usr/bin/env bash
# s5tund end-to-end tests: one case per invocation.
#
#   run.sh CASE [MODE QUEUES] [S5TUND]
#
# CASE     harness | echo | echo_dante | bulk | bulk_dante | concurrent |
#          auth | deadproxy | sigterm | kill9 | badconfig
# MODE     thread | process       (not for harness, badconfig)
# QUEUES   number of TUN queues   (not for harness, badconfig)
# S5TUND   the binary; default $S5TUND, then build/s5tund
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no /dev/net/tun).
# Each run builds its own pair of network namespaces (see lib.sh), sends
# traffic only inside them, and removes them on exit, failure or signal.
# E2E_KEEP=1 keeps the work directory (logs, configs) for inspection.
set -eEuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"

usage() { echo "usage: $0 CASE [thread|process QUEUES] [S5TUND]" >&2; exit 2; }

CASE=${1:-}
[[ -n $CASE ]] || usage
shift
MODE=""
QUEUES=""
case $CASE in
  harness|badconfig) ;;
  echo|echo_dante|bulk|bulk_dante|concurrent|auth|deadproxy|sigterm|kill9)
    [[ $# -ge 2 ]] || usage
    MODE=$1 QUEUES=$2
    shift 2
    [[ $MODE == thread || $MODE == process ]] || usage
    [[ $QUEUES =~ ^[1-9][0-9]*$ ]] || usage
    [[ $CASE != kill9 || $MODE == process ]] || { echo "kill9 is for process mode" >&2; exit 2; }
    ;;
  *) usage ;;
esac

e2e_require_root
e2e_require_tools
[[ $CASE == harness ]] || e2e_find_s5tund "${1:-}"
e2e_init "$CASE"
log "case $CASE${MODE:+ mode=$MODE queues=$QUEUES}${S5TUND:+ binary=$S5TUND}"

# s5tund with everything in an INI file (mode, queues, proxy, credentials).
start_with_config() {   # PROXY_ADDR PROXY_PORT [USER PASS]
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$1 CFG_PROXY_PORT=$2 \
    CFG_USER=${3:-} CFG_PASS=${4:-} e2e_write_config "$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini"
  e2e_start_s5tund --config "$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini"
}

# s5tund with mode, queues and proxy given as flags (the INI file only has
# the [tun] and [log] sections).
start_with_flags() {    # ADDR:PORT
  CFG_MODE="" CFG_QUEUES="" CFG_PROXY_ADDR="" CFG_USER="" e2e_write_config "$WORK/s5tund.flags.ini"
  e2e_start_s5tund --config "$WORK/s5tund.flags.ini" --mode "$MODE" --queues "$QUEUES" --socks5 "$1"
}

# ---------------------------------------------------------------- cases

# The harness checks itself, without s5tund: topology, target, both proxies,
# and that the client's checks can fail.
case_harness() {
  local out
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  e2e_start_dante
  # The target, directly inside S.
  sclient --host "$TGT4" echo --halfclose
  sclient --host "$TGT6" echo --halfclose
  sclient --host "$TGT4" bulk --size 16M --upload-mode eof
  sclient --host "$TGT4" bulk --size 1M --upload-mode length
  sclient --host "$TGT6" concurrent 200
  # From C the targets are unreachable except through a proxy.
  out=$(client --host "$TGT4" --timeout 5 echo --count 1) \
    && fail "target reachable from C without a proxy: the topology leaks: $out"
  log "targets unreachable from C without a proxy, as they must be: $out"
  # Through microsocks from C.
  local ms=$S_ADDR4:$MS_PORT dante4=$S_ADDR4:$DANTE_PORT dante6="[$S_ADDR6]:$DANTE_PORT"
  client --host "$TGT4" --socks5 "$ms" echo
  client --host "$TGT6" --socks5 "$ms" echo
  client --host "$TGT4" --socks5 "$ms" bulk --size 16M --upload-mode length
  client --host "$TGT4" --socks5 "$ms" concurrent 200
  # Through danted from C, over IPv4 and IPv6, with half-close.
  client --host "$TGT4" --socks5 "$dante4" echo --halfclose
  client --host "$TGT6" --socks5 "$dante4" echo --halfclose
  client --host "$TGT6" --socks5 "$dante6" echo --halfclose
  client --host "$TGT4" --socks5 "$dante6" bulk --size 16M --upload-mode eof
  client --host "$TGT4" --socks5 "$dante4" concurrent 200
  # expect-refused: passes on a closed port, fails on a working connection.
  sclient --host "$TGT4" --port $((TGT_PORT + 1)) expect-refused
  out=$(sclient --host "$TGT4" --timeout 5 expect-refused) \
    && fail "expect-refused passed on a working connection: $out"
  log "expect-refused on a working connection fails as it must: $out"
  # microsocks with a password: right credentials pass, wrong ones fail.
  e2e_stop_microsocks
  e2e_start_microsocks s5user s5pass
  client --host "$TGT4" --socks5 "$ms" --user s5user --password s5pass echo
  out=$(client --host "$TGT4" --socks5 "$ms" --user s5user --password wrong echo) \
    && fail "microsocks accepted a wrong password: $out"
  log "wrong password refused by microsocks as it must: $out"
  out=$(client --host "$TGT4" --socks5 "$ms" echo) \
    && fail "microsocks accepted a client without credentials: $out"
  log "missing credentials refused by microsocks as it must: $out"
}

case_echo() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_with_flags "$S_ADDR4:$MS_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 50
  client --host "$TGT6" echo --count 50
  e2e_require_alive "after echo"
}

case_echo_dante() {
  e2e_topology_up
  e2e_start_target
  e2e_start_dante
  start_with_config "$S_ADDR6" "$DANTE_PORT"      # proxy reached over IPv6
  e2e_wait_ready "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 50
  client --host "$TGT6" echo --count 50
  client --host "$TGT4" echo --halfclose
  client --host "$TGT6" echo --halfclose
  e2e_require_alive "after echo"
}

case_bulk() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_with_config "$S_ADDR4" "$MS_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  # microsocks ends both directions at the first EOF, so the upload is
  # length-delimited here; bulk_dante does it with half-close.
  local counters
  counters=$(e2e_tun_bytes)
  CLIENT_T=$T_BULK client --host "$TGT4" --timeout 60 bulk --size 64M --upload-mode length
  e2e_check_through_tun "$counters" $((64 << 20))
  e2e_require_alive "after bulk"
  client --host "$TGT4" echo
}

case_bulk_dante() {
  e2e_topology_up
  e2e_start_target
  e2e_start_dante
  start_with_flags "[$S_ADDR6]:$DANTE_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  local counters
  counters=$(e2e_tun_bytes)
  CLIENT_T=$T_BULK client --host "$TGT4" --timeout 60 bulk --size 64M --upload-mode eof
  e2e_check_through_tun "$counters" $((64 << 20))
  e2e_require_alive "after bulk"
  client --host "$TGT6" echo --halfclose
}

case_concurrent() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_with_config "$S_ADDR4" "$MS_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  CLIENT_T=$T_BULK client --host "$TGT4" concurrent 200
  CLIENT_T=$T_BULK client --host "$TGT6" concurrent 50
  e2e_require_alive "after 200 concurrent connections"
  client --host "$TGT4" echo
}

case_auth() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks s5user s5pass
  # Right credentials: traffic flows.
  start_with_config "$S_ADDR4" "$MS_PORT" s5user s5pass
  e2e_wait_ready "$MODE" "$QUEUES"
  client --host "$TGT4" echo
  client --host "$TGT6" echo
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with $S5RC after SIGTERM, expected 0"
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  # Wrong password: each connection is refused or reset, the daemon lives on.
  start_with_config "$S_ADDR4" "$MS_PORT" s5user wrongpass
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" --timeout 30 expect-refused
  client --host "$TGT6" --timeout 30 expect-refused
  e2e_require_alive "after a failed authentication"
  e2e_tun_up || fail "$TUN is not up after a failed authentication"
  client --host "$TGT4" --timeout 30 expect-refused
  e2e_require_alive "after a second failed authentication"
}

case_deadproxy() {
  e2e_topology_up
  e2e_start_target
  # Nothing listens on the proxy port yet: S answers with RST.
  start_with_config "$S_ADDR4" "$MS_PORT"
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" --timeout 30 expect-refused
  client --host "$TGT6" --timeout 30 expect-refused
  e2e_require_alive "after connections to a dead proxy"
  e2e_tun_up || fail "$TUN is not up after connections to a dead proxy"
  # The proxy comes up: the same daemon now carries traffic.
  e2e_start_microsocks
  client --host "$TGT4" echo --retry-for "$T_START" --timeout 10
  client --host "$TGT6" echo
  e2e_require_alive "after the proxy came back"
}

case_sigterm() {
  local workers hold_pid w i
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_with_config "$S_ADDR4" "$MS_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  workers=$(e2e_workers)
  # A live session while the signal arrives.
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" \
    --host "$TGT4" --port "$TGT_PORT" hold --hold "$T_STEP" >"$WORK/hold.log" 2>&1 &
  hold_pid=$!
  E2E_LOGS+=("$WORK/hold.log")
  for i in $(seq $((T_START * 10))); do
    grep -q "connection to" "$WORK/hold.log" && break
    kill -0 "$hold_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "connection to" "$WORK/hold.log" || fail "the held connection did not open"
  local pid=$S5PID
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  for w in $workers; do
    # A worker may still be on its way out for a moment: bounded wait.
    for i in $(seq 50); do e2e_pid_running "$w" || break; sleep 0.1; done
    e2e_pid_running "$w" && fail "worker $w of s5tund (pid $pid) outlived it"
  done
  [[ -z $(pgrep -P "$pid" 2>/dev/null) ]] || fail "s5tund's children still there"
  log "s5tund exited 0 on SIGTERM, $TUN is gone${workers:+, workers $(oneline "$workers") are gone}"
  kill "$hold_pid" 2>/dev/null || true
  wait "$hold_pid" 2>/dev/null || true
}

case_kill9() {
  local before after victim new="" i routes
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_with_config "$S_ADDR4" "$MS_PORT"
  e2e_wait_ready "$MODE" "$QUEUES"
  before=$(e2e_workers | sort)
  victim=$(echo "$before" | tail -n 1)
  log "workers: $(oneline "$before"); killing $victim with SIGKILL"
  kill -KILL "$victim"
  for i in $(seq $((T_START * 10))); do
    e2e_require_alive "after a worker was killed"
    after=$(e2e_workers | sort)
    new=$(comm -13 <(echo "$before") <(echo "$after"))
    if [[ -n $new ]] && ! grep -qx "$victim" <<<"$after" \
       && (($(wc -l <<<"$after") == QUEUES)); then
      break
    fi
    new=""
    sleep 0.1
  done
  [[ -n $new ]] || fail "no new worker replaced $victim within ${T_START}s (workers now: $(oneline "$after"))"
  log "worker $victim replaced by $(oneline "$new"); workers now: $(oneline "$after")"
  e2e_tun_up || fail "$TUN is not up after a worker restart"
  routes=$(in_c ip route show 10.201.0.0/24)
  [[ -n $routes ]] || fail "the route through $TUN is gone: was the device re-created?"
  for i in $(seq $((T_START * 10))); do
    (($(e2e_tun_numqueues) == QUEUES)) && break
    sleep 0.1
  done
  (($(e2e_tun_numqueues) == QUEUES)) || fail "$TUN has $(e2e_tun_numqueues) queues after the restart, expected $QUEUES"
  # Flows hashed to the restarted queue need the new worker: retry, bounded.
  CLIENT_T=$((T_START + T_STEP)) client --host "$TGT4" --timeout 10 concurrent 32 --retry-for "$T_START"
  client --host "$TGT6" echo --retry-for "$T_START" --timeout 10
  client --host "$TGT4" concurrent 64
  e2e_require_alive "after traffic following the restart"
}

# badconfig: each bad file or flag makes s5tund exit 2 with a message naming
# FILE:LINE and the key (or the flag), and no device appears. A good file with
# --check-config exits 0, also without a device.
case_badconfig() {
  ip netns add "$NS_C"
  ip -n "$NS_C" link set lo up
  local n=0 f line key out rc
  check_no_device() {
    local links
    links=$(ip -n "$NS_C" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | tr '\n' ' ')
    [[ $links == "lo " ]] || fail "$1: links in the namespace after s5tund exited: $links (expected only lo)"
  }
  # bad FILE-CONTENT KEY: the line holding KEY is the one to be reported.
  bad() {
    local content=$1
    key=$2
    n=$((n + 1))
    f=$WORK/bad$n.ini
    printf '%s\n' "$content" >"$f"
    line=$(grep -n -E "^[[:space:]]*${key}[[:space:]]*=" "$f" | head -n 1 | cut -d: -f1)
    rc=0
    out=$(ip netns exec "$NS_C" timeout -k 5 "$T_STOP" "$S5TUND" --config "$f" 2>&1) || rc=$?
    printf '%s\n' "$out" | sed "s/^/    bad$n: /"
    ((rc == 124 || rc == 137)) && fail "bad$n: s5tund did not exit within ${T_STOP}s"
    ((rc == 2)) || fail "bad$n ($key): exit status $rc, expected 2"
    grep -qF "$f:$line" <<<"$out" || fail "bad$n ($key): message does not name $f:$line"
    grep -qF "$key" <<<"$out" || fail "bad$n ($key): message does not name the key $key"
    check_no_device "bad$n"
    log "bad$n: exit 2, names $(basename "$f"):$line and $key"
  }
  local tun="[tun]
name = $TUN
"
  local socks="[socks5]
address = $S_ADDR4
port = $MS_PORT"
  bad "# mtu is not a number
$tun
ipv4 = $TUN_IPV4
mtu = banana

$socks" mtu
  bad "$tun

$socks
colour = blue" colour
  bad "mode = sideways
queues = 2
$tun
$socks" mode
  bad "queues = 2
$tun
[socks5]
address = $S_ADDR4
port = 99999" port
  bad "$tun
[socks5]
address = proxy.example
port = $MS_PORT" address
  bad "$tun
ipv4 = 198.18.0.1/99
$socks" ipv4

  # A bad flag: exit 2 and the flag named.
  rc=0
  out=$(ip netns exec "$NS_C" timeout -k 5 "$T_STOP" "$S5TUND" --mode sideways --socks5 "$S_ADDR4:$MS_PORT" 2>&1) || rc=$?
  printf '%s\n' "$out" | sed 's/^/    flag: /'
  ((rc == 2)) || fail "--mode sideways: exit status $rc, expected 2"
  grep -qF "mode" <<<"$out" || fail "--mode sideways: message does not name the flag"
  check_no_device "flag"
  log "bad flag: exit 2, names mode"

  # The good file, checked only: exit 0, nothing created.
  f=$WORK/good.ini
  printf '%s\n' "mode = process" "queues = 2" "$tun" "$socks" >"$f"
  rc=0
  out=$(ip netns exec "$NS_C" timeout -k 5 "$T_STOP" "$S5TUND" --config "$f" --check-config 2>&1) || rc=$?
  printf '%s\n' "$out" | sed 's/^/    good: /'
  ((rc == 0)) || fail "--check-config on a good file: exit status $rc, expected 0"
  check_no_device "check-config"
  log "good file with --check-config: exit 0, no device"
}

"case_$CASE"
log "PASS: $CASE${MODE:+ mode=$MODE queues=$QUEUES}"
