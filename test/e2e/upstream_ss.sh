# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# Shadowsocks to the proxy (run.sh runs it; ctest e2e.upstream_ss.process.q2):
#
#   upstream_ss  ss-server (shadowsocks-libev) three times, one per AEAD
#                method, and v2ray's shadowsocks inbound as a second,
#                independent server; one s5tund whose rules send each flow
#                to one of them: TGT4 -> chacha20-ietf-poly1305 (its server
#                on IPv6), TGT6 -> aes-128-gcm, target.test (a mapped name:
#                the target as a domain) -> aes-256-gcm, TGT4 port 7001 ->
#                v2ray. The warm pool (chacha's, 3 per worker): its
#                connections at ss-server before any flow with nothing
#                sent, and a flow with new connections to that server
#                dropped (nft in S) carried on one of them (pool_hits; the
#                server's count of accepted ones unchanged), aes256's pooled
#                connections left alone by it. Bulk both ways with SHA-256 compared, each flow
#                proven carried by that server's own log ("connect to" of
#                ss-server -v; v2ray's access log). A wrong password (port
#                7002): one warning naming the upstream, counted, and the
#                client's connection ends. Failover and the check: upstream
#                later (first of group g, for TGT6) has no server at first,
#                is marked down and TGT6's flows fail over to aes-128-gcm;
#                its server started with a wrong password keeps it down (the
#                check's HEAD through it is never answered), with the right
#                one it is up again and carries TGT6.
#                UDP (each datagram sealed straight to the server, ss-server
#                -u): an echo (udptarget.py) and DNS (dig to dnsmasq in S)
#                through chacha20 (IPv4 targets, server on IPv6), aes-128-gcm
#                (IPv6 targets, by a proto:udp rule) and v2ray (network
#                tcp,udp), bytes compared, each proven carried by the
#                server's log ("[udp] cache miss" of ss-server -v; v2ray's
#                "accepted udp:"); the wrong password's datagrams get no
#                reply and cost nothing else; a server whose UDP answer does
#                not open: dropped, one warning, counted in stream_bad.
#                Shadowsocks 2022
#                (2022-blake3-aes-256-gcm, TGT4 port 7004) against a server
#                of the tests' own (ss2022srv.py, from the spec: there is
#                none in Debian): bulk with SHA-256 compared; one answering
#                with a timestamp 100 s off (port 7005): one warning
#                naming the upstream and the fix, counted.
#                2022 UDP (udp = associate; the servers' --udp) and identity
#                headers, to a third target address T22 (10.201.0.2, its own
#                dnsmasq and echo): DNS (dig) and an echo through
#                2022-blake3-aes-256-gcm; an echo through
#                2022-blake3-chacha20-poly1305 (XChaCha20-Poly1305) whose
#                server sends every answer twice (--dup: the second is a
#                replay, dropped and counted in ss_replay); a multi-user
#                server (aes-128, --users) with password iPSK:uPSK: TCP and
#                UDP each proven by the server's "user 1" lines.

SS_PASS=e2e-ss-secret
SS_CHACHA=8388
SS_AES128=8389
SS_AES256=8390
SS_V2RAY=8391
SS_LATER=8392
SS_TAMPER=8393 # a server of ours whose answer does not open
SS_POOL=3     # chacha's warm pool, per worker (the others: the default)
SS_PORT2=7001 # a second target, for v2ray's flows
SS_PORT3=7002 # the wrong password's rule
SS_PORT4=7003 # the tampering server's rule
SS_UDP=7010   # the UDP echo's port (udptarget.py, TGT4 and TGT6; 7001-7003 too, for the rules above)
SS_METRICS=9555 # [stats] http, on the client namespace's loopback
SS_2022=8394
SS_2022SKEW=8395
SS_PORT5=7004 # Shadowsocks 2022's target
SS_PORT6=7005 # the 2022 server whose clock is off
SS_KEY22=BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g= # 32 bytes (aes-256-gcm)
SS_KEY22S=BRIfLDlGU2BteoeUoa67yA==                    # 16 bytes (aes-128-gcm)
SS_2022C=8396   # 2022-blake3-chacha20-poly1305, answers twice over UDP
SS_2022EIH=8397 # a multi-user 2022 server (identity headers)
T22=10.201.0.2  # the 2022 UDP cases' target address (in S; the TUN route 10.201.0.0/24 covers it)
SS_PORT7=7011   # T22: through the chacha20 2022 server
SS_PORT8=7012   # T22: through the multi-user server (TCP and UDP)
SS_USER0=AAECAwQFBgcICQoLDA0ODw== # the multi-user server's users' keys (uPSK); SS_KEY22S is its iPSK
SS_USER1=EBESExQVFhcYGRobHB0eHw==

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

setup_upstream_ss() {
  local t
  for t in ss-server v2ray b3sum; do
    command -v "$t" >/dev/null 2>&1 || fail "missing tool: $t (run 'make deps')"
  done
  udp_install_exit # dnslib.sh: S's hosts file (target.test), removed on exit
  e2e_topology_up
  e2e_start_target
  udp_hosts
}

# ss_server NAME ADDR PORT METHOD: ss-server -v in S, its log NAME.log.
ss_server() {
  E2E_LOGS+=("$WORK/$1.log")
  ip netns exec "$NS_S" ss-server -s "$2" -p "$3" -k "$SS_PASS" -m "$4" -u -v >"$WORK/$1.log" 2>&1 &
  SS_PID=$! # ip netns exec execs it: ss-server's own pid
  e2e_wait_listen "$3" "$2" || fail "ss-server $1 does not listen on $2 port $3"
}

start_v2ray() {
  cat >"$WORK/v2ray.json" <<JSON
{"log": {"access": "$WORK/v2ray-access.log", "error": "$WORK/v2ray.log", "loglevel": "info"},
 "inbounds": [{"listen": "$S_ADDR4", "port": $SS_V2RAY, "protocol": "shadowsocks",
   "settings": {"method": "aes-256-gcm", "password": "$SS_PASS", "network": "tcp,udp"}}],
 "outbounds": [{"protocol": "freedom"}]}
JSON
  E2E_LOGS+=("$WORK/v2ray.log" "$WORK/v2ray-access.log")
  in_s v2ray -config "$WORK/v2ray.json" >"$WORK/v2ray.out" 2>&1 &
  e2e_wait_listen "$SS_V2RAY" "$S_ADDR4" || fail "v2ray does not listen on $S_ADDR4 port $SS_V2RAY"
}

# ss_up NAME ADDR PORT METHOD [PASSWORD]: an [upstream] section.
ss_up() {
  printf '%s\n' "" "[upstream $1]" "type = shadowsocks" "address = $2" "port = $3" "method = $4" \
    "password = ${5:-$SS_PASS}"
}

# ss_udp_misses LOG HOST PORT: how many UDP relays to HOST:PORT ss-server -v logged.
ss_udp_misses() { grep -cE "\[udp\] cache miss: \[?$2\]?:$3 " "$WORK/$1.log" || true; }

# UDP through the three kinds of server: echoes byte for byte, DNS answers,
# each carried by the server its rule names; the wrong password's get none.
ss_udp() {
  local ready=$WORK/udptarget.ready
  E2E_LOGS+=("$WORK/udptarget.log" "$WORK/dnsmasq.log")
  in_s "$PY" "$E2E_DIR/udptarget.py" --listen "$TGT4" --listen "$TGT6" --port $SS_UDP --port $SS_PORT2 \
    --port $SS_PORT3 --port $SS_PORT4 --ready-file "$ready" >"$WORK/udptarget.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $ready ]] && break; sleep 0.1; done
  [[ -s $ready ]] || fail "udptarget.py did not start"
  start_dnsmasq
  local l
  for l in chacha aes128 aes256; do
    grep -q "UDP relay enabled" "$WORK/$l.log" || fail "ss-server $l runs without its UDP relay (-u)"
  done
  # At most 1400 bytes: ss-server 3.3.5 reads datagrams into a 2.8 KB buffer
  # and sends its replies with don't-fragment ("remote_recv_sendto: Message
  # too long" over the link's MTU); s5tund itself seals up to 65507 bytes.
  uclient echo --host "$TGT4" --port $SS_UDP --sizes 1,100,1400 --sources 2 --rounds 2 --retry-for "$T_START"
  uclient echo --host "$TGT6" --port $SS_UDP --sizes 1,100,1400 --sources 2 --rounds 2 --retry-for "$T_START"
  uclient echo --host "$TGT4" --port $SS_PORT2 --sizes 1,100,1400 --sources 2 --retry-for "$T_START"
  local a4 a6
  a4=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=2 +short "@$TGT4" www.example.test A)
  a6=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=2 +short "@$TGT6" www.example.test AAAA)
  [[ $a4 == "$TGT4" && $a6 == "$TGT6" ]] || fail "dig through Shadowsocks: A '$a4' (want $TGT4), AAAA '$a6' (want $TGT6)"
  local u4 u6 d4 d6
  u4=$(ss_udp_misses chacha "$TGT4" $SS_UDP)
  d4=$(ss_udp_misses chacha "$TGT4" 53)
  u6=$(ss_udp_misses aes128 "$TGT6" $SS_UDP)
  d6=$(ss_udp_misses aes128 "$TGT6" 53)
  ((u4 >= 1 && d4 >= 1 && u6 >= 1 && d6 >= 1)) ||
    fail "ss-server's UDP relays: chacha $u4 to $TGT4:$SS_UDP, $d4 to :53; aes128 $u6 to [$TGT6]:$SS_UDP, $d6 to :53"
  grep -q "accepted udp:$TGT4:$SS_PORT2" "$WORK/v2ray-access.log" || fail "v2ray logged no UDP flow to $TGT4:$SS_PORT2"
  grep -q "query\[A\] www.example.test" "$WORK/dnsmasq.log" || fail "dnsmasq logged no query"
  log "UDP: echo and DNS through chacha20 ($u4, $d4), aes-128-gcm ($u6, $d6, IPv6), v2ray ($(grep -c 'accepted udp:' "$WORK/v2ray-access.log"))"

  # The wrong password: ss-server cannot open the datagrams and drops them;
  # the client hears nothing, and the right ones still go through after.
  local out
  out=$(CLIENT_T=20 uclient --timeout 2 echo --host "$TGT4" --port $SS_PORT3 --sizes 100 --tries 3 2>&1) &&
    fail "an echo through the wrong password came back: $(oneline "$out")"
  local sus
  sus=$(grep -c "suspicious UDP packet" "$WORK/aes128.log" || true)
  ((sus >= 3)) || fail "ss-server aes128 refused $sus of the wrong password's 3 datagrams"
  uclient echo --host "$TGT4" --port $SS_UDP --sizes 100 --retry-for "$T_START"
  log "UDP with a wrong password: ss-server refused them ($sus), no reply ($(oneline "$out" | tail -c 120)); s5tund goes on"
}

# ss22_count LOG WHAT: how many lines of the 2022 server log LOG are WHAT.
ss22_count() { grep -cxF "$2" "$WORK/$1.log" || true; }

# Shadowsocks 2022 over UDP and with identity headers, to T22 (its own
# dnsmasq and echo): DNS and an echo through aes-256-gcm; an echo through
# chacha20 (XChaCha20-Poly1305), its server answering twice (the second
# dropped as a replay, counted); TCP and UDP through a multi-user server.
ss22_udp() {
  local ready=$WORK/udptarget22.ready
  E2E_LOGS+=("$WORK/udptarget22.log" "$WORK/dnsmasq22.log")
  in_s "$PY" "$E2E_DIR/udptarget.py" --listen "$T22" --port $SS_UDP --port $SS_PORT7 --port $SS_PORT8 \
    --ready-file "$ready" >"$WORK/udptarget22.log" 2>&1 &
  ip netns exec "$NS_S" dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces --listen-address="$T22" \
    --except-interface=veth0 --address=/example.test/"$T22" --pid-file="$WORK/dnsmasq22.pid" --log-queries \
    --log-facility=- --user=root --group=root >"$WORK/dnsmasq22.log" 2>&1 &
  for _ in $(seq $((T_START * 10))); do [[ -s $ready ]] && break; sleep 0.1; done
  [[ -s $ready ]] || fail "udptarget.py on $T22 did not start"
  uclient echo --host "$T22" --port $SS_UDP --sizes 1,100,1400,8000 --sources 2 --rounds 2 --retry-for "$T_START"
  local a
  a=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=2 +short "@$T22" www.example.test A)
  [[ $a == "$T22" ]] || fail "dig through Shadowsocks 2022: A '$a' (want $T22)"
  uclient echo --host "$T22" --port $SS_PORT7 --sizes 1,100,1400 --sources 2 --rounds 2 --retry-for "$T_START"
  uclient echo --host "$T22" --port $SS_PORT8 --sizes 1,100,1400 --sources 2 --retry-for "$T_START"
  client --host "$T22" --port $SS_PORT8 echo --count 3 >/dev/null
  client --host "$T22" --port $SS_PORT8 bulk --size 1M --upload-mode length >/dev/null
  local u d c e t ut
  u=$(ss22_count ss2022 "udp to $T22:$SS_UDP")
  d=$(ss22_count ss2022 "udp to $T22:53")
  c=$(ss22_count ss2022c "udp to $T22:$SS_PORT7")
  e=$(ss22_count ss2022eih "udp to $T22:$SS_PORT8")
  ut=$(ss22_count ss2022eih "udp user 1")
  t=$(ss22_count ss2022eih "user 1")
  ((u >= 1 && d >= 1 && c >= 1 && e >= 1 && ut >= 1 && t >= 2)) ||
    fail "the 2022 servers: aes-256 $u to :$SS_UDP, $d to :53; chacha20 $c; multi-user $e (udp user 1: $ut, tcp user 1: $t)"
  grep -q "query\[A\] www.example.test" "$WORK/dnsmasq22.log" || fail "dnsmasq on $T22 logged no query"
  ! grep -q "refused\|failed\|no user" "$WORK/ss2022.log" "$WORK/ss2022c.log" "$WORK/ss2022eih.log" ||
    fail "a 2022 server refused: $(oneline "$(grep -h "refused\|failed\|no user" "$WORK"/ss2022*.log)")"
  local causes
  causes=$(ss_causes ss22c)
  [[ $causes =~ ^([0-9]+)\ 0\ ([0-9]+)\ 0$ && ${BASH_REMATCH[2]} -ge 1 ]] ||
    fail "ss22c's stream_bad, ss_bad_tag, ss_replay, ss_clock_skew after duplicated answers: $causes"
  e2e_wait_log "$S5LOG" "warn  q[0-9] upstream ss22c: Shadowsocks 2022 UDP datagram from the server dropped: its packet id was seen, or is too old \(a replay\)" 5 >/dev/null
  log "2022 UDP: echo ($u) and DNS ($d) through aes-256-gcm, echo through chacha20 ($c; duplicates dropped: $causes), multi-user TCP ($t) and UDP ($e)"
}

# A server whose UDP answer does not open (zeros): dropped, one warning
# naming the upstream and the fix, counted in its stream_bad.
ss_udp_tamper() {
  in_s "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    _, a = s.recvfrom(65535)
    s.sendto(bytes(32 + 7 + 5 + 16), a)' "$S_ADDR4" $SS_TAMPER >/dev/null 2>&1 &
  local out bad
  out=$(CLIENT_T=20 uclient --timeout 2 echo --host "$TGT4" --port $SS_PORT4 --sizes 5 --tries 2 2>&1) &&
    fail "an echo through the tampering server came back: $(oneline "$out")"
  e2e_wait_log "$S5LOG" "warn  q[0-9] upstream tamper: Shadowsocks UDP datagram from the server dropped: its tag failed authentication: .*check \[upstream tamper\] password and method" 5 >/dev/null
  bad=$("$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
print([u for u in json.load(sys.stdin)["upstreams"] if u["name"] == "tamper"][0]["stream_bad"])')
  ((bad >= 2)) || fail "tamper's stream_bad is $bad after its UDP answers"
  log "UDP answers that do not open: dropped, warned, counted (stream_bad $bad)"
}

# ss_causes NAME: upstream NAME's "stream_bad ss_bad_tag ss_replay ss_clock_skew" (--stats --json).
ss_causes() {
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
u = [u for u in json.load(sys.stdin)["upstreams"] if u["name"] == sys.argv[1]][0]
print(u["stream_bad"], u["ss_bad_tag"], u["ss_replay"], u["ss_clock_skew"])' "$1"
}

# ss_connects LOG HOST PORT: how many "connect to HOST:PORT" ss-server logged.
ss_connects() { grep -cF "connect to $2:$3" "$WORK/$1.log" || true; }

# ss_accepted LOG: how many connections ss-server -v accepted.
ss_accepted() { grep -c "new connection from client" "$WORK/$1.log" || true; }

# The warm pool holds Shadowsocks connections: chacha's (pool = SS_POOL per
# worker) are at ss-server before any flow, nothing sent on them (no
# "connect to" yet: the salt and the target go with a flow's first chunk).
# Then new connections to that server are dropped (its SYNs, in S) and a
# flow still goes through: on a connection made before it, which ss-server
# did not accept anew (its count of accepted ones unchanged), taken from
# the pool (pool_hits). The pool's refills meanwhile wait; the rule goes.
ss_pooled() {
  local want=$((SS_POOL * QUEUES)) n=0 acc hits other
  for _ in $(seq $((T_START * 10))); do # its log follows the kernel's accept
    n=$(in_s ss -Htn state established "( sport = :$SS_CHACHA )" | grep -c . || true)
    acc=$(ss_accepted chacha)
    other=$(ss_accepted aes256) # its pool: the default, 4 per worker
    ((n >= want && acc >= want && other >= 4 * QUEUES)) && break
    sleep 0.1
  done
  ((n >= want && other >= 4 * QUEUES)) ||
    fail "before any flow ss-server chacha holds $n connections (the pool's $want expected), aes256 accepted $other"
  ((acc == n)) && ! grep -q "connect to" "$WORK/chacha.log" ||
    fail "before any flow ss-server chacha accepted $acc connections ($n open) and logged: $(grep "connect to" "$WORK/chacha.log" | head -3)"
  in_s nft -f - <<NFT || fail "nft: dropping new connections to ss-server chacha"
table inet sspool {
  chain input { type filter hook input priority 0; tcp dport $SS_CHACHA tcp flags & (syn | ack) == syn drop; }
}
NFT
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  hits=$(ss_counter pool_hits)
  ((hits >= 1 && $(ss_accepted chacha) == acc && $(ss_connects chacha "$TGT4" "$TGT_PORT") >= 1)) ||
    fail "a flow with new connections to chacha dropped: pool_hits $hits, ss-server accepted $(ss_accepted chacha) (before: $acc), connects $(ss_connects chacha "$TGT4" "$TGT_PORT")"
  # The flow took chacha's and left the other upstreams' warm connections alone.
  (($(ss_accepted aes256) == other)) ||
    fail "a flow through chacha made aes256's pool reconnect: it accepted $(ss_accepted aes256), $other before"
  in_s nft delete table inet sspool
  log "warm pool: $n Shadowsocks connections at ss-server before any flow, none used; a flow with new ones dropped went on one of them (pool_hits $hits)"
}

# ss_counter NAME: s5tund's counter NAME over the queues (--stats --json).
ss_counter() {
  "$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"][sys.argv[1]])' "$1"
}

case_upstream_ss() {
  ss_server chacha "$S_ADDR6" $SS_CHACHA chacha20-ietf-poly1305
  ss_server aes128 "$S_ADDR4" $SS_AES128 aes-128-gcm
  ss_server aes256 "$S_ADDR4" $SS_AES256 aes-256-gcm
  start_v2ray
  local ready=$WORK/target2.ready
  E2E_LOGS+=("$WORK/target2.log")
  in_s "$PY" "$E2E_DIR/target.py" --listen "$TGT4" --port $SS_PORT2 --ready-file "$ready" >"$WORK/target2.log" 2>&1 &
  e2e_wait_listen $SS_PORT2 "$TGT4" || fail "the second target does not listen"
  E2E_LOGS+=("$WORK/target3.log" "$WORK/ss2022.log" "$WORK/ss2022skew.log")
  in_s "$PY" "$E2E_DIR/target.py" --listen "$TGT4" --port $SS_PORT5 --ready-file "$WORK/target3.ready" \
    >"$WORK/target3.log" 2>&1 &
  e2e_wait_listen $SS_PORT5 "$TGT4" || fail "the third target does not listen"
  in_s ip addr add "$T22/32" dev lo
  E2E_LOGS+=("$WORK/ss2022c.log" "$WORK/ss2022eih.log" "$WORK/target22.log")
  in_s "$PY" "$E2E_DIR/target.py" --listen "$T22" --port $SS_PORT8 --ready-file "$WORK/target22.ready" \
    >"$WORK/target22.log" 2>&1 &
  in_s "$PY" "$E2E_DIR/ss2022srv.py" --listen "$S_ADDR4" --port $SS_2022 --method 2022-blake3-aes-256-gcm \
    --key "$SS_KEY22" --udp >"$WORK/ss2022.log" 2>&1 &
  in_s "$PY" "$E2E_DIR/ss2022srv.py" --listen "$S_ADDR4" --port $SS_2022C --method 2022-blake3-chacha20-poly1305 \
    --key "$SS_KEY22" --udp --dup >"$WORK/ss2022c.log" 2>&1 &
  in_s "$PY" "$E2E_DIR/ss2022srv.py" --listen "$S_ADDR4" --port $SS_2022EIH --method 2022-blake3-aes-128-gcm \
    --key "$SS_KEY22S" --users "$SS_USER0,$SS_USER1" --udp >"$WORK/ss2022eih.log" 2>&1 &
  e2e_wait_listen $SS_2022 "$S_ADDR4" || fail "the 2022 server does not listen"
  e2e_wait_listen $SS_2022C "$S_ADDR4" || fail "the chacha20 2022 server does not listen"
  e2e_wait_listen $SS_2022EIH "$S_ADDR4" || fail "the multi-user 2022 server does not listen"
  e2e_wait_listen $SS_PORT8 "$T22" || fail "the target on $T22 does not listen"
  in_s "$PY" "$E2E_DIR/ss2022srv.py" --listen "$S_ADDR4" --port $SS_2022SKEW --method 2022-blake3-aes-128-gcm \
    --key "$SS_KEY22S" --skew 100 >"$WORK/ss2022skew.log" 2>&1 &
  e2e_wait_listen $SS_2022SKEW "$S_ADDR4" || fail "the skewed 2022 server does not listen"

  local ini=$WORK/ss.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  {
    printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "http = 127.0.0.1:$SS_METRICS" "" "[dns]" "address = $DNS_ADDR" \
      "network = $DNS_POOL" "" "[rules]" "default = chacha" "rule = domain:target.test -> aes256" \
      "rule = dst:$TGT4/32 port:$SS_PORT2 -> v2ray" "rule = dst:$TGT4/32 port:$SS_PORT3 -> wrongpw" \
      "rule = dst:$TGT4/32 port:$SS_PORT4 -> tamper" "rule = dst:$TGT4/32 port:$SS_PORT5 -> ss22" \
      "rule = dst:$TGT4/32 port:$SS_PORT6 -> ss22skew" "rule = dst:$T22/32 port:$SS_PORT7 -> ss22c" \
      "rule = dst:$T22/32 port:$SS_PORT8 -> ss22eih" "rule = dst:$T22/32 -> ss22" "rule = dst:$TGT6/128 proto:udp -> aes128" \
      "rule = dst:$TGT6/128 -> g" "" "[group g]" "members = later, aes128" "" "[balance]" "fail-after = 1" \
      "check-interval = 1" "check-timeout = 2" "check-target = $TGT4:$TGT_PORT"
    ss_up chacha "$S_ADDR6" $SS_CHACHA chacha20-ietf-poly1305
    echo "pool = $SS_POOL"
    ss_up aes128 "$S_ADDR4" $SS_AES128 aes-128-gcm
    ss_up aes256 "$S_ADDR4" $SS_AES256 aes-256-gcm
    ss_up v2ray "$S_ADDR4" $SS_V2RAY aes-256-gcm
    ss_up wrongpw "$S_ADDR4" $SS_AES128 aes-128-gcm not-the-password
    ss_up later "$S_ADDR4" $SS_LATER aes-128-gcm
    ss_up tamper "$S_ADDR4" $SS_TAMPER aes-256-gcm
    ss_up ss22 "$S_ADDR4" $SS_2022 2022-blake3-aes-256-gcm "$SS_KEY22"
    ss_up ss22skew "$S_ADDR4" $SS_2022SKEW 2022-blake3-aes-128-gcm "$SS_KEY22S"
    ss_up ss22c "$S_ADDR4" $SS_2022C 2022-blake3-chacha20-poly1305 "$SS_KEY22"
    ss_up ss22eih "$S_ADDR4" $SS_2022EIH 2022-blake3-aes-128-gcm "$SS_KEY22S:$SS_USER1"
  } >>"$ini"
  local shown # whole, then matched: grep -q would end the pipe early (SIGPIPE, pipefail)
  shown=$("$S5TUND" --config "$ini" --check-config) || fail "--check-config failed"
  grep -q "^password = \*\*\*$" <<<"$shown" || fail "--check-config does not hide the password"
  ! grep -qF "$SS_PASS" <<<"$shown" || fail "--check-config shows the password"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  e2e_wait_log "$S5LOG" "upstream chacha: Shadowsocks \[$S_ADDR6\]:$SS_CHACHA" 5 >/dev/null
  ss_pooled

  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  e2e_no_pair_held 4 --host "$TGT4"
  client --host "$TGT4" bulk --size 8M --upload-mode length >/dev/null
  client --host "$TGT6" bulk --size 8M --upload-mode length >/dev/null
  local addr
  addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
  [[ -n $addr ]] || fail "the mapped resolver did not answer target.test"
  client --host "$addr" bulk --size 8M --upload-mode length >/dev/null
  client --host "$TGT4" --port $SS_PORT2 bulk --size 8M --upload-mode length >/dev/null
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  client --host "$TGT4" --port $SS_PORT5 echo --count 3 >/dev/null
  client --host "$TGT4" --port $SS_PORT5 bulk --size 8M --upload-mode length >/dev/null
  local c22
  c22=$(grep -cF "connect to $TGT4:$SS_PORT5" "$WORK/ss2022.log" || true)
  ((c22 >= 2)) || fail "the 2022 server logged $c22 connects to $TGT4:$SS_PORT5"
  ! grep -q "session failed" "$WORK/ss2022.log" || fail "the 2022 server: $(oneline "$(cat "$WORK/ss2022.log")")"
  log "Shadowsocks 2022 (aes-256-gcm): $c22 flows carried by the tests' own server, bulk SHA-256 equal"

  ss_udp
  ss22_udp

  local c4 c6 cn
  c4=$(ss_connects chacha "$TGT4" "$TGT_PORT")
  c6=$(ss_connects aes128 "[$TGT6]" "$TGT_PORT")
  cn=$(ss_connects aes256 target.test "$TGT_PORT")
  ((c4 >= 2 && c6 >= 1 && cn >= 1)) ||
    fail "ss-server logs: chacha $c4 connects to $TGT4, aes128 $c6 to $TGT6, aes256 $cn to target.test"
  ((c6 == $(grep -c "connect to" "$WORK/aes128.log"))) || fail "aes128 carried flows it was not given"
  grep -q "accepted tcp:$TGT4:$SS_PORT2" "$WORK/v2ray-access.log" || fail "v2ray logged no flow to $TGT4:$SS_PORT2"
  log "ss-server carried chacha20 $c4, aes-128-gcm $c6 (IPv6 target), aes-256-gcm $cn (by name); v2ray $(grep -c accepted "$WORK/v2ray-access.log")"
  local warns # later's fall is expected (no server yet): nothing else at warn
  warns=$(e2e_s5_warns | grep -v "upstream later is down: 1 set-ups failed in a row (connect" |
    grep -v "upstream ss22c: Shadowsocks 2022 UDP datagram from the server dropped: its packet id was seen" || true)
  [[ -z $warns ]] || fail "s5tund logged errors or warnings: $(oneline "$warns")"

  # The wrong password: ss-server cannot open our chunks and says nothing
  # until we hang up (probe resistance), so the client gives up (5 s); then
  # the session ends and one warning names the upstream and the fix.
  local out
  out=$(client --host "$TGT4" --port $SS_PORT3 echo --count 1 --timeout 5 2>&1 || true)
  e2e_wait_log "$S5LOG" "upstream wrongpw: Shadowsocks .*check \[upstream wrongpw\] password and method" 5 >/dev/null
  local bad
  bad=$("$S5TUND" --stats "$WORK/stats.sock" --json | "$PY" -c '
import json, sys
print([u for u in json.load(sys.stdin)["upstreams"] if u["name"] == "wrongpw"][0]["stream_bad"])')
  ((bad >= 1)) || fail "wrongpw's stream_bad is $bad"
  local sid # the session ended in s5tund too
  sid=$(grep -oE "q[0-9]+ s[0-9]+ new [0-9.:]+ -> $TGT4:$SS_PORT3" "$S5LOG" | tail -n 1 | cut -d" " -f1,2)
  e2e_wait_log "$S5LOG" " $sid closed" 5 >/dev/null
  ! grep -qF "$SS_PASS" "$S5LOG" && ! grep -qF not-the-password "$S5LOG" || fail "a password in s5tund's log"
  log "wrong password: warned and counted ($bad); the client saw: $(oneline "$out" | tail -c 200)"

  # A server whose answer does not open (a salt and a chunk of zeros): one
  # warning naming the upstream and the fix, counted; the client's connection ends.
  in_s "$PY" -c '
import socket, sys, threading
def answer(c):  # each connection on its own: the warm pool holds some idle
    if c.recv(4096):  # one the pool closed unused gets nothing
        c.sendall(bytes(32 + 18 + 5 + 16))
    c.close()
s = socket.create_server((sys.argv[1], int(sys.argv[2])))
while True:
    threading.Thread(target=answer, args=(s.accept()[0],), daemon=True).start()' "$S_ADDR4" $SS_TAMPER >/dev/null 2>&1 &
  e2e_wait_listen $SS_TAMPER "$S_ADDR4" || fail "the tampering server does not listen"
  out=$(client --host "$TGT4" --port $SS_PORT4 echo --count 1 --timeout 5 2>&1 || true)
  [[ $out != *TimeoutError* ]] || fail "the client's connection through a tampered stream did not end: $out"
  [[ $out == *"reset by peer"* ]] || fail "a tampered stream ended for the client as a clean end, not a reset: $out"
  e2e_wait_log "$S5LOG" "warn  q[0-9] upstream tamper: Shadowsocks stream from the server: a chunk failed authentication: .*check \[upstream tamper\] password and method.*; connection closed" 5 >/dev/null
  bad=$(ss_causes tamper)
  [[ $bad == "1 1 0 0" ]] || fail "tamper's stream_bad, ss_bad_tag, ss_replay, ss_clock_skew: $bad"
  log "a stream that does not open: warned, counted, the client saw: $(oneline "$out" | tail -c 120)"
  ss_udp_tamper

  # 2022: a server whose clock is 100 s ahead: one warning with the fix, counted.
  out=$(client --host "$TGT4" --port $SS_PORT6 echo --count 1 --timeout 5 2>&1 || true)
  [[ $out != *TimeoutError* ]] || fail "the client's connection through a skewed 2022 stream did not end: $out"
  e2e_wait_log "$S5LOG" "warn  q[0-9] upstream ss22skew: Shadowsocks 2022 stream from the server: the response's timestamp is more than 30 s from this host's clock: set this host's clock .*; connection closed" 5 >/dev/null
  bad=$(ss_causes ss22skew)
  [[ $bad == "1 0 0 1" ]] || fail "ss22skew's stream_bad, ss_bad_tag, ss_replay, ss_clock_skew: $bad"
  local metrics
  metrics=$(ip netns exec "$NS_C" curl -sf "http://127.0.0.1:$SS_METRICS/metrics") || fail "no metrics"
  grep -qx 's5tund_upstream_ss_failures_total{upstream="ss22skew",cause="clock_skew"} 1' <<<"$metrics" ||
    fail "Prometheus: no clock_skew failure of ss22skew: $(grep ss_failures <<<"$metrics" | tr '\n' ' ')"
  grep -qx 's5tund_upstream_ss_failures_total{upstream="tamper",cause="bad_tag"} 1' <<<"$metrics" ||
    fail "Prometheus: no bad_tag failure of tamper: $(grep ss_failures <<<"$metrics" | tr '\n' ' ')"
  grep -qE '^s5tund_upstream_ss_failures_total\{upstream="ss22c",cause="replay"\} [1-9][0-9]*$' <<<"$metrics" ||
    fail "Prometheus: no replay failure of ss22c (2022 UDP): $(grep ss_failures <<<"$metrics" | tr '\n' ' ')"
  log "2022 clock skew: warned, counted, the client saw: $(oneline "$out" | tail -c 120)"

  e2e_wait_log "$S5LOG" "upstream later is down" 5 >/dev/null
  SS_PASS=not-the-password ss_server later-wrong "$S_ADDR4" $SS_LATER aes-128-gcm
  local wrong=$SS_PID
  e2e_wait_log "$S5LOG" "upstream later: (still down, now for [a-z]+: )?check failed: (no answer within check-timeout|the Shadowsocks server hung up)" 10 >/dev/null
  grep -q "authentication error" "$WORK/later-wrong.log" || fail "the check did not reach the wrong-password server"
  ! grep -q "upstream later is up again" "$S5LOG" || fail "later is up with a wrong password"
  kill "$wrong"
  wait "$wrong" 2>/dev/null || true
  ss_server later "$S_ADDR4" $SS_LATER aes-128-gcm
  e2e_wait_log "$S5LOG" "upstream later is up again" 10 >/dev/null
  client --host "$TGT6" echo --count 3 >/dev/null
  (($(ss_connects later "[$TGT6]" "$TGT_PORT") >= 1)) || fail "later carried no flow to $TGT6 once up"
  log "failover: later down (no server), kept down by its check with a wrong password, up with the right one"
  e2e_stop_s5tund
}
