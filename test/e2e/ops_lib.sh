# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# What the cases of operations share (ops_route.sh, ops_life.sh,
# ops_stats.sh; their checks are in ops.py, run inside namespace C):
# the topology, s5tund through microsocks with its stats socket, ops.py.

STATS_SOCK=""

# ops_start [INI LINES...]: s5tund through microsocks with mode and queues
# from the case, the stats socket, and the extra INI lines appended (later
# sections may repeat [log] or [run]: keys must differ).
ops_start() {
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini
  STATS_SOCK=$WORK/stats.sock
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$MS_PORT \
    e2e_write_config "$ini"
  printf '%s\n' "" "[stats]" "socket = $STATS_SOCK" "$@" >>"$ini"
  e2e_start_s5tund --config "$ini"
}

# ops ARGS...: ops.py in C, bounded.
ops() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${OPS_T:-$T_BULK}" "$PY" "$HERE/ops.py" "$@"
}

# The kernel's IPv6 router solicitations on tun0 would move the counters at
# random moments; the stats checks want them still when nothing is sent.
ops_quiet_ipv6() {
  in_c sysctl -qw net.ipv6.conf.default.router_solicitations=0 net.ipv6.conf.all.router_solicitations=0
}

ops_setup() {
  e2e_topology_up
  ops_quiet_ipv6
  e2e_start_target
  # shellcheck disable=SC2119  # no credentials
  e2e_start_microsocks
}

ops_stop_ok() {   # SIGTERM, exit 0, device gone
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  return 0
}
