# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases of operations, routing (run.sh runs them; ctest
# e2e.ops.CASE.MODE.qN): auto-route, the kill switch, per-user routing.
# shellcheck source=ops_lib.sh
source "$HERE/ops_lib.sh"

# autoroute: [tun] auto-route with [socks5] mark, [run] user = nobody,
# post-up and pre-down. Every packet but the marked ones goes into the
# tunnel through the policy rule (the test's own routes are removed), so
# the target is reached and the proxy connection, marked, is not looped;
# workers run as nobody (threads in thread mode, processes in process mode)
# while the main thread or supervisor stays root; the hooks see the device.
# After a clean exit no rule is left; after kill -9 of the whole daemon the
# stale rules are there, and the next start replaces them (one per family)
# and its exit removes them.
autoroute_ini=()
autoroute_start() {
  ops_start "${autoroute_ini[@]}"
  e2e_wait_device "$MODE" "$QUEUES"
  # auto-route must carry the traffic, not the harness's routes.
  in_c ip route del 10.201.0.0/24 dev "$TUN" 2>/dev/null || true
  in_c ip -6 route del fd00:201::/64 dev "$TUN" 2>/dev/null || true
}

autoroute_rules() {   # FAMILY-FLAG: the rules with auto-route's priority
  in_c ip "$1" rule show pref 5335
}

autoroute_check_rules() {   # how many per family are expected
  local fam out n
  for fam in -4 -6; do
    out=$(autoroute_rules "$fam")
    n=$(grep -c . <<<"$out" || true)
    ((n == $1)) || fail "ip $fam rule pref 5335: $n rule(s), expected $1: $(oneline "$out")"
    if (($1 > 0)); then
      grep -q "not from all fwmark 0x53 lookup 5335" <<<"$out" \
        || fail "ip $fam rule pref 5335 is not 'not fwmark 0x53 lookup 5335': $(oneline "$out")"
    fi
  done
}

autoroute_check_uids() {
  local t uid main_uid nobody=0 pid
  nobody_uid=$(id -u nobody)
  if [[ $MODE == thread ]]; then
    main_uid=$(awk '/^Uid:/ {print $2}' "/proc/$S5PID/status")
    ((main_uid == 0)) || fail "s5tund's main thread runs as uid $main_uid, expected 0"
    for t in /proc/"$S5PID"/task/*; do
      uid=$(awk '/^Uid:/ {print $2}' "$t/status")
      ((uid == nobody_uid)) && nobody=$((nobody + 1))
    done
    ((nobody == QUEUES)) || fail "$nobody thread(s) run as nobody, expected the $QUEUES worker(s)"
  else
    main_uid=$(awk '/^Uid:/ {print $2}' "/proc/$S5PID/status")
    ((main_uid == 0)) || fail "the supervisor runs as uid $main_uid, expected 0"
    for pid in $(e2e_workers); do
      uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
      ((uid == nobody_uid)) || fail "worker $pid runs as uid $uid, expected nobody ($nobody_uid)"
      nobody=$((nobody + 1))
    done
    ((nobody == QUEUES)) || fail "$nobody worker(s) found, expected $QUEUES"
  fi
  # The main thread or supervisor keeps CAP_NET_ADMIN, CAP_KILL, CAP_SETUID
  # and CAP_SETGID only (bits 12, 5, 7, 6).
  local cap
  cap=$(awk '/^CapEff:/ {print $2}' "/proc/$S5PID/status")
  [[ $cap == 00000000000010e0 ]] || fail "the main process's effective capabilities are $cap, expected 00000000000010e0"
  log "workers run as nobody ($nobody), the main process as root with capabilities $cap"
}

# An application's own connection to the proxy's address goes into the
# tunnel (auto-route takes every unmarked packet): it is refused, counted,
# and the warning says what happened, not that [socks5] mark is missing
# (it is set: s5tund's own proxy connections go around the tunnel).
autoroute_check_app_to_proxy() {
  local line
  client --host "$S_ADDR4" --port "$MS_PORT" --timeout 15 expect-refused
  line=$(e2e_wait_log "$S5LOG" "refused a connection to the SOCKS5 proxy's address \(1 so far\): an application connected to the proxy" 10 \
    "warning about an application's connection to the proxy")
  grep -q "set \[socks5\] mark" "$S5LOG" && fail "told to set [socks5] mark, which is set: $(grep "set \[socks5\] mark" "$S5LOG")"
  log "an application's connection to the proxy: ${line#* warn  }"
}

case_autoroute() {
  local hook=$WORK/hooks.log out i
  # exclude-local = false: the proxy sits on the connected network, which
  # exclude-local would keep out of the tunnel, and this case checks that
  # an application's unmarked connection to it goes into the tunnel and is
  # refused there (route.sh covers exclude-local).
  autoroute_ini=("[tun]" "auto-route = true" "exclude-local = false"
    "post-up = echo \"up \$S5TUND_DEVICE \$S5TUND_QUEUES \$S5TUND_MODE\" >> $hook"
    "pre-down = echo \"down \$S5TUND_DEVICE\" >> $hook"
    "[run]" "user = nobody")
  ops_setup
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 1
  out=$(in_c ip route show table 5335)
  grep -q "default dev $TUN" <<<"$out" || fail "table 5335 has no default route via $TUN: $(oneline "$out")"
  # Unmarked packets to the proxy would go into the tunnel; marked ones not.
  in_c ip route get "$S_ADDR4" | grep -q "dev $TUN" || fail "unmarked traffic to the proxy does not go into $TUN"
  if in_c ip route get "$S_ADDR4" mark 0x53 | grep -q "dev $TUN"; then
    fail "marked traffic to the proxy goes into $TUN"
  fi
  client --host "$TGT4" echo --count 3 --retry-for 20
  client --host "$TGT6" echo --count 3 --retry-for 20
  client --host "$TGT4" concurrent 40
  out=$("$S5TUND" --stats "$STATS_SOCK" --json | grep -o '"drop_proxy_loop":[0-9]*' | head -1)
  [[ $out == '"drop_proxy_loop":0' ]] || fail "connections to the proxy itself were refused: $out"
  autoroute_check_uids
  grep -qx "up $TUN $QUEUES $MODE" "$hook" || fail "post-up did not run with the device: $(oneline "$(cat "$hook")")"
  e2e_s5_log_clean
  autoroute_check_app_to_proxy
  ops_stop_ok
  grep -qx "down $TUN" "$hook" || fail "pre-down did not run: $(oneline "$(cat "$hook")")"
  autoroute_check_rules 0
  log "auto-route: rules installed, traffic through the tunnel, proxy outside it, rules gone after exit"

  # kill -9 of the whole daemon leaves the rules; the next start cleans up.
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 1
  kill -KILL "$S5PID"
  wait "$S5PID" 2>/dev/null || true
  S5PID=""
  for i in $(seq $((T_STOP * 10))); do
    e2e_tun_exists || break
    sleep 0.1
  done
  e2e_tun_exists && fail "$TUN still exists ${T_STOP}s after kill -9 of s5tund"
  autoroute_check_rules 1
  log "after kill -9: the stale rules are still there, as expected"
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 1
  client --host "$TGT4" echo --count 3 --retry-for 20
  ops_stop_ok
  autoroute_check_rules 0
  log "restart after kill -9: one rule per family while running, none after exit"
}

# killswitch: auto-route on a host whose own default route (via veth0)
# reaches the target directly. While s5tund runs, connections go through it
# (counted in its stats); after kill -9 of the whole daemon (supervisor and
# workers) they fail instead of going out directly; a restart cleans the
# stale rules and routes (one rule, one device route and one unreachable
# route per family) and serves again; a clean stop leaves rules and routes
# exactly as before the first start and connections go out directly.
# IPv4 and IPv6. With kill-switch = false, kill -9 fails open as before;
# killed with the kill switch and started without, the stale unreachable
# routes go. With persist = true the device and its route outlive kill -9:
# connections go unanswered into it, still not around it.
ks_routing() {   # every rule and route of C, both families
  local fam
  for fam in -4 -6; do
    in_c ip "$fam" rule show
    in_c ip "$fam" route show table all
  done
}

ks_tcp_total() {
  "$S5TUND" --stats "$STATS_SOCK" --json | grep -o '"tcp_total":[0-9]*' | head -1 | cut -d: -f2
}

ks_through() {   # connections to both targets work, through s5tund
  local t0 t1
  t0=$(ks_tcp_total)
  client --host "$TGT4" echo --count 2 --retry-for 20
  client --host "$TGT6" echo --count 2 --retry-for 20
  t1=$(ks_tcp_total)
  ((t1 >= t0 + 2)) || fail "s5tund counted $((t1 - t0)) new TCP sessions for 2 echoes: not through the tunnel"
  log "through s5tund: $((t1 - t0)) TCP sessions counted for 2 echoes"
}

# Connections the target saw from C's own address, i.e. not through the
# proxy (microsocks connects from S): target.py logs each one's peer.
ks_direct_seen() {
  grep -cE "^target: \('($C_ADDR4|$C_ADDR6)'" "$WORK/target.log" || true
}

ks_direct() {    # WHY: connections to both targets work without s5tund
  local tgt n0 i
  [[ -z $S5PID ]] || fail "ks_direct with s5tund running (pid $S5PID)"
  n0=$(ks_direct_seen)
  for tgt in "$TGT4" "$TGT6"; do
    client --host "$tgt" --timeout 5 echo --count 1 || fail "$1: no direct connection to $tgt"
  done
  # The target logs a connection once it ended (bounded wait).
  for i in $(seq $((T_STEP * 10))); do
    (($(ks_direct_seen) >= n0 + 2)) && break
    sleep 0.1
  done
  (($(ks_direct_seen) >= n0 + 2)) || fail "$1: the target did not see 2 connections from $C_ADDR4/$C_ADDR6"
  log "$1: direct connections to $TGT4 and $TGT6 work (the target saw them from $C_ADDR4 and $C_ADDR6)"
}

ks_blocked() {   # [TIMEOUT]: connections to both targets fail
  local tgt out
  for tgt in "$TGT4" "$TGT6"; do
    if out=$(client --host "$tgt" --timeout "${1:-5}" echo --count 1 2>&1); then
      fail "after kill -9 a connection to $tgt went out directly (the kill switch leaks): $(oneline "$out")"
    fi
    log "after kill -9, $tgt: $(tail -n 1 <<<"$out")"
  done
}

ks_kill9() {     # supervisor and workers at once; the device goes with them
  local pids i
  pids="$S5PID $(e2e_workers | tr '\n' ' ')"
  # shellcheck disable=SC2086
  kill -KILL $pids
  wait "$S5PID" 2>/dev/null || true
  S5PID=""
  if [[ -n ${CFG_PERSIST:-} ]]; then   # the device stays, its queues go
    for i in $(seq $((T_STOP * 10))); do
      (($(e2e_tun_numqueues) == 0)) && break
      sleep 0.1
    done
    (($(e2e_tun_numqueues) == 0)) || fail "persistent $TUN still has queues ${T_STOP}s after kill -9 ($pids)"
    log "killed $pids with SIGKILL; the persistent $TUN stays, no queue attached"
    return 0
  fi
  for i in $(seq $((T_STOP * 10))); do
    e2e_tun_exists || break
    sleep 0.1
  done
  e2e_tun_exists && fail "$TUN still exists ${T_STOP}s after kill -9 of s5tund ($pids)"
  log "killed $pids with SIGKILL; $TUN is gone"
}

ks_check_table() {   # UNREACHABLE DEV: routes per family expected in table 5335
  local fam out n
  for fam in -4 -6; do
    out=$(in_c ip "$fam" route show table 5335)
    n=$(grep -c "^unreachable default" <<<"$out" || true)
    ((n == $1)) || fail "ip $fam route show table 5335: $n unreachable default route(s), expected $1: $(oneline "$out")"
    n=$(grep -c "^default dev $TUN" <<<"$out" || true)
    ((n == $2)) || fail "ip $fam route show table 5335: $n default route(s) via $TUN, expected $2: $(oneline "$out")"
    n=$(grep -c . <<<"$out" || true)
    (($1 + $2 == n)) || fail "ip $fam route show table 5335: unexpected routes: $(oneline "$out")"
  done
}

# peruser: auto-route with exclude-uid, then include-uid, on a host whose
# own default route reaches the target directly. With exclude-uid = nobody,
# nobody's connections go around the tunnel (the target sees them from C's
# own address, s5tund counts none) while root's go through it; with
# include-uid = nobody the other way round. One rule per user range and
# family at priority 5334; after a clean stop routing is as before.
pu_client() {    # USER ARGS...: client.py in C as USER
  bg_wait ip netns exec "$NS_C" setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups \
    timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/client.py" --port "$TGT_PORT" "${@:2}"
}

pu_check() {     # USER through|direct
  local t0 t1 d0 i tgt
  t0=$(ks_tcp_total)
  d0=$(ks_direct_seen)
  for tgt in "$TGT4" "$TGT6"; do
    pu_client "$1" --host "$tgt" --timeout 10 echo --count 1 --retry-for 20
  done
  t1=$(ks_tcp_total)
  if [[ $2 == through ]]; then
    ((t1 >= t0 + 2)) || fail "$1's connections were not carried by s5tund ($((t1 - t0)) sessions counted)"
  else
    for i in $(seq $((T_STEP * 10))); do
      (($(ks_direct_seen) >= d0 + 2)) && break
      sleep 0.1
    done
    (($(ks_direct_seen) >= d0 + 2)) || fail "the target did not see $1's 2 connections from C's own address"
    ((t1 == t0)) || fail "$1's connections should go around the tunnel, but s5tund counted $((t1 - t0)) sessions"
  fi
  log "$1: $([[ $2 == through ]] && echo through || echo around) the tunnel (IPv4 and IPv6)"
}

pu_rules() {     # FAMILY: the rules of priority 5334
  in_c ip "$1" rule show pref 5334
}

case_peruser() {
  local nob fam out before i
  nob=$(id -u nobody)
  ops_setup
  in_c ip route add default via "$S_ADDR4"
  in_c ip -6 route add default via "$S_ADDR6"
  for i in $(seq $((T_START * 10))); do
    [[ -z $(in_c ip -6 addr show dev veth0 tentative) ]] && break
    sleep 0.1
  done
  before=$(ks_routing)
  # The target is reached directly by anyone as long as s5tund is not there.
  pu_client nobody --host "$TGT4" --timeout 10 echo --count 1

  autoroute_ini=("[tun]" "auto-route = true" "exclude-uid = nobody")
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 1
  for fam in -4 -6; do
    out=$(pu_rules "$fam")
    [[ $(grep -c . <<<"$out") == 1 ]] && grep -q "from all uidrange $nob-$nob lookup main" <<<"$out" \
      || fail "ip $fam rule pref 5334 with exclude-uid: $(oneline "$out")"
  done
  pu_check root through
  pu_check nobody direct
  ops_stop_ok
  [[ -z $(pu_rules -4)$(pu_rules -6) ]] || fail "rules of priority 5334 left after a clean stop"
  [[ $(ks_routing) == "$before" ]] || fail "routing differs after a clean stop (exclude-uid)"

  # Killed with exclude-uid, started with include-uid: the stale per-user
  # rule goes, the new ones take its place.
  CFG_MARK=0x53 autoroute_start
  ks_kill9
  [[ -n $(pu_rules -4) ]] || fail "no stale rule of priority 5334 after kill -9"
  autoroute_ini=("[tun]" "auto-route = true" "include-uid = nobody")
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 0
  for fam in -4 -6; do
    out=$(pu_rules "$fam")
    [[ $(grep -c . <<<"$out") == 2 ]] && grep -q "from all fwmark 0x53 lookup main" <<<"$out" &&
      grep -q "from all uidrange $nob-$nob lookup 5335" <<<"$out" \
      || fail "ip $fam rule pref 5334 with include-uid: $(oneline "$out")"
  done
  pu_check nobody through
  pu_check root direct
  e2e_s5_log_clean
  ops_stop_ok
  [[ -z $(pu_rules -4)$(pu_rules -6) ]] || fail "rules of priority 5334 left after a clean stop"
  [[ $(ks_routing) == "$before" ]] || fail "routing differs after a clean stop (include-uid)"
  log "exclude-uid and include-uid: the users' traffic around or through the tunnel as asked, routing restored"
}

case_killswitch() {
  local before after ks i direct0
  ops_setup
  in_c ip route add default via "$S_ADDR4"
  in_c ip -6 route add default via "$S_ADDR6"
  ks_direct "before s5tund"
  # veth0's link-local address enters the local table once its DAD is done.
  for i in $(seq $((T_START * 10))); do
    [[ -z $(in_c ip -6 addr show dev veth0 tentative) ]] && break
    sleep 0.1
  done
  before=$(ks_routing)
  for ks in true false; do
    autoroute_ini=("[tun]" "auto-route = true")
    [[ $ks == false ]] && autoroute_ini+=("kill-switch = false")
    direct0=$(ks_direct_seen)
    CFG_MARK=0x53 autoroute_start
    autoroute_check_rules 1
    if [[ $ks == true ]]; then ks_check_table 1 1; else ks_check_table 0 1; fi
    ks_through
    if [[ $ks == true && $MODE == process ]]; then
      # A worker restarting: the supervisor holds its queue, the device and
      # its route stay; its flows wait for the new worker, none goes around.
      kill -KILL "$(e2e_workers | head -n 1)"
      CLIENT_T=$((T_START + T_STEP)) client --host "$TGT4" --timeout 10 concurrent 8 --retry-for "$T_START"
      ks_check_table 1 1
      log "a worker killed and restarted: connections went through the tunnel"
    fi
    ks_kill9
    autoroute_check_rules 1
    if [[ $ks == true ]]; then
      ks_check_table 1 0
      ks_blocked
      (($(ks_direct_seen) == direct0)) \
        || fail "kill-switch = true: the target saw $(($(ks_direct_seen) - direct0)) connection(s) from $C_ADDR4/$C_ADDR6, around the tunnel"
      log "kill-switch = true: after kill -9, nothing goes out around the tunnel"
    else
      ks_check_table 0 0
      ks_direct "kill-switch = false, after kill -9 (fail-open, as documented)"
    fi
    CFG_MARK=0x53 autoroute_start
    autoroute_check_rules 1
    if [[ $ks == true ]]; then ks_check_table 1 1; else ks_check_table 0 1; fi
    ks_through
    [[ $ks == true && $MODE == process ]] || e2e_s5_log_clean   # a killed worker is logged
    ops_stop_ok
    if [[ $ks == true ]]; then
      (($(ks_direct_seen) == direct0)) \
        || fail "kill-switch = true: the target saw $(($(ks_direct_seen) - direct0)) connection(s) from $C_ADDR4/$C_ADDR6 between the first start and the clean stop"
    fi
    autoroute_check_rules 0
    ks_check_table 0 0
    after=$(ks_routing)
    [[ $after == "$before" ]] || fail "kill-switch = $ks: routing after a clean stop differs from before: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ' || true)"
    ks_direct "kill-switch = $ks, after a clean stop"
    log "kill-switch = $ks: clean stop left rules and routes exactly as before"
  done
  # Killed with the kill switch, started again without: the stale
  # unreachable routes go, the new run fails open as asked.
  autoroute_ini=("[tun]" "auto-route = true")
  CFG_MARK=0x53 autoroute_start
  ks_kill9
  autoroute_ini+=("kill-switch = false")
  CFG_MARK=0x53 autoroute_start
  autoroute_check_rules 1
  ks_check_table 0 1
  ks_through
  ops_stop_ok
  autoroute_check_rules 0
  ks_check_table 0 0
  [[ $(ks_routing) == "$before" ]] || fail "routing after kill-switch true, kill -9, kill-switch false, clean stop differs from before"
  log "kill-switch = true, kill -9, kill-switch = false: the stale unreachable routes were removed"
  # A persistent device outlives kill -9, and so does its route: packets go
  # into a device no one reads, still not around it.
  autoroute_ini=("[tun]" "auto-route = true")
  export CFG_PERSIST=true
  CFG_MARK=0x53 autoroute_start
  ks_kill9
  ks_check_table 1 1
  ks_blocked 2   # unanswered: a direct connection here takes milliseconds
  CFG_MARK=0x53 autoroute_start
  ks_check_table 1 1
  ks_through
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund with persist = true exited with status $S5RC"
  unset CFG_PERSIST
  autoroute_check_rules 0
  ks_check_table 0 0
  in_c ip link del "$TUN"
  [[ $(ks_routing) == "$before" ]] || fail "routing after the persistent runs and ip link del differs from before"
  log "persist = true: after kill -9 the device's route leads into a device no one serves (blocked); restart and clean stop as without"
}
