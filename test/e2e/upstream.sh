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

TP_PORT=8888
HTTPPROXY_PORT=1084
DANTE4_PORT=1085
SSH4_PORT=1086
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
  e2e_wait_log "$S5LOG" "UDP: through upstream dante" 5 >/dev/null
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
# Basic authentication, CONNECT to the target's port only.
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
ConnectPort $TGT_PORT
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
  e2e_wait_log "$S5LOG" "debug +q[0-9]+ s[0-9]+ .*:$port: $why" 5 "'$why' for port $port" >/dev/null
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
