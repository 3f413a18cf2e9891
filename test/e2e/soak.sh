# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end load and soak cases (run.sh runs them):
#
#   run.sh load MODE QUEUES [S5TUND]     10,000 TCP connections held at once
#   run.sh soak MODE QUEUES [S5TUND]     mixed traffic for SOAK_SECONDS (600)
#   run.sh rss MODE QUEUES [S5TUND]      RSS back near idle after a load, twice
#   run.sh footprint MODE QUEUES [S5TUND] the memory after start and after a bulk
#                                         transfer against issue 21's limits (footprint.py)
#
# Both through danted (a real SOCKS5 server; it spreads its clients over
# child processes, so 10,000 connections fit in its per-process fd limit,
# which microsocks, one process holding 20,000 sockets, does not) to
# target.py (TCP) and udptarget.py (UDP) in namespace S; the traffic and the
# checks are soak.py's, in namespace C, with s5tund's [run] limit-nofile set
# to the most this shell may have (at most 65536). `make soak` runs soak in
# both modes, `make soak-short` for 60 s each (CI).
#
# Environment: SOAK_SECONDS (600), SOAK_EVERY (sample period, 5 s),
# LOAD_N (10000), RSS_HOLD and RSS_ROUNDS (2000 x 5 a load), FOOTPRINT_ARGS
# (footprint.py's options, e.g. --measure-only), SOAK_NOFILE (s5tund's limit-nofile; lower it to see the
# load case fail), E2E_KEEP=1 keeps the work directory.
SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_EVERY=${SOAK_EVERY:-5}
LOAD_N=${LOAD_N:-10000}
RSS_HOLD=${RSS_HOLD:-2000}
RSS_ROUNDS=${RSS_ROUNDS:-5}
[[ $SOAK_SECONDS =~ ^[1-9][0-9]*$ ]] || { echo "SOAK_SECONDS must be a positive number" >&2; exit 2; }
# The case's own bound (lib.sh's watchdog): the traffic plus the set-up, the
# settling and the checks. Set when run.sh sources this file, before
# e2e_init starts the watchdog.
if [[ $CASE == soak ]]; then
  export E2E_DEADLINE=${E2E_DEADLINE:-$((SOAK_SECONDS + 600))}
else
  export E2E_DEADLINE=${E2E_DEADLINE:-1500}
fi

STATS_SOCK=""
UDP_IDLE=5

start_udptarget() {
  local ready=$WORK/udptarget.ready
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$HERE/udptarget.py" --listen "$TGT4" --listen "$TGT6" \
    --port 7001 --port 7002 --ready-file "$ready" >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "udptarget on $TGT4 and [$TGT6] ports 7001 7002"; return 0; }
    sleep 0.1
  done
  fail "udptarget.py did not start"
}

soakpy() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$((E2E_DEADLINE - 60))" "$PY" "$HERE/soak.py" "$@" \
    --pid "$S5PID" --stats "$STATS_SOCK" --s5tund "$S5TUND" --host "$TGT4" --host6 "$TGT6" --port "$TGT_PORT"
}

# What every case shares: limits, the topology, danted, s5tund with a stats
# socket and [run] limit-nofile.
setup_soak() {
  local ini limits
  # Under AddressSanitizer (make test-asan) freed memory waits in a quarantine
  # before reuse, 256 MB per process by default: RSS climbs until it is full,
  # after the warm-up in process mode, where each worker has its own. A small
  # quarantine fills during the warm-up, so growth after it means a leak again.
  if grep -q __asan_init "$S5TUND" 2>/dev/null; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
  fi
  if [[ $CASE == load ]]; then
    log "case load mode=$MODE queues=$QUEUES n=$LOAD_N binary=$S5TUND"
  elif [[ $CASE == rss ]]; then
    log "case rss mode=$MODE queues=$QUEUES load=${RSS_ROUNDS}x$RSS_HOLD binary=$S5TUND"
    LOAD_N=$RSS_HOLD
  elif [[ $CASE == footprint ]]; then
    log "case footprint mode=$MODE queues=$QUEUES binary=$S5TUND"
    LOAD_N=0
  else
    log "case soak mode=$MODE queues=$QUEUES seconds=$SOAK_SECONDS binary=$S5TUND"
  fi

  ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  NOFILE=$(ulimit -n)
  ((NOFILE > 65536)) && NOFILE=65536
  if [[ $CASE != soak ]] && ((NOFILE < LOAD_N + 1000)); then
    skip "open files limited to $NOFILE here (no CAP_SYS_RESOURCE to raise it): $LOAD_N connections need more"
  fi
  NOFILE=${SOAK_NOFILE:-$NOFILE}   # lower it to see the load case fail
  STATS_SOCK=$WORK/stats.sock
  e2e_topology_up
  in_c sysctl -qw net.ipv6.conf.default.router_solicitations=0 net.ipv6.conf.all.router_solicitations=0
  # Churning connections leave TIME_WAIT sockets in both namespaces; reuse
  # them for new outgoing connections rather than run out of ports.
  in_c sysctl -qw net.ipv4.tcp_tw_reuse=1
  in_s sysctl -qw net.ipv4.tcp_tw_reuse=1
  in_c sysctl -qw net.ipv4.ip_local_port_range="10000 65000"
  in_s sysctl -qw net.ipv4.ip_local_port_range="10000 65000"
  e2e_start_target
  [[ $CASE == soak || $CASE == footprint ]] && start_udptarget
  e2e_start_dante

  ini=$WORK/s5tund.ini
  # footprint: the debug log has each trim's figures (heap in use, free).
  [[ $CASE == footprint ]] && export CFG_LOG_LEVEL=debug
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT \
    e2e_write_config "$ini"
  printf '%s\n' "" "[session]" "udp-idle-timeout = $UDP_IDLE" "" "[stats]" "socket = $STATS_SOCK" \
    "" "[run]" "limit-nofile = $NOFILE" >>"$ini"
  e2e_start_s5tund --config "$ini"
  if [[ $CASE == footprint ]]; then
    e2e_wait_device "$MODE" "$QUEUES" # "after start" is before any traffic
  else
    e2e_wait_ready "$MODE" "$QUEUES"
  fi
  limits=$(grep "open files" "/proc/$S5PID/limits")
  log "s5tund: $(oneline "$limits")"
  [[ $(awk '{print $4}' <<<"$limits") == "$NOFILE" ]] || fail "[run] limit-nofile = $NOFILE not in force: $limits"
}

soak_finish() {
  e2e_require_alive "after the $CASE"
  # shellcheck disable=SC2119  # the current run's log
  e2e_s5_log_clean
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
}

case_load() {
  soakpy load --n "$LOAD_N"
  soak_finish
}

case_rss() {
  soakpy rss --hold "$RSS_HOLD" --rounds "$RSS_ROUNDS"
  soak_finish
}

# The memory after start and 5 s after a bulk transfer and a UDP burst,
# against issue 21's limits (footprint.py says which and why on Pss).
case_footprint() {
  # shellcheck disable=SC2086  # FOOTPRINT_ARGS: options, split into words
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$((E2E_DEADLINE - 60))" "$PY" "$HERE/footprint.py" \
    --pid "$S5PID" --stats "$STATS_SOCK" --mode "$MODE" --queues "$QUEUES" --host "$TGT4" --port "$TGT_PORT" \
    ${FOOTPRINT_ARGS:-}
  soak_finish
}

case_soak() {
  soakpy soak --seconds "$SOAK_SECONDS" --every "$SOAK_EVERY" --settle $((UDP_IDLE + 120))
  soak_finish
}
