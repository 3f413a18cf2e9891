# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# The upstream rows (sourced by run.sh; run after rows.sh's, in the first
# mode of MODES, with one queue):
#   - squid (HTTP CONNECT with Basic authentication), the same squid over
#     TLS (its https_port, a test CA's certificate), run.sh's SOCKS5
#     server (--proxy: danted, or microsocks), ss-server (aes-128-gcm)
#     spoken to by s5tund itself, and the chain users run without it:
#     s5tund -> ss-local (SOCKS5, on the client's loopback) -> the same
#     ss-server (and a second pair, ss-server with chacha20-ietf-poly1305
#     spoken to and through ss-local: their CPU-s/GB rows only); side by
#     side, each as the one [upstream] of s5tund (the
#     proxy's CPU: ss-server, or ss-local and ss-server): time to first byte through a delay relay
#     RELAY_DELAY_MS away (no pool / pool / pool with optimistic), new connections per second, CPU-s/GB up and down (one
#     iperf3 stream each way, s5tund's tree and the proxy's). The relays of
#     this table charge a new connection its TCP handshake's round trip
#     (delayrelay.py --connect-round-trip), every column alike, so that a
#     row counts each round trip a far proxy costs: the connect, the
#     proxy's own handshake, the request (rows.sh's relays do not: its
#     figures stay comparable with earlier runs);
#   - failover: two microsocks upstreams (strategy failover, check-interval
#     1), process mode with two queues; ab (UP_AB_N requests, UP_AB_C at
#     once, each a new connection) and the first upstream killed
#     (SIGKILL) UP_KILL_AFTER seconds in: ab's failed requests, the
#     client's SYN retransmissions, the worst connect time, the sessions
#     open on the dead one when it died, the time until s5tund marked it
#     down and, after its restart, until it was up again (from s5tund's
#     log).
#   - rules: the SOCKS5 server as the upstream and [rules] with 100,000
#     names and 10,000 prefixes (none matching the target), against none:
#     new connections per second and s5tund's CPU per connection, each
#     twice in turn (without, with, without, with).
# Each row in a subshell with its directory under $OUT/raw (up-squid, up-squid-tls, up-ss, up-ss-chain,
# up-ss-chacha, up-ss-chacha-chain,
# up-socks5, up-failover, up-rules); report_rows.py upstreams renders them.

RELAY_SQUID_PORT=1093 # delay relay -> squid (1080-1099: reserved in S, run.sh)
RELAY_SQUID_TLS_PORT=1094 # delay relay -> squid's https_port
SQUID_TLS_PORT=1095       # squid's https_port
SS_PORT=1096              # ss-server
RELAY_SS_PORT=1097        # delay relay -> ss-server
SS_LOCAL_PORT=1098        # ss-local -> ss-server (client namespace, loopback)
SS_LOCAL_RELAY_PORT=1099  # ss-local -> the delay relay -> ss-server
RELAY_UP_PROXY_PORT=1089  # delay relay -> the SOCKS5 server (this table's: it charges the connect)
SS_METHOD=aes-128-gcm
SS_CHACHA_PORT=1086       # a second ss-server, chacha20-ietf-poly1305: CPU rows only
SS_LOCAL_CHACHA_PORT=1085 # ss-local -> it (client namespace, loopback)
SS_CHACHA=chacha20-ietf-poly1305
SS_PASS=bench-ss-password
UP_MS_A_PORT=1087     # the failover row's two microsocks (reserved in S too)
UP_MS_B_PORT=1088
UP_MS_A_BIND=10.200.0.11 # their outgoing addresses (S's lo): who carried what
UP_MS_B_BIND=10.200.0.12
if [[ $SHORT == 1 ]]; then
  UP_AB_N=${BENCH_AB_N:-3000} UP_AB_C=${BENCH_AB_C:-50} UP_KILL_AFTER=0.3
else
  UP_AB_N=${BENCH_AB_N:-20000} UP_AB_C=${BENCH_AB_C:-200} UP_KILL_AFTER=2
fi

# The TTFB variants: name and the upstream's extra lines.
UP_TTFB_VARIANTS=("nopool|pool = 0" "pool|pool = 4" "pool+optimistic|pool = 4\noptimistic = true")

# up_config FILE MODE QUEUES SECTION...: s5tund's file with these
# [upstream] sections (each a string of lines), a stats socket.
up_config() {
  local f=$1 mode=$2 q=$3 s
  shift 3
  printf '%s\n' "mode = $mode" "queues = $q" "[tun]" "name = $TUN" "mtu = $MTU" "ipv4 = $TUN_IPV4" \
    "ipv6 = $TUN_IPV6" "[stats]" "socket = $WORK/stats.sock" >"$f"
  for s; do printf '%b\n' "$s" >>"$f"; done
}

up_section() {   # up_section squid|dante|microsocks PORT EXTRA
  case $1 in
    squid) printf '%s' "[upstream squid]\ntype = http\naddress = $S_ADDR4\nport = $2\nusername = $SQUID_USER\npassword = \"$SQUID_PASS\"" ;;
    ss) printf '%s' "[upstream ss]\ntype = shadowsocks\naddress = $S_ADDR4\nport = $2\nmethod = $SS_METHOD\npassword = $SS_PASS" ;;
    ss-chacha) printf '%s' "[upstream ss]\ntype = shadowsocks\naddress = $S_ADDR4\nport = $2\nmethod = $SS_CHACHA\npassword = $SS_PASS" ;;
    ss-chain | ss-chacha-chain) printf '%s' "[upstream ss-local]\ntype = socks5\naddress = 127.0.0.1\nport = $2" ;;
    squid-tls) printf '%s' "[upstream squid]\ntype = http\naddress = $S_ADDR4\nport = $2\nusername = $SQUID_USER\npassword = \"$SQUID_PASS\"\ntls = true\ntls-ca-file = $WORK/tls/ca.pem\ntls-server-name = proxy.test" ;;
    dante|microsocks) printf '%s' "[upstream $1]\ntype = socks5\naddress = $S_ADDR4\nport = $2" ;;
  esac
  [[ -z $3 ]] || printf '\n%s' "$3"
}

# up_start FILE MODE QUEUES: s5tund with it, ready for traffic.
up_start() {
  e2e_start_s5tund -c "$1" 3>&-
  e2e_wait_device "$2" "$3"
  ip netns exec "$NS_C" "$CONNRATE" probe -a "$TGT4" -p "$RR_PORT" -w "$T_START" -t 3000 \
    >"$CASE_DIR/probe.out" 2>&1 || { meta setup "no exchange with the target: $(cat "$CASE_DIR/probe.out")"; exit 1; }
}

# up_tls_cert: a test CA and proxy.test's certificate from it, in $WORK/tls
# (ca.pem; proxy.pem, proxy.key).
up_tls_cert() {
  local d=$WORK/tls
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=s5tund bench CA" -days 2 -keyout "$d/ca.key" \
    -out "$d/ca.pem" 2>/dev/null || bench_die "openssl: the test CA"
  openssl req -new -newkey rsa:2048 -nodes -subj /CN=proxy.test -keyout "$d/proxy.key" -out "$d/proxy.csr" \
    2>/dev/null || bench_die "openssl: the proxy's request"
  printf 'subjectAltName = DNS:proxy.test\n' >"$d/ext"
  openssl x509 -req -in "$d/proxy.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile "$d/ext" -out "$d/proxy.pem" 2>/dev/null || bench_die "openssl: the proxy's certificate"
  chmod 644 "$d"/*
}

# up_ss_start: ss-server in S (SS_SERVER_PID) and two ss-locals in C, one to
# it and one to it through the delay relay (SS_LOCAL_PIDS); a second
# ss-server with chacha20 (SS_CHACHA_PID) and an ss-local to it
# (SS_LOCAL_CHACHA_PID).
up_ss_start() {
  ip netns exec "$NS_S" ss-server -s "$S_ADDR4" -p "$SS_PORT" -k "$SS_PASS" -m "$SS_METHOD" \
    >>"$OUT/raw/ss-server.log" 2>&1 &
  SS_SERVER_PID=$!
  ip netns exec "$NS_S" ss-server -s "$S_ADDR4" -p "$SS_CHACHA_PORT" -k "$SS_PASS" -m "$SS_CHACHA" \
    >>"$OUT/raw/ss-server.log" 2>&1 &
  SS_CHACHA_PID=$!
  ip netns exec "$NS_C" ss-local -s "$S_ADDR4" -p "$SS_CHACHA_PORT" -b 127.0.0.1 -l "$SS_LOCAL_CHACHA_PORT" \
    -k "$SS_PASS" -m "$SS_CHACHA" >>"$OUT/raw/ss-local.log" 2>&1 &
  SS_LOCAL_CHACHA_PID=$!
  e2e_wait_listen "$SS_CHACHA_PORT" "$S_ADDR4" || bench_die "ss-server does not listen on $S_ADDR4:$SS_CHACHA_PORT"
  ip netns exec "$NS_C" ss-local -s "$S_ADDR4" -p "$SS_PORT" -b 127.0.0.1 -l "$SS_LOCAL_PORT" -k "$SS_PASS" \
    -m "$SS_METHOD" >>"$OUT/raw/ss-local.log" 2>&1 &
  SS_LOCAL_PIDS=$!
  ip netns exec "$NS_C" ss-local -s "$S_ADDR4" -p "$RELAY_SS_PORT" -b 127.0.0.1 -l "$SS_LOCAL_RELAY_PORT" \
    -k "$SS_PASS" -m "$SS_METHOD" >>"$OUT/raw/ss-local.log" 2>&1 &
  SS_LOCAL_PIDS+=" $!"
  e2e_wait_listen "$SS_PORT" "$S_ADDR4" || bench_die "ss-server does not listen on $S_ADDR4:$SS_PORT"
  local p
  for p in "$SS_LOCAL_PORT" "$SS_LOCAL_RELAY_PORT" "$SS_LOCAL_CHACHA_PORT"; do
    for _ in $(seq $((T_START * 10))); do in_c ss -Hltn "sport = :$p" | grep -q . && break; sleep 0.1; done
    in_c ss -Hltn "sport = :$p" | grep -q . || bench_die "ss-local does not listen on 127.0.0.1:$p"
  done
}

# One proxy: the rows of rows_upstream_proxy's comment.
rows_upstream_proxy() {
  local p=$1 port relay cfg=$WORK/up-$1.ini v name extra
  PROXY_PID=$2 # measure_end's proxy CPU: this proxy's
  CLIENT_PIDS=${3:-} # and of them those on the client's host (the chain's ss-local)
  case $p in
    squid) port=$SQUID_PORT relay=$RELAY_SQUID_PORT ;;
    squid-tls) port=$SQUID_TLS_PORT relay=$RELAY_SQUID_TLS_PORT ;;
    ss) port=$SS_PORT relay=$RELAY_SS_PORT ;;
    ss-chain) port=$SS_LOCAL_PORT relay=$SS_LOCAL_RELAY_PORT ;;
    ss-chacha) port=$SS_CHACHA_PORT relay= ;;
    ss-chacha-chain) port=$SS_LOCAL_CHACHA_PORT relay= ;;
    *) port=$PROXY_PORT relay=$RELAY_UP_PROXY_PORT ;;
  esac
  trap 'case_exit' EXIT
  meta kind tunnel
  meta proxy "$p"
  meta mode "$UP_MODE"
  meta queues 1
  up_config "$cfg" "$UP_MODE" 1 "$(up_section "$p" "$port" "")"
  up_start "$cfg" "$UP_MODE" 1
  meta setup ok
  iperf_run up1 1 up
  iperf_run down1 1 down
  local variants=("${UP_TTFB_VARIANTS[@]}")
  if [[ -n $relay ]]; then
    connrate_timed rr rr "$RR_PORT" "$CONC" "connections through $p"
  else # a second method, no relay: its CPU per GB only
    meta light 1
    variants=()
  fi
  e2e_s5_alive || { meta died "during the $p rows"; exit 1; }
  rows_stop
  for v in "${variants[@]}"; do
    name=${v%%|*} extra=${v#*|}
    up_config "$cfg" "$UP_MODE" 1 "$(up_section "$p" "$relay" "$extra")"
    up_start "$cfg" "$UP_MODE" 1
    sleep 0.5 # a moment for a pool to fill
    rows_ttfb "$name" "$TGT4" "$RR_PORT"
    rows_stop
  done
  trap - EXIT
}

# up_ms_start a|b: that microsocks, its pid in UP_MS_PID_a / _b.
up_ms_start() {
  local port=$UP_MS_A_PORT bind=$UP_MS_A_BIND
  [[ $1 == b ]] && port=$UP_MS_B_PORT bind=$UP_MS_B_BIND
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$port" -b "$bind" >>"$CASE_DIR/microsocks.$1.log" 2>&1 &
  printf -v "UP_MS_PID_$1" '%s' "$!"
  e2e_wait_listen "$port" "$S_ADDR4" || { meta setup "microsocks $1 does not listen on $port"; exit 1; }
}

# log_time ERE [SKIP]: the time (epoch seconds) of s5tund's first log line
# matching after the first SKIP ones, bounded wait; empty when none came.
log_time() {
  local line
  for _ in $(seq $((T_START * 10))); do
    line=$(grep -E -- "$1" "$S5LOG" 2>/dev/null | sed -n "$((${2:-0} + 1))p")
    [[ -n $line ]] && { date -d "${line%% *}" +%s.%N; return 0; }
    sleep 0.1
  done
}

syn_retrans() { in_c nstat -az TcpExtTCPSynRetrans | awk '$1 == "TcpExtTCPSynRetrans" {print $2}'; }

rows_upstream_failover() {
  local cfg=$WORK/up-failover.ini a b s0 t_kill t_down t_start t_up open_a abpid rc=0 n_up
  trap 'case_exit; kill -KILL "${UP_MS_PID_a:-}" "${UP_MS_PID_b:-}" 2>/dev/null || true' EXIT
  meta kind tunnel
  meta mode process
  meta queues 2
  ip -n "$NS_S" addr replace "$UP_MS_A_BIND/32" dev lo
  ip -n "$NS_S" addr replace "$UP_MS_B_BIND/32" dev lo
  up_ms_start a
  up_ms_start b
  a="[upstream a]\naddress = $S_ADDR4\nport = $UP_MS_A_PORT"
  b="[upstream b]\naddress = $S_ADDR4\nport = $UP_MS_B_PORT"
  up_config "$cfg" process 2 "$a" "$b" "[balance]\nstrategy = failover\ncheck-interval = 1\nfail-after = 3"
  up_start "$cfg" process 2
  meta setup ok
  meta ab_n "$UP_AB_N"
  meta ab_c "$UP_AB_C"
  s0=$(syn_retrans)
  ip netns exec "$NS_C" ab -q -r -s 30 -n "$UP_AB_N" -c "$UP_AB_C" "http://$TGT4:$RR_PORT/" \
    >"$CASE_DIR/ab.out" 2>&1 &
  abpid=$!
  sleep "$UP_KILL_AFTER"
  open_a=$("$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
print(sum(u["open"] for u in json.load(sys.stdin)["upstreams"] if u["name"] == "a"))' 2>/dev/null || echo "?")
  t_kill=$EPOCHREALTIME
  kill -KILL "$UP_MS_PID_a"
  wait "$UP_MS_PID_a" 2>/dev/null || true
  meta open_on_killed "$open_a"
  wait "$abpid" || rc=$?
  meta ab_rc "$rc"
  meta syn_retrans $(($(syn_retrans) - s0))
  say "failover: ab rc=$rc; $(grep -E '^(Complete|Failed) requests' "$CASE_DIR/ab.out" | tr -s ' ' | tr '\n' ' ')"
  t_down=$(log_time "upstream a is down")
  [[ -n $t_down ]] && meta down_after_s "$(awk -v a="$t_kill" -v b="$t_down" 'BEGIN {printf "%.3f", b - a}')"
  n_up=$(grep -cE "upstream a is up again" "$S5LOG" || true)
  meta up_while_dead "$n_up"
  t_start=$EPOCHREALTIME
  up_ms_start a
  t_up=$(log_time "upstream a is up again" "$n_up")
  [[ -n $t_up ]] && meta up_after_s "$(awk -v a="$t_start" -v b="$t_up" 'BEGIN {printf "%.3f", b - a}')"
  say "failover: down after $(sed -n 's/^down_after_s=//p' "$CASE_DIR/meta")s, up again after $(sed -n 's/^up_after_s=//p' "$CASE_DIR/meta")s"
  e2e_s5_alive || { meta died "during the failover row"; exit 1; }
  case_exit
  kill -KILL "$UP_MS_PID_a" "$UP_MS_PID_b" 2>/dev/null || true
  trap - EXIT
}

# The rules row: the lists' cost to new connections.
rows_upstream_rules() {
  local cfg=$WORK/up-rules.ini v
  trap 'case_exit' EXIT
  meta kind tunnel
  meta mode "$UP_MODE"
  meta queues 1
  seq 0 99999 | sed 's/^/n/; s/$/.list.test/' >"$WORK/names.txt"
  for v in $(seq 0 9999); do echo "$((11 + v / 4096)).$(((v / 16) % 256)).$(((v % 16) * 16)).0/$((20 + v % 5))"; done \
    >"$WORK/prefixes.txt"
  for v in none lists none2 lists2; do
    [[ $SHORT == 1 && $v == *2 ]] && continue
    if [[ $v == none* ]]; then
      up_config "$cfg" "$UP_MODE" 1 "$(up_section "$PROXY" "$PROXY_PORT" "")"
    else
      up_config "$cfg" "$UP_MODE" 1 "$(up_section "$PROXY" "$PROXY_PORT" "")" \
        "[rules]\ndefault = $PROXY\nrules-file = $WORK/names.txt -> block\nrules-file = $WORK/prefixes.txt -> block"
    fi
    up_start "$cfg" "$UP_MODE" 1
    meta setup ok
    connrate_timed "rr_$v" rr "$RR_PORT" "$CONC" "connections, rules: $v"
    e2e_s5_alive || { meta died "during the rules row"; exit 1; }
    rows_stop
  done
  trap - EXIT
}

# All upstream rows, each in a subshell (rows_sub: a failure ends that one only).
run_upstream_rows() {
  local name
  UP_MODE=${MODES%% *}
  up_tls_cert
  SQUID_EXTRA="https_port $S_ADDR4:$SQUID_TLS_PORT tls-cert=$WORK/tls/proxy.pem tls-key=$WORK/tls/proxy.key" \
    e2e_start_squid >>"$OUT/raw/squid.log" 2>&1
  rows_relay_start "$RELAY_SQUID_PORT" "$S_ADDR4:$SQUID_PORT" --connect-round-trip
  rows_relay_start "$RELAY_SQUID_TLS_PORT" "$S_ADDR4:$SQUID_TLS_PORT" --connect-round-trip
  rows_relay_start "$RELAY_UP_PROXY_PORT" "$S_ADDR4:$PROXY_PORT" --connect-round-trip
  rows_relay_start "$RELAY_SS_PORT" "$S_ADDR4:$SS_PORT" --connect-round-trip # ss-local's too
  up_ss_start
  for name in squid squid-tls socks5 ss ss-chain ss-chacha ss-chacha-chain failover rules; do
    bench_log "upstream rows: $name"
    set -- "upstream rows $name" "$OUT/raw/up-$name" "$OUT/raw/up-$name.log"
    case $name in
      squid | squid-tls) rows_sub "$@" rows_upstream_proxy "$name" "$SQUID_PID" ;;
      ss) rows_sub "$@" rows_upstream_proxy ss "$SS_SERVER_PID" ;;
      ss-chain) rows_sub "$@" rows_upstream_proxy ss-chain "$SS_SERVER_PID $SS_LOCAL_PIDS" "$SS_LOCAL_PIDS" ;;
      ss-chacha) rows_sub "$@" rows_upstream_proxy ss-chacha "$SS_CHACHA_PID" ;;
      ss-chacha-chain)
        rows_sub "$@" rows_upstream_proxy ss-chacha-chain "$SS_CHACHA_PID $SS_LOCAL_CHACHA_PID" "$SS_LOCAL_CHACHA_PID"
        ;;
      socks5) rows_sub "$@" rows_upstream_proxy "$PROXY" "$PROXY_PID" ;;
      failover) rows_sub "$@" rows_upstream_failover ;;
      rules) rows_sub "$@" rows_upstream_rules ;;
    esac
  done
  kill -TERM "$SQUID_PID" $SS_SERVER_PID $SS_LOCAL_PIDS $SS_CHACHA_PID $SS_LOCAL_CHACHA_PID 2>/dev/null || true
  wait "$SQUID_PID" $SS_SERVER_PID $SS_LOCAL_PIDS $SS_CHACHA_PID $SS_LOCAL_CHACHA_PID 2>/dev/null || true
}
