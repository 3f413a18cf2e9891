# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# Upstreams other than SOCKS5, given as --proxy URLs (run.sh runs them;
# ctest e2e.CASE.MODE.qN). Real servers in namespace S, s5tund in C:
#
#   upstream_squid    squid with basic_ncsa_auth, --proxy http://USER:PASS@
#                     (the password percent-encoded in the URL): IPv4 and
#                     IPv6 destinations, 20 at once, through the warm pool
#                     (pool_hits), a mapped DNS name sent as the name;
#                     squid's access log shows every CONNECT
#                     tunnelled (TCP_TUNNEL/200) with the user; the start
#                     says what becomes of UDP. Then a wrong password: the
#                     client is refused, s5tund logs squid's status line
#                     (407), squid logs TCP_DENIED/407; a datagram gets ICMP
#                     port unreachable (no upstream carries UDP). Last,
#                     [upstream] sections squid then danted: TCP through
#                     squid, UDP only through danted (SOCKS5).
#   upstream_proxies  tinyproxy with BasicAuth (http://), then danted as a
#                     SOCKS4 server (socks4://USERID@): IPv4 destinations
#                     carried, danted's log shows the v4 CONNECTs; an IPv6
#                     destination cannot go through SOCKS4: refused, and
#                     the log says so. Then ssh -D as a SOCKS4a server: a
#                     mapped DNS name carried as the name (danted has no 4a).
#   upstream_hostile  httpproxy.py (a CONNECT proxy of our own, behaviour by
#                     the CONNECT's port): no final CRLF, an endless header,
#                     1xx before the 200, a body on a 407, a close during
#                     the header. Each costs its own session only (refused,
#                     one debug line with the reason), the interim one
#                     works, and echoes go on through the same daemon.
#   upstream_health   broken upstreams failed over, in file order: a black
#                     hole (takes TCP, never answers; handshake-timeout =
#                     1), tinyproxy answering 403 to every CONNECT, squid
#                     with a wrong password (407), then squid as it should
#                     be. A session named by a rule to tinyproxy, and a
#                     blocked one: their lines name tinyproxy and block.
#                     20 connections at once: all carried, by squid (its
#                     log); the three broken ones each down once, still
#                     down after about five checks (no "up again": the
#                     checks speak the protocol), 10 more all by squid.
#                     Then microsocks walled off by a policy rule (general
#                     failure to every CONNECT) before danted: down after
#                     three distinct destinations, danted carries all.
#                     Last, UDP follows health: two danteds with UDP; the
#                     first stops answering and is marked down, its
#                     association ends and new ones go to the second;
#                     back, then gone: an association moves inside.
#                     A squid asking for Digest: the 407 line says so.

TP_PORT=8888
HOLE_PORT=1087
HTTPPROXY_PORT=1084
DANTE4_PORT=1085
SSH4_PORT=1086
WALLED_PORT=1088
UDP_ECHO_PORT=7001
UP_USER=$SQUID_USER
UP_PASS=$SQUID_PASS
UP_PASS_URL='p%40ss%3Aw%25rd'

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

setup_upstream() {
  udp_install_exit   # dnslib.sh: S's /etc/netns hosts file (target.test) goes on exit too
  e2e_topology_up
  e2e_start_target
  udp_hosts
}

# start_up URL...: s5tund with these --proxy URLs over a file with the
# case's mode and queues, a stats socket, mapped DNS, log level debug; the
# device up (CFG_* from the caller).
start_up() {
  local ini=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini args=() u
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[dns]" "address = $DNS_ADDR" \
    "network = $DNS_POOL" >>"$ini"
  for u; do args+=(--proxy "$u"); done
  e2e_start_s5tund --config "$ini" "${args[@]}"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
}

# echo_by_name: an echo to target.test, through the mapped resolver: the
# CONNECT carries the name, the proxy resolves it (S's hosts file).
echo_by_name() {
  local addr
  addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
  [[ -n $addr ]] || fail "the mapped resolver did not answer target.test"
  client --host "$addr" echo --count 3 >/dev/null
  log "target.test ($addr): echoed"
}

stop_up() {
  e2e_require_alive "at the end of a step"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC after SIGTERM, expected 0"
}

counter() {   # counter NAME: its total over the queues
  "$S5TUND" --stats "$WORK/stats.sock" --json |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

# count_in FILE ERE: matching lines (0 when none).
count_in() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# wait_count FILE ERE N WHAT: until FILE has at least N matching lines.
wait_count() {
  local n=0
  for _ in $(seq $((T_START * 10))); do
    n=$(count_in "$1" "$2")
    ((n >= $3)) && return 0
    sleep 0.1
  done
  fail "$n $4 in $(basename "$1") after ${T_START}s, expected at least $3"
}

# ------------------------------------------------------------ squid

case_upstream_squid() {
  e2e_start_squid
  start_up "http://$UP_USER:$UP_PASS_URL@$S_ADDR4:$SQUID_PORT#squid"
  e2e_wait_log "$S5LOG" "upstream squid: HTTP CONNECT $S_ADDR4:$SQUID_PORT with credentials" 5 >/dev/null
  e2e_wait_log "$S5LOG" "warn  main upstream squid: its credentials cross the network in clear to $S_ADDR4:$SQUID_PORT; tls = true" 5 >/dev/null
  e2e_wait_log "$S5LOG" "UDP: no upstream carries it" 5 >/dev/null
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  client --host "$TGT4" echo --count 20 >/dev/null
  client --host "$TGT6" echo --count 20 >/dev/null
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  client --host "$TGT4" bulk --size 4M --upload-mode length >/dev/null
  echo_by_name
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT target\.test:$TGT_PORT $UP_USER " 1 "CONNECTs by name"
  local hits
  hits=$(counter pool_hits)
  ((hits > 0)) || fail "no CONNECT went over a pooled connection to squid (pool_hits $hits)"
  # squid logs a tunnel when it ends: 1 + 1 + 1 + 20 + bulk's two.
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $UP_USER " 24 "IPv4 tunnels of $UP_USER"
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT \[$TGT6\]:$TGT_PORT $UP_USER " 1 "IPv6 tunnels of $UP_USER"
  local other
  other=$(grep -vE " CONNECT [^ ]+ $UP_USER " "$SQUID_LOG" || true)
  [[ -z $other ]] || fail "squid logged requests not of $UP_USER: $(oneline "$other")"
  log "squid tunnelled $(count_in "$SQUID_LOG" TCP_TUNNEL/200) CONNECTs of $UP_USER (pool_hits $hits)"
  e2e_s5_log_clean
  stop_up

  # A wrong password: squid answers 407, the client is refused.
  start_up "http://$UP_USER:wrong@$S_ADDR4:$SQUID_PORT#squid"
  client --host "$TGT4" expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" 'proxy answered CONNECT with "HTTP/1.1 407 Proxy Authentication Required" \(check username' \
    5 "the 407 status line in s5tund's log" >/dev/null
  wait_count "$SQUID_LOG" "TCP_DENIED/407 .* CONNECT $TGT4:$TGT_PORT" 1 "407 answers"
  local failed
  failed=$(counter socks5_auth_failed)
  ((failed >= 1)) || fail "socks5_auth_failed $failed after a 407"
  # No upstream carries UDP: ICMP port unreachable at once.
  start_udp_echo
  uclient expect-unreachable --host "$TGT4" --port "$UDP_ECHO_PORT" >/dev/null
  stop_up

  # Mixed upstreams in a file: TCP to the first (squid), UDP only to the
  # SOCKS5 one (danted), which the start-up names.
  e2e_start_dante
  local ini=$WORK/mixed.ini tunnels
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[upstream squid]" "type = http" \
    "address = $S_ADDR4" "port = $SQUID_PORT" "username = $UP_USER" "password = \"$UP_PASS\"" "" \
    "[upstream dante]" "type = socks5" "address = $S_ADDR4" "port = $DANTE_PORT" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  e2e_wait_log "$S5LOG" "UDP: through upstream dante$" 5 >/dev/null
  tunnels=$(count_in "$SQUID_LOG" "TCP_TUNNEL/200 ")
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  uclient echo --host "$TGT4" --port "$UDP_ECHO_PORT" --sizes 1,100,1400 --sources 4 >/dev/null
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 " $((tunnels + 1)) "tunnels (TCP still through squid)"
  wait_count "$WORK/danted.log" "udp/udpassociate \\[" 1 "UDP associations at danted"
  [[ $(count_in "$WORK/danted.log" "tcp/connect \\[") == 0 ]] || fail "TCP went to danted, not to the first upstream"
  log "mixed: TCP through squid, UDP through danted"
  stop_up
}

# start_udp_echo: udptarget.py in S, port UDP_ECHO_PORT on the targets.
start_udp_echo() {
  local ready=$WORK/udptarget.ready
  [[ -s $ready ]] && return 0
  E2E_LOGS+=("$WORK/udptarget.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" \
    --port "$UDP_ECHO_PORT" --ready-file "$ready" >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && return 0
    sleep 0.1
  done
  fail "udptarget.py did not start"
}

# ------------------------------------------------------------ tinyproxy, danted (SOCKS4)

# start_tinyproxy: tinyproxy in S on S_ADDR4 port TP_PORT, foreground,
# Basic authentication, CONNECT to the target's port only (or to
# TP_CONNECT_PORT only: 403 to the target).
start_tinyproxy() {
  local d=$WORK/tinyproxy
  mkdir -p "$d"
  cat >"$d/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $TP_PORT
Listen $S_ADDR4
Timeout 60
LogFile "$d/tinyproxy.log"
LogLevel Connect
PidFile "$d/tinyproxy.pid"
MaxClients 200
Allow 10.200.0.0/24
ConnectPort ${TP_CONNECT_PORT:-$TGT_PORT}
BasicAuth bob secret
DisableViaHeader Yes
EOF
  chown -R nobody:nogroup "$d"
  TP_LOG=$d/tinyproxy.log
  E2E_LOGS+=("$TP_LOG")
  ip netns exec "$NS_S" tinyproxy -d -c "$d/tinyproxy.conf" >>"$d/stderr.log" 2>&1 &
  e2e_wait_listen "$TP_PORT" "$S_ADDR4" || fail "tinyproxy does not listen on $S_ADDR4:$TP_PORT"
  log "tinyproxy listening on $S_ADDR4:$TP_PORT (BasicAuth)"
}

# start_dante4: danted in S on S_ADDR4 port DANTE4_PORT that passes SOCKS4
# requests (rule 1) and blocks any other (rule 2).
start_dante4() {
  local conf=$WORK/danted4.conf
  DANTE4_LOG=$WORK/danted4.log
  E2E_LOGS+=("$DANTE4_LOG")
  cat >"$conf" <<EOF
logoutput: $DANTE4_LOG
internal: $S_ADDR4 port = $DANTE4_PORT
external: $S_ADDR4
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 0/0 to: 0/0
  log: error
}
socks pass {
  from: 0/0 to: 0/0
  proxyprotocol: socks_v4
  command: connect
  log: connect error
}
socks block {
  from: 0/0 to: 0/0
  log: connect error
}
EOF
  ip netns exec "$NS_S" danted -f "$conf" -p "$WORK/danted4.pid" >>"$DANTE4_LOG" 2>&1 &
  e2e_wait_listen "$DANTE4_PORT" "$S_ADDR4" || fail "danted does not listen on $S_ADDR4:$DANTE4_PORT"
  log "danted (SOCKS4 only) listening on $S_ADDR4:$DANTE4_PORT"
}

case_upstream_proxies() {
  start_tinyproxy
  start_up "http://bob:secret@$S_ADDR4:$TP_PORT#tinyproxy"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  client --host "$TGT6" echo --count 5 >/dev/null
  wait_count "$TP_LOG" "Established connection to host \"$TGT4\"" 21 "IPv4 tunnels"
  log "tinyproxy: $(count_in "$TP_LOG" 'Established connection to host') tunnels"
  e2e_s5_log_clean
  stop_up

  start_dante4
  start_up "socks4a://s5user@$S_ADDR4:$DANTE4_PORT#dante4"
  e2e_wait_log "$S5LOG" "upstream dante4: SOCKS4 $S_ADDR4:$DANTE4_PORT" 5 >/dev/null
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  # Rule 1 passes SOCKS4 only; rule 2 blocks everything else.
  wait_count "$DANTE4_LOG" "pass\(1\): tcp/connect \[: $C_ADDR4\.[0-9]+ .* $TGT4\.$TGT_PORT" 21 "SOCKS4 CONNECTs"
  [[ $(count_in "$DANTE4_LOG" 'block\(') == 0 ]] || fail "danted blocked requests that were not SOCKS4"
  log "danted: $(count_in "$DANTE4_LOG" 'pass\(1\): tcp/connect \[') SOCKS4 CONNECTs"
  # The rules tell the versions apart: a SOCKS5 client is blocked (rule 2).
  if sclient --host "$TGT4" --socks5 "$S_ADDR4:$DANTE4_PORT" echo --count 1 --timeout 5 >/dev/null 2>&1; then
    fail "a SOCKS5 client got through the SOCKS4-only danted"
  fi
  wait_count "$DANTE4_LOG" 'block\(2\)' 1 "blocked SOCKS5 requests"
  client --host "$TGT6" expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" "no CONNECT to upstream dante4: a SOCKS4 upstream cannot carry an IPv6 destination" 5 \
    "the SOCKS4/IPv6 line" >/dev/null
  client --host "$TGT4" echo --count 3 >/dev/null
  stop_up

  # SOCKS4a (danted has none: it connects to 0.0.0.1): OpenSSH's ssh -D,
  # a mapped name carried as the name and resolved in S.
  start_sshd_socks "$SSH4_PORT"
  start_up "socks4://nobody@$S_ADDR4:$SSH4_PORT#ssh4"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  echo_by_name
  e2e_wait_log "$S5LOG" "100\.64\.[0-9.]+ stands for target\.test: sent by name" 5 >/dev/null
  stop_up
}

# ------------------------------------------------------------ a hostile HTTP proxy

start_httpproxy() {
  local ready=$WORK/httpproxy.ready
  HTTPPROXY_LOG=$WORK/httpproxy.log
  E2E_LOGS+=("$HTTPPROXY_LOG")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/httpproxy.py" --listen "$S_ADDR4" --listen "$S_ADDR6" \
    --port "$HTTPPROXY_PORT" --ready-file "$ready" >"$HTTPPROXY_LOG" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "httpproxy.py listening on $S_ADDR4 and [$S_ADDR6] port $HTTPPROXY_PORT"; return 0; }
    sleep 0.1
  done
  fail "httpproxy.py did not start"
}

# refused_with PORT WHY: a connection to the target's PORT is refused, and
# s5tund logged that session's failure with WHY once (a debug line).
refused_with() {
  local port=$1 why=$2 n
  client --host "$TGT4" --port "$port" expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" "debug +q[0-9]+ s[0-9]+ .*:$port: upstream hostile: $why" 5 "'$why' for port $port" >/dev/null
  n=$(count_in "$S5LOG" "debug +q[0-9]+ s[0-9]+ .*:$port: ")
  ((n == 1)) || fail "$n failure lines for port $port, expected one"
  client --host "$TGT4" echo --count 3 >/dev/null   # the daemon and its other sessions are fine
  log "port $port: refused, once: $why"
}

case_upstream_hostile() {
  start_httpproxy
  CFG_CONNECT_TIMEOUT=2 start_up "http://u:p@[$S_ADDR6]:$HTTPPROXY_PORT#hostile"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  refused_with 7101 "connection not established within connect-timeout"
  refused_with 7102 "HTTP CONNECT failed: response header longer than 16384 bytes"
  refused_with 7104 'proxy answered CONNECT with "HTTP/1.1 407 Proxy Authentication Required"'
  refused_with 7105 "proxy closed the connection during the HTTP CONNECT response"
  client --host "$TGT4" --port 7103 echo --count 5 >/dev/null
  client --host "$TGT6" echo --count 5 >/dev/null
  log "1xx before the 200: carried"
  local n
  n=$(count_in "$HTTPPROXY_LOG" 'CONNECT 10\.201\.0\.1:7[0-9]+ Basic dTpw ')
  ((n >= 10)) || fail "$n CONNECTs with Proxy-Authorization Basic dTpw (u:p) in httpproxy's log"
  n=$(count_in "$HTTPPROXY_LOG" "CONNECT \[$TGT6\]:$TGT_PORT ")
  ((n >= 1)) || fail "no CONNECT [$TGT6]:$TGT_PORT (IPv6 literal in brackets) in httpproxy's log"
  local active
  active=$(counter tcp_active)
  ((active == 0)) || fail "$active TCP sessions still open"
  stop_up
}

# ------------------------------------------------------------ broken upstreams

# start_hole: a black hole on S_ADDR4:HOLE_PORT: the kernel completes TCP
# connections into a backlog that is never accepted; nothing is ever said.
start_hole() {
  ip netns exec "$NS_S" timeout -k 5 300 "$PY" -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1024)
time.sleep(300)' "$S_ADDR4" "$HOLE_PORT" &
  e2e_wait_listen "$HOLE_PORT" "$S_ADDR4" || fail "the black hole does not listen on $S_ADDR4:$HOLE_PORT"
}

# state_lines NAME WHAT: s5tund's warn lines "upstream NAME is WHAT".
state_lines() { count_in "$S5LOG" "warn .*upstream $1 is $2"; }

case_upstream_health() {
  e2e_start_squid
  TP_CONNECT_PORT=443 start_tinyproxy
  start_hole
  # badpw: a user squid does not know (not alice with a wrong password:
  # squid keeps one credential state per user, and concurrent requests of
  # alice with both passwords may then get 407 with the right one too).
  local ini=$WORK/health.ini u
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  sed -i 's/^level = debug$/&\nsessions = true/' "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" \
    "[upstream hole]" "address = $S_ADDR4" "port = $HOLE_PORT" ${HOLE_HS-"handshake-timeout = 1"} "" \
    "[upstream tiny]" "type = http" "address = $S_ADDR4" "port = $TP_PORT" "username = bob" "password = secret" "" \
    "[upstream badpw]" "type = http" "address = $S_ADDR4" "port = $SQUID_PORT" "username = mallory" \
    "password = wrong" "" \
    "[upstream squid]" "type = http" "address = $S_ADDR4" "port = $SQUID_PORT" "username = $UP_USER" \
    "password = \"$UP_PASS\"" "" \
    "[balance]" "strategy = failover" "fail-after = 3" "check-interval = 1" "check-timeout = 2" "" \
    "[rules]" "rule = port:7001 -> tiny" "rule = port:7002 -> block" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"

  # Item: the outbound actually tried is named, not the first upstream.
  client --host "$TGT4" --port 7001 expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* -> $TGT4:7001 via $S_ADDR4:$TP_PORT \(tiny\) by rule " 5 \
    "a session line naming tiny for its 403" >/dev/null
  e2e_wait_log "$S5LOG" "debug .*s[0-9]+ .*: upstream tiny: proxy answered CONNECT with \"HTTP/1\.[01] 403 " 5 \
    "the failure line naming tiny" >/dev/null
  client --host "$TGT4" --port 7002 expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" "info .*session s[0-9]+ tcp .* -> $TGT4:7002 via block by rule " 5 \
    "a session line naming block" >/dev/null

  local tunnels
  tunnels=$(count_in "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $UP_USER ")
  client --host "$TGT4" concurrent 20 --rounds 1 --timeout 20 >/dev/null
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $UP_USER " $((tunnels + 20)) "tunnels by squid"
  for u in hole tiny badpw; do
    e2e_wait_log "$S5LOG" "warn .*upstream $u is down: " 5 "upstream $u marked down" >/dev/null
  done
  e2e_wait_log "$S5LOG" "warn .*upstream hole is down: .*\(timeout: no answer from the proxy within handshake-timeout" \
    1 "hole down for its handshake-timeout" >/dev/null
  e2e_wait_log "$S5LOG" "warn .*upstream tiny is down: .*\(refusing: " 1 "tiny down for refusing" >/dev/null
  # About five checks of each (check-interval 1): none may bring one back.
  local n403 n407
  n403=$(count_in "$TP_LOG" "Connect \(file descriptor") n407=$(count_in "$SQUID_LOG" "TCP_DENIED/407")
  sleep 5
  tunnels=$(count_in "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $UP_USER ")
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  wait_count "$SQUID_LOG" "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $UP_USER " $((tunnels + 10)) "tunnels by squid"
  for u in hole tiny badpw; do
    (($(state_lines $u down) == 1 && $(state_lines $u "up again") == 0)) ||
      fail "upstream $u: $(state_lines $u down) down and $(state_lines $u "up again") up-again lines, expected 1 and 0"
  done
  (($(state_lines squid down) == 0)) || fail "squid was marked down"
  # The checks did reach the broken ones (and were refused), sessions did not.
  (($(count_in "$TP_LOG" "Connect \(file descriptor") > n403 && $(count_in "$SQUID_LOG" "TCP_DENIED/407") > n407)) ||
    fail "no check reached tinyproxy or squid with the wrong password"
  (($(count_in "$S5LOG" "info .*session s[0-9]+ tcp .* -> $TGT4:$TGT_PORT via $S_ADDR4:$SQUID_PORT \(squid\) by rule default: ") >= 30)) ||
    fail "fewer than 30 session lines name squid"
  (($(up_count tiny failed_refusing) >= 3 && $(up_count badpw failed_auth) >= 3 && $(up_count hole failed_timeout) >= 3)) ||
    fail "--stats: tiny failed_refusing $(up_count tiny failed_refusing), badpw failed_auth $(up_count badpw failed_auth), hole failed_timeout $(up_count hole failed_timeout)"
  log "broken upstreams: down once each, no flapping; squid carried $(count_in "$SQUID_LOG" "TCP_TUNNEL/200 ")"
  stop_up
  health_general_failure
  health_udp
  health_digest
}

# A squid that asks for Digest: s5tund speaks Basic only, and says so,
# naming what the proxy offered (not "check username and password").
health_digest() {
  kill -TERM "$SQUID_PID" 2>/dev/null || true
  wait "$SQUID_PID" 2>/dev/null || true
  for _ in $(seq $((T_START * 10))); do [[ -z $(in_s ss -Hltn "sport = :$SQUID_PORT") ]] && break; sleep 0.1; done
  SQUID_AUTH=digest e2e_start_squid
  start_up "http://$UP_USER:$UP_PASS_URL@$S_ADDR4:$SQUID_PORT#squid"
  client --host "$TGT4" expect-refused --timeout 15 >/dev/null
  e2e_wait_log "$S5LOG" '407 Proxy Authentication Required" \(it offers Digest: not supported, s5tund speaks Basic authentication only\)' \
    5 "the 407 line naming Digest" >/dev/null
  wait_count "$SQUID_LOG" "TCP_DENIED/407 .* CONNECT $TGT4:$TGT_PORT" 1 "407 answers"
  log "Digest-only squid: refused, the log names what it offers"
  stop_up
}

# A SOCKS5 proxy that answers every CONNECT with general failure (0x01):
# microsocks as a user of its own, whose every connection to the target's
# networks a policy rule of S prohibits (EACCES, which microsocks reports
# as general failure), first
# in failover order; danted second. Three distinct destinations (IPv4,
# IPv6, a mapped name) each fail over to danted and mark the first down
# (refusing); then it takes no session. A repeat of the same destination's
# general failure would be the destination's (the unit tests cover it).
health_general_failure() {
  local ini=$WORK/walled.ini before
  e2e_start_dante
  local f # the target's addresses are S's own: the rule goes before the local table's
  for f in -4 -6; do
    ip "$f" -n "$NS_S" rule add pref 100 lookup local
    ip "$f" -n "$NS_S" rule del pref 0 lookup local
  done
  ip -n "$NS_S" rule add uidrange 4242-4242 to "${TGT4%.*}.0/24" prohibit pref 90
  ip -6 -n "$NS_S" rule add uidrange 4242-4242 to "${TGT6%::*}::/64" prohibit pref 90
  ip netns exec "$NS_S" setpriv --reuid=4242 --regid=4242 --clear-groups \
    microsocks -i "$S_ADDR4" -p "$WALLED_PORT" >>"$WORK/walled.log" 2>&1 &
  e2e_wait_listen "$WALLED_PORT" "$S_ADDR4" || fail "microsocks (walled) does not listen on $S_ADDR4:$WALLED_PORT"
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  sed -i 's/^level = debug$/&\nsessions = true/' "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL" "" \
    "[upstream walled]" "address = $S_ADDR4" "port = $WALLED_PORT" "" \
    "[upstream dante]" "address = $S_ADDR4" "port = $DANTE_PORT" "" \
    "[balance]" "strategy = failover" "fail-after = 3" "check-interval = 1" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  client --host "$TGT4" echo --count 1 >/dev/null
  client --host "$TGT6" echo --count 1 >/dev/null
  echo_by_name
  e2e_wait_log "$S5LOG" "warn .*upstream walled is down: .*\(refusing: .*general" 5 \
    "walled down for general failures from three destinations" >/dev/null
  before=$(count_in "$WORK/danted.log" "tcp/connect \[: ")
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  wait_count "$WORK/danted.log" "tcp/connect \[: " $((before + 10)) "connections by danted"
  (($(up_count walled failed_refusing) == 3)) ||
    fail "--stats: walled failed_refusing $(up_count walled failed_refusing), expected 3"
  wait_count "$S5LOG" "info .*session s[0-9]+ tcp .* via $S_ADDR4:$DANTE_PORT \(dante\): " 13 "session lines naming dante"
  log "general failure: walled down after 3 destinations, danted carried all 13"
  stop_up
}

# uecho_from PORT: one UDP echo to the target from C's source port PORT
# (the same client socket each time: the same association while it lives).
uecho_from() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[3])))
s.settimeout(1)
for _ in range(10):
    s.sendto(b"ping %s" % sys.argv[3].encode(), (sys.argv[1], int(sys.argv[2])))
    try:
        if s.recv(2048).endswith(sys.argv[3].encode()):
            sys.exit(0)
    except OSError:
        pass
sys.exit("no echo")' "$TGT4" "$UDP_ECHO_PORT" "$1" || fail "no UDP echo from source port $1"
}

# UDP follows health: danted d1 then d2 in failover order, both with UDP.
# An association goes to d1 (its log); d1 stops answering (SIGSTOP: its
# connections stay open), a fresh TCP set-up (no pool: a pooled one was
# greeted, so only connect-timeout bounds its CONNECT) marks it down (handshake-timeout,
# fail-after 1); the association's next datagram ends it (its upstream is
# down, counted) and a new one takes d2 (its log); new sources go to d2.
health_udp() {
  local ini=$WORK/udphealth.ini d1=$DANTE_PID u
  start_udp_echo
  DANTE_PORT=1090 DANTE_CONF=$WORK/danted2.conf DANTE_LOG=$WORK/danted2.log e2e_start_dante
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" \
    "[upstream d1]" "address = $S_ADDR4" "port = $DANTE_PORT" "handshake-timeout = 1" "pool = 0" "" \
    "[upstream d2]" "address = $S_ADDR4" "port = 1090" "" \
    "[balance]" "strategy = failover" "fail-after = 1" "check-interval = 1" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  e2e_wait_log "$S5LOG" "UDP: through upstreams d1, d2 " 5 >/dev/null
  uecho_from 45001
  wait_count "$WORK/danted.log" "udp/udpassociate \\[" 1 "UDP associations at d1"
  kill -STOP "$d1"
  client --host "$TGT4" echo --count 1 --timeout 15 >/dev/null # through d2, after d1's silence
  e2e_wait_log "$S5LOG" "warn .*upstream d1 is down: " 5 "d1 marked down" >/dev/null
  uecho_from 45001
  for u in 45002 45003; do uecho_from "$u"; done
  wait_count "$WORK/danted2.log" "udp/udpassociate \\[" 3 "UDP associations at d2"
  (($(count_in "$WORK/danted.log" "udp/udpassociate \\[") == 1)) || fail "d1 took another association while down"
  e2e_wait_log "$S5LOG" "debug .*u[0-9]+ .*: association ended: its upstream went down" 5 >/dev/null
  local down
  down=$("$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"]["udp_upstream_down"])')
  ((down == 1)) || fail "--stats: udp_upstream_down $down, expected 1"
  kill -CONT "$d1"
  log "UDP: d1's association ended when d1 went down, then d2 carried 3 new ones (its log)"
  # d1 back up, then gone: a new association fails over inside, unseen.
  e2e_wait_log "$S5LOG" "warn .*upstream d1 is up again" 10 "d1 up again" >/dev/null
  kill -TERM "$d1"
  wait "$d1" 2>/dev/null || true
  for _ in $(seq $((T_START * 10))); do [[ -z $(in_s ss -Hltn "sport = :$DANTE_PORT") ]] && break; sleep 0.1; done
  uecho_from 45004
  e2e_wait_log "$S5LOG" "debug .*u[0-9]+ upstream d1 failed \(.*\): trying d2" 5 "the association's failover" >/dev/null
  wait_count "$WORK/danted2.log" "udp/udpassociate \\[" 4 "UDP associations at d2"
  log "UDP: d1 gone, a new association moved to d2 before the client saw anything"
  stop_up
}

# up_count NAME FIELD: that upstream's field in --stats --json.
up_count() {
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
for u in json.load(sys.stdin)["upstreams"]:
    if u["name"] == sys.argv[1]:
        print(u[sys.argv[2]])' "$1" "$2"
}
