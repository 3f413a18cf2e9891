# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases of auto-route on the topology a user has: a host with a
# LAN and a default gateway, a LAN client behind it, a remote client beyond
# the gateway (run.sh runs them; ctest e2e.route.CASE.MODE.qN).
#
# CASE   host    exclude-local (the host's LAN and its inbound connections
#                stay out of the tunnel, a network added later too; with
#                exclude-local = false they fail), then the prefix lists
#                (10,000 prefixes from a file, include, reload, a bad line)
#        rpfilter  strict rp_filter with the proxy behind the default
#                gateway: the proxy's replies, a remote client's
#                connection to the host and an exclude-uid user's
#                connections pass it
#        router  the host as a LAN client's gateway: TCP (100 MB, SHA-256),
#                UDP and mapped DNS through the proxy; kill -9 blocks the
#                client's tunnel-bound traffic, local traffic goes on; a
#                restart serves it again, with a second upstream and a
#                [rules] source rule: another LAN client goes through it
#        netns   [tun] netns: programs in a namespace of s5tund's go through
#                the proxy (IPv4, IPv6, UDP, a mapped name) and nowhere else;
#                the proxy sockets stay in the host namespace; kill -9 fails
#                closed; a clean stop removes what s5tund made, and only that
#        exec    s5tund exec -- COMMAND: TCP and UDP through the proxy, the
#                command's exit status (0, 3, 130 on Ctrl-C, 137 killed),
#                two at once, nothing left behind
# Every path is proved by the logs: the target's (which peer it saw: the
# proxy's address or the client's own) and danted's.
#
#   namespace L (LAN)          namespace C (host, s5tund)       namespace S (gateway side)
#     lan0 10.210.0.2/24  <->  lan0 10.210.0.1/24               danted 10.200.0.2:1081
#          fd00:210::2/64           fd00:210::1/64              target.py port 7000 on
#     default via the host     veth0 10.200.0.1/24  <->  veth0     10.201.0.1 10.202.0.1
#     target.py port 7000       default via 10.200.0.2            fd00:201::1 fd00:202::1
#     (the LAN's own service)   target.py port 8000 (the host's   (lo); a remote client
#                                 own service)                      from 10.201.0.1
#   a late link L-C (10.215.0.0/24) is joined to C after s5tund started.

L_ADDR4=10.210.0.2
L_ADDR4B=10.210.0.3  # a second LAN client, for a [rules] source rule (router)
MS_BIND=10.200.0.31  # microsocks' outgoing address (router's [rules] step)
L_ADDR6=fd00:210::2
H_LAN4=10.210.0.1
H_LAN6=fd00:210::1
LATE_H=10.215.0.1
LATE_L=10.215.0.2
TGT4B=10.202.0.1     # a second target address in S, for the prefix lists
TGT6B=fd00:202::1
H_PORT=8000          # the host's own service
MARK=0x53
DNS_ADDR=198.18.0.2
DNS_POOL=100.64.0.0/10
METRICS_PORT=9553

route_exit() {
  local rc=$?
  trap - ERR
  set +e
  rm -rf "$NETNS_ETC" "/etc/netns/$NS_N"
  e2e_ns_destroy "$NS_L"
  [[ -e /run/netns/$NS_N ]] && e2e_ns_destroy "$NS_N"
  (exit "$rc")    # e2e_cleanup takes the status from $?
  e2e_cleanup
}

setup_route() {
  command -v nft >/dev/null 2>&1 || fail "missing tool: nft (run 'make deps')"
  # Named like C and S so that a run killed hard has them reaped by the next.
  NS_L="s5c-lan-$CASE-$$"
  NS_N="s5c-named-$CASE-$$"   # [tun] netns (the netns case)
  NETNS_ETC=/etc/netns/$NS_S
  trap route_exit EXIT
}

in_l() { ip netns exec "$NS_L" "$@"; }

# ns_py NS SCRIPT ARGS...: one of our Python clients in NS, bounded.
ns_py() {
  local ns=$1 script=$2
  shift 2
  bg_wait ip netns exec "$ns" timeout -k 5 "${CLIENT_T:-$T_STEP}" "$PY" "$E2E_DIR/$script" "$@"
}
# client.py / udpclient.py in L (the LAN), S (beyond the gateway), N ([tun] netns).
lclient() { ns_py "$NS_L" client.py "$@"; }
rclient() { ns_py "$NS_S" client.py "$@"; }
luclient() { ns_py "$NS_L" udpclient.py "$@"; }
nclient() { ns_py "$NS_N" client.py "$@"; }
nuclient() { ns_py "$NS_N" udpclient.py "$@"; }

# expect_fail WHAT CMD...: CMD (a client with a short timeout) must fail.
expect_fail() {
  local what=$1
  shift
  if "$@" >"$WORK/expect_fail.out" 2>&1; then
    fail "$what worked: $(oneline "$(tail -3 "$WORK/expect_fail.out")")"
  fi
  log "as expected, $what failed: $(oneline "$(tail -1 "$WORK/expect_fail.out")")"
}

topology_up() {
  e2e_topology_up
  ip netns add "$NS_L"
  in_l ip link set lo up
  in_l ip link add lan0 type veth peer name lan0 netns "$NS_C"
  in_l ip addr add "$L_ADDR4/24" dev lan0
  in_l ip addr add "$L_ADDR6/64" dev lan0 nodad
  in_c ip addr add "$H_LAN4/24" dev lan0
  in_c ip addr add "$H_LAN6/64" dev lan0 nodad
  in_l ip link set lan0 up
  in_c ip link set lan0 up
  in_l ip route add default via "$H_LAN4"
  in_l ip -6 route add default via "$H_LAN6"
  # The late link: both ends in L for now, L's end addressed.
  in_l ip link add late0 type veth peer name late1
  in_l ip addr add "$LATE_L/24" dev late0
  in_l ip link set late0 up
  # The host's default gateway is S; S reaches the host's uplink only.
  in_c ip route add default via "$S_ADDR4"
  in_c ip -6 route add default via "$S_ADDR6"
  in_s ip addr add "$TGT4B/32" dev lo
  in_s ip addr add "$TGT6B/128" dev lo nodad
  log "topology: LAN $NS_L behind host $NS_C, gateway side $NS_S"
}

# start_target NS LOG PORT ADDR...: target.py in NS listening on every ADDR.
start_target() {
  local ns=$1 tlog=$2 port=$3 ready=$2.ready args=() a
  shift 3
  for a in "$@"; do args+=(--listen "$a"); done
  E2E_LOGS+=("$tlog")
  ip netns exec "$ns" "$PY" "$E2E_DIR/target.py" "${args[@]}" --port "$port" --ready-file "$ready" >"$tlog" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && return 0
    sleep 0.1
  done
  fail "target.py in $ns did not start"
}

servers_up() {
  start_target "$NS_S" "$WORK/target.log" "$TGT_PORT" "$TGT4" "$TGT6" "$TGT4B" "$TGT6B"
  start_target "$NS_L" "$WORK/lan.log" "$TGT_PORT" "$L_ADDR4" "$L_ADDR6" "$LATE_L"
  start_target "$NS_C" "$WORK/host.log" "$H_PORT" "$H_LAN4" "$H_LAN6" "$C_ADDR4" "$C_ADDR6"
  e2e_start_dante
}

# The routing state auto-route may touch, to compare before and after.
routing_snapshot() {
  { in_c ip -4 rule; in_c ip -6 rule; in_c ip -4 route show table all; in_c ip -6 route show table all
    in_c nft list ruleset; } | grep -v -e "dev $TUN" -e "late1" -e "$LATE_H" -e "fe80::" | sort
}

# start_s5 EXTRA-INI...: danted over IPv4, the mark, auto-route, and the
# extra lines (sections included) appended.
S5_INI=""
start_s5() {
  S5_INI=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=${PROXY4:-$S_ADDR4} CFG_PROXY_PORT=$DANTE_PORT CFG_MARK=$MARK \
    e2e_write_config "$S5_INI"
  printf '%s\n' "" "[tun]" "auto-route = true" "$@" >>"$S5_INI"
  e2e_start_s5tund --config "$S5_INI"
  e2e_wait_device "$MODE" "$QUEUES"
  # auto-route must carry the traffic, not the harness's routes.
  in_c ip route del 10.201.0.0/24 dev "$TUN" 2>/dev/null || true
  in_c ip -6 route del fd00:201::/64 dev "$TUN" 2>/dev/null || true
  client --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
}

# peer_count LOG PEER: lines of a target's log for connections from PEER.
peer_count() { grep -cF "('$2', " "$1" 2>/dev/null || true; }

# proved_by LOG PEER N CMD...: CMD works, and the target whose LOG it is saw
# its connections (N of them) coming from PEER.
proved_by() {
  local tlog=$1 peer=$2 n=$3 before after
  shift 3
  before=$(peer_count "$tlog" "$peer")
  "$@" >/dev/null
  for _ in $(seq 50); do   # the target logs a connection when it ends
    after=$(peer_count "$tlog" "$peer")
    ((after - before >= n)) && return 0
    sleep 0.1
  done
  fail "$(basename "$tlog") saw $((after - before)) connection(s) from $peer, expected $n: $*"
}

# via_proxy HOST: an echo from the host to HOST in S reaches it through
# danted (the target sees danted's address); direct HOST: from the host's
# own uplink address.
via_proxy() {
  local peer=$S_ADDR4   # danted's external address of the target's family
  [[ $1 == *:* ]] && peer=$S_ADDR6
  proved_by "$WORK/target.log" "$peer" 1 client --host "$1" echo --count 1 --timeout 10
  grep -qF "$1.$TGT_PORT" "$WORK/danted.log" || fail "danted's log shows no connection to $1.$TGT_PORT"
}
direct() {
  local peer=$C_ADDR4
  [[ $1 == *:* ]] && peer=$C_ADDR6
  proved_by "$WORK/target.log" "$peer" 1 client --host "$1" echo --count 1 --timeout 10
}

check_rules() {   # N: rules at priority 5333 per family
  local fam out n
  for fam in -4 -6; do
    out=$(in_c ip "$fam" rule show pref 5333)
    n=$(grep -c . <<<"$out" || true)
    ((n == $1)) || fail "ip $fam rule pref 5333: $n rule(s), expected $1: $(oneline "$out")"
    grep -q "iif $TUN lookup main" <<<"$out" || fail "no 'iif $TUN lookup main' rule ($fam): $(oneline "$out")"
  done
}

# ---------------------------------------------------------------- host

# The three paths exclude-local keeps, both families: a LAN client to the
# host's service, the host to the LAN's service (danted sees nothing of
# it), a remote client beyond the gateway to the host's service.
host_paths_work() {
  local seen
  seen=$(grep -cF "$L_ADDR4" "$WORK/danted.log" || true)
  proved_by "$WORK/host.log" "$L_ADDR4" 1 lclient --host "$H_LAN4" --port "$H_PORT" echo --count 1 --timeout 10
  proved_by "$WORK/host.log" "$L_ADDR6" 1 lclient --host "$H_LAN6" --port "$H_PORT" echo --count 1 --timeout 10
  proved_by "$WORK/lan.log" "$H_LAN4" 1 client --host "$L_ADDR4" echo --count 1 --timeout 10
  proved_by "$WORK/lan.log" "$H_LAN6" 1 client --host "$L_ADDR6" echo --count 1 --timeout 10
  (($(grep -cF "$L_ADDR4" "$WORK/danted.log" || true) == seen)) \
    || fail "danted saw the LAN's address: $(grep -F "$L_ADDR4" "$WORK/danted.log" | tail -1)"
  proved_by "$WORK/host.log" "$TGT4" 1 rclient --bind "$TGT4" --host "$C_ADDR4" --port "$H_PORT" echo --count 1 --timeout 10
  proved_by "$WORK/host.log" "$TGT6" 1 rclient --bind "$TGT6" --host "$C_ADDR6" --port "$H_PORT" echo --count 1 --timeout 10
  log "exclude-local: LAN client -> host, host -> LAN, remote client -> host all work (IPv4 and IPv6)"
}

host_paths_fail() {
  local c=(--count 1 --timeout 3)
  expect_fail "LAN client -> host's service" lclient --host "$H_LAN4" --port "$H_PORT" echo "${c[@]}"
  expect_fail "LAN client -> host's service (IPv6)" lclient --host "$H_LAN6" --port "$H_PORT" echo "${c[@]}"
  expect_fail "host -> LAN's service" client --host "$L_ADDR4" echo "${c[@]}"
  expect_fail "remote client -> host's service" rclient --bind "$TGT4" --host "$C_ADDR4" --port "$H_PORT" echo "${c[@]}"
}

# 10,000 random prefixes (none near the test's addresses) and the lines given.
prefix_file() {
  local f=$1
  shift
  "$PY" - "$f" "$@" <<'EOF'
import random, sys
random.seed(5335)
with open(sys.argv[1], "w") as f:
    f.write("# generated: 10,000 random prefixes\n\n")
    n = 0
    while n < 10000:
        a = random.getrandbits(32) & 0xffffff00
        if a >> 24 in (10, 127, 198, 100, 0) or a >> 24 >= 224:
            continue
        f.write("%d.%d.%d.%d/24   # random\n" % (a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255))
        n += 1
    for line in sys.argv[2:]:
        f.write(line + "\n")
EOF
}

reload_s5() {   # INI lines for [tun] (replacing the earlier extra ones)
  local n
  n=$(grep -c "auto-route's prefixes replaced" "$S5LOG" || true)
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT CFG_MARK=$MARK \
    e2e_write_config "$S5_INI"
  printf '%s\n' "" "[tun]" "auto-route = true" "$@" >>"$S5_INI"
  kill -HUP "$S5PID"
  for _ in $(seq $((T_STEP * 10))); do
    (($(grep -c "auto-route's prefixes replaced" "$S5LOG" || true) > n)) && return 0
    sleep 0.1
  done
  fail "no 'prefixes replaced' in s5tund's log after SIGHUP"
}

case_host() {
  topology_up
  servers_up
  local before after out n
  before=$(routing_snapshot)

  start_s5
  check_rules 2
  in_c nft list table inet s5tund >/dev/null || fail "no nftables table inet s5tund"
  via_proxy "$TGT4"
  via_proxy "$TGT6"
  host_paths_work
  # A network that appears after the start is reached directly too.
  in_l ip link set late1 netns "$NS_C"
  in_c ip addr add "$LATE_H/24" dev late1
  in_c ip link set late1 up
  proved_by "$WORK/lan.log" "$LATE_H" 1 client --host "$LATE_L" echo --count 1 --timeout 10 --retry-for 10
  log "a link added after the start is reached directly"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  in_c ip link del late1
  after=$(routing_snapshot)
  [[ $before == "$after" ]] || fail "routing after a clean stop differs: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"

  # exclude-local = false: today's behaviour, everything into the tunnel.
  start_s5 "exclude-local = false"
  check_rules 1
  # The table only restores the proxy connections' marks (for rp_filter).
  out=$(in_c nft list table inet s5tund) || fail "no nftables table inet s5tund with exclude-local = false"
  grep -q "fib daddr type local" <<<"$out" && fail "inbound connections marked with exclude-local = false: $(oneline "$out")"
  host_paths_fail
  e2e_stop_s5tund

  # Prefix lists: 10,000 from a file plus the first target's addresses.
  local ex=$WORK/exclude.txt inc=$WORK/include.txt bad=$WORK/bad.txt
  prefix_file "$ex" "$TGT4/32" "$TGT6   # a bare address" "2001:db8::/32"
  start_s5 "route-exclude-file = $ex" "route-exclude = 192.0.2.0/24"
  n=$(in_c ip -4 route show table 5335 | grep -c '^throw' || true)
  ((n >= 9990)) || fail "table 5335 holds $n IPv4 throw routes, expected about 10,000"
  out=$(grep -m1 "prefixes excluded" "$S5LOG")
  log "installed: $n IPv4 throw routes; ${out#* info  }"
  direct "$TGT4"
  direct "$TGT6"
  via_proxy "$TGT4B"
  via_proxy "$TGT6B"
  host_paths_work
  # Reload to an include list: only the second target goes in.
  reload_s5 "route-include = $TGT4B/32, $TGT6B/128"
  via_proxy "$TGT4B"
  via_proxy "$TGT6B"
  direct "$TGT4"
  direct "$TGT6"
  # Include from a file, the second target excluded: exclude wins.
  # An exclude shorter than the include it covers wins too (no route for
  # the include at all), in both families.
  printf '%s\n' "# both targets' networks" "$TGT4/32" "10.202.0.0/24" "fd00:201::/64" "fd00:202::/64" \
    "10.230.1.0/24" "fd0e:1::/64" >"$inc"
  reload_s5 "route-include-file = $inc" "route-exclude = $TGT4B/32, $TGT6B, 10.230.0.0/16, fd0e::/16"
  via_proxy "$TGT4"
  via_proxy "$TGT6"
  direct "$TGT4B"
  direct "$TGT6B"
  out=$(in_c ip -4 route show table 5335; in_c ip -6 route show table 5335)
  grep -q "^throw fd0e::/16" <<<"$out" || fail "no throw fd0e::/16 in table 5335: $(oneline "$out")"
  grep -q -e "^10.230.1.0/24" -e "^fd0e:1::/64" -e "unreachable 10.230.1.0/24" -e "unreachable fd0e:1::/64" <<<"$out" \
    && fail "an included prefix inside an excluded one is in table 5335: $(oneline "$(grep -e 10.230.1 -e fd0e:1: <<<"$out")")"
  # A bad line: --check-config exits 2 naming file:line; a reload with it
  # fails and changes nothing.
  printf '%s\n' "10.0.0.0/8" "# fine so far" "10.300.0.0/16" >"$bad"
  local rc=0
  printf '\n%s\n' "route-exclude-file = $bad" >>"$S5_INI"
  out=$("$S5TUND" --config "$S5_INI" --check-config 2>&1 >/dev/null) || rc=$?
  ((rc == 2)) || fail "--check-config with a bad prefix file exited $rc, expected 2"
  grep -qF "$bad:3: \"10.300.0.0/16\" is not an IPv4 or IPv6 prefix" <<<"$out" || fail "no file:line in: $out"
  log "bad prefix file: exit 2: $out"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "reload failed, configuration unchanged: .*bad.txt:3" 10 "failed reload naming bad.txt:3" >/dev/null
  via_proxy "$TGT4"
  direct "$TGT4B"
  # --check-config counts what the files hold.
  printf '%s\n' "[tun]" "auto-route = true" "route-exclude-file = $ex" "[socks5]" "mark = $MARK" >"$WORK/count.ini"
  out=$("$S5TUND" --config "$WORK/count.ini" --check-config 2>/dev/null | grep -A1 "^route-exclude-file" || true)
  grep -q "; 10003 prefixes (10001 IPv4, 2 IPv6)" <<<"$out" || fail "--check-config does not count the file: $out"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  after=$(routing_snapshot)
  [[ $before == "$after" ]] || fail "routing after a clean stop differs: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  log "prefix lists: excluded direct, others through danted, include, reload both ways, bad line refused"
}

# ---------------------------------------------------------------- rpfilter

# TcpExt IPReversePathFilter of C: packets strict reverse-path filtering dropped.
rpf_drops() {
  in_c awk '/^TcpExt:/ { if (!n) { for (i = 1; i <= NF; i++) if ($i == "IPReversePathFilter") f = i; n = 1 } else print $f }' \
    /proc/net/netstat
}

# Strict reverse-path filtering (rp_filter = 1) with the proxy where a VPS
# has it: not on a connected network, reached through the default gateway.
# The proxy's replies and a remote client's connection to the host arrive
# on veth0 from sources that the reverse lookup (unmarked) finds in table
# 5335, via tun0: the kernel drops them, unless s5tund marks them (their
# connection's mark, restored from conntrack) and the lookup uses the mark
# (src_valid_mark, set while auto-route is on, restored at the stop).
case_rpfilter() {
  topology_up
  local far4=10.203.0.1 svm before after out n0
  in_s ip addr add "$far4/32" dev lo
  DANTE_INTERNAL=$far4 servers_up
  in_c sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1 \
    net.ipv4.conf.veth0.rp_filter=1 net.ipv4.conf.lan0.rp_filter=1
  svm=$(in_c sysctl -n net.ipv4.conf.all.src_valid_mark)
  before=$(routing_snapshot)
  n0=$(rpf_drops)

  PROXY4=$far4 start_s5
  via_proxy "$TGT4"
  via_proxy "$TGT6"
  proved_by "$WORK/host.log" "$TGT4" 1 rclient --bind "$TGT4" --host "$C_ADDR4" --port "$H_PORT" echo --count 1 --timeout 10
  proved_by "$WORK/host.log" "$TGT6" 1 rclient --bind "$TGT6" --host "$C_ADDR6" --port "$H_PORT" echo --count 1 --timeout 10
  (($(rpf_drops) == n0)) || fail "rp_filter dropped $(($(rpf_drops) - n0)) packet(s) (TcpExt IPReversePathFilter)"
  [[ $(in_c sysctl -n net.ipv4.conf.all.src_valid_mark) == 1 ]] || fail "src_valid_mark is not 1 while auto-route is on"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  [[ $(in_c sysctl -n net.ipv4.conf.all.src_valid_mark) == "$svm" ]] || fail "src_valid_mark not restored to $svm"
  after=$(routing_snapshot)
  [[ $before == "$after" ]] || fail "routing after a clean stop differs: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  log "rp_filter = 1, proxy behind the gateway: through danted both families, a remote client reaches the host"

  # Without exclude-local the proxy's replies must pass as well.
  PROXY4=$far4 start_s5 "exclude-local = false"
  via_proxy "$TGT4"
  (($(rpf_drops) == n0)) || fail "rp_filter dropped $(($(rpf_drops) - n0)) packet(s) with exclude-local = false"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  after=$(routing_snapshot)
  [[ $before == "$after" ]] || fail "routing after a clean stop differs: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  log "exclude-local = false: the proxy's replies pass rp_filter too"

  # exclude-uid (the ssh -D recipe): that user's connections go around the
  # tunnel, to the target beyond the gateway, and their replies pass too.
  PROXY4=$far4 start_s5 "exclude-uid = nobody"
  via_proxy "$TGT4"
  proved_by "$WORK/target.log" "$C_ADDR4" 1 bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" \
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$PY" "$E2E_DIR/client.py" --host "$TGT4" echo --count 1 --timeout 10
  (($(rpf_drops) == n0)) || fail "rp_filter dropped $(($(rpf_drops) - n0)) packet(s) with exclude-uid"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  log "exclude-uid: the excluded user's connection beyond the gateway passes rp_filter"
}

# ---------------------------------------------------------------- router

case_router() {
  topology_up
  # Before danted starts: ip netns exec bind-mounts it over /etc/hosts.
  mkdir -p "$NETNS_ETC"
  printf '127.0.0.1 localhost\n%s target.test\n' "$TGT4" >"$NETNS_ETC/hosts"
  servers_up
  in_c sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  # Strict reverse-path filtering, as many routers run: s5tund's replies
  # from tun0 must pass it.
  in_c sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.default.rp_filter=1
  # The gateway side knows the LAN (what is forwarded directly comes back).
  in_s ip route add 10.210.0.0/24 via "$C_ADDR4"
  in_s ip -6 route add fd00:210::/64 via "$C_ADDR6"
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" --port 7001 \
    --ready-file "$WORK/udptarget.ready" >"$WORK/udptarget.log" 2>&1 &
  local before after addr i
  before=$(routing_snapshot)

  start_s5 "route-exclude = 10.202.0.0/24" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" "hijack = true"
  lclient --host "$TGT4" echo --count 1 --retry-for 20 --timeout 10 >/dev/null
  # TCP, both families, from the LAN client: through danted.
  proved_by "$WORK/target.log" "$S_ADDR4" 1 lclient --host "$TGT4" echo --count 2 --timeout 10
  proved_by "$WORK/target.log" "$S_ADDR6" 1 lclient --host "$TGT6" echo --count 2 --timeout 10
  # The download reaches the LAN client (MSS 1460, below the device's) in
  # large segments cut by the kernel (GSO), not one write per 1,460 bytes:
  # 100 MB took 72,063 writes before; a quarter of that is the bound.
  local rx0 rx1 tx0 tx1
  rx0=$(in_c cat "/sys/class/net/$TUN/statistics/rx_packets")
  CLIENT_T=$T_BULK proved_by "$WORK/target.log" "$S_ADDR4" 1 lclient --host "$TGT4" bulk --size 100M --direction down
  rx1=$(in_c cat "/sys/class/net/$TUN/statistics/rx_packets")
  ((rx1 - rx0 < 100 * 1024 * 1024 / 1460 / 4)) || fail "100 MB to the LAN client in $((rx1 - rx0)) writes to $TUN: no large segments"
  tx0=$(in_c cat "/sys/class/net/$TUN/statistics/tx_packets")
  CLIENT_T=$T_BULK proved_by "$WORK/target.log" "$S_ADDR6" 1 lclient --host "$TGT6" bulk --size 100M --direction up
  tx1=$(in_c cat "/sys/class/net/$TUN/statistics/tx_packets")
  log "LAN client, 100 MB each way: $((rx1 - rx0)) packets written to $TUN (down), $((tx1 - tx0)) read from it (up)"
  # An excluded prefix is forwarded directly (the target sees the client).
  proved_by "$WORK/target.log" "$L_ADDR4" 1 lclient --host "$TGT4B" echo --count 1 --timeout 10
  # UDP echo and mapped DNS, both through the proxy.
  for i in $(seq $((T_START * 10))); do [[ -s $WORK/udptarget.ready ]] && break; sleep 0.1; done
  luclient echo --host "$TGT4" --port 7001 --sizes 1,100,1400 --sources 2
  luclient echo --host "$TGT6" --port 7001 --sizes 1,100,1232 --sources 2
  grep -qE "udp(associate|reply)" "$WORK/danted.log" || fail "danted's log shows no UDP association"
  addr=$(luclient dns --server "$DNS_ADDR" --name target.test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  [[ $addr =~ ^100\. ]] || fail "no mapped address for target.test from the LAN client: '$addr'"
  proved_by "$WORK/target.log" "$S_ADDR4" 1 lclient --host "$addr" echo --count 1 --timeout 10
  # danted got the name (and resolved it), never the pool address.
  grep -qF "$addr" "$WORK/danted.log" && fail "danted saw the pool address $addr: CONNECT was not by name"
  # DNS capture: the LAN client asks some other resolver, over UDP and TCP,
  # both families; the mapped resolver answers in its place.
  local dnsq server proto
  for server in "$TGT4" "$TGT6"; do
    for proto in +notcp +tcp; do
      dnsq=$(in_l timeout 20 dig "$proto" +short +tries=2 +time=3 "@$server" target.test A)
      [[ $dnsq == "$addr" ]] || fail "hijack: dig $proto @$server target.test from the LAN client gave '$dnsq', expected $addr"
    done
  done
  log "router: the LAN client's TCP (100 MB each family), UDP and mapped DNS went through danted"

  # kill -9: the LAN client's tunnel-bound traffic is blocked, not
  # forwarded around; local and excluded traffic goes on.
  kill -KILL "$S5PID"
  wait "$S5PID" 2>/dev/null || true
  S5PID=""
  for i in $(seq $((T_STOP * 10))); do e2e_tun_exists || break; sleep 0.1; done
  e2e_tun_exists && fail "$TUN still exists after kill -9"
  local n4
  n4=$(peer_count "$WORK/target.log" "$L_ADDR4")
  expect_fail "the LAN client's tunnel-bound TCP after kill -9" lclient --host "$TGT4" echo --count 1 --timeout 3
  expect_fail "the LAN client's tunnel-bound TCP (IPv6) after kill -9" lclient --host "$TGT6" echo --count 1 --timeout 3
  expect_fail "the host's tunnel-bound TCP after kill -9" client --host "$TGT4" echo --count 1 --timeout 3
  proved_by "$WORK/target.log" "$L_ADDR4" 1 lclient --host "$TGT4B" echo --count 1 --timeout 10
  proved_by "$WORK/host.log" "$L_ADDR4" 1 lclient --host "$H_LAN4" --port "$H_PORT" echo --count 1 --timeout 10
  proved_by "$WORK/lan.log" "$H_LAN4" 1 client --host "$L_ADDR4" echo --count 1 --timeout 10
  (($(peer_count "$WORK/target.log" "$L_ADDR4") == n4 + 1)) || fail "the target saw the LAN client directly after kill -9"
  log "after kill -9: tunnel-bound traffic blocked, excluded and local traffic works"

  # The restart has a second upstream (microsocks, its connections from
  # MS_BIND) and a [rules] source rule: a second LAN client (L_ADDR4B)
  # goes through it, the first one still through danted.
  in_s ip addr add "$MS_BIND/32" dev lo
  in_l ip addr add "$L_ADDR4B/24" dev lan0
  E2E_LOGS+=("$WORK/microsocks.log")
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$MS_PORT" -b "$MS_BIND" >>"$WORK/microsocks.log" 2>&1 &
  e2e_wait_listen "$MS_PORT" "$S_ADDR4" || fail "microsocks does not listen on $S_ADDR4:$MS_PORT"
  start_s5 "route-exclude = 10.202.0.0/24" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" \
    "[upstream ms]" "address = $S_ADDR4" "port = $MS_PORT" "mark = $MARK" "[rules]" "rule = src:$L_ADDR4B/32 -> ms"
  proved_by "$WORK/target.log" "$S_ADDR4" 1 lclient --host "$TGT4" echo --count 1 --retry-for 20 --timeout 10
  proved_by "$WORK/target.log" "$S_ADDR6" 1 lclient --host "$TGT6" echo --count 1 --timeout 10
  proved_by "$WORK/target.log" "$MS_BIND" 1 lclient --bind "$L_ADDR4B" --host "$TGT4" echo --count 1 --timeout 10
  log "rules on a router: LAN client $L_ADDR4B through microsocks (src:), $L_ADDR4 through danted"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  after=$(routing_snapshot)
  [[ $before == "$after" ]] || fail "routing after a clean stop differs: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  log "restarted: served again; a clean stop left the routing as it was"
}

# ---------------------------------------------------------------- netns

in_n() { ip netns exec "$NS_N" "$@"; }

# s5tund in C without a mount namespace of its own (ip netns exec would
# give it one): the namespace it makes must be seen by `ip netns exec`.
start_s5_netns() {
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini i
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT e2e_write_config "$ini"
  printf '%s\n' "" "[tun]" "netns = $NS_N" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" \
    "[stats]" "socket = $WORK/stats.sock" "http = 127.0.0.1:$METRICS_PORT" "[log]" "sessions = true" >>"$ini"
  S5LOG=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).log
  S5_RUNS=$((${S5_RUNS:-0} + 1))
  E2E_LOGS+=("$S5LOG")
  nsenter --net="/run/netns/$NS_C" -- "$S5TUND" --config "$ini" >"$S5LOG" 2>&1 &
  S5PID=$!
  e2e_wait_log "$S5LOG" "ready: $TUN" "$T_START" "s5tund ready" >/dev/null
  in_n ip link show dev "$TUN" up >/dev/null || fail "$TUN is not up in $NS_N"
  in_c ip link show dev "$TUN" >/dev/null 2>&1 && fail "$TUN exists in the host namespace too"
  nclient --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
  log "s5tund (pid $S5PID) serves $TUN in $NS_N"
}

netns_proxied() {   # what runs in the namespace goes through danted
  proved_by "$WORK/target.log" "$S_ADDR4" 1 nclient --host "$TGT4" echo --count 2 --timeout 10
  proved_by "$WORK/target.log" "$S_ADDR6" 1 nclient --host "$TGT6" echo --count 2 --timeout 10
}

case_netns() {
  topology_up
  mkdir -p "$NETNS_ETC"
  printf '127.0.0.1 localhost\n%s target.test\n' "$TGT4" >"$NETNS_ETC/hosts"
  servers_up
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" --port 7001 \
    --ready-file "$WORK/udptarget.ready" >"$WORK/udptarget.log" 2>&1 &
  local out addr i hold

  # 1. s5tund makes the namespace.
  start_s5_netns
  grep -q "netns $NS_N: created" "$S5LOG" || fail "s5tund did not say it created $NS_N"
  netns_proxied
  for i in $(seq $((T_START * 10))); do [[ -s $WORK/udptarget.ready ]] && break; sleep 0.1; done
  nuclient echo --host "$TGT4" --port 7001 --sizes 1,100,1400 --sources 2
  nuclient echo --host "$TGT6" --port 7001 --sizes 1,100,1232 --sources 2
  grep -qE "udp(associate|reply)" "$WORK/danted.log" || fail "danted's log shows no UDP association"
  # A name, as a program there resolves it: /etc/resolv.conf names the resolver.
  out=$(in_n cat /etc/resolv.conf)
  grep -qx "nameserver $DNS_ADDR" <<<"$out" || fail "resolv.conf in $NS_N: $(oneline "$out")"
  addr=$(nuclient dns --server "$DNS_ADDR" --name target.test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  proved_by "$WORK/target.log" "$S_ADDR4" 1 nclient --host "$addr" echo --count 1 --timeout 10
  grep -qF "$addr" "$WORK/danted.log" && fail "danted saw the pool address $addr"
  # Nothing but the device: the routes, and the LAN that the host reaches
  # directly is out of reach (danted cannot reach it either).
  out=$(in_n ip -4 route; in_n ip -6 route | grep -v '^fe80::\|^multicast\|^ff00::')
  grep -v -e "^default dev $TUN" -e "dev $TUN proto kernel" <<<"$out" | grep -q . \
    && fail "routes in $NS_N besides the device: $(oneline "$out")"
  expect_fail "a LAN host from $NS_N" nclient --host "$L_ADDR4" echo --count 1 --timeout 3
  # The proxy sockets stay in the host namespace: hold a connection, look.
  # (--connections lists the held session once it is open: the operator's
  # view works as for the daemon.)
  nclient --host "$TGT4" hold --hold 8 >/dev/null 2>&1 &
  hold=$!
  for i in $(seq 50); do
    out=$("$S5TUND" --connections "$WORK/stats.sock")
    grep -q "tcp .*$TGT4:$TGT_PORT" <<<"$out" && break
    sleep 0.1
  done
  grep -q "tcp .*$TGT4:$TGT_PORT" <<<"$out" || fail "--connections does not list the held session: $(oneline "$out")"
  out=$(in_c ss -Htn state established "dst $S_ADDR4:$DANTE_PORT")
  [[ -n $out ]] || fail "no proxy connection in the host namespace"
  [[ -z $(in_n ss -Htn "dst $S_ADDR4:$DANTE_PORT") ]] || fail "a proxy connection in $NS_N"
  # Prometheus answers in the host namespace, sessions are logged.
  in_c "$PY" -c 'import sys, urllib.request; d = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(); sys.exit(0 if "s5tund_tcp_total" in d else 1)' \
    "http://127.0.0.1:$METRICS_PORT/metrics" || fail "no metrics at 127.0.0.1:$METRICS_PORT in the host namespace"
  e2e_wait_log "$S5LOG" "session s[0-9]+ tcp .* -> $TGT4:$TGT_PORT via" 10 "a session line" >/dev/null
  kill "$hold" 2>/dev/null || true
  wait "$hold" 2>/dev/null || true
  log "proxy sockets in the host namespace: $(oneline "$out")"
  "$S5TUND" --stats "$WORK/stats.sock" >/dev/null || fail "--stats does not answer"
  if [[ $MODE == process ]]; then   # a restarted worker: its sockets stay home too
    local w n0
    n0=$(grep -cE "worker [0-9]+ started" "$S5LOG")
    w=$(e2e_workers | head -1)
    kill -KILL "$w"
    for i in $(seq $((T_START * 10))); do
      (($(grep -cE "worker [0-9]+ started" "$S5LOG") > n0)) && break
      sleep 0.1
    done
    (($(grep -cE "worker [0-9]+ started" "$S5LOG") > n0)) || fail "no worker restarted after kill -9 of $w"
    for i in 1 2 3 4; do nclient --host "$TGT4" echo --count 1 --retry-for 20 --timeout 10 >/dev/null; done
    netns_proxied
  fi
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  [[ -e /run/netns/$NS_N ]] && fail "a clean stop left the namespace s5tund made"
  [[ -e /etc/netns/$NS_N ]] && fail "a clean stop left /etc/netns/$NS_N"
  log "run 1: IPv4, IPv6, UDP and a mapped name through danted; a clean stop removed the namespace"

  # 2. A namespace that exists, with a resolv.conf of its own: used, left.
  ip netns add "$NS_N"
  mkdir -p "/etc/netns/$NS_N"
  echo "nameserver 192.0.2.53" >"/etc/netns/$NS_N/resolv.conf"
  start_s5_netns
  netns_proxied
  kill -KILL "$S5PID"
  wait "$S5PID" 2>/dev/null || true
  S5PID=""
  for i in $(seq $((T_STOP * 10))); do in_n ip link show dev "$TUN" >/dev/null 2>&1 || break; sleep 0.1; done
  expect_fail "TCP from $NS_N after kill -9" nclient --host "$TGT4" echo --count 1 --timeout 3
  start_s5_netns
  netns_proxied
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  [[ -e /run/netns/$NS_N ]] || fail "a clean stop removed a namespace s5tund did not make"
  [[ $(cat "/etc/netns/$NS_N/resolv.conf") == "nameserver 192.0.2.53" ]] || fail "the admin's resolv.conf changed"
  log "run 2: an existing namespace used and left; kill -9 fails closed; restart serves again"
}

# ---------------------------------------------------------------- exec

EXEC_INI=""
# s5exec ARGS...: s5tund exec in C (no mount namespace of ours around it).
s5exec() {
  nsenter --net="/run/netns/$NS_C" -- "$S5TUND" exec --config "$EXEC_INI" "$@"
}

exec_nothing_left() {
  local left
  left=$(ls /run/netns /etc/netns 2>/dev/null | grep '^s5exec-' || true)
  [[ -z $left ]] || fail "left behind: $(oneline "$left")"
  in_c ip link show dev "$TUN" >/dev/null 2>&1 && fail "$TUN left in the host namespace"
  pgrep -f "s5tund --config $EXEC_INI" >/dev/null && fail "an s5tund of exec still runs"
  return 0
}

case_exec() {
  topology_up
  mkdir -p "$NETNS_ETC"
  printf '127.0.0.1 localhost\n%s target.test\n' "$TGT4" >"$NETNS_ETC/hosts"
  servers_up
  E2E_LOGS+=("$WORK/udptarget.log" "$WORK/exec.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" --port 7001 \
    --ready-file "$WORK/udptarget.ready" >"$WORK/udptarget.log" 2>&1 &
  EXEC_INI=$WORK/exec.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT CFG_LOG_LEVEL=warn \
    e2e_write_config "$EXEC_INI"
  printf '%s\n' "" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" "[stats]" "socket = $WORK/exec.sock" >>"$EXEC_INI"
  local rc i p1 p2 pg addr out
  # TCP, both families, and UDP through danted; the exit status is the command's.
  proved_by "$WORK/target.log" "$S_ADDR4" 1 s5exec -- "$PY" "$E2E_DIR/client.py" --host "$TGT4" echo --count 2 --timeout 10
  proved_by "$WORK/target.log" "$S_ADDR6" 1 s5exec -- "$PY" "$E2E_DIR/client.py" --host "$TGT6" echo --count 2 --timeout 10
  # A program that is not ours: curl, by IPv4 address and by a mapped name.
  proved_by "$WORK/target.log" "$S_ADDR4" 1 s5exec -- curl -sS --max-time 10 -o "$WORK/curl.out" "http://$TGT4:$TGT_PORT/"
  proved_by "$WORK/target.log" "$S_ADDR4" 1 s5exec -- curl -sS --max-time 10 -o "$WORK/curl2.out" "http://target.test:$TGT_PORT/"
  [[ -s $WORK/curl.out && -s $WORK/curl2.out ]] || fail "curl through exec got no body"
  for i in $(seq $((T_START * 10))); do [[ -s $WORK/udptarget.ready ]] && break; sleep 0.1; done
  s5exec -- "$PY" "$E2E_DIR/udpclient.py" echo --host "$TGT4" --port 7001 --sizes 1,100,1400 --sources 2 >>"$WORK/exec.log" 2>&1 \
    || fail "UDP through exec failed: $(tail -3 "$WORK/exec.log")"
  grep -qE "udp(associate|reply)" "$WORK/danted.log" || fail "danted's log shows no UDP association"
  # A name: the command's /etc/resolv.conf names the mapped resolver.
  s5exec -- sh -c "grep -qx 'nameserver $DNS_ADDR' /etc/resolv.conf" || fail "the command's resolv.conf is not the mapped resolver's"
  addr=$(s5exec -- "$PY" "$E2E_DIR/udpclient.py" dns --server "$DNS_ADDR" --name target.test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  [[ $addr =~ ^100\. ]] || fail "no mapped address for target.test in exec: '$addr'"
  exec_nothing_left
  # The stats socket as for the daemon, asked from inside the command.
  s5exec -- "$S5TUND" --stats "$WORK/exec.sock" >"$WORK/exec.stats" || fail "--stats during exec failed"
  grep -q "total" "$WORK/exec.stats" || fail "--stats during exec: $(oneline "$(cat "$WORK/exec.stats")")"
  # Started through sudo: the command runs as that user and group, with
  # the caller's environment; the tunnel itself stays root.
  out=$(SUDO_UID=65534 SUDO_GID=65534 S5_EXEC_PROBE=kept s5exec -- sh -c 'echo "$(id -u) $(id -g) $S5_EXEC_PROBE"')
  [[ $out == "65534 65534 kept" ]] || fail "exec with SUDO_UID/SUDO_GID = 65534: the command printed '$out'"
  rc=0; s5exec -- sh -c 'exit 3' || rc=$?
  ((rc == 3)) || fail "exec -- sh -c 'exit 3' returned $rc"
  rc=0; s5exec -- /nonexistent/command 2>>"$WORK/exec.log" || rc=$?
  ((rc == 127)) || fail "exec of a missing command returned $rc, expected 127"
  # Ctrl-C: SIGINT to the foreground process group (exec and the command;
  # the tunnel has a group of its own): the command ends, exit 130.
  setsid bash -c 'exec "$@"' _ nsenter --net="/run/netns/$NS_C" -- "$S5TUND" exec --config "$EXEC_INI" -- sleep 60 >>"$WORK/exec.log" 2>&1 &
  p1=$!
  for i in $(seq $((T_START * 10))); do pgrep -x sleep -s "$p1" >/dev/null 2>&1 && break; sleep 0.1; done
  pgrep -x sleep -s "$p1" >/dev/null || fail "the command of exec did not start"
  pg=$(ps -o pgid= -p "$p1" | tr -d ' ')
  kill -INT -- "-$pg"
  rc=0; wait "$p1" || rc=$?
  ((rc == 130)) || fail "Ctrl-C: exec returned $rc, expected 130"
  exec_nothing_left
  # SIGTERM while the tunnel comes up (its post-up takes 2 s): the tunnel
  # stops, the command never runs, exit 143 (before: the signal was lost,
  # and the command ran once the tunnel was up).
  sed '/^\[tun\]/a post-up = sleep 2' "$EXEC_INI" >"$WORK/exec-slow.ini"
  nsenter --net="/run/netns/$NS_C" -- "$S5TUND" exec --config "$WORK/exec-slow.ini" -- touch "$WORK/exec-ran" \
    >>"$WORK/exec.log" 2>&1 &
  p1=$!
  sleep 0.5
  kill -TERM "$p1"
  rc=0; wait "$p1" || rc=$?
  ((rc == 143)) || fail "SIGTERM while the tunnel came up: exec returned $rc, expected 143"
  [[ -e $WORK/exec-ran ]] && fail "SIGTERM while the tunnel came up: the command ran"
  exec_nothing_left
  # The command killed: 137, and the tunnel still stops cleanly.
  s5exec -- sh -c 'kill -KILL $$' >>"$WORK/exec.log" 2>&1 && rc=0 || rc=$?
  ((rc == 137)) || fail "a killed command: exec returned $rc, expected 137"
  exec_nothing_left
  # Two at once, each its own namespace and device.
  s5exec -- "$PY" "$E2E_DIR/client.py" --host "$TGT4" echo --count 20 --timeout 10 >>"$WORK/exec.log" 2>&1 &
  p1=$!
  s5exec -- "$PY" "$E2E_DIR/client.py" --host "$TGT6" echo --count 20 --timeout 10 >>"$WORK/exec.log" 2>&1 &
  p2=$!
  rc=0; wait "$p1" || rc=$?
  ((rc == 0)) || fail "the first of two execs at once returned $rc: $(tail -5 "$WORK/exec.log")"
  rc=0; wait "$p2" || rc=$?
  ((rc == 0)) || fail "the second of two execs at once returned $rc: $(tail -5 "$WORK/exec.log")"
  exec_nothing_left
  log "exec: TCP (IPv4, IPv6), UDP and a mapped name through danted; exit 0, 3, 127, 130, 143, 137; two at once; nothing left"
}

# ---------------------------------------------------------------- owner

# owner_rc WHAT EXPECTED CMD...: CMD exits with EXPECTED (bounded).
owner_rc() {
  local what=$1 want=$2 rc=0
  shift 2
  timeout -k 5 "$T_STEP" "$@" >>"$WORK/owner.log" 2>&1 || rc=$?
  ((rc == want)) || fail "$what: exit $rc, expected $want: $(oneline "$(tail -3 "$WORK/owner.log")")"
}

# A daemon with auto-route runs (A); every other entry point that would
# touch what A owns is refused before it changes anything, or leaves it
# alone: `exec` and --netns with A's own file, a second daemon, another
# daemon on A's stats socket. A's rules, table, nft table and stats socket
# are intact after each, and A still carries traffic.
case_owner() {
  topology_up
  servers_up
  E2E_LOGS+=("$WORK/owner.log")
  start_s5 "[stats]" "socket = $WORK/a.sock"
  local a_ini=$S5_INI a_pid=$S5PID snap bad ini2
  snap=$(routing_snapshot)
  owner_intact() {
    kill -0 "$a_pid" 2>/dev/null || fail "daemon A died ($1)"
    [[ $(routing_snapshot) == "$snap" ]] || fail "A's routing changed after $1: $(diff <(echo "$snap") <(routing_snapshot) | tr '\n' ' ')"
    "$S5TUND" --stats "$WORK/a.sock" >/dev/null || fail "A's stats socket does not answer after $1"
    via_proxy "$TGT4"
  }
  # --netns over A's auto-route file: a flag breaks a rule the file kept.
  owner_rc "--netns with an auto-route file" 2 nsenter --net="/run/netns/$NS_C" -- "$S5TUND" --config "$a_ini" --netns "s5c-own-$$"
  grep -q -- "--netns: \[tun\] netns .*auto-route" "$WORK/owner.log" || fail "no clear error for --netns with auto-route: $(oneline "$(tail -2 "$WORK/owner.log")")"
  [[ -e /run/netns/s5c-own-$$ ]] && fail "--netns created its namespace though refused"
  owner_intact "--netns"
  # exec with A's file: refused the same way, nothing left.
  owner_rc "exec with an auto-route file" 2 nsenter --net="/run/netns/$NS_C" -- "$S5TUND" exec --config "$a_ini" -- true
  owner_intact "exec"
  ls /run/netns /etc/netns 2>/dev/null | grep -q '^s5exec-' && fail "exec left a namespace behind"
  # Namespace names: paths and shell words are refused, exit 2.
  for bad in "../../tmp/s5own" "a;b" "a b" "é"; do
    owner_rc "--netns '$bad'" 2 nsenter --net="/run/netns/$NS_C" -- "$S5TUND" --socks5 "$S_ADDR4:$DANTE_PORT" --netns "$bad" --tun s5own0
  done
  [[ -e /tmp/s5own ]] && fail "--netns ../../tmp/s5own created /tmp/s5own"
  # A second daemon with auto-route on another device: refused by the claim.
  ini2=$WORK/second.ini
  sed -e "s/^name = .*/name = s5own1/" "$a_ini" >"$ini2"
  grep -q '^name = s5own1' "$ini2" || printf '%s\n' "" "[tun]" "name = s5own1" >>"$ini2"
  owner_rc "a second auto-route daemon" 1 ip netns exec "$NS_C" "$S5TUND" --config "$ini2"
  owner_intact "a second auto-route daemon"
  # Another daemon, no auto-route, on A's stats socket: refused; A's stays.
  printf '%s\n' "[tun]" "name = s5own2" "[socks5]" "address = $S_ADDR4" "port = $DANTE_PORT" \
    "[stats]" "socket = $WORK/a.sock" >"$WORK/third.ini"
  owner_rc "a daemon on A's stats socket" 1 ip netns exec "$NS_C" "$S5TUND" --config "$WORK/third.ini"
  grep -q "stats socket .*in use by another running s5tund" "$WORK/owner.log" || fail "no clear error for a stats socket in use"
  owner_intact "a daemon on A's stats socket"
  # A stale socket (a daemon killed -9) is taken over.
  kill -KILL "$a_pid"
  wait "$a_pid" 2>/dev/null || true
  S5PID=""
  # Its workers drain and exit (SIGTERM from their supervisor's death);
  # until the last has, the device still has queues attached.
  for _ in $(seq $((T_STOP * 10))); do e2e_tun_exists || break; sleep 0.1; done
  [[ -S $WORK/a.sock ]] || fail "the socket of a daemon killed -9 is gone"
  start_s5 "[stats]" "socket = $WORK/a.sock"
  "$S5TUND" --stats "$WORK/a.sock" >/dev/null || fail "a stale stats socket was not taken over"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  [[ -e $WORK/a.sock ]] && fail "a clean stop left its stats socket"
  owner_exec_deaths
  log "owner: --netns and exec refused over an auto-route file, bad names refused, a second daemon refused; A intact; exec's deaths leave nothing"
}

# exec in every order of deaths: its tunnel killed -9 under the command
# (a warning, nothing left), exec itself killed -9 as it starts (no tunnel
# left running; a namespace left is swept by the next exec), and a stale
# file in /run/netns named as [tun] netns (a clear error).
# exec_killed_after DELAY...: exec killed -9 DELAY seconds after each start.
exec_killed_after() {
  local d p
  for d in "$@"; do
    nsenter --net="/run/netns/$NS_C" -- "$S5TUND" exec --config "$EXEC_INI" -- sleep 30 >>"$WORK/owner.log" 2>&1 &
    p=$!
    sleep "$d"
    kill -KILL "$p"
    wait "$p" 2>/dev/null || true
  done
}

owner_exec_deaths() {
  local i p left err
  EXEC_INI=$WORK/owner-exec.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$DANTE_PORT e2e_write_config "$EXEC_INI"
  printf '%s\n' "" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" >>"$EXEC_INI"
  err=$WORK/owner-exec.err
  s5exec -- sh -c 'pkill -KILL -f -- "--netns s5exec-$PPID"; sleep 1' 2>"$err" || fail "exec returned $? after its tunnel died"
  grep -q "warning: the tunnel died (signal 9)" "$err" || fail "exec did not warn that its tunnel died: $(oneline "$(cat "$err")")"
  grep -q "s5tund.*level.*info\|info  main" "$err" && fail "exec printed the tunnel's info lines: $(oneline "$(head -2 "$err")")"
  exec_nothing_left
  exec_killed_after $(seq -f "0.0%g" 1 9) 0.1
  # Killed within its first 5 ms, as it forks the tunnel: 150 times. Before
  # the tunnel's process reset exec's signal forwarders, a death signal that
  # came between its fork and its execv was swallowed, and about 3 tunnels
  # in 100 such kills ran on with no exec.
  exec_killed_after $(for i in $(seq 150); do echo "0.00$((i % 6))"; done)
  for i in $(seq $((T_STOP * 10))); do
    pgrep -f -- "--config $EXEC_INI --netns s5exec-" >/dev/null || break
    sleep 0.1
  done
  pgrep -fa -- "--config $EXEC_INI --netns s5exec-" && fail "a tunnel of a killed exec still runs"
  s5exec -- true || fail "exec after the killed ones failed"
  exec_nothing_left
  touch "/run/netns/s5c-stale-$$"
  p=0; nsenter --net="/run/netns/$NS_C" -- "$S5TUND" --config "$EXEC_INI" --netns "s5c-stale-$$" --tun s5own3 \
    >"$err" 2>&1 || p=$?
  rm -f "/run/netns/s5c-stale-$$"
  ((p != 0)) || fail "a daemon on a stale /run/netns file started"
  grep -q "is not a network namespace" "$err" || fail "no hint for a stale /run/netns file: $(oneline "$(tail -2 "$err")")"
}
