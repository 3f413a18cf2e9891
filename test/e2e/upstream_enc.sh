# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# Encrypted upstreams under load and stalled (run.sh runs it; ctest
# e2e.upstream_enc_failover.thread.q2): the set-ups of upstream_tls.sh (the
# test CA, stunnel4 in front of danted) and upstream_ss.sh (ss-server -v),
# once, in thread mode (e2e.upstream_tls and upstream_ss run in process
# mode), so that TLS and Shadowsocks run in both modes and under ASan.
#
#   upstream_enc_failover
#       Two TLS upstreams (two stunnel4 processes in front of danted, SOCKS5
#       inside TLS) and two ss-servers, each pair a [group] with strategy
#       failover. ab -c 50 to a target through each group; the first of
#       each pair is killed (SIGKILL) in the middle. No new flow fails (ab:
#       no Connect error; those relayed through the killed one are cut:
#       Length, Receive, Exceptions, each at most the 50 in flight), every
#       session ends (tcp_active 0: none hangs), the first is marked down,
#       and new flows land on the second by its own log (the CONNECTs danted
#       took from that stunnel's connections; ss-server's "connect to"),
#       none on the second before the kill.
#       Then, with one queue (every session on the same worker): a TLS
#       proxy that completes the handshake and sends half a record, and a
#       Shadowsocks server that sends its salt and half a chunk, then
#       nothing, never closing (stallproxy.py). Each costs its session
#       alone, with one log line (the worker's limiter may fold the second
#       into its summary): the TLS one (its SOCKS5 greeting unanswered) hits
#       handshake-timeout, which with no other upstream to try waits on, and
#       ends by connect-timeout (its client's SYN refused); the Shadowsocks
#       one, with no reply to wait for, is in the relay and ends by
#       tcp-idle-timeout (its client reset). Echoes through the good
#       upstreams on the same worker keep flowing meanwhile.

# shellcheck source=upstream_tls.sh
source "$HERE/upstream_tls.sh"
# shellcheck source=upstream_ss.sh
source "$HERE/upstream_ss.sh"

ENC_TLS_A=1447
ENC_TLS_B=1448
ENC_SS_A=8396
ENC_SS_B=8397
ENC_TLS_STALL=1449
ENC_SS_STALL=8398
ENC_N=500 # ab requests per group, 50 at once

setup_upstream_enc() { setup_upstream_tls; }

# enc_stunnel NAME PORT: a stunnel4 process of its own (killed alone) in
# front of danted, its log NAME.log.
enc_stunnel() {
  cat >"$WORK/$1.conf" <<EOF
foreground = yes
pid =
output = $WORK/$1.log
debug = 5
[$1]
accept = $S_ADDR4:$2
connect = $S_ADDR4:$DANTE_PORT
cert = $WORK/pki/good.pem
key = $WORK/pki/good.key
EOF
  E2E_LOGS+=("$WORK/$1.log")
  ip netns exec "$NS_S" stunnel4 "$WORK/$1.conf" >/dev/null 2>&1 &
  ENC_PID=$!
  e2e_wait_listen "$2" "$S_ADDR4" || fail "stunnel $1 does not listen on $S_ADDR4:$2"
}

# enc_flows NAME: the CONNECTs danted took from stunnel NAME (its own log
# names the source port of each connection to danted; the pool's warm
# connections are accepted by stunnel and greeted, but make no CONNECT).
enc_flows() {
  "$PY" - "$WORK/$1.log" "$WORK/danted.log" <<'PY'
import re, sys
ports = set(re.findall(r"connected remote server from [0-9.]+:(\d+)", open(sys.argv[1]).read()))
print(sum(m.group(1) in ports for m in re.finditer(r"tcp/connect \[: [0-9.]+\.(\d+) ", open(sys.argv[2]).read())))
PY
}
# How many flows ss-server NAME relayed.
enc_ss_conns() { grep -c "connect to" "$WORK/$1.log" || true; }

# enc_ab HOST OUT PATH: ab -c 50 -n ENC_N through the tunnel for /PATH (the
# target logs it: each group's progress), in the background (pid in ENC_AB).
enc_ab() {
  ip netns exec "$NS_C" timeout -k 5 60 ab -r -q -s 20 -n $ENC_N -c 50 "http://$1:$TGT_PORT/$3" >"$2" 2>&1 &
  ENC_AB=$!
}

# enc_ab_ok OUT WHAT: every request completed; none failed to connect (a
# new flow that found no upstream: its SYN reset). Those relayed through
# the killed one when it died are cut (ab: Length, or Receive and
# Exceptions for a reset; ab may count one request in two of them), each
# at most the 50 in flight. Prints the cut count.
enc_ab_ok() {
  local out kinds kc kr kl ke
  out=$(cat "$1")
  kinds=$(sed -nE 's/.*\(Connect: ([0-9]+), Receive: ([0-9]+), Length: ([0-9]+), Exceptions: ([0-9]+)\)/\1 \2 \3 \4/p' <<<"$out")
  read -r kc kr kl ke <<<"${kinds:-0 0 0 0}"
  [[ $(awk '/^Complete requests:/ { print $3 }' <<<"$out") == "$ENC_N" ]] && ((kc == 0 && kr <= 50 && kl <= 50 && ke <= 50)) ||
    fail "ab through $2 with its first upstream killed: $(grep -E '^(Complete|Failed) requests|\(Connect' <<<"$out" | tr '\n' ' ')"
  echo "$((kr + kl + ke))"
}

count_in() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

enc_total() { # enc_total KEY: --stats --json's totals[KEY]
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

case_upstream_enc_failover() {
  make_pki
  e2e_start_dante
  enc_stunnel tlsa $ENC_TLS_A
  local tlsa=$ENC_PID
  enc_stunnel tlsb $ENC_TLS_B
  ss_server ssa "$S_ADDR4" $ENC_SS_A aes-128-gcm
  local ssa=$SS_PID
  ss_server ssb "$S_ADDR4" $ENC_SS_B aes-128-gcm

  local ini=$WORK/enc.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES e2e_write_config "$ini"
  {
    printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[rules]" "default = gtls" \
      "rule = dst:$TGT6/128 -> gss" "" "[group gtls]" "members = ta, tb" "strategy = failover" "" \
      "[group gss]" "members = sa, sb" "strategy = failover"
    # stunnel's handshakes under ab on a loaded 2-core machine: slow, not failed
    tls_up ta socks5 $ENC_TLS_A "handshake-timeout=10"
    tls_up tb socks5 $ENC_TLS_B "handshake-timeout=10"
    ss_up sa "$S_ADDR4" $ENC_SS_A aes-128-gcm
    ss_up sb "$S_ADDR4" $ENC_SS_B aes-128-gcm
  } >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  client --host "$TGT6" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  local a0 s0
  a0=$(enc_flows tlsa) s0=$(enc_ss_conns ssa)
  ((a0 >= 1 && s0 >= 1)) || fail "before the kill: tlsa carried $a0, ssa relayed $s0 (want the firsts)"
  (($(enc_flows tlsb) == 0 && $(enc_ss_conns ssb) == 0)) ||
    fail "before the kill the seconds carried flows: tlsb $(enc_flows tlsb), ssb $(enc_ss_conns ssb)"

  # Both groups under ab -c 50; each first killed once 150 of its group's
  # requests went through (each on its own: one group may be the faster).
  local ab4=$WORK/ab4.out ab6=$WORK/ab6.out p4 p6 k4=0 k6=0
  enc_ab "$TGT4" "$ab4" tls
  p4=$ENC_AB
  enc_ab "[$TGT6]" "$ab6" ss
  p6=$ENC_AB
  for _ in $(seq $((T_START * 40))); do
    ((k4 == 0 && $(count_in "$WORK/target.log" " http /tls") >= 150)) && kill -KILL "$tlsa" && k4=1
    ((k6 == 0 && $(count_in "$WORK/target.log" " http /ss") >= 150)) && kill -KILL "$ssa" && k6=1
    ((k4 && k6)) && break
    sleep 0.02
  done
  ((k4 && k6)) || fail "ab did not reach 150 requests in each group: tls $(count_in "$WORK/target.log" " http /tls"), ss $(count_in "$WORK/target.log" " http /ss")"
  log "killed stunnel tlsa (pid $tlsa) and ss-server ssa (pid $ssa) under ab -c 50 through each"
  local b4 b6 cut4 cut6
  b4=$(enc_flows tlsb) b6=$(enc_ss_conns ssb)
  wait "$p4" || true
  wait "$p6" || true
  cut4=$(enc_ab_ok "$ab4" "TLS (gtls)")
  cut6=$(enc_ab_ok "$ab6" "Shadowsocks (gss)")
  # No flow hangs: every session ends once ab is done.
  local act=-1
  for _ in $(seq $((T_START * 10))); do
    act=$(enc_total tcp_active)
    ((act == 0)) && break
    sleep 0.1
  done
  ((act == 0)) || fail "$act TCP sessions still open after ab ended: a flow hangs"
  e2e_wait_log "$S5LOG" "warn .*upstream ta is down: " 5 "ta marked down" >/dev/null
  e2e_wait_log "$S5LOG" "warn .*upstream sa is down: " 5 "sa marked down" >/dev/null
  # New flows land on the seconds, by their own logs.
  b4=$(enc_flows tlsb) b6=$(enc_ss_conns ssb)
  client --host "$TGT4" concurrent 20 --rounds 1 >/dev/null
  client --host "$TGT6" concurrent 20 --rounds 1 >/dev/null
  local n4 n6
  n4=$(($(enc_flows tlsb) - b4)) n6=$(($(enc_ss_conns ssb) - b6))
  ((n4 >= 20 && n6 >= 20)) || fail "after the kill: tlsb carried $n4, ssb relayed $n6 of 20 new flows each"
  log "killed under load: TLS $ENC_N of $ENC_N complete ($cut4 cut in flight), Shadowsocks $ENC_N of $ENC_N ($cut6 cut); tcp_active 0; the next 20 each through tlsb and ssb (their logs)"
  local warns
  # A handshake cut by the kill; a Shadowsocks server that hangs up says
  # nothing (killed, a wrong password, the target refused it under load).
  warns=$(e2e_s5_warns | grep -vE "warn .*upstream (ta|sa) is down|TLS handshake with upstream ta failed|upstream s[ab]: Shadowsocks server hung up with no reply" || true)
  [[ -z $warns ]] || fail "warnings beyond the killed upstreams' state: $(oneline "$warns")"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited with status $S5RC"
  enc_stall
}

# The stalls, with one queue: every session on the same worker.
enc_stall() {
  local ready
  E2E_LOGS+=("$WORK/stall-tls.log" "$WORK/stall-ss.log")
  in_s "$PY" "$E2E_DIR/stallproxy.py" tls --listen "$S_ADDR4" --port $ENC_TLS_STALL --cert "$WORK/pki/good.pem" \
    --key "$WORK/pki/good.key" --ready-file "$WORK/stall-tls.ready" >"$WORK/stall-tls.log" 2>&1 &
  in_s "$PY" "$E2E_DIR/stallproxy.py" ss --listen "$S_ADDR4" --port $ENC_SS_STALL --salt 16 \
    --ready-file "$WORK/stall-ss.ready" >"$WORK/stall-ss.log" 2>&1 &
  for ready in stall-tls stall-ss; do
    for _ in $(seq $((T_START * 10))); do [[ -s $WORK/$ready.ready ]] && break; sleep 0.1; done
    [[ -s $WORK/$ready.ready ]] || fail "stallproxy.py ($ready) did not start"
  done
  local ini=$WORK/stall.ini
  CFG_MODE=$MODE CFG_QUEUES=1 CFG_IDLE_TIMEOUT=4 CFG_CONNECT_TIMEOUT=6 CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  {
    printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[rules]" "default = tb" \
      "rule = dst:$TGT6/128 -> sb" "rule = dst:$TGT4/32 port:$SS_PORT2 -> tstall" \
      "rule = dst:$TGT4/32 port:$SS_PORT3 -> sstall"
    tls_up tb socks5 $ENC_TLS_B
    ss_up sb "$S_ADDR4" $ENC_SS_B aes-128-gcm
    tls_up tstall socks5 $ENC_TLS_STALL "handshake-timeout=3" "pool=0"
    ss_up sstall "$S_ADDR4" $ENC_SS_STALL aes-128-gcm
    echo "pool = 0"
  } >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" 1
  client --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
  # Two stalled sessions (their clients wait up to 15 s), echoes meanwhile.
  local c1 c2 t0 n=0
  CLIENT_T=20 client --host "$TGT4" --port $SS_PORT2 --timeout 15 echo --count 1 >"$WORK/stall-c1.out" 2>&1 &
  c1=$!
  CLIENT_T=20 client --host "$TGT4" --port $SS_PORT3 --timeout 15 echo --count 1 >"$WORK/stall-c2.out" 2>&1 &
  c2=$!
  e2e_wait_log "$WORK/stall-tls.log" "CONN [0-9]+ stalled" 5 "the TLS stall" >/dev/null
  e2e_wait_log "$WORK/stall-ss.log" "CONN [0-9]+ stalled" 5 "the Shadowsocks stall" >/dev/null
  t0=$SECONDS
  while e2e_pid_running "$c1" || e2e_pid_running "$c2"; do
    client --host "$TGT4" echo --count 2 --timeout 5 >/dev/null || fail "an echo through tb failed during the stalls"
    client --host "$TGT6" echo --count 2 --timeout 5 >/dev/null || fail "an echo through sb failed during the stalls"
    n=$((n + 1))
    ((SECONDS - t0 < 20)) || fail "the stalled sessions' clients still wait after 20 s"
  done
  wait "$c1" || true
  wait "$c2" || true
  ((n >= 2)) || fail "only $n rounds of echoes during the stalls"
  local out1 out2
  out1=$(cat "$WORK/stall-c1.out") out2=$(cat "$WORK/stall-c2.out")
  [[ $out1 == *ConnectionRefusedError* ]] || fail "the TLS stall's client: $(oneline "$out1")" # its SYN never answered
  [[ $out2 == *ConnectionResetError* ]] || fail "the Shadowsocks stall's client: $(oneline "$out2")"
  # One line each (the worker's failure limiter: the first its own, the next
  # in its summary of the 10 s); the TLS one ended by connect-timeout after
  # its handshake-timeout found no other upstream to try, the Shadowsocks
  # one by the relay's idle timeout.
  local st ss_ l1 l2
  st=$(grep -oE "q0 s[0-9]+ new [0-9.:]+ -> $TGT4:$SS_PORT2\$" "$S5LOG" | awk '{ print $2 }')
  ss_=$(grep -oE "q0 s[0-9]+ new [0-9.:]+ -> $TGT4:$SS_PORT3\$" "$S5LOG" | awk '{ print $2 }')
  [[ -n $st && -n $ss_ ]] || fail "no session ids of the stalls ('$st', '$ss_')"
  grep -qE "debug q0 $st upstream tstall: no answer from the proxy within handshake-timeout \(3 s\); no other upstream to try, waiting on" "$S5LOG" ||
    fail "$st: no handshake-timeout"
  for _ in $(seq 150); do
    l1=$(grep -E "^[0-9T:.-]+ (info|warn) .*(q0 $st |latest: $st )" "$S5LOG" || true)
    l2=$(grep -E "^[0-9T:.-]+ (info|warn) .*(q0 $ss_ |latest: $ss_ )" "$S5LOG" || true)
    [[ -n $l1 && -n $l2 ]] && break
    sleep 0.1
  done
  [[ $(grep -c . <<<"$l1") == 1 && $l1 == *"$st 198.18.0.1:"*"-> $TGT4:$SS_PORT2: upstream tstall: no answer from the proxy within connect-timeout"* ]] ||
    fail "the TLS stall ($st): want one line of its connect-timeout: $(oneline "$l1")"
  [[ $(grep -c . <<<"$l2") == 1 && $l2 == *"$ss_ 198.18.0.1:"*"-> $TGT4:$SS_PORT3: idle timeout"* ]] ||
    fail "the Shadowsocks stall ($ss_): want one line of its idle timeout: $(oneline "$l2")"
  local warns
  warns=$(e2e_s5_warns | grep -vF "$l1" | grep -vF "$l2" || true)
  [[ -z $warns ]] || fail "other warnings: $(oneline "$warns")"
  log "TLS stalled after the handshake ($st): $(oneline "$l1")"
  log "Shadowsocks stalled in a chunk ($ss_): $(oneline "$l2")"
  log "$n rounds of echoes through tb and sb on the same worker meanwhile"
  # Their sessions ended: s5tund holds nothing of them (a pump let go
  # closes; it once waited for the stalled proxy's end, for good).
  local held
  for _ in $(seq 50); do
    held=$(in_c ss -Htnp state all "( dport = :$ENC_TLS_STALL or dport = :$ENC_SS_STALL )")
    held=$(grep -F 's5tund' <<<"$held" || true)
    [[ -z $held ]] && break
    sleep 0.1
  done
  [[ -z $held ]] || fail "s5tund still holds sockets to the stalled servers: $(oneline "$held")"
  e2e_stop_s5tund
}
