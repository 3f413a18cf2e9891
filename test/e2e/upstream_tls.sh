# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# TLS to the proxy (run.sh runs it; ctest e2e.upstream_tls.process.q2):
#
#   upstream_tls  a test CA and certificates made here (the proxy's address,
#                 another name, an expired one); squid (squid-openssl) with
#                 https_port and Basic auth, stunnel4 in front of danted.
#                 Upstreams in failover order: a wrong CA, a wrong name, an
#                 expired certificate (each refused with one log line), then
#                 squid over HTTPS: the client's connections are carried
#                 (squid's access log). Then SOCKS5 inside TLS (danted's
#                 log), TLS resumed on the pool's next connections, the
#                 warning about an upstream with tls-verify = false. A
#                 capture on the veth holds neither the password nor the
#                 destination's name. Seen: each refusal's cause in one
#                 warn line with its fix and in --stats, Prometheus and
#                 --stats' counters; the version, cipher and verified
#                 name. A client certificate: stunnel with verify = 2
#                 refuses the upstream without one (before squid in the
#                 failover order) and takes dante's with one; a key that is
#                 not the certificate's is a config error.

TLS_GOOD=3129
TLS_NAME=3130
TLS_EXPIRED=3131
STUNNEL_PORT=1443
STUNNEL_CERT_PORT=1444 # verify = 2: a client certificate signed by the test CA, or refused
METRICS_PORT=9554      # [stats] http, on the client namespace's loopback

# shellcheck source=dnslib.sh
source "$HERE/dnslib.sh"

setup_upstream_tls() {
  local t
  for t in openssl stunnel4 tcpdump squid; do
    command -v "$t" >/dev/null 2>&1 || fail "missing tool: $t (run 'make deps')"
  done
  udp_install_exit # dnslib.sh: S's hosts file (target.test), removed on exit
  e2e_topology_up
  e2e_start_target
  udp_hosts
}

# tls_cert NAME SAN [DAYS]: NAME.pem/NAME.key signed by the test CA.
tls_cert() {
  local d=$WORK/pki
  openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$2" >"$d/$1.ext"
  openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days "${3:-2}" \
    -extfile "$d/$1.ext" -out "$d/$1.pem" 2>/dev/null || fail "openssl x509 for $1"
}

make_pki() {
  local d=$WORK/pki
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=s5tund e2e CA" -days 2 -keyout "$d/ca.key" \
    -out "$d/ca.pem" 2>/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=another CA" -days 2 -keyout "$d/other.key" \
    -out "$d/other.pem" 2>/dev/null
  tls_cert good "IP:$S_ADDR4,DNS:proxy.test"
  tls_cert name "DNS:other.test"
  tls_cert expired "IP:$S_ADDR4" -1
  tls_cert client "DNS:client.test"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$d/stray.key" 2>/dev/null ||
    fail "openssl genpkey"
  openssl x509 -checkend 0 -noout -in "$d/expired.pem" >/dev/null && fail "the expired certificate is not"
  chmod 644 "$d"/*
  log "test CA and certificates made"
}

start_stunnel() {
  cat >"$WORK/stunnel.conf" <<EOF
foreground = yes
pid =
output = $WORK/stunnel.log
debug = 5
[socks]
accept = $S_ADDR4:$STUNNEL_PORT
connect = $S_ADDR4:$DANTE_PORT
cert = $WORK/pki/good.pem
key = $WORK/pki/good.key
[socks-cert]
accept = $S_ADDR4:$STUNNEL_CERT_PORT
connect = $S_ADDR4:$DANTE_PORT
cert = $WORK/pki/good.pem
key = $WORK/pki/good.key
verify = 2
CAfile = $WORK/pki/ca.pem
EOF
  E2E_LOGS+=("$WORK/stunnel.log")
  in_s stunnel4 "$WORK/stunnel.conf" >/dev/null 2>&1 &
  e2e_wait_listen "$STUNNEL_PORT" "$S_ADDR4" || fail "stunnel does not listen on $S_ADDR4:$STUNNEL_PORT"
  e2e_wait_listen "$STUNNEL_CERT_PORT" "$S_ADDR4" || fail "stunnel does not listen on $S_ADDR4:$STUNNEL_CERT_PORT"
}

# holds FILE WHAT STRING...: until FILE holds every STRING (T_START).
holds() {
  local f=$1 what=$2 ok s
  shift 2
  for _ in $(seq $((T_START * 10))); do
    ok=1
    for s; do grep -aqF -- "$s" "$f" 2>/dev/null || ok=0; done
    ((ok)) && return 0
    sleep 0.1
  done
  fail "$what: not in $(basename "$f") after ${T_START}s"
}

# start_dump NAME FILTER: tcpdump on S's veth0 into NAME.pcap (dump: its
# pid), once it says it listens.
start_dump() {
  in_s tcpdump -i veth0 -U -s 0 -w "$WORK/$1.pcap" "$2" 2>"$WORK/$1.err" &
  dump=$!
  holds "$WORK/$1.err" "tcpdump's start" "listening on veth0"
}

# tls_up NAME TYPE PORT [KEY=VALUE...]: an [upstream] section over TLS.
tls_up() {
  printf '%s\n' "" "[upstream $1]" "type = $2" "address = $S_ADDR4" "port = $3" "tls = true"
  shift 3
  [[ $* == *tls-ca-file=* ]] || echo "tls-ca-file = $WORK/pki/ca.pem"
  local kv
  for kv; do printf '%s\n' "${kv/=/ = }"; done
}

# OpenSSL is loaded when an upstream has tls = true (core/base/ossl.c), by
# the supervisor before it forks: every process of the daemon maps it.
maps_openssl() {
  local p lib
  for p in "$S5PID" $(e2e_workers); do
    for lib in libssl.so.3 libcrypto.so.3; do
      grep -q "/$lib\$" "/proc/$p/maps" || fail "pid $p does not map $lib (tls = true)"
    done
  done
  log "libssl and libcrypto mapped in the supervisor and its $(e2e_workers | wc -l) workers"
}

# How many of the daemon's processes (PIDS...) map libssl.so.3.
n_libssl() {
  local p n=0
  for p; do grep -q '/libssl\.so\.3$' "/proc/$p/maps" && n=$((n + 1)); done
  echo $n
}

# A reload that brings the first tls = true: the supervisor loads OpenSSL
# on the reload's thread; a worker process forked before it loads it
# itself at its first TLS connection. Before it, no process maps it.
reload_to_tls() {
  local ini=$WORK/tls3.ini n
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini.base"
  { cat "$ini.base"; printf '%s\n' "" "[upstream plain]" "type = socks5" "address = $S_ADDR4" "port = $DANTE_PORT"; } >"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  n=$(n_libssl "$S5PID" $(e2e_workers))
  ((n == 0)) || fail "no upstream with tls yet, and $n processes map libssl.so.3"
  { cat "$ini.base"; tls_up dante socks5 $STUNNEL_PORT; } >"$ini.new"
  mv "$ini.new" "$ini"
  kill -HUP "$S5PID"
  e2e_wait_log "$S5LOG" "configuration reloaded" 10 >/dev/null
  (($(n_libssl "$S5PID") == 1)) || fail "the reload to tls = true: the supervisor does not map libssl.so.3"
  client --host "$TGT4" echo --count 3 --timeout 10 >/dev/null
  e2e_wait_log "$S5LOG" "upstream dante: TLS TLSv1\.[23] .* verified $S_ADDR4" 5 >/dev/null
  n=$(n_libssl $(e2e_workers))
  ((n >= 1)) || [[ $MODE == thread ]] || fail "the reload to tls = true: no worker process maps libssl.so.3"
  log "reload to tls = true: libssl in the supervisor and $n of $(e2e_workers | wc -l) workers, none before"
  e2e_stop_s5tund
}

# libssl.so.3 that cannot be loaded (/dev/null mounted over it, in a mount
# namespace of s5tund's own): the key that needs it named, exit 1 before
# anything starts (no device).
no_libssl() {
  local lib rc=0
  lib=$(ldconfig -p | awk '$1 == "libssl.so.3" { print $NF; exit }')
  [[ -n $lib ]] || fail "ldconfig knows no libssl.so.3"
  lib=$(readlink -f "$lib")
  ip netns exec "$NS_C" timeout -k 5 "$T_STEP" unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" --config "$3"' \
    sh "$lib" "$S5TUND" "$1" >"$WORK/nolibssl.log" 2>&1 || rc=$?
  ((rc == 1)) || fail "without libssl.so.3: exit $rc, expected 1 ($(oneline "$(cat "$WORK/nolibssl.log")"))"
  grep -qE "error +main \[upstream wrongca\] tls = true needs libssl\.so\.3: .*libssl\.so\.3: " "$WORK/nolibssl.log" ||
    fail "without libssl.so.3: no line naming [upstream wrongca] tls = true: $(oneline "$(cat "$WORK/nolibssl.log")")"
  ! e2e_tun_exists || fail "without libssl.so.3: the device was made"
  log "without libssl.so.3: $(grep -o 'tls = true needs.*' "$WORK/nolibssl.log"), exit 1"
}

# stats_json PY: PY's print over --stats --json (as u: the upstream named by $1 in PY's first line).
up_json() {
  "$S5TUND" --stats "$WORK/stats.sock" --json |
    "$PY" -c "import json, sys; u = [u for u in json.load(sys.stdin)['upstreams'] if u['name'] == '$1'][0]; $2"
}

# The refusals of the first run, each seen: one warn line per upstream and
# cause with its fix, the counter of its cause (--stats, Prometheus); the
# good upstream's state (version, cipher, verified name) in both, and one
# info line for it of all the workers' handshakes.
tls_seen_refusals() {
  local up cause fix n metrics
  metrics=$(ip netns exec "$NS_C" curl -sf "http://127.0.0.1:$METRICS_PORT/metrics") || fail "no metrics"
  for up in wrongca:ca:"set tls-ca-file to the CA" wrongname:name:"set tls-server-name to a name it carries" \
    expired:expired:"renew the proxy's certificate" nocert:alert:"tls-cert-file"; do
    IFS=: read -r up cause fix <<<"$up"
    # TLS 1.3: the proxy checks our certificate after our handshake; its alert, or its reset first
    [[ $up == nocert ]] && ! grep -q "upstream nocert refused: .*\[alert\]" "$S5LOG" && cause=reset
    n=$(grep -cE "warn  .*TLS (handshake|connection) with upstream $up (failed|refused): .*\[$cause\]: .*$fix" "$S5LOG" || true)
    ((n == 1)) || fail "upstream $up: $n warn lines of cause $cause with its fix, want 1"
    n=$(up_json "$up" "print(u['tls_failed_$cause'])")
    ((n >= 1)) || fail "upstream $up: tls_failed_$cause is $n in --stats"
    grep -qE "^s5tund_upstream_tls_failures_total\{upstream=\"$up\",cause=\"$cause\"\} [1-9]" <<<"$metrics" ||
      fail "upstream $up: no s5tund_upstream_tls_failures_total of cause $cause"
  done
  grep -qE "TLS connection with upstream nocert refused: (the proxy sent alert certificate required|the proxy reset)" \
    "$S5LOG" || fail "nocert: the proxy's refusal is not named"
  grep -q "peer did not return a certificate" "$WORK/stunnel.log" ||
    fail "stunnel (verify = 2) logged no connection refused for its missing certificate"
  local bad
  bad=$(e2e_s5_warns | grep -vE "TLS (handshake|connection) with upstream (wrongca|wrongname|expired|nocert) " || true)
  [[ -z $bad ]] || fail "s5tund logged other errors or warnings: $(oneline "$bad")"
  local state
  state=$(up_json squid "print(u['tls_version'], u['tls_cipher'], u['tls_name'], u['tls_verified'])")
  [[ $state =~ ^TLSv1\.[23]\ [A-Z0-9_-]+\ $S_ADDR4\ True$ ]] || fail "squid's TLS state in --stats: $state"
  grep -qE "^s5tund_upstream_tls_info\{upstream=\"squid\",version=\"TLSv1\.[23]\",cipher=\"[A-Z0-9_-]+\",name=\"$S_ADDR4\",verified=\"true\"\} 1$" <<<"$metrics" ||
    fail "no s5tund_upstream_tls_info of squid"
  n=$(grep -cE "info  .*upstream squid: TLS TLSv" "$S5LOG" || true)
  ((n == 1)) || fail "squid's TLS state: $n info lines, want 1 (the first handshake of all workers')"
  [[ $("$S5TUND" --stats "$WORK/stats.sock") =~ $'\n'squid\ +TLSv1\.[23]\ [^$'\n']*\ yes\  ]] ||
    fail "no TLS row of squid in --stats"
  local b64 shown
  b64=$(printf '%s:%s' "$SQUID_USER" "$SQUID_PASS" | base64)
  ! grep -qF -e "$SQUID_PASS" -e "$b64" "$S5LOG" || fail "s5tund's log (debug) holds the password"
  shown=$("$S5TUND" --config "$WORK/tls.ini" --check-config | grep -c "^password = \*\*\*$" || true)
  ((shown == 4)) || fail "--check-config: $shown of the 4 passwords shown as ***"
  local all # whole, then matched: grep -q ending the pipe early would hide a match (SIGPIPE, pipefail)
  all=$("$S5TUND" --config "$WORK/tls.ini" --check-config) || fail "--check-config failed"
  ! grep -qF "$SQUID_PASS" <<<"$all" || fail "--check-config shows the password"
  log "refusals: one warn line each with its fix, counted by cause; squid: $state; no password in the log"
}

# A client key that is not the certificate's: refused at start (exit 2, file, line, key).
tls_key_mismatch() {
  local ini=$WORK/mismatch.ini out rc=0
  printf '%s\n' "[upstream a]" "type = socks5" "address = $S_ADDR4" "port = $STUNNEL_CERT_PORT" "tls = true" \
    "tls-cert-file = $WORK/pki/client.pem" "tls-key-file = $WORK/pki/stray.key" >"$ini"
  out=$("$S5TUND" --config "$ini" --check-config 2>&1) || rc=$?
  ((rc == 2)) || fail "a key not the certificate's: exit $rc, want 2 ($out)"
  [[ $out == *"mismatch.ini:7: [upstream a] tls-key-file: "*"does not match tls-cert-file"* ]] ||
    fail "a key not the certificate's: $out"
  log "a key not the certificate's: exit 2, $out"
}

# The bulk phase through the codec, no socket pair (e2e_no_pair_held):
# squid over TLS, not pooled (the pool's connections keep their pairs).
tls_direct() {
  local ini=$WORK/tls3.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES e2e_write_config "$ini"
  tls_up squid http $TLS_GOOD "username=$SQUID_USER" "password=$SQUID_PASS" "pool=0" >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  client --host "$TGT4" echo --count 1 --retry-for "$T_START" --timeout 10 >/dev/null
  e2e_no_pair_held 4 --host "$TGT4"
  client --host "$TGT4" bulk --size 4M --upload-mode length >/dev/null
  e2e_stop_s5tund
}

case_upstream_tls() {
  make_pki
  local p=$WORK/pki
  SQUID_EXTRA="https_port $S_ADDR4:$TLS_GOOD tls-cert=$p/good.pem tls-key=$p/good.key
https_port $S_ADDR4:$TLS_NAME tls-cert=$p/name.pem tls-key=$p/name.key
https_port $S_ADDR4:$TLS_EXPIRED tls-cert=$p/expired.pem tls-key=$p/expired.key" e2e_start_squid
  e2e_start_dante
  start_stunnel
  local dump
  start_dump veth tcp

  local ini=$WORK/tls.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  {
    printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "http = 127.0.0.1:$METRICS_PORT" "" "[dns]" \
      "address = $DNS_ADDR" "network = $DNS_POOL" "" "[balance]" "fail-after = 100"
    tls_up wrongca http $TLS_GOOD "tls-ca-file=$p/other.pem" "username=$SQUID_USER" "password=$SQUID_PASS"
    tls_up wrongname http $TLS_NAME "username=$SQUID_USER" "password=$SQUID_PASS"
    tls_up expired http $TLS_EXPIRED "username=$SQUID_USER" "password=$SQUID_PASS"
    tls_up nocert socks5 $STUNNEL_CERT_PORT # the proxy wants a client certificate
    tls_up squid http $TLS_GOOD "username=$SQUID_USER" "password=$SQUID_PASS"
  } >>"$ini"
  no_libssl "$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  maps_openssl
  e2e_wait_log "$S5LOG" "upstream squid: HTTP CONNECT $S_ADDR4:$TLS_GOOD over TLS with credentials" 5 >/dev/null
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  client --host "$TGT4" bulk --size 4M --upload-mode length >/dev/null
  local addr
  addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
  [[ -n $addr ]] || fail "the mapped resolver did not answer target.test"
  client --host "$addr" echo --count 3 >/dev/null
  e2e_wait_log "$S5LOG" "TLS handshake with upstream wrongca failed: certificate refused: unable to get local issuer certificate" 5 >/dev/null
  e2e_wait_log "$S5LOG" "TLS handshake with upstream wrongname failed: certificate refused: hostname mismatch|TLS handshake with upstream wrongname failed: certificate refused: IP address mismatch" 5 >/dev/null
  e2e_wait_log "$S5LOG" "TLS handshake with upstream expired failed: certificate refused: certificate has expired" 5 >/dev/null
  e2e_wait_log "$S5LOG" "upstream squid: TLS TLSv1\.[23] .* verified $S_ADDR4" 5 >/dev/null
  local tunnels
  tunnels=$(grep -c "TCP_TUNNEL/200 .* CONNECT $TGT4:$TGT_PORT $SQUID_USER " "$SQUID_LOG" || true)
  ((tunnels >= 1)) || fail "squid logged no CONNECT of $SQUID_USER over https_port"
  grep -q "TCP_TUNNEL/200 .* CONNECT target\.test:$TGT_PORT $SQUID_USER " "$SQUID_LOG" ||
    fail "squid logged no CONNECT by name"
  log "squid over HTTPS: $tunnels CONNECTs; wrong CA, wrong name, expired refused and failed over"
  tls_seen_refusals
  e2e_stop_s5tund
  tls_direct

  # SOCKS5 inside TLS: stunnel in front of danted.
  ini=$WORK/tls2.ini
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_LOG_LEVEL=debug e2e_write_config "$ini"
  {
    printf '%s\n' "" "[stats]" "socket = $WORK/stats2.sock" "" "[dns]" "address = $DNS_ADDR" "network = $DNS_POOL"
    tls_up dante socks5 $STUNNEL_CERT_PORT "tls-cert-file=$p/client.pem" "tls-key-file=$p/client.key"
    tls_up noverify socks5 $STUNNEL_PORT "tls-verify=false" # after dante: only warned about
  } >>"$ini"
  e2e_start_s5tund --config "$ini"
  e2e_wait_device "$MODE" "$QUEUES"
  in_c ip route replace "$DNS_POOL" dev "$TUN"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 >/dev/null
  addr=$(bg_wait ip netns exec "$NS_C" timeout -k 5 "$T_STEP" dig +time=5 +tries=1 +short "@$DNS_ADDR" target.test A)
  client --host "$addr" echo --count 3 >/dev/null
  client --host "$TGT4" concurrent 10 --rounds 1 >/dev/null
  e2e_wait_log "$S5LOG" "upstream dante: TLS TLSv1\.[23] .* verified $S_ADDR4" 5 >/dev/null
  # squid's https_port gives no session tickets; stunnel's OpenSSL does: the pool's refills resume
  e2e_wait_log "$S5LOG" "upstream dante: TLS .*session resumed" 5 >/dev/null
  grep -qE "tcp/connect \[.*$TGT4\.$TGT_PORT" "$WORK/danted.log" || fail "danted logged no CONNECT"
  grep -q "Certificate accepted at depth=0: CN=client" "$WORK/stunnel.log" ||
    fail "stunnel (verify = 2) logged no client certificate accepted"
  local hits tls # the pool's connections are handshaken (TLS) and greeted (SOCKS5): sessions took them
  hits=$("$S5TUND" --stats "$WORK/stats2.sock" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["totals"]["pool_hits"])')
  ((hits > 0)) || fail "no session took a pooled TLS connection (pool_hits $hits)"
  # the upstream's TLS counters: handshakes and resumptions, never more than the log's lines (logged first)
  tls=$("$S5TUND" --stats "$WORK/stats2.sock" --json | "$PY" -c '
import json, sys
u = [u for u in json.load(sys.stdin)["upstreams"] if u["name"] == "dante"][0]
print(u["tls_handshakes"], u["tls_resumed"])')
  read -r -a tls <<<"$tls"
  local logged resumed
  logged=$(grep -c "upstream dante: TLS TLSv" "$S5LOG")
  resumed=$(grep -c "upstream dante: TLS TLSv.*session resumed" "$S5LOG")
  ((tls[0] > 0 && tls[0] <= logged && tls[1] > 0 && tls[1] <= resumed)) ||
    fail "dante's TLS counters (handshakes ${tls[0]}, resumed ${tls[1]}) against its log's ($logged, $resumed)"
  e2e_wait_log "$S5LOG" "warn  main upstream noverify: tls-verify = false: the proxy's certificate and name are not checked" 5 >/dev/null
  local bad
  bad=$(e2e_s5_warns | grep -v "upstream noverify: tls-verify = false" || true)
  [[ -z $bad ]] || fail "s5tund logged errors or warnings: $(oneline "$bad")"
  log "SOCKS5 in TLS: danted logged $(grep -cE 'tcp/connect \[' "$WORK/danted.log") CONNECTs, $hits from the pool; ${tls[0]} TLS handshakes, ${tls[1]} resumed"
  e2e_stop_s5tund
  tls_key_mismatch

  kill "$dump" 2>/dev/null || true
  wait "$dump" 2>/dev/null || true
  local b64
  b64=$(printf '%s:%s' "$SQUID_USER" "$SQUID_PASS" | base64)
  [[ -s $WORK/veth.pcap ]] || fail "no capture"
  ! grep -aqF -e "$SQUID_PASS" -e "$b64" -e "target.test" -e "Proxy-Authorization" "$WORK/veth.pcap" ||
    fail "the capture on veth0 holds the password or the destination's name in clear"
  # The same search finds them in a capture of plain HTTP to squid's http_port.
  start_dump plain "tcp port $SQUID_PORT"
  in_c curl -s -m 5 -o /dev/null -x "http://$S_ADDR4:$SQUID_PORT" -U "$SQUID_USER:$SQUID_PASS" \
    "http://target.test:$TGT_PORT/" || true
  holds "$WORK/plain.pcap" "the plain capture's control: the credentials and the name" "$b64" target.test
  kill "$dump" 2>/dev/null || true
  wait "$dump" 2>/dev/null || true
  log "capture on veth0: $(stat -c %s "$WORK/veth.pcap") bytes, no password, no target.test (plain HTTP: both found)"
  reload_to_tls # after the captures: it starts with a plain SOCKS5 upstream
}
