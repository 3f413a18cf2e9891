# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# [rules]: which flows take which outbound (run.sh runs it; ctest
# e2e.rules.MODE.qN). Two microsocks in S, a (port 1080) and b (1089), each
# binding its outgoing connections to an address of its own, so that the
# target's log (a line per connection, with its peer) says who carried
# what; a direct connection shows C's own address there. Mapped DNS: the
# proxies resolve the names in S's hosts file, s5tund resolves a direct
# one in C's.
#
#   rules   one.test -> a (full:), *.two.test -> b (domain:), "blocked"
#           anywhere in a name -> block (refused at once, counted), UDP to
#           port 7001 -> block (ICMP port unreachable), UDP to port 7002
#           and to direct.test -> direct (echoed: no proxy here has UDP), a
#           name -> direct (resolved by s5tund, C's address at the target,
#           nothing through tun0 twice), a LAN client (another source
#           address on tun0) -> b, TGT4:7000 by address -> a (dst: and
#           port:), TGT6 -> direct (an IPv6 prefix), a 100,000-name list
#           file -> block (a listed name refused, --explain names its
#           line); the hits in --stats, the rule in the session log and
#           --connections; SIGHUP moves one.test to b while a session
#           opened before goes on through a; then with auto-route: direct
#           takes its mark and leaves by C's own route, no session twice;
#           b killed: flows whose rule names b are refused, none through a.

MS_RB_PORT=1089
RA_BIND=10.200.0.21
RB_BIND=10.200.0.22
LAN2=198.18.0.7 # a second source on tun0: the stand-in for another LAN client
LOOP_DST=198.18.200.9 # inside tun0's own prefix: direct there would come back in
RULE_MARK=0x99
declare -A RMS_PID

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

rules_exit() {
  local rc=$?
  rm -rf "/etc/netns/$NS_C"
  (exit "$rc")
  udp_exit
}

setup_rules() {
  udp_install_exit
  trap rules_exit EXIT
  e2e_topology_up
  e2e_start_target
  ip -n "$NS_S" addr add "$RA_BIND/32" dev lo
  ip -n "$NS_S" addr add "$RB_BIND/32" dev lo
  udp_hosts
  local n
  for n in one.test x.two.test blocked.two.test big.test n4711.big.test; do echo "$TGT4 $n"; done >>"$NETNS_ETC/hosts"
  mkdir -p "/etc/netns/$NS_C"
  printf '127.0.0.1 localhost\n%s direct.test\n' "$TGT4" >"/etc/netns/$NS_C/hosts"
  rms_start a
  rms_start b
  # Direct connections carry the mark; C routes it around tun0.
  in_c ip rule add fwmark "$RULE_MARK" lookup 99
  in_c ip route add 10.201.0.0/24 via "$S_ADDR4" dev veth0 table 99
  in_c ip -6 rule add fwmark "$RULE_MARK" lookup 99
  in_c ip -6 route add fd00:201::/64 via "$S_ADDR6" dev veth0 table 99
  # UDP echo on port 7002 (microsocks has no UDP: what comes back came direct).
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" --port 7002 \
    --ready-file "$WORK/udptarget.ready" >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/udptarget.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/udptarget.ready ]] || fail "udptarget.py did not start"
  start_dnsmasq # a real resolver for direct's names: [rules] resolver, with auto-route below
  # 100,000 names, one of them looked up below; then lines as published
  # hosts files have them: three that are no rules, one with two names.
  { seq 0 99999 | sed 's/^/n/; s/$/.big.test/'
    printf '%s\n' "127.0.0.1 localhost" "fe80::1%lo0 localhost" "255.255.255.255 broadcasthost" \
      "0.0.0.0 h1.big.test h2.big.test"; } >"$WORK/big.txt"
}

rms_start() {
  local port=$MS_PORT bind=$RA_BIND
  [[ $1 == b ]] && port=$MS_RB_PORT bind=$RB_BIND
  E2E_LOGS+=("$WORK/microsocks.$1.log")
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$port" -b "$bind" >>"$WORK/microsocks.$1.log" 2>&1 &
  RMS_PID[$1]=$!
  e2e_wait_listen "$port" "$S_ADDR4" || fail "microsocks $1 does not listen on $S_ADDR4:$port"
}

# seen FROM: connections the target saw from that address.
seen() { grep -c "('$1'" "$WORK/target.log" || true; }

# expect_seen ADDR N: until the target saw N connections from ADDR (a line
# comes as a connection ends), then exactly N.
expect_seen() {
  local n
  for _ in $(seq $((T_START * 10))); do
    n=$(seen "$1")
    ((n >= $2)) && break
    sleep 0.1
  done
  ((n == $2)) || fail "the target saw $n connections from $1, expected $2"
}

# mapped NAME: its mapped address, from s5tund's resolver.
mapped() {
  local a
  a=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" "$1" A)
  [[ -n $a ]] || fail "the mapped resolver did not answer $1"
  echo "$a"
}

rules_config() {   # FILE RULE-LINE-FOR-one.test
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$1"
  sed -i -e 's/^level = debug$/&\nsessions = true/' -e 's/^\[session\]$/&\nudp-idle-timeout = 2/' "$1" # a line per session, naming its rule; UDP's soon
  printf '%s\n' "" "[upstream a]" "address = $S_ADDR4" "port = $MS_PORT" "" "[upstream b]" "address = $S_ADDR4" \
    "port = $MS_RB_PORT" "" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" "" "[stats]" \
    "socket = $WORK/stats.sock" "" "[rules]" "mark = $RULE_MARK" "default = b" "$2" \
    "rule = keyword:blocked -> block" "rule = proto:udp port:7001 -> block" "rule = proto:udp port:7002 -> direct" "rule = domain:two.test -> b" \
    "rule = full:direct.test -> direct" "rule = full:direct.example.test -> direct" "rule = src:$LAN2/32 -> b" "rule = dst:$TGT4/32 port:$TGT_PORT proto:tcp -> a" \
    "rule = dst:fd00:201::/64 -> direct" "rule = dst:$LOOP_DST/32 -> direct" "rules-file = $WORK/big.txt -> block" >>"$1"
}

tcp_total() {   # TCP sessions s5tund accepted, all queues
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"]["tcp_total"])'
}

rule_stat() {   # rule_stat OUTBOUND: its hits in --stats --json
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["rules"]["outbounds"][sys.argv[1]])' "$1"
}

case_rules() {
  local ini=$WORK/rules.ini a0 b0 c0 addr hold
  rules_config "$ini" "rule = full:one.test -> a"
  # --explain, from the file alone
  local out
  out=$("$S5TUND" --config "$ini" --explain "$TGT4:80" --name n4711.big.test)
  grep -qx "rule     $WORK/big.txt:4712" <<<"$out" && grep -qx "outbound block" <<<"$out" &&
    grep -qE "^compiled 1[0-9]{5} rules into [0-9]+ KiB in [0-9.]+ s$" <<<"$out" ||
    fail "--explain n4711.big.test: $(oneline "$out")"
  "$S5TUND" --config "$ini" --explain "$TGT4:$TGT_PORT" --src "$LAN2" | grep -qx "outbound b" || fail "--explain --src"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  in_c ip addr add "$LAN2/15" dev "$TUN"
  a0=$(seen "$RA_BIND") b0=$(seen "$RB_BIND") c0=$(seen "$C_ADDR4")

  # By name: one.test through a, x.two.test through b.
  client --host "$(mapped one.test)" echo --count 3 --retry-for "$T_START" >/dev/null
  client --host "$(mapped x.two.test)" echo --count 3 >/dev/null
  expect_seen "$RA_BIND" $((a0 + 1))
  expect_seen "$RB_BIND" $((b0 + 1))
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* \(one.test\) via $S_ADDR4:$MS_PORT \(a\) by rule rules.ini:[0-9]+: " 5 >/dev/null
  log "by name: one.test through a, x.two.test through b"

  # block: refused at once, counted.
  addr=$(mapped blocked.two.test)
  client --host "$addr" expect-refused --timeout 5 >/dev/null
  addr=$(mapped n4711.big.test)
  client --host "$addr" expect-refused --timeout 5 >/dev/null
  client --host "$(mapped h2.big.test)" expect-refused --timeout 5 >/dev/null # a hosts line's second name
  e2e_wait_log "$S5LOG" "info .*rules-file $WORK/big.txt: 3 lines skipped as no rules .* the first at $WORK/big.txt:100001" \
    5 "the info line of big.txt's lines that are no rules" >/dev/null
  # UDP: the association's first datagram decides; blocked: ICMP.
  uclient expect-unreachable --host "$TGT4" --port 7001 >/dev/null
  e2e_wait_log "$S5LOG" "debug .*UDP from port [0-9]+: blocked by \[rules\], rule rules.ini:[0-9]+: ICMP port unreachable" 5 >/dev/null
  (($(rule_stat block) == 4)) || fail "--stats: block counted $(rule_stat block), expected 4 (3 TCP, 1 UDP)"
  # UDP direct: by port to an address (both families), and by name
  # (direct.test, resolved by s5tund); no proxy here carries UDP.
  uclient echo --host "$TGT4" --port 7002 --sizes 1,100,1400 --sources 2 >/dev/null
  uclient echo --host "$TGT6" --port 7002 --sizes 1,100,1232 >/dev/null
  uclient echo --host "$(mapped direct.test)" --port 7002 --sizes 1,100 >/dev/null
  e2e_wait_log "$S5LOG" "info .*session u[0-9]+ udp .* via direct by rule rules.ini:[0-9]+: " 10 >/dev/null
  log "UDP direct: $TGT4, [$TGT6] (port rule) and direct.test (name rule) echoed"
  log "block: blocked.two.test and the list's n4711.big.test and h2.big.test (a hosts line's second name) refused, UDP to port 7001 answered by ICMP, counted 4"

  # direct: by name (s5tund resolves direct.test itself) and an IPv6
  # prefix; the target sees C's own addresses, no proxy carried them.
  local t0
  t0=$(tcp_total)
  client --host "$(mapped direct.test)" echo --count 3 >/dev/null
  client --host "$TGT6" echo --count 3 >/dev/null
  expect_seen "$C_ADDR4" $((c0 + 1))
  for _ in $(seq $((T_START * 10))); do (($(seen "$C_ADDR6") >= 1)) && break; sleep 0.1; done
  (($(seen "$C_ADDR6") == 1)) || fail "the target saw $(seen "$C_ADDR6") connections from $C_ADDR6, expected 1"
  (($(seen "$RA_BIND") == a0 + 1 && $(seen "$RB_BIND") == b0 + 1)) || fail "a proxy carried a direct flow"
  # A direct connection that went into tun0 again would be a session more.
  (($(tcp_total) == t0 + 2)) || fail "$(($(tcp_total) - t0)) sessions for 2 direct connections: one came back through $TUN"
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* \(direct.test\) via direct by rule rules.ini:[0-9]+: " 5 >/dev/null
  log "direct: direct.test (resolved by s5tund) and [$TGT6] reached from C's own addresses"

  # By address and port, and by the LAN client.
  client --host "$TGT4" echo --count 3 >/dev/null
  expect_seen "$RA_BIND" $((a0 + 2))
  client --bind "$LAN2" --host "$TGT4" echo --count 3 >/dev/null
  expect_seen "$RB_BIND" $((b0 + 2))
  log "dst and port: $TGT4:$TGT_PORT through a; from $LAN2 (src:) through b"
  # direct: 2 TCP connections and 4 UDP associations (two sources to TGT4)
  (($(rule_stat a) == 2 && $(rule_stat b) == 2 && $(rule_stat direct) == 6)) ||
    fail "--stats: a $(rule_stat a), b $(rule_stat b), direct $(rule_stat direct), expected 2, 2 and 6"
  "$S5TUND" --stats "$WORK/stats.sock" | grep -q "^rules: .* block 4" || fail "--stats' table has no rules line"

  # direct into tun0's own prefix would come back in as a new session, and
  # again (a loop): refused at once, one warning naming the rule, counted.
  t0=$(tcp_total)
  client --host "$LOOP_DST" expect-refused --timeout 5 >/dev/null
  e2e_wait_log "$S5LOG" "warn .*$LOOP_DST.* is inside $TUN's prefix 198.18.0.1/15, so it would come back into the device \(a loop\) \(rule rules.ini:[0-9]+\)" 5 >/dev/null
  (($(tcp_total) == t0 + 1)) || fail "direct into $TUN's prefix: $(($(tcp_total) - t0)) sessions for one connection"
  "$S5TUND" --stats "$WORK/stats.sock" --json | grep -q '"drop_proxy_loop":1' || fail "the direct loop was not counted"
  log "direct to $LOOP_DST (inside $TUN's prefix): refused at once, warned with its rule, counted"

  # SIGHUP: one.test moves to b; a session opened before goes on through a.
  rm -f "$WORK/go"
  client --host "$(mapped one.test)" idle-echo --wait-file "$WORK/go" >/dev/null &
  hold=$!
  for _ in $(seq $((T_START * 10))); do
    [[ -n $("$S5TUND" --connections "$WORK/stats.sock" | grep -E " a +open") ]] && break
    sleep 0.1
  done
  "$S5TUND" --connections "$WORK/stats.sock" --json | grep -qE '"upstream":"a","rule":"rules.ini:[0-9]+"' ||
    fail "--connections: no session through a naming its rule: $(oneline "$("$S5TUND" --connections "$WORK/stats.sock" --json)")"
  sed -i 's/^rule = full:one.test -> a$/rule = full:one.test -> b/' "$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "configuration reloaded" 10 >/dev/null
  client --host "$(mapped one.test)" echo --count 3 >/dev/null
  expect_seen "$RB_BIND" $((b0 + 3))
  touch "$WORK/go"
  wait "$hold" || fail "the session opened before the reload did not go on"
  expect_seen "$RA_BIND" $((a0 + 3))
  log "reload: one.test now through b; the session opened before ended through a"
  e2e_require_alive "before the restart with auto-route"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"

  # auto-route: the proxies' connections and direct ones carry its mark
  # ([rules] mark = 0 takes it) and leave by C's own route; everything
  # else goes into tun0 by its policy rule, not by the harness's routes.
  in_c ip rule del fwmark "$RULE_MARK" lookup 99
  in_c ip -6 rule del fwmark "$RULE_MARK" lookup 99
  # A router whose own resolver is the mapped one: direct's names are asked
  # of [rules] resolver instead (dnsmasq in S), with the mark.
  printf 'nameserver %s\n' "$DNS_ADDR" >"/etc/netns/$NS_C/resolv.conf"
  sed -i -e "s/^mark = $RULE_MARK$/mark = 0\nresolver = $TGT4/" -e 's/^\[tun\]$/&\nauto-route = true/' \
    -e "s/^\\[upstream [ab]\\]$/&\nmark = $RULE_MARK/" "$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route del 10.201.0.0/24 dev "$TUN"
  in_c ip route add 10.201.0.0/24 via "$S_ADDR4" dev veth0
  t0=$(tcp_total)
  c0=$(seen "$C_ADDR4") b0=$(seen "$RB_BIND")
  client --host "$(mapped direct.example.test)" echo --count 3 --retry-for "$T_START" >/dev/null
  expect_seen "$C_ADDR4" $((c0 + 1))
  grep -q "query\[A\] direct.example.test from $C_ADDR4" "$WORK/dnsmasq.log" ||
    fail "direct.example.test was not asked of [rules] resolver from $C_ADDR4"
  client --host "$(mapped one.test)" echo --count 3 >/dev/null
  expect_seen "$RB_BIND" $((b0 + 1))
  (($(tcp_total) == t0 + 2)) || fail "auto-route: $(($(tcp_total) - t0)) sessions for 2 connections"
  log "auto-route: direct.example.test resolved by [rules] resolver and reached from C's own address with its mark, one.test through b"

  # The upstream a rule names dies: its flows are refused, never carried
  # by the other one (a rule is a policy); once it is down, at once.
  kill -KILL "${RMS_PID[b]}"
  wait "${RMS_PID[b]}" 2>/dev/null || true
  a0=$(seen "$RA_BIND")
  addr=$(mapped x.two.test)
  for _ in 1 2 3 4 5; do client --host "$addr" expect-refused --timeout 15 >/dev/null; done
  (($(seen "$RA_BIND") == a0)) || fail "a carried flows whose rule names b"
  local no_up
  no_up=$("$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["no_upstream"])')
  ((no_up >= 1)) || fail "no flow was refused at once once b was down (no_upstream $no_up)"
  log "b killed: its rule's flows refused ($no_up at once, b down), none through a"
  e2e_require_alive "at the end"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
}
