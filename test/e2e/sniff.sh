# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# [sniff] for TCP (run.sh runs it; ctest e2e.sniff.process.q2): no mapped
# DNS, so no flow has a name but what its first bytes say. nginx in S
# serves one.test and two.test by SNI (one self-signed certificate for
# both) on TGT4:443, and by Host on TGT4:80, logging the peer it saw:
# danted (upstream a, S's own address) or microsocks (upstream b, bound to
# RB_BIND). Rules: domain:one.test -> group ga (r, a SOCKS5 proxy that
# refuses every CONNECT and logs what it was asked, never marked down;
# then a), the rest -> b.
#
#   curl --resolve and openssl s_client -servername: one.test through a
#   (the refusing proxy got the CONNECT with the ClientHello behind it,
#   refused, and the client saw nothing of it), two.test through b; HTTP
#   Host on port 80 the same; r.test, whose rule names r alone: reset;
#   a ClientHello in two segments 50 ms apart,
#   and one over 2 KB; 15 clients of a server-first banner on a listed
#   port (2222): each worker waits [sniff] timeout 5 times, then skips the
#   destination (sniff_timeout <= 10, the rest sniff_skipped); a client
#   silent past the timeout gets through by address; the counters in
#   --stats, the name with its source in the session log and in
#   --connections --json (named_by) of an open session. Then
#   override = true (SIGHUP): r is asked for one.test:443, danted resolves
#   it and carries the flow (danted logs the address it resolved).

RB_BIND=10.200.0.22
MS_RB_PORT=1089
REFUSE_PORT=1090
BANNER_PORT=2222

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

setup_sniff() {
  e2e_require_tools nginx openssl curl danted microsocks
  udp_install_exit
  e2e_topology_up
  e2e_start_target
  ip -n "$NS_S" addr add "$RB_BIND/32" dev lo
  udp_hosts
  printf '%s one.test\n%s two.test\n' "$TGT4" "$TGT4" >>"$NETNS_ETC/hosts" # override: the proxies resolve
  e2e_start_dante
  E2E_LOGS+=("$WORK/microsocks.b.log")
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$MS_RB_PORT" -b "$RB_BIND" >>"$WORK/microsocks.b.log" 2>&1 &
  e2e_wait_listen "$MS_RB_PORT" "$S_ADDR4" || fail "microsocks b does not listen"
  sniff_helper refused "$S_ADDR4" "$REFUSE_PORT"
  sniff_helper bannerd "$TGT4" "$BANNER_PORT"
  sniff_nginx
}

sniff_helper() {   # MODE ADDR PORT: a server of sniffclient.py in S
  E2E_LOGS+=("$WORK/$1.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/sniffclient.py" "$1" "$2" "$3" "$WORK/$1.ready" >"$WORK/$1.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/$1.ready ]] && return 0; sleep 0.1; done
  fail "sniffclient.py $1 did not start"
}

sniff_nginx() {
  local d=$WORK/nginx n
  mkdir -p "$d/logs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=one.test -keyout "$d/key.pem" -out "$d/cert.pem" \
    -addext "subjectAltName=DNS:one.test,DNS:two.test" 2>/dev/null
  {
    echo "pid $d/nginx.pid; error_log $d/logs/error.log; worker_processes 1;"
    echo "events { worker_connections 256; }"
    echo "http { log_format peer '\$remote_addr \$host \$ssl_server_name';"
    echo "  access_log $d/logs/access.log peer; client_body_temp_path $d; proxy_temp_path $d;"
    echo "  fastcgi_temp_path $d; uwsgi_temp_path $d; scgi_temp_path $d;"
    for n in one two; do
      echo "  server { listen $TGT4:443 ssl; listen $TGT4:80; server_name $n.test;"
      echo "    ssl_certificate $d/cert.pem; ssl_certificate_key $d/key.pem; location / { return 200 '$n\n'; } }"
    done
    echo "}"
  } >"$d/nginx.conf"
  E2E_LOGS+=("$d/logs/access.log" "$d/logs/error.log")
  ip netns exec "$NS_S" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;' >"$d/logs/stderr.log" 2>&1 &
  e2e_wait_listen 443 "$TGT4" || fail "nginx does not listen on $TGT4:443"
}

sniff_config() {   # FILE OVERRIDE
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug CFG_LOG_SESSIONS=1 e2e_write_config "$1"
  # a and r read their connections as streams (optimistic: the held bytes go right behind the
  # CONNECT); microsocks does not (b: after its reply)
  printf '%s\n' "" "[upstream a]" "address = $S_ADDR4" "port = $DANTE_PORT" "optimistic = true" "" "[upstream b]" \
    "address = $S_ADDR4" "port = $MS_RB_PORT" "" "[upstream r]" "address = $S_ADDR4" "port = $REFUSE_PORT" \
    "optimistic = true" "" \
    "[group ga]" "members = r, a" "" "[balance]" "fail-after = 1000" "" "[stats]" "socket = $WORK/stats.sock" "" "[rules]" "default = b" \
    "rule = domain:one.test -> ga" "rule = full:r.test -> r" "" "[sniff]" "tls = 443, $BANNER_PORT" "http = 80, $TGT_PORT" \
    "timeout = 300" "override = $2" >>"$1"
}

sniff_stat() {   # COUNTER: its total in --stats --json
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

# peer_of N: the peer nginx saw for its Nth request (a line each)
peer_of() { sed -n "${1}p" "$WORK/nginx/logs/access.log" | awk '{print $1}'; }

expect_peer() {   # N PEER HOST WHAT
  local line
  for _ in $(seq $((T_START * 10))); do
    line=$(sed -n "${1}p" "$WORK/nginx/logs/access.log")
    [[ -n $line ]] && break
    sleep 0.1
  done
  [[ $line == "$2 $3"* ]] || fail "$4: nginx logged \"$line\", expected $2 $3"
}

case_sniff() {
  local ini=$WORK/sniff.ini out sc=(ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/sniffclient.py")
  sniff_config "$ini" false
  out=$("$S5TUND" --config "$ini" --explain "$TGT4:443" --sni www.one.test)
  grep -q "^sniff    yes (tls)" <<<"$out" && grep -qx "outbound ga" <<<"$out" || fail "--explain --sni: $(oneline "$out")"
  out=$("$S5TUND" --config "$ini" --explain "$TGT4:22" --sni www.one.test)
  grep -q "^sniff    no: TCP port 22 " <<<"$out" && grep -qx "outbound b" <<<"$out" || fail "--explain --sni :22: $(oneline "$out")"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  # one.test: r refuses the CONNECT with the ClientHello behind it; a carries it, unseen by the client
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -sk --resolve "one.test:443:$TGT4" https://one.test/)
  [[ $out == one ]] || fail "curl https://one.test: '$out'"
  grep -q "refused CONNECT $TGT4:443 with [0-9]* bytes behind it, sni one.test" "$WORK/refused.log" ||
    fail "the refusing upstream did not get the ClientHello behind the CONNECT"
  expect_peer 1 "$S_ADDR4" one.test "one.test by SNI through a (danted), after r refused"
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -sk --resolve "two.test:443:$TGT4" https://two.test/)
  [[ $out == two ]] || fail "curl https://two.test: '$out'"
  expect_peer 2 "$RB_BIND" two.test "two.test by SNI through b (microsocks)"
  out=$(printf 'GET / HTTP/1.0\r\nHost: one.test\r\n\r\n' | bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" \
    openssl s_client -quiet -servername one.test -connect "$TGT4:443" 2>/dev/null | tail -1)
  [[ $out == one ]] || fail "openssl s_client -servername one.test: '$out'"
  expect_peer 3 "$S_ADDR4" one.test "openssl s_client through a"
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -s --resolve "one.test:80:$TGT4" http://one.test/)
  [[ $out == one ]] || fail "curl http://one.test: '$out'"
  expect_peer 4 "$S_ADDR4" one.test "HTTP Host one.test through a"
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -s --resolve "two.test:80:$TGT4" http://two.test/)
  expect_peer 5 "$RB_BIND" two.test "HTTP Host two.test through b"
  out=$(bg_wait "${sc[@]}" tls "$TGT4" 443 one.test --split-ms 50)
  [[ $out == *"; one" ]] || fail "a ClientHello in two segments: $out"
  expect_peer 6 "$S_ADDR4" one.test "a ClientHello in two segments 50 ms apart"
  out=$(bg_wait "${sc[@]}" tls "$TGT4" 443 one.test --split-ms 50 --pad 2400)
  [[ $out =~ ^hello\ ([0-9]+)\ bytes\;\ one$ ]] && ((BASH_REMATCH[1] > 2048)) || fail "a ClientHello over 2 KB: $out"
  expect_peer 7 "$S_ADDR4" one.test "a ClientHello over 2 KB"
  # an open session: --connections names it and how the name was learnt
  "${sc[@]}" tls "$TGT4" 443 two.test --hold-file "$WORK/go" >"$WORK/held.out" 2>&1 &
  local held=$! conns=""
  for _ in $(seq $((T_START * 10))); do
    conns=$("$S5TUND" --connections "$WORK/stats.sock" --json)
    grep -q '"name":"two.test","named_by":"tls","upstream":"b"' <<<"$conns" && break
    sleep 0.1
  done
  touch "$WORK/go"
  wait "$held" || fail "the held TLS client: $(cat "$WORK/held.out")"
  grep -q '"name":"two.test","named_by":"tls","upstream":"b"' <<<"$conns" || fail "--connections: $conns"
  expect_peer 8 "$RB_BIND" two.test "the held TLS client through b"
  log "TLS (curl, openssl, split, $(cut -d' ' -f2 <<<"$out") bytes) and HTTP routed by name"
  # every upstream it may take refuses (its rule names r alone): the client, answered at once, is reset
  local rc=0
  bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -sk --resolve "r.test:443:$TGT4" https://r.test/ || rc=$?
  ((rc != 0 && rc != 124)) || fail "curl https://r.test through a refusing upstream: exit $rc, expected a reset"
  grep -q "refused CONNECT $TGT4:443 with [0-9]* bytes behind it" "$WORK/refused.log" || fail "r.test: no CONNECT at r"
  e2e_wait_log "$S5LOG" "-> $TGT4:443 \(r\.test, tls\) via .*proxy refused CONNECT" "$T_START" >/dev/null
  log "r.test: every upstream refused, the client reset (curl exit $rc)"
  # server-first: each worker waits for 5 of these, then skips the destination
  out=$(bg_wait "${sc[@]}" banner "$TGT4" "$BANNER_PORT" 15)
  (($(grep -c '^SSH-2.0-sniff-e2e$' <<<"$out") == 15)) || fail "banners: $(oneline "$out")"
  local to sk
  to=$(sniff_stat sniff_timeout) sk=$(sniff_stat sniff_skipped)
  ((to <= 5 * QUEUES && to + sk == 15 && sk >= 15 - 5 * QUEUES)) || fail "banner flows: $to timeouts, $sk skipped"
  out=$(bg_wait "${sc[@]}" silent "$TGT4" "$TGT_PORT" 600)
  [[ $out == hello ]] || fail "a client silent past the timeout: '$out'"
  (($(sniff_stat sniff_timeout) == to + 1)) || fail "the silent client's timeout not counted"
  (($(sniff_stat sniff_tls) == 7 && $(sniff_stat sniff_http) == 2)) ||
    fail "sniff_tls $(sniff_stat sniff_tls), sniff_http $(sniff_stat sniff_http): want 7 and 2"
  grep -qE "session s[0-9]+ tcp .* -> $TGT4:443 \(one\.test, tls\) via .* by rule " "$S5LOG" ||
    fail "no session line with (one.test, tls)"
  grep -qE "session s[0-9]+ tcp .* -> $TGT4:80 \(two\.test, http\) via " "$S5LOG" ||
    fail "no session line with (two.test, http)"
  log "server-first: $to waits, $sk skipped; silent client through; counters and session lines"
  # override = true: the CONNECT goes by the name, which danted logs
  sniff_config "$ini" true
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "configuration reloaded" "$T_START" >/dev/null
  out=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" curl -sk --resolve "one.test:443:$TGT4" https://one.test/)
  [[ $out == one ]] || fail "override: curl https://one.test: '$out'"
  grep -q "refused CONNECT one.test:443 with [0-9]* bytes behind it, sni one.test" "$WORK/refused.log" ||
    fail "override: the CONNECT did not go by the name"
  expect_peer 9 "$S_ADDR4" one.test "override: one.test through a (danted resolved the name)"
  log "override: CONNECT one.test:443 (r refused it; a resolved the name and carried it)"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
}

# [sniff] quic (ctest e2e.sniff_quic.process.q2): a UDP server in S on
# TGT4:443 records every datagram (source, length, digest) and echoes it;
# upstream a is danted (its relay sends from S's own address), c a second
# danted whose relay sends from RB_BIND. Rules: domain:one.test -> a, the
# rest -> c. quicclient.py builds real QUIC v1 Initials (RFC 9001 keys from
# a random DCID, AES-128-GCM, header protection):
#
#   one.test, its ClientHello split over two Initials (the second half
#   first) and two 1-RTT-like datagrams behind: all four reach the server
#   through a, in the order sent, once; two.test in one Initial: through
#   c; a datagram that is no QUIC: through c at once (sniff_none); only
#   the first of two Initials: through c after [sniff] timeout
#   (sniff_timeout); a ClientHello in 9 Initials: 8 held, then through c
#   by address, all 9 in order; half a ClientHello, then a datagram to
#   port 8443: by address at once, both through c; --connections and the session log name one.test with
#   named_by quic; --explain --proto udp --sni. Then override = true
#   (SIGHUP): one.test's Initial sent to an address where nothing listens
#   reaches the server all the same, through a: danted was sent the name
#   and resolved it (S's hosts file: TGT4).
DANTE2_PORT=1091
QUIC_ELSEWHERE=10.201.0.99 # routed into the device; nothing there

sniff_dante2() {
  local conf=$WORK/danted2.conf
  E2E_LOGS+=("$WORK/danted2.log")
  printf '%s\n' "logoutput: $WORK/danted2.log" "internal: $S_ADDR4 port = $DANTE2_PORT" "external: $RB_BIND" \
    "clientmethod: none" "socksmethod: none" "user.privileged: root" "user.unprivileged: nobody" \
    "client pass {" "from: 0/0 to: 0/0" "}" \
    "socks pass {" "from: 0/0 to: 0/0" "command: udpassociate udpreply" "log: connect disconnect" "}" >"$conf"
  ip netns exec "$NS_S" danted -f "$conf" -p "$WORK/danted2.pid" >>"$WORK/danted2.log" 2>&1 &
  e2e_wait_listen "$DANTE2_PORT" "$S_ADDR4" || fail "danted c does not listen"
}

sniff_quic_config() {   # FILE OVERRIDE
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug CFG_LOG_SESSIONS=1 e2e_write_config "$1"
  printf '%s\n' "" "[upstream a]" "address = $S_ADDR4" "port = $DANTE_PORT" "" "[upstream c]" \
    "address = $S_ADDR4" "port = $DANTE2_PORT" "" "[stats]" "socket = $WORK/stats.sock" "" "[rules]" "default = c" \
    "rule = domain:one.test -> a" "" "[sniff]" "quic = 443" "timeout = 300" "override = $2" >>"$1"
}

# quic_sent OUT SRC: the datagrams OUT lists (sent, in order) are the
# record's next lines, each from SRC
quic_sent() {
  local sent n got
  sent=$(grep -E '^[0-9]+ [0-9a-f]{16}$' <<<"$1")
  n=$(wc -l <<<"$sent")
  for _ in $(seq $((T_START * 10))); do
    (($(wc -l <"$WORK/quic.rec") >= QUIC_SEEN + n)) && break
    sleep 0.1
  done
  got=$(sed -n "$((QUIC_SEEN + 1)),\$p" "$WORK/quic.rec")
  [[ $got == "$(sed "s/^/$2 /" <<<"$sent")" ]] || fail "$3: the server got $(oneline "$got"), sent $(oneline "$sent") (from $2)"
  QUIC_SEEN=$((QUIC_SEEN + n))
}

case_sniff_quic() {
  local ini=$WORK/quic.ini out conns="" qc=(ip netns exec "$NS_C" timeout -k 5 "$T_STEP" "$PY" "$E2E_DIR/quicclient.py")
  QUIC_SEEN=0
  sniff_dante2
  : >"$WORK/quic.rec"
  E2E_LOGS+=("$WORK/quic.rec" "$WORK/quicserver.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/quicclient.py" server "$TGT4" 443,8443 "$WORK/quic.rec" "$WORK/quic.ready" \
    >"$WORK/quicserver.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $WORK/quic.ready ]] && break; sleep 0.1; done
  [[ -s $WORK/quic.ready ]] || fail "the QUIC recorder did not start: $(cat "$WORK/quicserver.log")"
  sniff_quic_config "$ini" false
  out=$("$S5TUND" --config "$ini" --explain "$TGT4:443" --proto udp --sni one.test)
  grep -q "^sniff    yes (quic)" <<<"$out" && grep -qx "outbound a" <<<"$out" || fail "--explain --sni: $(oneline "$out")"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  out=$(bg_wait "${qc[@]}" quic "$TGT4" 443 one.test --split --after 2) || fail "QUIC one.test, split: $(oneline "$out")"
  quic_sent "$out" "$S_ADDR4" "one.test (a ClientHello over two Initials) through a"
  for _ in $(seq $((T_START * 10))); do
    conns=$("$S5TUND" --connections "$WORK/stats.sock" --json)
    grep -q '"name":"one.test","named_by":"quic","upstream":"a"' <<<"$conns" && break
    sleep 0.1
  done
  grep -q '"name":"one.test","named_by":"quic","upstream":"a"' <<<"$conns" || fail "--connections: $conns"
  out=$(bg_wait "${qc[@]}" quic "$TGT4" 443 two.test) || fail "QUIC two.test: $(oneline "$out")"
  quic_sent "$out" "$RB_BIND" "two.test through c"
  out=$(bg_wait "${qc[@]}" raw "$TGT4" 443 "no QUIC here") || fail "a datagram that is no QUIC: $(oneline "$out")"
  quic_sent "$out" "$RB_BIND" "a datagram that is no QUIC, through c by address"
  out=$(bg_wait "${qc[@]}" quic "$TGT4" 443 one.test --half --after 0) || fail "half a ClientHello: $(oneline "$out")"
  quic_sent "$out" "$RB_BIND" "half a ClientHello, through c by address after the timeout"
  # a ClientHello in 9 Initials: 8 are held (the bound), then by address, the 9th behind them
  out=$(bg_wait "${qc[@]}" quic "$TGT4" 443 one.test --parts 9 --after 0) || fail "9 Initials: $(oneline "$out")"
  quic_sent "$out" "$RB_BIND" "a ClientHello in 9 Initials, through c by address once 8 were held"
  # half a ClientHello, then a datagram to another port: by address at once, the held one first
  out=$(bg_wait "${qc[@]}" quic "$TGT4" 443 one.test --half --after 1 --to-port 8443) ||
    fail "half a ClientHello, then another port: $(oneline "$out")"
  quic_sent "$out" "$RB_BIND" "half a ClientHello then another destination, through c by address"
  (($(sniff_stat sniff_quic) == 2 && $(sniff_stat sniff_none) == 3 && $(sniff_stat sniff_timeout) == 1)) ||
    fail "sniff_quic $(sniff_stat sniff_quic), sniff_none $(sniff_stat sniff_none), sniff_timeout $(sniff_stat sniff_timeout): want 2, 3, 1"
  log "QUIC: one.test (split) through a, in order; two.test, no QUIC and half a ClientHello through c"
  # override = true: the datagrams to one.test's destination carry the name, which danted a logs
  sniff_quic_config "$ini" true
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "configuration reloaded" "$T_START" >/dev/null
  # sent to an address where nothing listens: only danted's resolving one.test (to TGT4) reaches the server
  out=$(bg_wait "${qc[@]}" quic "$QUIC_ELSEWHERE" 443 one.test --after 1) || fail "override: QUIC one.test: $(oneline "$out")"
  quic_sent "$out" "$S_ADDR4" "override: one.test through a, by the name"
  e2e_stop_s5tund
  ((S5RC == 0)) || fail "s5tund exited $S5RC"
  grep -qE "session u[0-9]+ udp .* -> $TGT4:443 \(one\.test, quic\) via [^ ]+ \(a\) by rule " "$S5LOG" ||
    fail "no session line with (one.test, quic)"
  log "override: danted a got one.test and resolved it; session lines name it (quic)"
}
