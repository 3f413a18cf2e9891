# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# The warm pool of proxy connections ([socks5] pool) and optimistic data,
# end to end (run.sh runs them; ctest e2e.CASE.MODE.qN).
#
# CASE:
#   pool_ttfb      danted behind the delay relay (delayrelay.py, 25 ms each
#                  way): the test measures the relay's round trip (SOCKS5
#                  greetings through it), then time to the first byte of an
#                  echo through the tunnel: with pool = 0 more than 2 round
#                  trips + 10 ms (greeting, CONNECT, data: the check can
#                  fail); with the pool warm at most that (CONNECT, data),
#                  and more than 1 round trip + 10 ms; with the pool and
#                  [socks5] optimistic at most 1 round trip + 10 ms (the
#                  data right behind the CONNECT). The fastest of 7 (load
#                  only adds time), each of the 7 a pool hit
#   optimistic_refused  [socks5] optimistic, with and without the pool: a
#                  CONNECT danted refuses, a round trip away, resets the
#                  client after its bytes reached the proxy
#   pool_idle      pooled connections the proxy closed while idle are never
#                  handed out: microsocks restarted (its connections end
#                  with a FIN), then danted's server side of them killed
#                  (ss -K: a RST); each time at once 50 connections, all at
#                  their first try
#   pool_age       pooled connections are recycled by age (with
#                  S5TUND_POOL_SHORT_AGE=1: 1-1.5 s instead of 20-25 s)
#                  through microsocks, which never closes an idle one: the
#                  pool is replaced twice over (pool_recycled), the proxy
#                  holds no more than the pool's size, nothing failed;
#                  without sessions (5 s instead of 5 minutes) it is not
#                  refilled and the proxy is left with no connection; the
#                  next sessions fill it again, 20 at their first try
#   pool_backoff   no proxy yet: the warm-ups fail and the waits between
#                  them double (their debug lines, up to one of 2 s or
#                  more), sessions are refused; the proxy comes up: the
#                  pool fills at its next try and carries connections
#   pool_refused   a CONNECT through the pool to a closed port: the client
#                  is refused (RST), pool_hits counted, the daemon lives on
#   pool_servers   OpenSSH's ssh -D, danted, and microsocks with
#                  username/password each carry 20 connections through the
#                  pool (pool_hits, no failure), ssh -D and danted with
#                  [socks5] optimistic too; a mapped-name CONNECT (the
#                  mapped resolver's address) through it too; a reload to
#                  another proxy flushes the pool

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

RELAY_PORT=1090
DELAY_MS=25
POOL=4

setup_pool() {
  udp_install_exit   # dnslib.sh: /etc/netns/S goes on exit too
}

# start_pool PROXY_ADDR PROXY_PORT POOL [EXTRA-INI [OPTIMISTIC]]: s5tund
# with a stats socket, the pool of that size, log level debug.
start_pool() {
  CFG_POOL=$3 CFG_OPTIMISTIC=${5:-} start_s5 "$1" "$2" "[stats]
socket = $WORK/stats.sock
${4:-}"
}

# reload_proxy PORT [USER PASS]: the proxy's port (and login) changed in
# the configuration file, then SIGHUP (a live reload).
reload_proxy() {
  local login=""
  [[ $# -eq 3 ]] && login="\\nusername = $2\\npassword = $3"
  sed -i -e '/^username = /d' -e '/^password = /d' -e "s/^port = .*/port = $1$login/" "$S5_CFG"
  hup_taken
  log "reloaded: proxy port $1${login:+ with username/password}"
}

# set_optimistic true|false: [socks5] optimistic in the configuration
# file, then SIGHUP.
set_optimistic() {
  sed -i -e '/^optimistic = /d' -e "s/^port = .*/&\\noptimistic = $1/" "$S5_CFG"
  hup_taken
  log "reloaded: optimistic = $1"
}

# hup_taken: SIGHUP, then until every worker took the new configuration
# (its debug line), so that the next connections have it.
hup_taken() {
  local n0 n
  n0=$(grep -c 'configuration generation [0-9]* taken' "$S5LOG" || true)
  kill -HUP "$S5PID"
  for _ in $(seq $((T_START * 10))); do
    n=$(grep -c 'configuration generation [0-9]* taken' "$S5LOG" || true)
    ((n >= n0 + QUEUES)) && return 0
    sleep 0.1
  done
  fail "the workers did not take the reloaded configuration within ${T_START}s"
}

counter() {   # counter NAME: its total over the queues
  "$S5TUND" --stats "$WORK/stats.sock" --json |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

established() {   # PORT: connections from C established at a port in S
  in_s ss -Htn state established "( sport = :$1 )" | grep -c "$C_ADDR4" || true
}

# wait_warm PORT N: until N connections from C are established at PORT
# (every worker's pool full) and the stats socket answers.
wait_warm() {
  local n=0
  for _ in $(seq $((T_START * 10))); do
    n=$(established "$1")
    ((n >= $2)) && [[ -S $WORK/stats.sock ]] && { log "$n warm connections at port $1"; return 0; }
    sleep 0.1
  done
  fail "$n connections at port $1 after ${T_START}s, expected at least $2 (pool = $POOL x $QUEUES queues)"
}

# wait_accepted LOG N: until the idle proxy logged at least N accepted
# connections (its closes after 1 s idle make a count of established ones
# racy when the machine is busy: the pool's refill waits for a session).
wait_accepted() {
  local n=0
  for _ in $(seq $((T_START * 10))); do
    n=$(grep -c accepted "$1" || true)
    ((n >= $2)) && { log "$n connections accepted by the proxy"; return 0; }
    sleep 0.1
  done
  fail "the proxy accepted $n connections after ${T_START}s, expected at least $2 (pool = $POOL x $QUEUES queues)"
}

poolcheck() {   # poolcheck.py in C, bounded
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${CLIENT_T:-$T_STEP}" "$PY" "$E2E_DIR/poolcheck.py" "$@"
}

start_relay() {   # the delay relay in S, RELAY_PORT -> danted
  local ready=$WORK/relay.ready
  E2E_LOGS+=("$WORK/relay.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/delayrelay.py" --listen "$S_ADDR4" --port "$RELAY_PORT" \
    --to "$S_ADDR4:$DANTE_PORT" --delay-ms "$DELAY_MS" --ready-file "$ready" >"$WORK/relay.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "delay relay $S_ADDR4:$RELAY_PORT -> danted, $DELAY_MS ms each way"; return 0; }
    sleep 0.1
  done
  fail "delayrelay.py did not start"
}

# ms_le A B: A <= B for decimal numbers.
ms_le() { "$PY" -c 'import sys; sys.exit(not float(sys.argv[1]) <= float(sys.argv[2]))' "$1" "$2"; }

# ---------------------------------------------------------------- cases

# ttfb POOL OPTIMISTIC: s5tund with them; the fastest and the median time
# to the first byte of 7 connections into TTFB_MIN and TTFB_MED, each
# connection checked a pool hit when the pool is on.
ttfb() {
  local hits out
  start_pool "$S_ADDR4" "$RELAY_PORT" "$1" "" "$2"
  e2e_wait_ready "$MODE" "$QUEUES"
  (($1 == 0)) || wait_warm "$RELAY_PORT" $((POOL * QUEUES))
  hits=$(counter pool_hits)
  out=$(poolcheck ttfb --host "$TGT4" --port "$TGT_PORT" --count 7 --gap 0.5)
  printf '%s\n' "$out" | grep -v '^[0-9]'
  read -r TTFB_MIN TTFB_MED <<<"$(tail -1 <<<"$out")"
  (($1 == 0 || $(counter pool_hits) == hits + 7)) \
    || fail "pool_hits $hits -> $(counter pool_hits) over 7 connections to a warm pool"
  e2e_stop_s5tund
}

case_pool_ttfb() {
  local rtt two one off off_med on on_med opt opt_med
  e2e_topology_up
  e2e_start_target
  e2e_start_dante
  start_relay
  rtt=$(poolcheck rtt --host "$S_ADDR4" --port "$RELAY_PORT" --count 7 | tail -1)
  two=$("$PY" -c 'import sys; print("%.1f" % (2 * float(sys.argv[1]) + 10))' "$rtt")
  one=$("$PY" -c 'import sys; print("%.1f" % (float(sys.argv[1]) + 10))' "$rtt")
  log "the relay's round trip: $rtt ms; 2 round trips + 10 ms = $two ms, 1 round trip + 10 ms = $one ms"
  # The fastest of 7 is compared: load on the machine only adds time.
  # Without the pool: greeting, CONNECT, then the data, 3 round trips.
  ttfb 0 false
  off=$TTFB_MIN off_med=$TTFB_MED
  log "pool = 0: first byte after $off ms (fastest of 7; median $off_med ms)"
  ms_le "$off" "$two" && fail "pool = 0: first byte after $off ms, within the pool's bound $two ms: the check cannot fail"
  # The pool: CONNECT, then the data.
  ttfb "$POOL" false
  on=$TTFB_MIN on_med=$TTFB_MED
  log "pool = $POOL: first byte after $on ms (fastest of 7; median $on_med ms)"
  ms_le "$on" "$two" || fail "pool = $POOL: first byte after $on ms, over 2 round trips + 10 ms ($two ms)"
  ms_le "$on" "$one" && fail "pool = $POOL: first byte after $on ms, within 1 round trip + 10 ms: the optimistic check cannot fail"
  # The pool and optimistic data: the data right behind the CONNECT.
  ttfb "$POOL" true
  opt=$TTFB_MIN opt_med=$TTFB_MED
  log "pool = $POOL, optimistic: first byte after $opt ms (fastest of 7; median $opt_med ms)"
  ms_le "$opt" "$one" || fail "pool = $POOL, optimistic: first byte after $opt ms, over 1 round trip + 10 ms ($one ms)"
  log "first byte: $off ms without the pool, $on ms with it (<= $two), $opt ms with optimistic data (<= $one)"
}

# [socks5] optimistic: a CONNECT danted refuses (nothing listens on the
# target's port 7999), one round trip away behind the relay: the client's
# connection opens, its bytes go to the proxy, then it is reset. With and
# without the pool.
case_optimistic_refused() {
  local pool up
  e2e_topology_up
  e2e_start_target
  e2e_start_dante
  start_relay
  for pool in "$POOL" 0; do
    start_pool "$S_ADDR4" "$RELAY_PORT" "$pool" "" true
    e2e_wait_ready "$MODE" "$QUEUES"
    ((pool == 0)) || wait_warm "$RELAY_PORT" $((POOL * QUEUES))
    up=$(counter bytes_to_proxy)
    poolcheck reset-after-data --host "$TGT4" --port 7999
    poolcheck reset-after-data --host "$TGT6" --port 7999
    # danted answers the refused CONNECT and then resets the connection (the
    # client's bytes unread): counted as refused, or as a bad reply when
    # the reset overtook the reply.
    (($(counter socks5_refused) + $(counter socks5_bad_reply) == 2)) \
      || fail "pool = $pool: socks5_refused $(counter socks5_refused) + socks5_bad_reply $(counter socks5_bad_reply), expected 2"
    (($(counter bytes_to_proxy) > up)) || fail "pool = $pool: the client's bytes did not reach the proxy before the reset"
    client --host "$TGT4" echo
    e2e_stop_s5tund
    log "pool = $pool, optimistic: refused CONNECTs reset the clients after their data went to the proxy"
  done
}

# up_warm: namespaces, target, microsocks and s5tund with [socks5] pool =
# POOL, ready and with every queue's pool full (POOL * QUEUES connections).
up_warm() {
  e2e_topology_up
  e2e_start_target
  e2e_start_microsocks
  start_pool "$S_ADDR4" "$MS_PORT" "$POOL"
  e2e_wait_ready "$MODE" "$QUEUES"
  wait_warm "$MS_PORT" $((POOL * QUEUES))
}

case_pool_idle() {
  local recycled
  up_warm
  # microsocks goes and comes back at once: every pooled connection ends
  # (FIN) while idle; some EOFs may cross the first CONNECTs.
  e2e_stop_microsocks
  e2e_start_microsocks
  poolcheck first-try --host "$TGT4" --port "$TGT_PORT" --count 50
  wait_warm "$MS_PORT" $((POOL * QUEUES))
  recycled=$(counter pool_recycled)
  ((recycled + $(counter pool_retried) >= POOL * QUEUES)) \
    || fail "pool_recycled $recycled, pool_retried $(counter pool_retried): the closed connections were not all seen"
  e2e_stop_microsocks
  # danted: its side of every connection from C reset (ss -K), the proxy
  # itself still up.
  e2e_start_dante
  reload_proxy "$DANTE_PORT"
  wait_warm "$DANTE_PORT" $((POOL * QUEUES))
  in_s ss -K -Htn state established "( sport = :$DANTE_PORT )" dst "$C_ADDR4" >/dev/null
  poolcheck first-try --host "$TGT4" --port "$TGT_PORT" --count 50
  log "pool_hits $(counter pool_hits) pool_misses $(counter pool_misses) pool_recycled $(counter pool_recycled) pool_retried $(counter pool_retried)"
  (($(counter socks5_connect_failed) + $(counter socks5_bad_reply) == 0)) || fail "sessions failed at the proxy"
  e2e_require_alive "after the proxy closed its idle connections"
}

case_pool_age() {
  local n=0
  E2E_S5_WRAP=(env S5TUND_POOL_SHORT_AGE=1)   # only s5tund's start uses it
  up_warm
  E2E_S5_WRAP=()
  for _ in $(seq $((T_START * 10))); do
    n=$(counter pool_recycled)
    ((n >= 2 * POOL * QUEUES)) && break
    sleep 0.1
  done
  ((n >= 2 * POOL * QUEUES)) || fail "pool_recycled $n after ${T_START}s, expected the pool replaced twice ($((2 * POOL * QUEUES)))"
  # A replacement may connect just before the one it replaces closes: a
  # moment above the pool is not a leak; staying above it is.
  local est
  for _ in $(seq $((T_START * 10))); do
    est=$(established "$MS_PORT")
    ((est <= POOL * QUEUES)) && break
    sleep 0.1
  done
  ((est <= POOL * QUEUES)) || fail "$est connections at microsocks, more than the pool ($((POOL * QUEUES))): recycled ones not closed"
  (($(counter pool_failed) == 0)) || fail "pool_failed $(counter pool_failed)"
  log "recycled by age: pool_recycled $n, $(established "$MS_PORT") connections at the proxy"
  # No session for 5 s (the short idle time): recycled ones are not
  # replaced, the proxy is left with nothing.
  for _ in $(seq $((T_START * 10))); do
    (($(established "$MS_PORT") == 0)) && break
    sleep 0.1
  done
  (($(established "$MS_PORT") == 0)) || fail "$(established "$MS_PORT") pooled connections still at the proxy with no session for ${T_START}s"
  log "idle: no pooled connection left at the proxy (pool_recycled $(counter pool_recycled))"
  # The next sessions find it empty (misses) and fill it again (hits).
  local hits misses
  hits=$(counter pool_hits) misses=$(counter pool_misses)
  poolcheck first-try --host "$TGT4" --port "$TGT_PORT" --count 20
  (($(counter pool_misses) > misses && $(counter pool_hits) > hits)) \
    || fail "after the idle time: pool_misses $misses -> $(counter pool_misses), pool_hits $hits -> $(counter pool_hits)"
  log "after the idle time: misses $misses -> $(counter pool_misses), then hits $hits -> $(counter pool_hits)"
}

case_pool_backoff() {
  local waits
  e2e_topology_up
  e2e_start_target
  start_pool "$S_ADDR4" "$MS_PORT" "$POOL"
  e2e_wait_device "$MODE" "$QUEUES"
  e2e_wait_log "$S5LOG" "connection pool: .*next warm-up in [0-9]{4,} ms" "$T_START" \
    "warm-up wait of a second or more (the backoff doubling)" >/dev/null
  waits=$(grep -oE 'next warm-up in [0-9]+ ms' "$S5LOG" | awk '{print $4}' | sort -n | uniq | tr '\n' ' ')
  log "waits between failed warm-ups (ms): $waits"
  client --host "$TGT4" --timeout 30 expect-refused
  (($(counter pool_failed) > 0)) || fail "pool_failed 0 with no proxy"
  e2e_start_microsocks
  wait_warm "$MS_PORT" $((POOL * QUEUES))
  through microsocks "$MS_PORT"
}

case_pool_refused() {
  local hits
  up_warm
  hits=$(counter pool_hits)
  # Port 7999: nothing listens, microsocks answers the CONNECT with a REP.
  client --host "$TGT4" --port 7999 --timeout 30 expect-refused
  client --host "$TGT6" --port 7999 --timeout 30 expect-refused
  (($(counter pool_hits) >= hits + 2)) || fail "the refused CONNECTs did not go through the pool"
  (($(counter socks5_refused) >= 2)) || fail "socks5_refused $(counter socks5_refused), expected 2"
  client --host "$TGT4" echo
  e2e_require_alive "after refused CONNECTs through the pool"
}

# through NAME PORT: 20 connections through the proxy at PORT, all hits.
through() {
  local hits
  wait_warm "$2" $((POOL * QUEUES))
  hits=$(counter pool_hits)
  poolcheck first-try --host "$TGT4" --port "$TGT_PORT" --count 20 --timeout 30
  (($(counter pool_hits) > hits)) || fail "$1: no connection went through the pool"
  log "$1: 20 connections, pool_hits $hits -> $(counter pool_hits)"
}

case_pool_servers() {
  local addr
  e2e_topology_up
  e2e_start_target
  udp_hosts
  start_sshd_socks 1085
  start_pool "$S_ADDR4" 1085 "$POOL" "[dns]
address = $DNS_ADDR
network = $DNS_POOL"
  e2e_wait_ready "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  through "ssh -D" 1085
  # A mapped name: the CONNECT carries target.test, the proxy resolves it.
  addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
  [[ -n $addr ]] || fail "the mapped resolver did not answer target.test"
  local hits; hits=$(counter pool_hits)
  poolcheck first-try --host "$addr" --port "$TGT_PORT" --count 5 --timeout 30
  (($(counter pool_hits) > hits)) || fail "mapped-name CONNECTs did not go through the pool"
  log "mapped name target.test ($addr): 5 connections through the pool"
  # Optimistic data: ssh -D and danted read the bytes behind the CONNECT
  # (microsocks drops them, as with pipeline: it is left out there).
  set_optimistic true
  through "ssh -D, optimistic" 1085
  # A reload to another proxy flushes the pool: danted, then microsocks
  # with username/password.
  e2e_start_dante
  reload_proxy "$DANTE_PORT"
  through "danted, optimistic" "$DANTE_PORT"
  set_optimistic false
  ((($(established 1085)) == 0)) || fail "$(established 1085) pooled connections left at ssh -D after the reload"
  e2e_start_microsocks s5user s5pass
  reload_proxy "$MS_PORT" s5user s5pass
  through "microsocks with username/password" "$MS_PORT"
  (($(counter pool_failed) == 0)) || fail "pool_failed $(counter pool_failed)"
  e2e_s5_log_clean
}


# A proxy that closes a pooled connection idle past 0.4 s when its CONNECT
# arrives (idleproxy.py; danted with timeout.negotiate does it to some): the
# pool retries on a fresh connection, unseen by the client; with optimistic
# the client's first bytes may already be on the dead connection, and then
# the client is reset: never a request without its first bytes, never a
# hang (poolcheck.py first-bytes checks every echo whole).
case_pool_idle_close() {
  local port=1093 out opt ok reset closed0 closed
  e2e_topology_up
  e2e_start_target
  E2E_LOGS+=("$WORK/idleproxy.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/idleproxy.py" --listen "$S_ADDR4" --port "$port" --idle 0.4 \
    --ready-file "$WORK/idleproxy.ready" >"$WORK/idleproxy.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/idleproxy.ready ]] && break; sleep 0.1; done
  for opt in false true; do
    start_pool "$S_ADDR4" "$port" "$POOL" "" "$opt"
    e2e_wait_ready "$MODE" "$QUEUES"
    wait_warm "$port" $((POOL * QUEUES))
    closed0=$(grep -c closed-idle "$WORK/idleproxy.log" || true)
    out=$(poolcheck first-bytes --host "$TGT4" --port "$TGT_PORT" --count 12 --gap 0.6 --timeout 15) \
      || fail "optimistic = $opt: $(oneline "$out")"
    read -r _ ok _ reset <<<"$(tail -1 <<<"$out")"
    closed=$(($(grep -c closed-idle "$WORK/idleproxy.log" || true) - closed0))
    log "optimistic = $opt: $ok echoed whole, $reset reset; the proxy closed $closed idle pooled connections"
    ((closed > 0)) || fail "optimistic = $opt: the proxy closed no pooled connection: the case went untested"
    if [[ $opt == false ]]; then
      ((ok == 12)) || fail "without optimistic a retried CONNECT must be unseen: $ok of 12 whole, $reset reset"
      (($(counter pool_retried) > 0)) || fail "pool_retried is 0"
    else
      grep -q "warn .*client's first bytes" "$S5LOG" || ((reset == 0)) \
        || fail "optimistic: $reset clients reset without a warning in the log"
    fi
    e2e_stop_s5tund
  done
  # A proxy that closes warm connections idle for 1 s by itself: replaced
  # at the next session, not in a loop while the daemon is idle.
  local acc0 acc
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/idleproxy.py" --listen "$S_ADDR4" --port $((port + 1)) --idle 60 \
    --close-idle 1 --ready-file "$WORK/idleproxy2.ready" >"$WORK/idleproxy2.log" 2>&1 &
  E2E_LOGS+=("$WORK/idleproxy2.log")
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/idleproxy2.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/idleproxy2.ready ]] || fail "the second idle proxy did not start"
  start_pool "$S_ADDR4" $((port + 1)) "$POOL"
  e2e_wait_ready "$MODE" "$QUEUES"
  wait_accepted "$WORK/idleproxy2.log" $((POOL * QUEUES))
  acc0=$(grep -c accepted "$WORK/idleproxy2.log" || true)
  sleep 5
  acc=$(($(grep -c accepted "$WORK/idleproxy2.log" || true) - acc0))
  log "a proxy closing idle connections after 1 s: $acc new connections in 5 s of idle ($(grep -c closed-timer "$WORK/idleproxy2.log") closed)"
  ((acc <= POOL * QUEUES)) || fail "the pool reconnected $acc times in 5 s of idle against a proxy that closes idle connections after 1 s"
  poolcheck first-try --host "$TGT4" --port "$TGT_PORT" --count 3
  # none warm (closed idle): 3 sessions on fresh connections, then at least one refill
  wait_accepted "$WORK/idleproxy2.log" $((acc0 + acc + 4))
  e2e_stop_s5tund
}
