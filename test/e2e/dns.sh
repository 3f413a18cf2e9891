# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases for the mapped resolver over TCP and [dns] hijack
# (run.sh runs them; the DNS helpers shared with udp.sh are in dnslib.sh).
#
# CASE   dns_tcp     dig +tcp at the resolver's IPv4 and IPv6 addresses gets
#                    the answer dig over UDP gets (A and AAAA); dig +keepopen
#                    asks three names on one connection; pipelined queries,
#                    queries cut into 1-3 byte pieces and a 65535-byte one
#                    answered in order; a client that does not read is not
#                    read (bounded), then gets every answer; TCP to the
#                    answer reaches the target through the proxy by name,
#                    and the proxy never sees a
#                    connection to the resolver; a malformed message closes
#                    its connection (logged, counted); an idle one is
#                    closed; 600 at once: 256 per queue, the rest refused;
#                    one open at the stop is reset
#        dns_hijack  hijack = true: dig over UDP and TCP at dnsmasq's
#                    addresses in S (IPv4, IPv6) gets the mapped answer, from
#                    the address asked (dig accepts nothing else), each
#                    counted in dns_hijacked, and dnsmasq never sees them;
#                    reloaded with hijack = false, the same queries reach
#                    dnsmasq through the proxy and get its answers
#        dns_state   [dns] state: names resolved (one blocked by a [rules]
#                    rule), the state file written (the first new name is
#                    written at once), s5tund killed -9 and started again
#                    with the same file: the old addresses reach the same
#                    names (danted's log shows the IPv6 target six.test
#                    stands for; blocked.test is blocked by the same rule);
#                    the first new name after that start written at once,
#                    the next only at the stop (SIGTERM); a corrupt state
#                    file: one warn line, s5tund serves, and the old
#                    addresses stand for no name

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

setup_dns() {
  command -v dnsmasq >/dev/null 2>&1 || fail "missing tool: dnsmasq (run 'make deps')"
  command -v dig >/dev/null 2>&1 || fail "missing tool: dig (dnsutils; run 'make deps')"
  udp_install_exit   # dnslib.sh: the hosts file in S goes on exit too
}

# dig in C, bounded: one try, no retry over TCP; prints the addresses.
dig_c() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "$@"
}

dnstcp() {   # dnstcp.py in C, bounded
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${CLIENT_T:-$T_STEP}" "$PY" "$E2E_DIR/dnstcp.py" "$@"
}

counter() {   # counter NAME: its total over the queues
  "$S5TUND" --stats "$WORK/stats.sock" --json |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

# s5tund with both resolver addresses and pools, a stats socket, and EXTRA
# lines for [dns]; the pools routed into the tunnel.
start_mapped() {
  start_s5 "$S_ADDR4" "$DANTE_PORT" "[dns]
address = $DNS_ADDR, $DNS_ADDR6
network = $DNS_POOL
network6 = $DNS_POOL6
$1

[stats]
socket = $WORK/stats.sock"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  in_c ip -6 route replace "$DNS_POOL6" dev "$TUN"
}

# same_answer SERVER TYPE NAME POOL: dig over UDP and over TCP agree, on an
# address of POOL; prints it.
same_answer() {
  local u t
  u=$(dig_c "@$1" "$3" "$2") || fail "dig @$1 $3 $2 over UDP failed: '$u'"
  t=$(dig_c +tcp "@$1" "$3" "$2") || fail "dig +tcp @$1 $3 $2 failed: '$t'"
  [[ -n $u && $u == "$t" ]] || fail "$3 $2 @$1: '$u' over UDP, '$t' over TCP"
  "$PY" -c 'import ipaddress as i, sys; sys.exit(i.ip_address(sys.argv[1]) not in i.ip_network(sys.argv[2]))' \
    "$u" "$4" || fail "$3 $2 @$1: $u is not in $4"
  log "$3 $2 @$1: $u over UDP and TCP" >&2
  echo "$u"
}

# ---------------------------------------------------------------- cases

case_dns_tcp() {
  e2e_topology_up
  udp_hosts
  e2e_start_target
  e2e_start_dante
  start_mapped ""
  local a4 a6 server out n0 n1 name
  a4=$(same_answer "$DNS_ADDR" A target.test "$DNS_POOL")
  a6=$(same_answer "$DNS_ADDR6" AAAA target.test "$DNS_POOL6")
  [[ $(same_answer "$DNS_ADDR6" A target.test "$DNS_POOL") == "$a4" ]] || fail "A at $DNS_ADDR6 differs from $a4"
  # Three names on one connection (dig +keepopen): one accepted connection.
  n0=$(udp_count_log "dns: TCP [^ ]+ -> $DNS_ADDR:53\$")
  out=$(dig_c +tcp +keepopen "@$DNS_ADDR" one.test two.test three.test)
  n1=$(udp_count_log "dns: TCP [^ ]+ -> $DNS_ADDR:53\$")
  (($(wc -l <<<"$out") == 3)) || fail "dig +keepopen: expected 3 answers, got '$(oneline "$out")'"
  local i=1
  for name in one two three; do
    [[ $(dig_c "@$DNS_ADDR" "$name.test") == "$(sed -n "${i}p" <<<"$out")" ]] \
      || fail "$name.test over TCP (keepopen) differs from over UDP"
    i=$((i + 1))
  done
  ((n1 - n0 == 1)) || fail "dig +keepopen: $((n1 - n0)) connections for three names, expected 1"
  log "dig +keepopen: three names on one connection: $(oneline "$out")"
  # Pipelined, in pieces, a message of the largest size; IPv4 and IPv6.
  for server in "$DNS_ADDR" "$DNS_ADDR6"; do
    out=$(dnstcp query --server "$server" --names "$(printf 'p%d.test,' $(seq 40))target.test" --expect-in "$DNS_POOL")
    grep -qx "target.test $a4" <<<"$out" || fail "pipelined: target.test is not $a4"
    log "$(tail -n 1 <<<"$out")"
    out=$(dnstcp query --server "$server" --names target.test,a.test,b.test --type AAAA --pieces --expect-in "$DNS_POOL6")
    grep -qx "target.test $a6" <<<"$out" || fail "in pieces: target.test is not $a6"
    log "$(tail -n 1 <<<"$out")"
    dnstcp query --server "$server" --names target.test,c.test --pad 65535 --expect-in "$DNS_POOL" | tail -n 1
  done
  # A client that does not read its answers is not read either (a bounded
  # amount is taken), and gets every answer once it reads.
  dnstcp flood --server "$DNS_ADDR" --count 10000
  # The answers reach the target through the proxy, by name; the resolver's
  # connections never reached the proxy.
  client --host "$a4" echo --count 5
  client --host "$a6" echo --count 5
  grep -q "tcp/connect .*$TGT4\.7000" "$WORK/danted.log" || fail "danted's log shows no connection to $TGT4.7000"
  if grep -qE "198\.18\.0\.2|fc00::53|\.53 " "$WORK/danted.log"; then
    fail "the proxy saw a connection to the resolver: $(grep -m 1 -E '198\.18\.0\.2|fc00::53|\.53 ' "$WORK/danted.log")"
  fi
  # A malformed message ends its connection (logged, counted); then idle.
  local d0 d1
  d0=$(counter drop_dns)
  dnstcp malformed --server "$DNS_ADDR"
  d1=$(counter drop_dns)
  ((d1 > d0)) || fail "the malformed message was not counted in drop_dns ($d0 -> $d1)"
  udp_wait_log "dns: TCP [^ ]+ -> $DNS_ADDR:53: malformed message \(5 bytes\), connection closed" "$T_STEP" \
    "malformed message line"
  dnstcp idle --server "$DNS_ADDR6" --min 9 --max 13
  e2e_require_alive "after DNS over TCP"
  e2e_s5_log_clean
  # At most 32 connections from one address per worker: 600 open at once
  # from one client are mostly refused (RST), counted and logged; every
  # accepted one is answered, and so is a query from another address
  # meanwhile (one client cannot take the slots).
  local acc ref held closed
  d0=$(counter drop_dns)
  read -r _ acc _ ref < <(dnstcp many --server "$DNS_ADDR" --count 600 --also-from "$C_ADDR4" | tail -n 1)
  d1=$(counter drop_dns)
  ((acc + ref == 600 && acc >= 32 && acc <= 32 * QUEUES)) \
    || fail "600 connections from one address: $acc accepted, $ref refused; expected 32 to $((32 * QUEUES)) accepted"
  ((d1 - d0 == ref)) || fail "$ref connections refused, drop_dns moved by $((d1 - d0))"
  udp_wait_log "dns: TCP from [^ ]+ refused: too many DNS connections from this address on this queue" 10 "refusal line"
  log "600 DNS connections at once from one address: $acc accepted, $ref refused and counted"
  # Connections that trickle a byte a second, never a whole message, hold
  # no slot: each is reset 5 s after its first byte (bounded here at 15 s),
  # counted in dns_tcp_limited; another address is answered meanwhile, and
  # so is another client of the same address (a local application) once
  # they are stuck for 1 s: it takes a stuck one's slot. Twice the slots
  # of every queue, so that each one is full.
  d0=$(counter dns_tcp_limited)
  read -r _ held _ closed _ ref < <(dnstcp trickle --server "$DNS_ADDR" --count $((64 * QUEUES)) --seconds 15 \
    --also-from "$C_ADDR4" --same-after 1.5 | tail -n 1)
  [[ -n $held && -n $closed ]] || fail "dnstcp trickle failed (its lines are above)"
  ((held == 0)) || fail "$held trickling DNS connections still open after 15 s ($closed closed, $ref refused)"
  (($(counter dns_tcp_limited) - d0 >= closed)) || fail "dns_tcp_limited moved by $(($(counter dns_tcp_limited) - d0)) for $closed reset"
  log "$((64 * QUEUES)) trickling DNS connections: $closed reset, $ref refused, none held; the same address answered meanwhile"
  # A connection still open when s5tund stops is reset with the rest (and
  # freed: a sanitizer build reports leaks at exit).
  local held
  n0=$(udp_count_log "dns: TCP [^ ]+ -> $DNS_ADDR:53\$")
  ip netns exec "$NS_C" timeout 30 bash -c "exec 3<>/dev/tcp/$DNS_ADDR/53; sleep 30" &
  held=$!
  for i in $(seq $((T_STEP * 10))); do
    (($(udp_count_log "dns: TCP [^ ]+ -> $DNS_ADDR:53\$") > n0)) && break
    sleep 0.1
  done
  (($(udp_count_log "dns: TCP [^ ]+ -> $DNS_ADDR:53\$") > n0)) || fail "the held DNS connection was not accepted"
  e2e_stop_s5tund
  kill "$held" 2>/dev/null || true
  wait "$held" 2>/dev/null || true
  ((S5RC == 0)) || fail "s5tund exited with $S5RC with a DNS connection open"
}

case_dns_hijack() {
  e2e_topology_up
  udp_hosts
  e2e_start_target
  start_dnsmasq
  e2e_start_dante
  start_mapped "hijack = true"
  local m4 m6 server tcp h0 h1 n=0 a
  m4=$(same_answer "$DNS_ADDR" A target.test "$DNS_POOL")
  m6=$(same_answer "$DNS_ADDR" AAAA target.test "$DNS_POOL6")
  h0=$(counter dns_hijacked)
  ((h0 == 0)) || fail "queries to the resolver itself counted as hijacked ($h0)"
  # dnsmasq's addresses, through the tunnel: the mapped answers. dig takes
  # an answer only from the address it asked.
  for server in "$TGT4" "$TGT6"; do
    [[ $(same_answer "$server" A target.test "$DNS_POOL") == "$m4" ]] || fail "A @$server is not $m4"
    [[ $(same_answer "$server" AAAA target.test "$DNS_POOL6") == "$m6" ]] || fail "AAAA @$server is not $m6"
    same_answer "$server" A www.example.test "$DNS_POOL" >/dev/null
    n=$((n + 6))
  done
  h1=$(counter dns_hijacked)
  ((h1 - h0 == n)) || fail "dns_hijacked counted $((h1 - h0)), expected $n"
  ! grep -qE 'query\[.*(example|target)\.test' "$WORK/dnsmasq.log" || fail "a hijacked query reached dnsmasq"
  log "$n hijacked queries answered by the mapped resolver and counted"
  # Live: without hijack the same queries go through the proxy to dnsmasq.
  sed -i 's/^hijack = true$/hijack = false/' "$S5_CFG"
  kill -HUP "$S5PID"
  udp_wait_log "main configuration reloaded" 10 "reload"
  local i taken=0   # every worker took it (its line comes after main's)
  for i in $(seq 100); do
    taken=$(udp_count_log "configuration generation [0-9]+ taken")
    ((taken >= QUEUES)) && break
    sleep 0.1
  done
  ((taken >= QUEUES)) || fail "$taken of $QUEUES workers took the reloaded configuration"
  for tcp in "" +tcp; do
    a=$(dig_c $tcp "@$TGT4" www.example.test) || true
    [[ $a == "$TGT4" ]] || fail "dig $tcp @$TGT4 www.example.test: '$a', expected dnsmasq's $TGT4"
    a=$(dig_c $tcp "@$TGT6" www.example.test AAAA) || true
    [[ $a == "$TGT6" ]] || fail "dig $tcp @$TGT6 www.example.test AAAA: '$a', expected dnsmasq's $TGT6"
  done
  (($(counter dns_hijacked) == h1)) || fail "dns_hijacked moved with hijack = false"
  grep -qE 'query\[.*www\.example\.test' "$WORK/dnsmasq.log" || fail "dnsmasq's log does not show the queries"
  grep -q "tcp/connect .*$TGT4\.53" "$WORK/danted.log" || fail "danted's log shows no TCP connection to $TGT4.53"
  log "hijack = false (reloaded): dnsmasq answered over UDP and TCP through the proxy"
  e2e_require_alive "after hijacked DNS"
  e2e_s5_log_clean
}

# The daemon and its workers gone after kill -9 (the workers get SIGTERM
# from the kernel when their supervisor dies), and so is the device.
s5_gone() {
  local i
  for i in $(seq $((T_STOP * 10))); do
    e2e_s5_alive || e2e_tun_exists || break
    sleep 0.1
  done
  e2e_tun_exists && fail "$TUN is left after s5tund was killed"
  wait "$S5PID" 2>/dev/null || true
  S5PID=""
}

# restart_mapped: s5tund again with the same configuration file.
restart_mapped() {
  e2e_start_s5tund --config "$S5_CFG"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  in_c ip -6 route replace "$DNS_POOL6" dev "$TUN"
}

case_dns_state() {
  e2e_topology_up
  udp_hosts
  printf '%s six.test\n' "$TGT6" >>"$NETNS_ETC/hosts"
  e2e_start_target
  e2e_start_dante
  local state=$WORK/dnsmap a_blk a_six a_other a_new rule line
  # The state file at most once a second, not once a minute: the case
  # waits for the three names in it (the first new name is written at once).
  export S5TUND_DNS_STATE_SHORT=1
  start_mapped "state = $state

[rules]
rule = full:blocked.test -> block"
  udp_wait_log "mapped DNS: no state file $state yet" 1 "line of the missing state file"
  a_blk=$(dig_c "@$DNS_ADDR" blocked.test) || fail "dig blocked.test failed"
  [[ -n $a_blk ]] || fail "dig blocked.test: no answer"
  a_six=$(dig_c "@$DNS_ADDR" six.test) || fail "dig six.test failed"
  [[ -n $a_six ]] || fail "dig six.test: no answer"
  a_other=$(dig_c "@$DNS_ADDR" other.test) || fail "dig other.test failed"
  [[ -n $a_other ]] || fail "dig other.test: no answer"
  log "mapped: blocked.test $a_blk, six.test $a_six, other.test $a_other"
  client --host "$a_blk" expect-refused
  rule=$(e2e_wait_log "$S5LOG" "blocked by \[rules\] \(rule [^)]+\)" "$T_STEP" "block line") || exit 1
  rule=$(sed -E 's/.*(\(rule [^)]+\)).*/\1/' <<<"$rule")
  for _ in $(seq $((T_START * 10))); do
    grep -qx "$a_other other.test" "$state" 2>/dev/null && break
    sleep 0.1
  done
  grep -qx "$a_other other.test" "$state" || fail "$state lacks other.test: $(oneline "$(cat "$state" 2>&1)")"
  grep -qx "$a_six six.test" "$state" || fail "$state lacks six.test"
  grep -q "$TGT6" "$WORK/danted.log" && fail "danted saw $TGT6 before the restart"
  kill -KILL "$S5PID"
  s5_gone
  log "s5tund killed -9; starting it again with $S5_CFG"
  unset S5TUND_DNS_STATE_SHORT # from now on the daemon's own period: a minute
  restart_mapped
  udp_wait_log "mapped DNS: 3 names restored from $state" 1 "restored line"
  # six.test's old address reaches six.test: danted connects to its target
  client --host "$a_six" echo --count 3
  grep -q "tcp/connect .*$TGT6\.7000" "$WORK/danted.log" || fail "danted's log shows no connection to $TGT6.7000"
  udp_wait_log "dns: $a_six stands for six.test: sent by name" 1 "six.test line"
  log "danted: $(grep -m 1 "tcp/connect .*$TGT6\.7000" "$WORK/danted.log")"
  client --host "$a_blk" expect-refused
  line=$(e2e_wait_log "$S5LOG" "blocked by \[rules\] \(rule [^)]+\)" "$T_STEP" "block line") || exit 1
  [[ $line == *"$rule"* ]] || fail "blocked.test after the restart: '$line', before: $rule"
  [[ $(dig_c "@$DNS_ADDR" other.test) == "$a_other" ]] || fail "other.test has another address after the restart"
  # The first new name is written at once, the next one a minute later at
  # the earliest, or at the stop (SIGTERM): the last names are not lost.
  a_new=$(dig_c "@$DNS_ADDR" new1.test) || fail "dig new1.test failed"
  for _ in $(seq $((T_START * 10))); do
    grep -qx "$a_new new1.test" "$state" && break
    sleep 0.1
  done
  grep -qx "$a_new new1.test" "$state" || fail "the first new name after the start was not written"
  a_new=$(dig_c "@$DNS_ADDR" new2.test) || fail "dig new2.test failed"
  sleep 1.5 # two ticks of the control loop: a write now would be a fault
  grep -q " new2.test$" "$state" && fail "new2.test written within a minute of new1.test"
  e2e_s5_log_clean
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with $S5RC"
  grep -qx "$a_new new2.test" "$state" || fail "new2.test was not written at the stop"
  log "new1.test written at once, new2.test at the stop"
  # A corrupt file (one byte changed): one warn line, s5tund serves, and
  # nothing of it is trusted: the old addresses stand for no name.
  "$PY" -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)' "$state"
  restart_mapped
  line=$(grep -E "^[0-9T:.-]+ (error|warn) " "$S5LOG" || true)
  [[ $(wc -l <<<"$line") == 1 && $line == *"state file $state ignored: checksum does not match"* ]] \
    || fail "corrupt state file: expected one warn line, got '$(oneline "$line")'"
  log "corrupt state file: $line"
  client --host "$a_six" expect-refused
  udp_wait_log "mapped address $a_six stands for no name" 1 "no-name line"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with $S5RC"
}
