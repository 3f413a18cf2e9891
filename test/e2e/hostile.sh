# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases with hostile and broken peers (run.sh runs them; ctest
# e2e.hostile.CASE.MODE.qN): garbage, truncated, bigdomain, slow, hang,
# close_handshake, close_transfer, udp_unreachable, idle, halfclose,
# synflood, fd_exhaustion, tunflood.
#
# The peers are hostile.py's misbehaving SOCKS5 server (behaviour chosen by
# the CONNECT's port, see hostile.py), danted (halfclose, synflood,
# tunflood; with hostile.py's UDP sink) and microsocks (fd_exhaustion, and
# synflood's keeper and spoofed sources through an upstream of their own); the
# traffic and the checks are hostile.py's "check CASE", run in namespace C:
# during the case a keeper echoes through the same daemon and must never
# fail; afterwards every session is gone (stats tcp_active / udp_active 0),
# the daemon's process tree holds as many fds as before, the counters moved
# by what was done, and the daemon logged the case a bounded number of
# times (E2E_HOSTILE_LOG_MAX lines at info or above, default 20), not once
# per session.

# Thousands of sockets in the client, the proxies and the target: as many
# as allowed (raising the hard limit needs CAP_SYS_RESOURCE, which a
# container may lack); the daemon sets its own with [run] limit-nofile.
setup_hostile() {
  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  NOFILE_MAX=$(ulimit -n)
  ((NOFILE_MAX > 65536)) && NOFILE_MAX=65536
  e2e_topology_up
  # The kernel's IPv6 router solicitations would only add noise on tun0.
  in_c sysctl -qw net.ipv6.conf.default.router_solicitations=0 net.ipv6.conf.all.router_solicitations=0
  e2e_start_target
}

HP_PORT=1083                  # hostile.py proxy
HP_LOG=""
STATS_SOCK=""
LOG_MAX=${E2E_HOSTILE_LOG_MAX:-20}

# hostile_run ROLE NAME [ARGS...]: hostile.py ROLE ARGS in S, logging to
# $WORK/NAME.log, until it says it is ready.
hostile_run() {
  local role=$1 name=$2 ready=$WORK/$2.ready
  shift 2
  E2E_LOGS+=("$WORK/$name.log")
  ip netns exec "$NS_S" "$PY" "$HERE/hostile.py" "$role" --ready-file "$ready" "$@" \
    >"$WORK/$name.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "hostile.py $role ready: $*"; return 0; }
    sleep 0.1
  done
  fail "hostile.py $role did not start"
}

# hostile_proxy [ARGS...]: hostile.py proxy on S_ADDR4 and S_ADDR6.
hostile_proxy() {
  HP_LOG=$WORK/hostile.log
  hostile_run proxy hostile --listen "$S_ADDR4" --listen "$S_ADDR6" --port "$HP_PORT" "$@"
}

# start PROXY_ADDR PROXY_PORT [INI LINES...]: s5tund with the case's mode
# and queues, the stats socket, limit-nofile (LIMIT_NOFILE, default the most
# this shell may have, at most 65536),
# CFG_* from the caller, extra lines appended.
start() {
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini addr=$1 port=$2
  shift 2
  STATS_SOCK=$WORK/stats.sock
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$addr CFG_PROXY_PORT=$port e2e_write_config "$ini"
  printf '%s\n' "" "[stats]" "socket = $STATS_SOCK" "" "[run]" \
    "limit-nofile = ${LIMIT_NOFILE:-$NOFILE_MAX}" "$@" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_ready "$MODE" "$QUEUES"
}

# check [ARGS...]: hostile.py check CASE in C, bounded.
check() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${CHECK_T:-$T_BULK}" "$PY" "$HERE/hostile.py" \
    check "$CASE" --pid "$S5PID" --stats "$STATS_SOCK" --log "$S5LOG" \
    --proxy-log "${HP_LOG:-}" --proxy-addr "$S_ADDR4" --host "$TGT4" --host6 "$TGT6" \
    --port "$TGT_PORT" --src "$C_ADDR4" --log-max "$LOG_MAX" \
    --connect-timeout "${CFG_CONNECT_TIMEOUT:-10}" --idle-timeout "${CFG_IDLE_TIMEOUT:-600}" \
    --limit-nofile "${LIMIT_NOFILE:-$NOFILE_MAX}" ${E2E_HOSTILE_N:+--n "$E2E_HOSTILE_N"} \
    ${E2E_HOSTILE_FLOOD:+--flood "$E2E_HOSTILE_FLOOD"} \
    ${E2E_HOSTILE_FLOOD_UNPACED:+--flood-unpaced} "$@"
}

stop_ok() {
  e2e_require_alive "after the case"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
}

# hostile_via_proxy CONNECT-TIMEOUT [PROXY ARGS...]: the case against
# hostile.py's SOCKS5 server (the CONNECT's port picks its behaviour).
hostile_via_proxy() {
  local t=$1
  shift
  hostile_proxy "$@"
  CFG_CONNECT_TIMEOUT=$t start "$S_ADDR4" "$HP_PORT"
  CFG_CONNECT_TIMEOUT=$t check
  stop_ok
}

case_garbage() { hostile_via_proxy 5; }
case_truncated() { hostile_via_proxy 5; }
case_bigdomain() { hostile_via_proxy 5; }
case_close_handshake() { hostile_via_proxy 5; }
case_close_transfer() { hostile_via_proxy 5; }
case_hang() { hostile_via_proxy 2; }
case_slow() { hostile_via_proxy 4 --slow-greeting; }

case_idle() {
  hostile_proxy
  CFG_IDLE_TIMEOUT=3 start "$S_ADDR4" "$HP_PORT"
  CFG_IDLE_TIMEOUT=3 check
  stop_ok
}

case_udp_unreachable() {
  echo "10.99.0.1 4000" >"$WORK/udp-bnd"
  hostile_proxy --udp-bnd-file "$WORK/udp-bnd"
  CFG_CONNECT_TIMEOUT=3 start "$S_ADDR4" "$HP_PORT" "" "[session]" "udp-idle-timeout = 3"
  CFG_CONNECT_TIMEOUT=3 check --udp-bnd-file "$WORK/udp-bnd"
  stop_ok
}

case_halfclose() {
  e2e_start_dante
  start "$S_ADDR4" "$DANTE_PORT"
  check
  stop_ok
}

case_synflood() {
  # danted forks a process per client: under the flood its processes
  # outnumber the daemon's one worker thread on two cores, and the
  # scheduler gave s5tund a fraction of a core (set-ups of 4-7 s, a keeper
  # reset under ASan). A proxy stands for another machine: niced, it takes
  # what s5tund leaves. The keeper (to the target's IPv6 address) and the
  # spoofed sources (10.202.0.0/16, half-open by design) go through
  # microsocks, an upstream of their own, so that neither waits behind the
  # flood's 5,000 CONNECTs in danted's accept queue.
  DANTE_NICE=10 e2e_start_dante
  # shellcheck disable=SC2119  # no credentials
  e2e_start_microsocks
  CFG_CONNECT_TIMEOUT=5 start "$S_ADDR4" "$DANTE_PORT" "" "[upstream keeper]" "address = $S_ADDR4" \
    "port = $MS_PORT" "" "[rules]" "rule = dst:$TGT6/128 -> keeper" "rule = src:10.202.0.0/16 -> keeper" \
    "rule = dst:$TGT4/32 -> socks5"
  CFG_CONNECT_TIMEOUT=5 check
  stop_ok
}

case_tunflood() {
  # A flood of packets into tun0 (TCP segments of no connection, UDP to
  # the 64 ports of the target's addresses where the sink swallows them;
  # E2E_HOSTILE_FLOOD picks the senders, default tcp,udp;
  # E2E_HOSTILE_FLOOD_UNPACED=1: no pauses when tun0 drops) while idle
  # connections wait for tcp-idle-timeout.
  e2e_start_dante
  hostile_run sink sink --listen "$TGT4" --listen "$TGT6"
  CFG_IDLE_TIMEOUT=3 start "$S_ADDR4" "$DANTE_PORT" "" "[session]" "udp-idle-timeout = 3"
  CFG_IDLE_TIMEOUT=3 check
  stop_ok
}

case_fd_exhaustion() {
  # shellcheck disable=SC2119  # no credentials
  e2e_start_microsocks
  LIMIT_NOFILE=${E2E_HOSTILE_NOFILE:-256}
  start "$S_ADDR4" "$MS_PORT"
  check
  stop_ok
}
