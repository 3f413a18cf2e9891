# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases for UDP (SOCKS5 UDP ASSOCIATE), mapped DNS and ICMP
# (run.sh runs them; the topology and rules of lib.sh).
#
# CASE   udp_echo      IPv4 and IPv6 echo through danted, 1 byte to the MTU
#                      and beyond, many sources at once, several
#                      destinations per source (replies from each)
#        dns           a real DNS server (dnsmasq) through the tunnel; mapped
#                      DNS: a pool address, TCP to it = CONNECT by name,
#                      AAAA/other types, malformed queries
#        dns6          mapped DNS for IPv6: AAAA from [dns] network6, an
#                      IPv6 resolver address, TCP and UDP over IPv6 to a pool
#                      address by name, one entry per name for A and AAAA,
#                      recycling with a small cache
#        udp_teardown  the proxy drops the control connection -> the
#                      association ends; idle expiry ends it too
#        udp_badrelay  a broken relay (udpbadproxy.py): truncated, oversized,
#                      fragmented headers dropped; udp-address override and
#                      an unspecified BND.ADDR
#        udp_relay_loop a relay address routed into the tunnel: refused and
#                      counted, no association loop
#        udp_off_icmp  udp = off -> ICMP port unreachable; icmp = off -> no
#                      echo reply, icmp = reply -> echo replies
#        sessionlog    [log] sessions = true: a line per finished session
#                      with exact bytes (TCP transfer), a refused CONNECT,
#                      an idle timeout, a UDP association
#        connections   s5tund --connections: open sessions and associations
#                      with queue, destination (a mapped name too), state,
#                      bytes; gone once closed
#        udp_closed_port  datagrams to a target's closed port end that
#                      association at danted; it costs only itself: 20
#                      other sockets echo at their first try at once, also
#                      when it is the first UDP of a fresh daemon (no relay
#                      of any worker has answered yet)
#        udp_sshd      OpenSSH's ssh -D as the proxy (CONNECT, no UDP
#                      ASSOCIATE): TCP works; UDP is refused with one line
#                      saying so, not one per datagram source
#        udp_one_assoc 20 client sockets alternating 100-byte and 20,000-byte
#                      datagrams (IP fragments on the TUN) to two target
#                      ports, IPv4 and IPv6: the target sees exactly one
#                      source port per client socket (one association, full
#                      cone); iperf3 -u -l 30000 through danted completes;
#                      with S5TUND_NO_STEERING=1 and without CAP_BPF the
#                      fallback is logged once

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

UDP_PORTS=(7001 7002)
BADUDP_PORT=1090

setup_udp() {
  command -v dnsmasq >/dev/null 2>&1 || fail "missing tool: dnsmasq (run 'make deps')"
  udp_install_exit   # dnslib.sh: the hosts file in S goes on exit too
}

start_udptarget() {
  local ready=$WORK/udptarget.ready p args=()
  for p in "${UDP_PORTS[@]}"; do args+=(--port "$p"); done
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" \
    "${args[@]}" ${UDPTARGET_RECORD:+--record "$UDPTARGET_RECORD"} --ready-file "$ready" \
    >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "udptarget on $TGT4 and [$TGT6] ports ${UDP_PORTS[*]}"; return 0; }
    sleep 0.1
  done
  fail "udptarget.py did not start"
}

# ---------------------------------------------------------------- cases

case_udp_echo() {
  e2e_topology_up
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" ""
  e2e_wait_ready "$MODE" "$QUEUES"
  local p4=(--port 7001 --port 7002)
  # 1 byte to the TUN MTU (8500 - 28 for IPv4, - 48 for IPv6); dante's
  # datagrams to us cross the 1500-byte veth fragmented, which is fine.
  uclient echo --host "$TGT4" "${p4[@]}" --sizes 1,2,100,512,1400,1472,1473,4000,8000,8472 --sources 4 --rounds 2
  uclient echo --host "$TGT6" "${p4[@]}" --sizes 1,2,100,512,1232,1400,4000,8000,8452 --sources 4 --rounds 2
  # Beyond the MTU: the client's kernel fragments, lwIP reassembles; the
  # reply is fragmented by lwIP on its way back.
  uclient echo --host "$TGT4" --port 7001 --sizes 8473,20000,40000 --sources 2
  uclient echo --host "$TGT6" --port 7001 --sizes 8453,20000 --sources 2
  # Many sources at once, each its own association.
  CLIENT_T=$T_BULK uclient echo --host "$TGT4" "${p4[@]}" --sizes 1,700,1400 --sources 64 --rounds 3
  CLIENT_T=$T_BULK uclient echo --host "$TGT6" --port 7001 --sizes 1,700 --sources 32 --rounds 3
  e2e_require_alive "after UDP echo"
  local n
  n=$(udp_count_log 'association ready')
  ((n >= 100)) || fail "expected at least 100 associations in the log, found $n"
  log "$n associations set up"
  # Addresses in log lines as RFC 5952 writes them (lower case): the
  # client's fc00::1 is never FC00::1.
  grep -q '\[fc00::1\]:[0-9]*: association ready' "$S5LOG" || fail "no association from [fc00::1] in the log"
  if grep -qE '(FC00|FD00):' "$S5LOG"; then
    fail "upper-case IPv6 addresses in s5tund's log: $(oneline "$(grep -m 3 -E '(FC00|FD00):' "$S5LOG")")"
  fi
  client --host "$TGT4" echo --count 5
}

case_dns() {
  e2e_topology_up
  udp_hosts
  e2e_start_target
  start_dnsmasq
  e2e_start_dante
  start_s5 "$S_ADDR6" "$DANTE_PORT" "[dns]
address = $DNS_ADDR
network = $DNS_POOL
cache-size = 1000"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"   # the pool goes into the tunnel too
  # A real DNS server through the tunnel (UDP ASSOCIATE, proxy over IPv6).
  uclient dns --server "$TGT4" --name www.example.test --expect "$TGT4"
  uclient dns --server "$TGT4" --name www.example.test --type AAAA --expect "$TGT6"
  uclient dns --server "$TGT6" --name www.example.test --expect "$TGT4"
  grep -q 'www.example.test' "$WORK/dnsmasq.log" || fail "dnsmasq's log does not show the query"
  # Mapped DNS: a pool address for the name ...
  local addr addr2
  addr=$(uclient dns --server "$DNS_ADDR" --name Target.Test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  [[ $addr =~ ^100\. ]] || fail "no pool address for target.test: '$addr'"
  addr2=$(uclient dns --server "$DNS_ADDR" --name target.test --edns --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  [[ $addr == "$addr2" ]] || fail "target.test mapped to $addr, then to $addr2"
  log "target.test is $addr"
  uclient dns --server "$DNS_ADDR" --name target.test --type AAAA --expect-empty
  uclient dns --server "$DNS_ADDR" --name target.test --type TXT --expect-empty
  uclient dns --server "$DNS_ADDR" --name other.test --expect-in "$DNS_POOL"
  # A name with CR/LF in a label is refused, and logged escaped: no forged line.
  uclient dns --server "$DNS_ADDR" --name $'evil\r\nwarn  q0 forged.test' --expect-rcode 5 --expect-empty >/dev/null
  udp_wait_log 'dns: type 1 for "evil\\x0d\\x0awarn  q0 forged\.test": rcode 5' "$T_STEP" "the name escaped in the log"
  ! grep -q '^warn  q0 forged' "$S5LOG" || fail "a peer's CR/LF made a line of its own in the log"
  # ... and TCP to it reaches the target through a CONNECT by name, also on
  # other queues than the one that answered the query (shared table).
  client --host "$addr" echo --count 10
  CLIENT_T=$T_BULK client --host "$addr" concurrent 32
  # danted logs where it connected, not the name it was asked for: it
  # reached the target, and never saw the pool address (the client's
  # destination), so it got the name and resolved it (/etc/hosts in S).
  grep -q "$addr" "$WORK/danted.log" && fail "danted saw the pool address $addr: CONNECT was not by name"
  grep -q "tcp/connect .*$TGT4\.7000" "$WORK/danted.log" || fail "danted's log shows no connection to $TGT4.7000"
  udp_wait_log "dns: $addr stands for target.test: sent by name" "$T_STEP" "CONNECT by name"
  # A pool address that stands for no name: refused, not sent anywhere.
  client --host 100.64.200.200 --timeout 30 expect-refused
  # Malformed queries: dropped and counted, the resolver keeps answering.
  uclient dns-garbage --server "$DNS_ADDR"
  local dropped
  dropped=$(udp_count_log 'dns: query from .* dropped: malformed')
  ((dropped >= 10)) || fail "expected at least 10 malformed queries counted in the log, found $dropped"
  log "$dropped malformed queries dropped and counted"
  e2e_require_alive "after DNS"
}

# dns6: [dns] network6 and an IPv6 resolver address beside the IPv4 one.
case_dns6() {
  e2e_topology_up
  udp_hosts
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" "[dns]
address = $DNS_ADDR, $DNS_ADDR6
network = $DNS_POOL
network6 = $DNS_POOL6
cache-size = 4"
  e2e_wait_ready "$MODE" "$QUEUES"
  # For a failure's diagnostics: every change of C's IPv6 routes, addresses
  # and links (an on-link resolver lost for a moment was reported once
  # under ASan and not reproduced since).
  E2E_LOGS+=("$WORK/ip6monitor.log")
  in_c ip -6 -timestamp monitor route address link neigh >"$WORK/ip6monitor.log" 2>&1 &
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  in_c ip -6 route replace "$DNS_POOL6" dev "$TUN"
  # A pool address that stands for no name yet: refused, never sent on.
  client --host fdff:5335::4 --timeout 30 expect-refused
  udp_wait_log "mapped address fdff:5335::4 stands for no name" "$T_STEP" "refusal of a pool address without a name"
  # AAAA from the IPv6 pool, asked at the IPv6 resolver address; A at the
  # IPv4 one: one entry, so both stand at the same offset in their pools.
  local a6 a4 off6 off4 name
  a6=$(uclient dns --server "$DNS_ADDR6" --name Target.Test --type AAAA --expect-in "$DNS_POOL6" --print-address | tail -n 2 | head -n 1)
  a4=$(uclient dns --server "$DNS_ADDR" --name target.test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  [[ $(uclient dns --server "$DNS_ADDR" --name target.test --type AAAA --print-address | tail -n 2 | head -n 1) == "$a6" ]] \
    || fail "AAAA asked at the IPv4 resolver differs from $a6"
  read -r off6 off4 < <("$PY" -c 'import ipaddress as i, sys
print(int(i.ip_address(sys.argv[1])) - int(i.ip_network(sys.argv[3]).network_address),
      int(i.ip_address(sys.argv[2])) - int(i.ip_network(sys.argv[4]).network_address))' "$a6" "$a4" "$DNS_POOL6" "$DNS_POOL")
  ((off6 == off4)) || fail "target.test is $a6 (offset $off6) and $a4 (offset $off4): two entries"
  log "target.test is $a6 and $a4: one entry (offset $off6)"
  # UDP to the IPv6 pool address: the ASSOCIATE's datagram names target.test.
  uclient send --host "$a6" --port 7001 --count 1
  udp_wait_log "dns: $a6 stands for target.test: sent by name" "$T_STEP" "UDP to $a6 sent by name"
  # TCP over IPv6 to it: a CONNECT by name (danted never sees the address).
  client --host "$a6" echo --count 5
  CLIENT_T=$T_BULK client --host "$a6" concurrent 16
  grep -qi "$a6" "$WORK/danted.log" && fail "danted saw the pool address $a6"
  grep -q "tcp/connect .*$TGT4\.7000" "$WORK/danted.log" || fail "danted's log shows no connection to $TGT4.7000"
  # No recycling while a client may hold the address: cache-size 4, so
  # target.test and three other names take every entry, all answered just
  # now; a fourth name gets SERVFAIL (logged), never target.test's address,
  # which still stands for target.test (issue: a recycled address reached
  # another name).
  for name in one two three; do
    uclient dns --server "$DNS_ADDR6" --name "$name.test" --type AAAA --expect-in "$DNS_POOL6" >/dev/null
  done
  uclient dns --server "$DNS_ADDR6" --name four.test --type AAAA --expect-rcode 2 >/dev/null
  udp_wait_log "dns: no mapped address free for four.test: .*SERVFAIL" "$T_STEP" "pool-full line"
  local now
  now=$(uclient dns --server "$DNS_ADDR6" --name target.test --type AAAA --expect-in "$DNS_POOL6" --print-address | tail -n 2 | head -n 1)
  [[ $now == "$a6" ]] || fail "target.test moved from $a6 to $now while young"
  client --host "$a6" echo --count 2
  log "a full pool of young entries: four.test refused (SERVFAIL), $a6 still target.test"
  # Malformed queries at the IPv6 resolver: dropped and counted, and it
  # still answers.
  uclient dns-garbage --server "$DNS_ADDR6"
  local dropped
  dropped=$(udp_count_log 'dns: query from fc00::1 dropped: malformed')
  ((dropped >= 10)) || fail "expected at least 10 malformed queries from fc00::1 counted in the log, found $dropped"
  e2e_require_alive "after IPv6 mapped DNS"
}

# udp_log_within SECS RE: true once s5tund's log has a line matching RE, false after SECS.
udp_log_within() {
  local i
  for i in $(seq $(($1 * 10))); do
    grep -qE -- "$2" "$S5LOG" && return 0
    sleep 0.1
  done
  return 1
}

case_udp_teardown() {
  e2e_topology_up
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" "[session]
udp-idle-timeout = 3"
  e2e_wait_ready "$MODE" "$QUEUES"
  uclient echo --host "$TGT4" --port 7001 --sizes 100
  udp_wait_log 'association ready' "$T_START" "ready association"
  # The proxy drops the control connection: the association must end.
  local ended
  ended='association ended: (proxy closed the control connection|control connection failed)'
  # ss -K's end is seen within 2 s (polled: no fixed sleep), or not at all.
  if in_s ss -K dst "$C_ADDR4" "sport = :$DANTE_PORT" >/dev/null 2>&1 && udp_log_within 2 "$ended"; then
    log "control connection killed with ss -K"
  else
    # No sock_destroy in this kernel (or too slow): restart danted instead.
    log "ss -K did not end it; restarting danted"
    kill -TERM "$DANTE_PID" 2>/dev/null || true
    wait "$DANTE_PID" 2>/dev/null || true
    e2e_start_dante
  fi
  udp_wait_log "$ended" "$T_START" "end of the association after its control connection closed"
  # A new datagram gets a new association, and traffic flows again.
  uclient echo --host "$TGT4" --port 7001 --sizes 100,1000 --retry-for 30
  # Idle expiry (udp-idle-timeout = 3): polled in the log, bounded.
  udp_wait_log 'association ended: idle timeout' "$T_START" "idle expiry of an association"
  e2e_require_alive "after association teardown"
}

start_badudp() {   # BND-ADDR
  local ready=$WORK/udpbadproxy.ready
  rm -f "$ready"
  E2E_LOGS+=("$WORK/udpbadproxy.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udpbadproxy.py" --listen "$S_ADDR4" --port "$BADUDP_PORT" \
    --bnd "$1" --ready-file "$ready" >>"$WORK/udpbadproxy.log" 2>&1 &
  BADUDP_PID=$!
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "udpbadproxy on $S_ADDR4:$BADUDP_PORT (BND.ADDR $1)"; return 0; }
    sleep 0.1
  done
  fail "udpbadproxy.py did not start"
}

# udp_relay_loop: the proxy names a relay address that the host routes into
# the tunnel (10.201.0.55, inside the harness's route into tun0). Each
# datagram sent there would come back in as a new client and open another
# association: 20 client datagrams must open at most 20 associations, the
# loop refused and counted (drop_proxy_loop), never fed. A [rules] direct
# destination routed there (10.201.0.56): refused by the same guard, its
# line naming the destination and the rule, not a proxy.
case_udp_relay_loop() {
  e2e_topology_up
  start_badudp 10.201.0.55
  start_s5 "$S_ADDR4" "$BADUDP_PORT" "[stats]
socket = $WORK/stats.sock
[rules]
rule = dst:10.201.0.56/32 proto:udp -> direct"
  e2e_wait_device "$MODE" "$QUEUES"
  local i
  for i in $(seq 20); do uclient send --host "$TGT4" --port 7001 --count 1 --gap 0 >/dev/null; done
  udp_wait_log "the proxy's UDP relay 10\.201\.0\.55:[0-9]+ is routed into $TUN, so its datagrams would come back as new clients" \
    "$T_STEP" "refused relay loop"
  # A direct destination routed into the device: the same guard, in words
  # about the destination and the rule that sends it direct, not the proxy.
  uclient send --host 10.201.0.56 --port 7003 --count 1 --gap 0 >/dev/null
  udp_wait_log "refused: direct by rule s5tund\.[0-9]+\.ini:[0-9]+: the destination 10\.201\.0\.56:7003 is routed into $TUN" \
    "$T_STEP" "refused direct loop"
  ! grep -q "relay 10\.201\.0\.56" "$S5LOG" || fail "the direct destination was called the proxy's relay"
  sleep 2   # a loop, if any, would go on meanwhile
  local json total loops fds
  json=$("$S5TUND" --stats "$WORK/stats.sock" --json)
  total=$(grep -o '"udp_total":[0-9]*' <<<"$json" | head -1 | cut -d: -f2)
  loops=$(grep -o '"drop_proxy_loop":[0-9]*' <<<"$json" | head -1 | cut -d: -f2)
  fds=$(ls "/proc/$S5PID/fd" | wc -l)
  ((total <= 21)) || fail "21 datagrams (20 and the direct one) opened $total associations (a loop through the tunnel)"
  ((loops >= 1)) || fail "no proxy loop counted (drop_proxy_loop = $loops)"
  log "21 datagrams: $total associations, $loops refused as a loop, $fds descriptors in the main process"
  e2e_require_alive "after a relay routed into the tunnel"
  e2e_stop_s5tund
  kill -TERM "$BADUDP_PID" 2>/dev/null || true
}

case_udp_badrelay() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  # The relay returns an unroutable BND.ADDR: [socks5] udp-address wins.
  start_badudp 192.0.2.1
  start_s5 "$S_ADDR4" "$BADUDP_PORT" "[socks5]
udp-address = $S_ADDR4"
  e2e_wait_device "$MODE" "$QUEUES"
  # Before each good echo the relay sends the broken datagrams (see
  # udpbadproxy.py): they must be dropped, the echo must arrive intact.
  uclient echo --host "$TGT4" --port 7001 --sizes 1,100,1400,8000 --sources 4 --strict
  uclient echo --host "$TGT6" --port 7001 --sizes 1,100,1400 --sources 2 --strict
  local frag bad
  frag=$(udp_count_log 'dropped: fragmented SOCKS5 datagram')
  bad=$(udp_count_log 'dropped: malformed SOCKS5 UDP header')
  ((frag >= 1 && bad >= 4)) || fail "expected fragmented and malformed datagrams counted in the log (got $frag, $bad)"
  log "relay datagrams dropped and counted: $frag fragmented, $bad malformed"
  e2e_require_alive "after a broken relay"
  e2e_stop_s5tund
  kill -TERM "$BADUDP_PID" 2>/dev/null || true
  wait "$BADUDP_PID" 2>/dev/null || true
  # BND.ADDR 0.0.0.0: the proxy's own address is used.
  start_badudp 0.0.0.0
  start_s5 "$S_ADDR4" "$BADUDP_PORT" ""
  e2e_wait_device "$MODE" "$QUEUES"
  uclient echo --host "$TGT4" --port 7001 --sizes 1,1400 --sources 2
  e2e_require_alive "after BND.ADDR 0.0.0.0"
}

case_udp_off_icmp() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_s5 "$S_ADDR4" "$MS_PORT" "[socks5]
udp = off"
  e2e_wait_ready "$MODE" "$QUEUES"
  uclient expect-unreachable --host "$TGT4" --port 7001
  uclient expect-unreachable --host "$TGT6" --port 7001
  # icmp = off (the default): pings to anything in the tunnel go unanswered.
  uclient ping --host "$TGT4" --expect-none
  uclient ping --host "$TGT6" --expect-none
  e2e_require_alive "with udp = off"
  e2e_stop_s5tund
  start_s5 "$S_ADDR4" "$MS_PORT" "[tun]
icmp = reply"
  e2e_wait_ready "$MODE" "$QUEUES"
  uclient ping --host "$TGT4" --expect-reply
  uclient ping --host "$TGT6" --expect-reply
  # microsocks answers UDP ASSOCIATE "command not supported": the same
  # once-per-worker hint at warn as ssh -D's closed connection.
  uclient send --host "$TGT4" --port 7001 --count 1
  udp_wait_log "warn .*the proxy does not support UDP ASSOCIATE (.*); set \[socks5\] udp = off" "$T_STEP" \
    "microsocks's refused UDP ASSOCIATE: the udp = off hint at warn"
  e2e_require_alive "with icmp = reply"
}

# sessionlog: every kind of end gets its line, with the right numbers.
sl_line() {   # ERE WHAT: the first session line matching ERE, bounded wait
  udp_wait_log "info  q[0-9]+ session $1" "$T_STEP" "$2" >/dev/null
  grep -E -m 1 "info  q[0-9]+ session $1" "$S5LOG"
}

case_sessionlog() {
  e2e_topology_up
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" "[log]
sessions = true
[session]
tcp-idle-timeout = 2
udp-idle-timeout = 2"
  e2e_wait_ready "$MODE" "$QUEUES"
  local via="via $S_ADDR4:$DANTE_PORT" line
  # A transfer of known size: ECHO and 100000 bytes up, 100000 back, FIN.
  in_c timeout 30 "$PY" -c 'import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
s.sendall(b"ECHO\n" + b"x" * 100000)
got = 0
while got < 100000:
    d = s.recv(65536)
    if not d:
        sys.exit("short echo")
    got += len(d)
s.shutdown(socket.SHUT_WR)
s.recv(1)
s.close()' "$TGT6" "$TGT_PORT"
  line=$(sl_line "s[0-9]+ tcp \[fc00::1\]:[0-9]+ -> \[fd00:201::1\]:$TGT_PORT $via: 100005 bytes up, 100000 down, [0-9.]+ s, closed" \
    "session line of the 100000-byte echo")
  log "transfer: ${line#* session }"
  # A refused CONNECT: the target's port 7999 is closed, danted says so.
  client --host "$TGT4" --port 7999 --timeout 30 expect-refused
  line=$(sl_line "s[0-9]+ tcp 198.18.0.1:[0-9]+ -> $TGT4:7999 $via: 0 bytes up, 0 down, [0-9.]+ s, upstream socks5: proxy refused CONNECT: " \
    "session line of the refused CONNECT")
  log "refused: ${line#* session }"
  # An idle timeout (tcp-idle-timeout = 2).
  client --host "$TGT4" --timeout 30 hold --hold 15
  line=$(sl_line "s[0-9]+ tcp 198.18.0.1:[0-9]+ -> $TGT4:$TGT_PORT $via: 10 bytes up, 5 down, [0-9.]+ s, idle timeout" \
    "session line of the idle timeout")
  log "idle: ${line#* session }"
  # A UDP association: 3 datagrams of 100 bytes echoed, then idle expiry.
  uclient echo --host "$TGT4" --port 7001 --sizes 100,100,100
  line=$(sl_line "u[0-9]+ udp 198.18.0.1:[0-9]+ -> $TGT4:7001 $via: 300 bytes up, 300 down, [0-9.]+ s, idle timeout" \
    "session line of the UDP association")
  log "udp: ${line#* session }"
  # The bound (live: a reload sets it): at most 1 line per worker and
  # second, the rest counted and summed up.
  local ini=$WORK/s5tund.$S5_RUNS.ini n0 n1
  printf '[log]\nsessions-max-per-second = 1\n' >>"$ini"
  kill -HUP "$S5PID"
  udp_wait_log "main configuration reloaded" 10 "reload"
  n0=$(udp_count_log "info  q[0-9]+ session s")
  CLIENT_T=$T_BULK client --host "$TGT4" concurrent 40
  udp_wait_log "session log: [0-9]+ lines over \[log\] sessions-max-per-second left out" "$T_STEP" "summary of the session lines left out"
  n1=$(udp_count_log "info  q[0-9]+ session s")
  ((n1 - n0 < 40)) || fail "$((n1 - n0)) session lines for 40 sessions with sessions-max-per-second = 1"
  log "with sessions-max-per-second = 1: $((n1 - n0)) lines for 40 sessions, the rest summed up"
  e2e_require_alive "with the session log"
}

# connections: 5 held TCP connections over IPv4, 1 over IPv6, 1 to a
# mapped name, and a UDP association, listed by --connections --json with
# their queues agreeing with the stats; after they end, they are gone.
cn_json() { "$S5TUND" --connections "$WORK/stats.sock" --json; }

case_connections() {
  e2e_topology_up
  udp_hosts
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" "[stats]
socket = $WORK/stats.sock
[dns]
address = $DNS_ADDR
network = $DNS_POOL"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  local addr pids=() i doc
  addr=$(uclient dns --server "$DNS_ADDR" --name target.test --expect-in "$DNS_POOL" --print-address | tail -n 2 | head -n 1)
  for i in 1 2 3 4 5; do
    ip netns exec "$NS_C" timeout -k 5 60 "$PY" "$E2E_DIR/client.py" --host "$TGT4" --port "$TGT_PORT" \
      --timeout 30 hold --hold 50 >"$WORK/hold$i.log" 2>&1 &
    pids+=($!)
  done
  ip netns exec "$NS_C" timeout -k 5 60 "$PY" "$E2E_DIR/client.py" --host "$TGT6" --port "$TGT_PORT" \
    --timeout 30 hold --hold 50 >"$WORK/hold6.log" 2>&1 &
  pids+=($!)
  ip netns exec "$NS_C" timeout -k 5 60 "$PY" "$E2E_DIR/client.py" --host "$addr" --port "$TGT_PORT" \
    --timeout 30 hold --hold 50 >"$WORK/holdname.log" 2>&1 &
  pids+=($!)
  uclient send --host "$TGT4" --port 7001 --count 2
  for i in $(seq $((T_START * 10))); do
    [[ $(grep -l "connection to" "$WORK"/hold*.log 2>/dev/null | wc -l) == 7 ]] && break
    sleep 0.1
  done
  doc=$(cn_json)
  "$S5TUND" --connections "$WORK/stats.sock" | head -3
  "$PY" - "$doc" "$("$S5TUND" --stats "$WORK/stats.sock" --json)" "$TGT4" "$TGT_PORT" "$QUEUES" <<'EOP' || fail "--connections does not match"
import json, sys
conns, stats = json.loads(sys.argv[1]), json.loads(sys.argv[2])
tgt, port, nq = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
tcp = [c for c in conns if c["proto"] == "tcp"]
udp = [c for c in conns if c["proto"] == "udp"]
def count(dest): return sum(1 for c in tcp if c["destination"] == dest and c["state"] == "open")
ok = True
def want(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and cond
want(count("%s:%d" % (tgt, port)) == 5, "5 open TCP sessions to %s:%d (%d)" % (tgt, port, count("%s:%d" % (tgt, port))))
want(count("[fd00:201::1]:%d" % port) == 1, "1 open TCP session to [fd00:201::1]:%d" % port)
want(count("target.test:%d" % port) == 1, "1 open TCP session to target.test:%d (the mapped name)" % port)
want(any(c["destination"] == "%s:7001" % tgt for c in udp), "the UDP association to %s:7001" % tgt)
want(all(0 <= c["queue"] < nq for c in conns), "queues within 0..%d" % (nq - 1))
per_q = [sum(1 for c in tcp if c["queue"] == q) for q in range(nq)]
active = [q["tcp_active"] for q in stats["queues"]]
want(per_q == active, "TCP sessions per queue %s, tcp_active per queue %s" % (per_q, active))
want(all(c["bytes_up"] >= 10 and c["bytes_down"] >= 5 for c in tcp), "bytes each way counted")
ages = [c["age"] for c in conns]
want(ages == sorted(ages), "newest first")
sys.exit(0 if ok else 1)
EOP
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  for i in $(seq $((T_STEP * 10))); do
    [[ $(cn_json | "$PY" -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["proto"] == "tcp"))') == 0 ]] && break
    sleep 0.1
  done
  [[ $(cn_json | "$PY" -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["proto"] == "tcp"))') == 0 ]] \
    || fail "TCP sessions still listed after their clients closed: $(cn_json)"
  log "--connections: 7 TCP sessions (one by name) and a UDP association listed with their queues; gone after closing"
}

# udp_closed_port: danted ends an association whose datagrams hit a closed
# port at the target (its relay socket gets the ICMP error). That is the
# proxy ending one association, not failing to set associations up: the
# other sources' associations must not be held back. Each of 20 sockets
# gets one try (a held-back association is refused with ICMP, no echo).
case_udp_closed_port() {
  e2e_topology_up
  e2e_start_target
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" ""
  e2e_wait_ready "$MODE" "$QUEUES"
  # no warm-up: in round 1 the closed port's worker has seen no relay work
  local round n0 i held ended
  for round in 1 2 3; do
    n0=$(udp_count_log 'association ended: ')
    uclient send --host "$TGT4" --port 7009 --count 3
    for i in $(seq $((T_STEP * 10))); do
      (($(udp_count_log 'association ended: ') > n0)) && break
      sleep 0.1
    done
    (($(udp_count_log 'association ended: ') > n0)) || fail "the association to the closed port did not end"
    uclient --timeout 5 echo --host "$TGT4" --port 7001 --sizes 100 --sources 20 --tries 1
  done
  held=$(udp_count_log 'new associations refused for')
  ((held == 0)) || fail "an association ended by the proxy held back new ones: $(oneline "$(grep 'new associations refused' "$S5LOG")")"
  ended=$(udp_count_log 'association ended: the proxy ended the association \(its relay refuses datagrams')
  ((ended >= 3)) || fail "$ended associations logged as ended by the proxy, expected at least 3"
  held=$(udp_count_log 'association ended: the proxy ended the association .*; this client held back [0-9]+ ms')
  ((held >= 3)) || fail "$held closed-port clients held back alone, expected 3 (nothing came back through their relays)"
  log "3 rounds: the closed port's association ended alone, 60 other sockets echoed at their first try"
}

case_udp_sshd() {
  e2e_topology_up
  e2e_start_target
  start_udptarget
  start_sshd_socks 1081
  start_s5 "$S_ADDR4" 1081 ""
  e2e_wait_ready "$MODE" "$QUEUES"
  client --host "$TGT6" echo --count 3
  local i n closed
  for i in 1 2; do
    uclient send --host "$TGT4" --port 7001 --count 1
    uclient send --host "$TGT6" --port 7001 --count 1
  done
  udp_wait_log "the proxy does not support UDP ASSOCIATE (.*); set \[socks5\] udp = off" "$T_STEP" "'does not support UDP ASSOCIATE' line"
  CLIENT_T=$T_STEP uclient send --host "$TGT4" --port 7002 --count 8 --gap 0.3
  n=$(udp_count_log 'does not support UDP ASSOCIATE')
  ((n >= 1 && n <= QUEUES)) || fail "$n 'does not support UDP ASSOCIATE' lines, expected one per worker at most ($QUEUES)"
  closed=$(udp_count_log 'closed the connection during the SOCKS5 handshake')
  ((closed == 0)) || fail "$closed 'closed the connection during the SOCKS5 handshake' lines with ssh -D"
  client --host "$TGT4" echo --count 3
  e2e_require_alive "with ssh -D"
  log "ssh -D: TCP through it, UDP refused with $n line(s) saying why"
}

# udp_sources LOCAL N: every client socket 0..N-1 of udpclient.py reached
# the target's address LOCAL from exactly one source (address, port), i.e.
# through one association of the proxy, whatever target port it sent to.
udp_sources() {
  awk -v l="$1" -v n="$2" '
    $1 == l { c[$2]++; p[$2] = p[$2] " " $3 "/" $4 }
    END {
      bad = 0
      for (i = 0; i < n; i++)
        if (c[i] != 1) { printf "client socket %d reached %s from %d sources:%s\n", i, l, c[i], p[i]; bad++ }
      exit bad > 0
    }' "$UDPTARGET_RECORD"
}

# iperf3_udp HOST: iperf3 -u with 30,000-byte datagrams (every one of them
# IP-fragmented on the TUN, the first "hello" datagram not) through the
# tunnel; iperf3's server takes the source of that first datagram as the
# client's and receives only from there. It must complete and the server
# must have received most datagrams (not none, as when the fragments of one
# socket went out through another association).
iperf3_udp() {
  local host=$1 out=$WORK/iperf3.$1.json srv=$WORK/iperf3.server.$1.log
  E2E_LOGS+=("$srv")
  ip netns exec "$NS_S" timeout -k 5 "$T_STEP" iperf3 -s -1 -B "$host" -p 5201 >"$srv" 2>&1 &
  local spid=$! i
  for i in $(seq $((T_START * 10))); do
    in_s ss -Hltn "sport = :5201" | grep -qF "$host" && break
    sleep 0.1
  done
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" iperf3 -c "$host" -p 5201 -u -l 30000 \
    -b 8M -t 3 -J >"$out" 2>"$out.err" || { cat "$out" "$out.err" >&2; fail "iperf3 -u -l 30000 to $host failed"; }
  wait "$spid" || true
  "$PY" - "$out" <<'PYEOF' || fail "iperf3 -u -l 30000 to $host: failed or too few datagrams arrived"
import json, sys
run = json.load(open(sys.argv[1]))
if "error" in run or "sum" not in run["end"]:
    print("[e2e] iperf3 -u -l 30000: %s" % run.get("error", "no summary"))
    sys.exit(1)
end = run["end"]["sum"]
total, lost = end["packets"], end["lost_packets"]
print("[e2e] iperf3 -u -l 30000: %d datagrams sent, %d lost (%.1f%%)" % (total, lost, end["lost_percent"]))
sys.exit(0 if total > 0 and lost * 2 < total else 1)
PYEOF
}

case_udp_one_assoc() {
  command -v iperf3 >/dev/null 2>&1 || fail "missing tool: iperf3 (run 'make deps')"
  e2e_topology_up
  e2e_start_target
  UDPTARGET_RECORD=$WORK/sources
  start_udptarget
  e2e_start_dante
  start_s5 "$S_ADDR4" "$DANTE_PORT" ""
  e2e_wait_ready "$MODE" "$QUEUES"
  # Each socket: 100 B to port 7001, 20,000 B to 7001, 100 B to 7002, ...
  local rounds=5
  uclient echo --host "$TGT4" --port 7001 --port 7002 --sizes 100,20000 --sources 20 --rounds $rounds
  udp_sources "$TGT4" 20 || fail "IPv4: a client socket went out through more than one association"
  uclient echo --host "$TGT6" --port 7001 --port 7002 --sizes 100,20000 --sources 20 --rounds $rounds
  udp_sources "$TGT6" 20 || fail "IPv6: a client socket went out through more than one association"
  log "IPv4 and IPv6: 20 client sockets, one source port each at the target"
  iperf3_udp "$TGT4"
  iperf3_udp "$TGT6"
  grep -q 'queue steering: UDP by source address and port' "$S5LOG" \
    || fail "s5tund did not log that it attached its queue steering"
  e2e_require_alive "after fragmented UDP"
  # The fallback, forced (S5TUND_NO_STEERING), then for real: without
  # CAP_BPF and CAP_SYS_ADMIN (setpriv drops them from the bounding set, so
  # s5tund starts without them) the kernel refuses the program. Each time
  # one warning, and traffic still flows.
  e2e_stop_s5tund
  S5TUND_NO_STEERING=1 start_s5 "$S_ADDR4" "$DANTE_PORT" ""
  udp_fallback 'disabled by S5TUND_NO_STEERING'
  e2e_stop_s5tund
  local real=$S5TUND
  printf '#!/bin/sh\nexec setpriv --bounding-set -bpf,-sys_admin -- %q "$@"\n' "$real" >"$WORK/s5tund-nobpf"
  chmod 755 "$WORK/s5tund-nobpf"
  S5TUND=$WORK/s5tund-nobpf
  start_s5 "$S_ADDR4" "$DANTE_PORT" ""
  S5TUND=$real
  udp_fallback 'creating the steering map: Operation not permitted'
}

# udp_fallback WHY: s5tund comes up, logs exactly one fallback warning
# naming WHY, and carries UDP.
udp_fallback() {
  e2e_wait_ready "$MODE" "$QUEUES"
  udp_wait_log "warn.*queue steering: $1.*UDP fragments may" "$T_START" "fallback warning ($1)"
  local n
  n=$(udp_count_log 'UDP fragments may')
  ((n == 1)) || fail "expected one fallback warning, found $n"
  uclient echo --host "$TGT4" --port 7001 --sizes 100,1000 --sources 2
  e2e_require_alive "without steering ($1)"
}
