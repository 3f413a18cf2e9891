#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# s5tund benchmark: the direct path and s5tund (thread and process mode, a
# list of queue counts) side by side, in one run, in private network
# namespaces. See test/bench/README.md.
#
#   test/bench/run.sh [--short] [OPTIONS]
#
# Options (each also as an environment variable, the option wins):
#   --short               the CI variant: 1 s per iperf3 run, two queues,
#                         one stream, fewer connections and rounds, 2 s idle;
#                         the rows and the router rows in one mode (BENCH_SHORT=1)
#   --s5tund PATH         the binary (S5TUND; default $BUILD_DIR/s5tund, BUILD_DIR=build)
#   --out DIR             results directory (BENCH_OUT; default $BUILD_DIR/bench)
#   --proxy dante|microsocks   SOCKS5 server in the server namespace (BENCH_PROXY; dante)
#   --modes "thread process"   (BENCH_MODES)
#   --queues "1 2 4"      queue counts (BENCH_QUEUES)
#   --streams "1 8"       iperf3 parallel streams (BENCH_STREAMS)
#   --duration SECS       per iperf3 run (BENCH_DURATION; 8, short 1)
#   --mtu N               TUN MTU (BENCH_MTU; 8500)
#   --veth-mtu N          veth MTU (BENCH_VETH_MTU; default: the kernel's, 1500)
#   --conntrack           connection tracking on in the client namespace, as
#                         auto-route's exclude-local turns it on (its
#                         nftables table, mark 0x53): what it costs
#                         (BENCH_CONNTRACK=1)
#   --veth-gro on|off     GRO on both veth ends (BENCH_VETH_GRO; off): veth
#                         then coalesces like a real NIC's NAPI does, which
#                         sockets with UDP_GRO see as one read (needs ethtool)
#   --conc N              parallel connections of the connection-rate test (BENCH_CONC; 32, short 8)
#   --conn-secs SECS      length of the connection-rate test, and of the
#                         keep-alive request test (BENCH_CONN_SECS; 5, short 1)
#   --ka-conc N           keep-alive connections of the request test (BENCH_KA_CONC; 32)
#   --rounds N            ping-pong rounds of 64 bytes (BENCH_ROUNDS; 2000, short 300)
#   --tests "tcp udp"     what to measure (BENCH_TESTS): tcp = the iperf3 TCP
#                         runs and the connection tests; udp = iperf3 -u rows
#   --udp-rate RATE       offered UDP rate per direction, iperf3 -b form
#                         (BENCH_UDP_RATE; 200M, short 50M); the 8-flow row
#                         offers RATE/8 per flow
#   --udp-len N           UDP datagram payload (BENCH_UDP_LEN; 1400)
#   --udp-family 4|6      the UDP rows over IPv4 or IPv6 (BENCH_UDP_FAMILY; 4)
#   --no-rows             without the rows users compare (rows.sh: TTFB
#                         through a delay relay, 1 KB request rows, memory
#                         with many connections, idle wake-ups, start-up)
#                         (BENCH_ROWS=0)
#   --no-upstreams        without the upstream rows (rows_upstream.sh: squid
#                         and danted side by side, failover under ab)
#                         (BENCH_UPSTREAMS=0)
#   --no-router           without the router rows (rows_router.sh: a LAN
#                         client behind the router against the router host,
#                         at the bench's MTU and 1500; a connection storm's
#                         drops; both modes, two queues) (BENCH_ROUTER=0)
#   --hold N              connections and UDP flows held for the memory rows
#                         (BENCH_HOLD; 1000, short 200)
#   --idle-secs SECS      idle time of the wake-up row (BENCH_IDLE_SECS; 20, short 2)
#   --ttfb-secs SECS      sequential connections per TTFB variant (BENCH_TTFB_SECS; 3, short 1)
#   --no-install          do not install missing Debian packages (BENCH_NO_INSTALL=1)
#
# Exit status: 0 every case moved traffic and completed; 1 a case failed or
# moved nothing (or the set-up failed); 2 bad command line. Speeds are
# reported, never asserted. Everything runs in two namespaces made for the
# run and removed at the end, also on failure, Ctrl-C or the watchdog.
set -eEuo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/../.." && pwd)
# shellcheck source=../e2e/lib.sh
source "$BENCH_DIR/../e2e/lib.sh"

usage() { sed -n '3,/^set -e/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
bench_log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
bench_die() { printf '[bench %s] FAIL: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# ------------------------------------------------------------ options

SHORT=${BENCH_SHORT:-0}
S5TUND_OPT=${S5TUND:-}
OUT=${BENCH_OUT:-}
PROXY=${BENCH_PROXY:-dante}
MODES=${BENCH_MODES:-}
QUEUES_LIST=${BENCH_QUEUES:-}
STREAMS=${BENCH_STREAMS:-}
DURATION=${BENCH_DURATION:-}
MTU=${BENCH_MTU:-8500}
VETH_MTU=${BENCH_VETH_MTU:-}
VETH_GRO=${BENCH_VETH_GRO:-off}
CONNTRACK=${BENCH_CONNTRACK:-0}
CONC=${BENCH_CONC:-}
CONN_SECS=${BENCH_CONN_SECS:-}
KA_CONC=${BENCH_KA_CONC:-32}
ROUNDS=${BENCH_ROUNDS:-}
NO_INSTALL=${BENCH_NO_INSTALL:-0}
TESTS=${BENCH_TESTS:-tcp udp}
UDP_RATE=${BENCH_UDP_RATE:-}
UDP_LEN=${BENCH_UDP_LEN:-1400}
UDP_FAMILY=${BENCH_UDP_FAMILY:-4}
ROWS=${BENCH_ROWS:-1}
UPSTREAMS=${BENCH_UPSTREAMS:-1}
ROUTER=${BENCH_ROUTER:-1}
HOLD_N=${BENCH_HOLD:-}
IDLE_SECS=${BENCH_IDLE_SECS:-}
TTFB_SECS=${BENCH_TTFB_SECS:-}

while (($#)); do
  opt=$1
  case $opt in
    --short) SHORT=1; shift; continue ;;
    --no-install) NO_INSTALL=1; shift; continue ;;
    --conntrack) CONNTRACK=1; shift; continue ;;
    --no-rows) ROWS=0; shift; continue ;;
    --no-upstreams) UPSTREAMS=0; shift; continue ;;
    --no-router) ROUTER=0; shift; continue ;;
    -h|--help) usage ;;
    --s5tund|--out|--proxy|--modes|--queues|--streams|--duration|--mtu|--veth-mtu|--conc|--conn-secs|--ka-conc|--rounds|--tests|--udp-rate|--udp-len|--veth-gro|--udp-family|--hold|--idle-secs|--ttfb-secs)
      (($# >= 2)) || { echo "bench: $opt needs a value" >&2; exit 2; } ;;
    *) echo "bench: unknown option: $opt" >&2; usage ;;
  esac
  val=$2
  shift 2
  case $opt in
    --s5tund) S5TUND_OPT=$val ;;
    --out) OUT=$val ;;
    --proxy) PROXY=$val ;;
    --modes) MODES=$val ;;
    --queues) QUEUES_LIST=$val ;;
    --streams) STREAMS=$val ;;
    --duration) DURATION=$val ;;
    --mtu) MTU=$val ;;
    --veth-mtu) VETH_MTU=$val ;;
    --veth-gro) VETH_GRO=$val ;;
    --conc) CONC=$val ;;
    --conn-secs) CONN_SECS=$val ;;
    --ka-conc) KA_CONC=$val ;;
    --rounds) ROUNDS=$val ;;
    --tests) TESTS=$val ;;
    --udp-rate) UDP_RATE=$val ;;
    --udp-len) UDP_LEN=$val ;;
    --udp-family) UDP_FAMILY=$val ;;
    --hold) HOLD_N=$val ;;
    --idle-secs) IDLE_SECS=$val ;;
    --ttfb-secs) TTFB_SECS=$val ;;
  esac
done

if [[ $SHORT == 1 ]]; then
  : "${QUEUES_LIST:=2}" "${STREAMS:=1}" "${DURATION:=1}" "${CONC:=8}" "${CONN_SECS:=1}" "${ROUNDS:=300}"
  : "${UDP_RATE:=50M}" "${HOLD_N:=200}" "${IDLE_SECS:=2}" "${TTFB_SECS:=1}"
else
  : "${QUEUES_LIST:=1 2 4 8}" "${STREAMS:=1 8}" "${DURATION:=8}" "${CONC:=32}" "${CONN_SECS:=5}" "${ROUNDS:=2000}"
  : "${UDP_RATE:=200M}" "${HOLD_N:=1000}" "${IDLE_SECS:=20}" "${TTFB_SECS:=3}"
fi
: "${MODES:=thread process}"
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$REPO/$BUILD_DIR
: "${S5TUND_OPT:=$BUILD_DIR/s5tund}"
: "${OUT:=$BUILD_DIR/bench}"

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
bad() { echo "bench: $*" >&2; exit 2; }
for m in $MODES; do [[ $m == thread || $m == process ]] || bad "mode must be thread or process: $m"; done
for q in $QUEUES_LIST; do is_uint "$q" && ((q >= 1 && q <= 256)) || bad "bad queue count: $q"; done
for p in $STREAMS; do is_uint "$p" && ((p >= 1 && p <= 128)) || bad "bad stream count: $p"; done
is_uint "$DURATION" && ((DURATION >= 1 && DURATION <= 600)) || bad "bad duration: $DURATION"
is_uint "$MTU" && ((MTU >= 1280 && MTU <= 65535)) || bad "bad MTU: $MTU"
[[ -z $VETH_MTU ]] || { is_uint "$VETH_MTU" && ((VETH_MTU >= 1280 && VETH_MTU <= 65535)); } || bad "bad veth MTU: $VETH_MTU"
is_uint "$CONC" && ((CONC >= 1 && CONC <= 1024)) || bad "bad --conc: $CONC"
is_uint "$KA_CONC" && ((KA_CONC >= 1 && KA_CONC <= 1024)) || bad "bad --ka-conc: $KA_CONC"
[[ $CONN_SECS =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "bad --conn-secs: $CONN_SECS"
is_uint "$ROUNDS" && ((ROUNDS >= 10)) || bad "bad --rounds: $ROUNDS"
[[ $PROXY == dante || $PROXY == microsocks ]] || bad "--proxy must be dante or microsocks"
[[ $VETH_GRO == on || $VETH_GRO == off ]] || bad "--veth-gro takes on or off: $VETH_GRO"
[[ -n $MODES && -n $QUEUES_LIST && -n $STREAMS ]] || bad "empty mode, queue or stream list"
for t in $TESTS; do [[ $t == tcp || $t == udp ]] || bad "--tests takes tcp and udp: $t"; done
[[ -n $TESTS ]] || bad "empty --tests"
[[ $UDP_RATE =~ ^([0-9]+)([KMG]?)$ ]] || bad "bad --udp-rate (iperf3 -b form, e.g. 400M): $UDP_RATE"
# The 8-flow row offers the same total: RATE/8 per flow, in bits/s.
case ${BASH_REMATCH[2]} in K) UDP_BPS=$((BASH_REMATCH[1] * 1000)) ;; M) UDP_BPS=$((BASH_REMATCH[1] * 1000000)) ;;
  G) UDP_BPS=$((BASH_REMATCH[1] * 1000000000)) ;; *) UDP_BPS=${BASH_REMATCH[1]} ;; esac
is_uint "$UDP_LEN" && ((UDP_LEN >= 16 && UDP_LEN <= 65000)) || bad "bad --udp-len: $UDP_LEN"
[[ $UDP_FAMILY == 4 || $UDP_FAMILY == 6 ]] || bad "--udp-family takes 4 or 6: $UDP_FAMILY"
is_uint "$HOLD_N" && ((HOLD_N >= 1 && HOLD_N <= 20000)) || bad "bad --hold: $HOLD_N"
is_uint "$IDLE_SECS" && ((IDLE_SECS >= 1 && IDLE_SECS <= 600)) || bad "bad --idle-secs: $IDLE_SECS"
is_uint "$TTFB_SECS" && ((TTFB_SECS >= 1 && TTFB_SECS <= 600)) || bad "bad --ttfb-secs: $TTFB_SECS"
has_test() { [[ " $TESTS " == *" $1 "* ]]; }

RR_PORT=7100
ECHO_PORT=7101
KA_PORT=7102
UDP_ECHO_PORT=7103
IPERF_PORT=5201

# ------------------------------------------------------------ prerequisites

if [[ $EUID -ne 0 || ! -c /dev/net/tun ]]; then
  if [[ $SHORT == 1 ]]; then
    echo "[bench] SKIP: needs root and /dev/net/tun (network namespaces, a TUN device)"
    exit 0
  fi
  bench_die "needs root and /dev/net/tun (network namespaces, a TUN device)"
fi

# Installs missing Debian packages quietly; apt-get update only when the
# first attempt fails (no or stale package lists).
apt_install() {   # PKG...
  local p missing=() log
  for p in "$@"; do
    # squid-openssl (e2e.upstream_tls) provides the squid binary too: the binary is what counts
    [[ $p == squid ]] && command -v squid >/dev/null 2>&1 && continue
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [[ $NO_INSTALL == 1 ]] || ! command -v apt-get >/dev/null 2>&1; then
    bench_log "missing packages, not installing: ${missing[*]}"
    return 1
  fi
  bench_log "installing ${missing[*]}"
  log=$(mktemp)
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
      sed 's/^/    /' "$log" >&2
      rm -f "$log"
      return 1
    fi
  fi
  rm -f "$log"
}

proxy_pkg=dante-server
[[ $PROXY == microsocks ]] && proxy_pkg=microsocks
apt_install iperf3 "$proxy_pkg" iproute2 procps python3 coreutils gcc libc6-dev \
  || bench_die "could not install the packages the benchmark needs (iperf3 $proxy_pkg gcc ...)"
[[ $ROWS == 1 && $UPSTREAMS == 1 ]] && { apt_install squid apache2-utils microsocks dante-server shadowsocks-libev ||
  bench_die "could not install the packages of the upstream rows (squid apache2-utils microsocks dante-server shadowsocks-libev)"; }
HAVE_GNUPLOT=1
apt_install gnuplot-nox || { HAVE_GNUPLOT=0; bench_log "warning: no gnuplot: no chart"; }
command -v gnuplot >/dev/null 2>&1 || HAVE_GNUPLOT=0
for t in ip ss pgrep timeout iperf3 cc "$PY"; do
  command -v "$t" >/dev/null 2>&1 || bench_die "missing tool: $t"
done
[[ $PROXY == dante ]] && { command -v danted >/dev/null 2>&1 || bench_die "missing tool: danted"; }
[[ $PROXY == microsocks ]] && { command -v microsocks >/dev/null 2>&1 || bench_die "missing tool: microsocks"; }

[[ -x $S5TUND_OPT ]] || bench_die "s5tund binary not found or not executable: $S5TUND_OPT (build it: make build, or give --s5tund)"
S5TUND=$(readlink -f "$S5TUND_OPT")

# Results directory: only our own files in it are replaced.
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
rm -rf "$OUT/raw" "$OUT/bin" "$OUT/work"
rm -f "$OUT"/results.csv "$OUT"/results.md "$OUT"/chart.png "$OUT"/chart.gp "$OUT"/chart.dat "$OUT"/env.txt
mkdir -p "$OUT/raw" "$OUT/bin"

bench_log "building the load client and the target server"
cc -O2 -Wall -Wextra -pthread -o "$OUT/bin/connrate" "$BENCH_DIR/connrate.c" \
  || bench_die "cannot build test/bench/connrate.c"
cc -O2 -Wall -Wextra -o "$OUT/bin/benchsrv" "$BENCH_DIR/benchsrv.c" \
  || bench_die "cannot build test/bench/benchsrv.c"
cc -O2 -Wall -Wextra -o "$OUT/bin/holder" "$BENCH_DIR/holder.c" \
  || bench_die "cannot build test/bench/holder.c"
cc -O2 -Wall -Wextra -o "$OUT/bin/socks5load" "$BENCH_DIR/socks5load.c" -luv \
  || bench_die "cannot build test/bench/socks5load.c"
SOCKS5LOAD=$OUT/bin/socks5load
CONNRATE=$OUT/bin/connrate
BENCHSRV=$OUT/bin/benchsrv

# Case list: the direct path first (the ceiling), then s5tund.
CASES=(direct)
for m in $MODES; do for q in $QUEUES_LIST; do CASES+=("$m-q$q"); done; done

# Watchdog bound of the whole run (it still cleans up): generous.
runs_per_case=$(($(wc -w <<<"$STREAMS") * 2 + 4))
per_case=$((runs_per_case * (DURATION + 25) + 3 * ${CONN_SECS%.*} + 2 * T_START + 100))
rows_secs=$(((IDLE_SECS + 3 * ${CONN_SECS%.*} + 4 * TTFB_SECS + HOLD_N / 50 + 6 * T_START + 120) * 2))
# The upstream rows: two proxies (2 iperf3 runs, connections, 3 TTFB runs), the failover row.
((UPSTREAMS == 1)) && rows_secs=$((rows_secs + 2 * (2 * DURATION + ${CONN_SECS%.*} + 3 * TTFB_SECS + 8 * T_START) + 400 + 2 * (2 * DURATION + 2 * T_START)))
: "${E2E_DEADLINE:=$((${#CASES[@]} * per_case + rows_secs + 300))}"
export E2E_DEADLINE

# ------------------------------------------------------------ run set-up

# The work directory (configs, pid files) under the results directory, not
# in the shared /tmp.
mkdir -p "$OUT/work"
TMPDIR=$OUT/work e2e_init bench
# lib.sh's diagnostics on a non-zero exit: only useful when the shared
# set-up failed; a failed case has its own report (and logs in raw/).
eval "$(declare -f e2e_dump_logs | sed '1s/e2e_dump_logs/e2e_dump_logs_lib/')"
BENCH_PHASE=setup
e2e_dump_logs() { [[ $BENCH_PHASE == setup ]] && e2e_dump_logs_lib; return 0; }
CASE_PID=""
PROXY_PID=""
bench_cleanup() {
  local rc=$?
  set +e
  trap - ERR
  if [[ -n $CASE_PID ]] && kill -0 "$CASE_PID" 2>/dev/null; then
    kill -TERM "$CASE_PID" 2>/dev/null || true
  fi
  # The proxy first, alone, so that it reaps its own children (lib.sh's
  # clean-up then ends whatever is left in the namespaces).
  if [[ -n ${PROXY_PID:-} ]] && kill -0 "$PROXY_PID" 2>/dev/null; then
    kill -TERM "$PROXY_PID" 2>/dev/null
    for _ in $(seq 50); do e2e_pid_running "$PROXY_PID" || break; sleep 0.1; done
    wait "$PROXY_PID" 2>/dev/null
  fi
  (exit "$rc")
  e2e_cleanup
  rmdir "$OUT/work" 2>/dev/null
  return "$rc"
}
trap bench_cleanup EXIT

CLK_TCK=$(getconf CLK_TCK)
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel=$(uname -r)"
  echo "cpus=$(nproc)"
  echo "cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "s5tund=$S5TUND"
  echo "s5tund_version=$({ "$S5TUND" --version 2>&1 || true; } | head -n1)"
  echo "iperf3=$(iperf3 --version 2>&1 | head -n1)"
  echo "proxy=$PROXY"
  echo "short=$SHORT"
  echo "modes=$MODES"
  echo "queues=$QUEUES_LIST"
  echo "streams=$STREAMS"
  echo "duration=$DURATION"
  echo "mtu=$MTU"
  echo "veth_mtu=${VETH_MTU:-default}"
  echo "veth_gro=$VETH_GRO"
  echo "conc=$CONC"
  echo "conn_secs=$CONN_SECS"
  echo "ka_conc=$KA_CONC"
  echo "rounds=$ROUNDS"
  echo "tests=$TESTS"
  echo "udp_rate=$UDP_RATE"
  echo "udp_len=$UDP_LEN"
  echo "udp_family=$UDP_FAMILY"
  echo "rows=$ROWS"
  echo "upstreams=$UPSTREAMS"
  echo "hold=$HOLD_N"
  echo "idle_secs=$IDLE_SECS"
  echo "ttfb_secs=$TTFB_SECS"
  echo "clk_tck=$CLK_TCK"
} >"$OUT/env.txt"
bench_log "s5tund $S5TUND; results in $OUT; cases: ${CASES[*]}"

e2e_topology_up
if [[ $CONNTRACK == 1 ]]; then
  # The table exclude-local installs (tun/nft.h), so every packet of the
  # client namespace is tracked, the tunnel's included.
  in_c nft -f - <<'NFT' || bench_die "--conntrack: nft failed"
table inet s5tund {
  chain inbound { type filter hook input priority mangle; policy accept; iifname != "tun0" ct direction original ct mark set 0x53; }
  chain replies { type route hook output priority mangle; policy accept; meta mark 0 ct mark 0x53 meta mark set 0x53; }
}
NFT
fi
if [[ -n $VETH_MTU ]]; then
  in_c ip link set dev veth0 mtu "$VETH_MTU"
  in_s ip link set dev veth0 mtu "$VETH_MTU"
fi
if [[ $VETH_GRO == on ]]; then
  apt_install ethtool || bench_die "--veth-gro on needs ethtool"
  in_c ethtool -K veth0 gro on
  in_s ethtool -K veth0 gro on
fi
# Room for many short connections.
in_c sysctl -qw net.ipv4.ip_local_port_range="1024 65000"
in_s sysctl -qw net.ipv4.ip_local_port_range="1024 65000"
# ... but not the ports of the delay relays and of the proxies that start
# later (rows.sh, rows_upstream.sh: RELAY_*_PORT, UP_MS_*_PORT; 1080-1099): an outgoing connection of the proxy's could hold one of them
# when the rows start the relays.
in_s sysctl -qw net.ipv4.ip_local_reserved_ports="1080-1099"

PROXY_LOG=$OUT/raw/$PROXY.log
if [[ $PROXY == dante ]]; then
  PROXY_PORT=$DANTE_PORT
  : >"$PROXY_LOG"
  chmod 666 "$PROXY_LOG"
  # lib.sh's, without a log line per connection (that would be measured).
  DANTE_LOG=$PROXY_LOG DANTE_LOG_SESSIONS=0 e2e_start_dante
  PROXY_PID=$DANTE_PID
else
  PROXY_PORT=$MS_PORT
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$MS_PORT" >>"$PROXY_LOG" 2>&1 &
  PROXY_PID=$!
  e2e_wait_listen "$MS_PORT" "$S_ADDR4" || bench_die "microsocks does not listen on $S_ADDR4:$MS_PORT"
fi
bench_log "$PROXY listening on $S_ADDR4:$PROXY_PORT"

ip netns exec "$NS_S" "$BENCHSRV" -a "$TGT4" -r "$RR_PORT" -e "$ECHO_PORT" -k "$KA_PORT" -u "$UDP_ECHO_PORT" -f "$WORK/benchsrv.ready" \
  >"$OUT/raw/benchsrv.log" 2>&1 &
for _ in $(seq $((T_START * 10))); do [[ -s $WORK/benchsrv.ready ]] && break; sleep 0.1; done
[[ -s $WORK/benchsrv.ready ]] || bench_die "benchsrv did not start (log: $OUT/raw/benchsrv.log)"
bench_log "targets on $TGT4 (only in the server namespace): benchsrv $RR_PORT/$ECHO_PORT/$KA_PORT, iperf3 $IPERF_PORT"

# shellcheck source=rows.sh
source "$BENCH_DIR/rows.sh"
# shellcheck source=rows_upstream.sh
source "$BENCH_DIR/rows_upstream.sh"
# shellcheck source=rows_router.sh
source "$BENCH_DIR/rows_router.sh"

# ------------------------------------------------------------ measurement helpers

# The s5tund process tree: the root and every descendant, one pid a line.
tree_pids() {
  local p
  for p in "$@"; do
    [[ -d /proc/$p ]] || continue
    echo "$p"
    # shellcheck disable=SC2046
    tree_pids $(pgrep -P "$p" 2>/dev/null || true)
  done
}

# CPU clock ticks of the tree: utime+stime of every live process (all its
# threads), plus cutime+cstime (children that already ended and were reaped).
tree_cpu() {
  local p s sum=0 a
  for p in $(tree_pids "$1"); do
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    s=${s##*) }
    read -r -a a <<<"$s"
    sum=$((sum + a[11] + a[12] + a[13] + a[14]))
  done
  echo "$sum"
}

# "RSS_KB PSS_KB PROCESSES THREADS" of the tree.
tree_mem() {
  local p rss=0 pss=0 np=0 nt=0 r t s
  for p in $(tree_pids "$1"); do
    r=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || continue
    t=$(awk '/^Threads:/ {print $2}' "/proc/$p/status" 2>/dev/null) || continue
    s=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null) || s=0
    rss=$((rss + ${r:-0})) pss=$((pss + ${s:-0})) np=$((np + 1)) nt=$((nt + ${t:-0}))
  done
  echo "$rss $pss $np $nt"
}

tun_bytes_sum() {   # tx+rx of tun0 (0 when there is none)
  local tx rx
  tx=$(in_c cat "/sys/class/net/$TUN/statistics/tx_bytes" 2>/dev/null) || tx=0
  rx=$(in_c cat "/sys/class/net/$TUN/statistics/rx_bytes" 2>/dev/null) || rx=0
  echo $((tx + rx))
}

# Memory sampler: every 0.5 s until the stop file appears.
sampler_start() {   # FILE
  SAMPLER_STOP=$WORK/sampler.stop
  rm -f "$SAMPLER_STOP"
  ( while [[ ! -e $SAMPLER_STOP ]]; do
      tree_mem "$S5PID" >>"$1"
      sleep 0.5
    done ) 3>&- &
  SAMPLER_PID=$!
}
sampler_stop() {
  [[ -n ${SAMPLER_PID:-} ]] || return 0
  touch "$SAMPLER_STOP"
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=""
}

meta() { echo "$1=$2" >>"$CASE_DIR/meta"; }   # KEY VALUE

# say MESSAGE: a progress line, to the case log and to the terminal (fd 3).
say() {
  local l
  l=$(printf '[bench %s]   %s' "$(date +%H:%M:%S)" "$*")
  echo "$l"
  echo "$l" >&3 2>/dev/null || true
}

# The proxy's CPU ticks: the trees of PROXY_PID's words (a chain of proxies
# is several processes).
proxy_cpu() {
  local p sum=0
  for p in $PROXY_PID; do sum=$((sum + $(tree_cpu "$p"))); done
  echo "$sum"
}

# The client side's other processes (CLIENT_PIDS: the ss-local of a chain,
# beside s5tund on the same host): their CPU ticks, a share of proxy_cpu's.
client_cpu() {
  local p sum=0
  for p in ${CLIENT_PIDS:-}; do sum=$((sum + $(tree_cpu "$p"))); done
  echo "$sum"
}

# measure_start / measure_end NAME: CPU ticks (s5tund's tree, the proxy's
# tree, the client side's other processes) and TUN bytes around a run.
measure_start() {
  M_CPU0=0 M_TUN0=$(tun_bytes_sum) M_PCPU0=$(proxy_cpu) M_CCPU0=$(client_cpu)
  if [[ -n $S5PID ]]; then
    M_CPU0=$(tree_cpu "$S5PID")
    sampler_start "$CASE_DIR/mem.samples"
  fi
}
measure_end() {
  local name=$1
  if [[ -n $S5PID ]]; then
    sampler_stop
    meta "${name}_cpu_ticks" $(($(tree_cpu "$S5PID") - M_CPU0))
  fi
  meta "${name}_tun_bytes" $(($(tun_bytes_sum) - M_TUN0))
  meta "${name}_proxy_cpu_ticks" $(($(proxy_cpu) - M_PCPU0))
  meta "${name}_client_cpu_ticks" $(($(client_cpu) - M_CCPU0))
}

# iperf_run NAME STREAMS up|down [udp]: one iperf3 test, JSON in NAME.json.
# UDP: datagrams of UDP_LEN bytes at UDP_RATE in total (split over the flows).
iperf_run() {
  local name=$1 p=$2 dir=$3 proto=${4:-tcp} srv rc=0 i rev=() host=$TGT4
  [[ $dir == down ]] && rev=(-R)
  [[ $proto == udp ]] && rev+=(-u -l "$UDP_LEN" -b "$((UDP_BPS / p))")
  [[ $proto == udp && $UDP_FAMILY == 6 ]] && host=$TGT6
  ip netns exec "$NS_S" iperf3 -s -1 -B "$host" -p "$IPERF_PORT" >"$CASE_DIR/$name.server.log" 2>&1 3>&- &
  srv=$!
  if ! e2e_wait_listen "$IPERF_PORT" "$host"; then
    meta "${name}_rc" "no-server"
    kill -KILL "$srv" 2>/dev/null || true
    return 0
  fi
  measure_start
  timeout -k 5 $((DURATION + 30)) ip netns exec "${IPERF_NS:-$NS_C}" iperf3 -c "$host" -p "$IPERF_PORT" \
    -t "$DURATION" -P "$p" "${rev[@]}" --json --connect-timeout 5000 \
    >"$CASE_DIR/$name.json" 2>"$CASE_DIR/$name.stderr" || rc=$?
  measure_end "$name"
  meta "${name}_rc" "$rc"
  for i in $(seq 50); do e2e_pid_running "$srv" || break; sleep 0.1; done
  if e2e_pid_running "$srv"; then kill -TERM "$srv" 2>/dev/null || true; sleep 0.2; kill -KILL "$srv" 2>/dev/null || true; fi
  wait "$srv" 2>/dev/null || true
  say "$name: $("$PY" "$BENCH_DIR/report.py" iperf-line "$CASE_DIR/$name.json" "$rc")"
}

# connrate_timed NAME MODE PORT CONC WHAT: one timed connrate run (64-byte
# requests, 128-byte answers) with CPU measured around it; output in
# $CASE_DIR/NAME.out, exit status as NAME_rc.
connrate_timed() {
  local name=$1 mode=$2 port=$3 conc=$4 what=$5 rc=0
  measure_start
  timeout -k 5 "$(awk -v s="$CONN_SECS" 'BEGIN {printf "%d", s + 60}')" \
    ip netns exec "$NS_C" "$CONNRATE" "$mode" -a "$TGT4" -p "$port" -c "$conc" -d "$CONN_SECS" \
    -q 64 -r 128 -t 5000 >"$CASE_DIR/$name.out" 2>&1 || rc=$?
  measure_end "$name"
  meta "${name}_rc" "$rc"
  say "$what: rc=$rc $(head -c 300 "$CASE_DIR/$name.out")"
}

connrate_runs() {
  local rc=0
  connrate_timed rr rr "$RR_PORT" "$CONC" connections
  # After rr, so that the older figures are measured as before.
  connrate_timed ka ka "$KA_PORT" "$KA_CONC" "keep-alive requests"
  # One connection at a time: the wait a person's browser feels, without
  # the queueing of 32 parallel clients on 2 cores.
  connrate_timed rr1 rr "$RR_PORT" 1 "sequential connections"
  # The direct case: the proxy's own rate, to a client in C that speaks
  # SOCKS5 itself (socks5load.c), the same exchanges and clients as rr: the
  # ceiling for new connections through the tunnel.
  if [[ -z $S5PID ]]; then
    measure_start
    timeout -k 5 "$(awk -v s="$CONN_SECS" 'BEGIN {printf "%d", s + 60}')" \
      ip netns exec "$NS_C" "$SOCKS5LOAD" -s "$S_ADDR4" -P "$PROXY_PORT" -a "$TGT4" -p "$RR_PORT" -c "$CONC" \
      -d "$CONN_SECS" -q 64 -r 128 -t 5000 >"$CASE_DIR/socks5.out" 2>&1 || rc=$?
    measure_end socks5
    meta socks5_rc "$rc"
    say "the proxy's own rate to a SOCKS5 client: rc=$rc $(head -c 300 "$CASE_DIR/socks5.out")"
    rc=0
  fi
  timeout -k 5 $((ROUNDS / 10 + 60)) \
    ip netns exec "$NS_C" "$CONNRATE" pingpong -a "$TGT4" -p "$ECHO_PORT" -n "$ROUNDS" -s 64 -t 5000 \
    >"$CASE_DIR/pp.out" 2>&1 || rc=$?
  meta pp_rc "$rc"
  say "ping-pong: rc=$rc $(head -c 300 "$CASE_DIR/pp.out")"
}

# ------------------------------------------------------------ one case

# Runs in a subshell: a failure (lib.sh's fail) ends the case, not the run.
run_case() {
  local case=$1 mode="" queues="" p dir
  CASE_DIR=$OUT/raw/$case
  mkdir -p "$CASE_DIR"
  : >"$CASE_DIR/meta"
  meta case "$case"
  S5PID=""
  if [[ $case == direct ]]; then
    meta kind direct
    in_c ip route replace 10.201.0.0/24 via "$S_ADDR4" dev veth0
    in_c ip -6 route replace fd00:201::/64 via "$S_ADDR6" dev veth0
  else
    mode=${case%-q*} queues=${case##*-q}
    meta kind tunnel
    meta mode "$mode"
    meta queues "$queues"
    trap 'case_exit' EXIT
    e2e_start_s5tund --mode "$mode" --queues "$queues" --tun "$TUN" --mtu "$MTU" \
      --socks5 "$S_ADDR4:$PROXY_PORT" --log-level info 3>&-
    # "ready" in the log, then the device with every queue (lib.sh) and the route.
    local i
    for i in $(seq $((T_START * 10))); do
      grep -q 'ready' "$S5LOG" 2>/dev/null && break
      e2e_s5_alive || break
      sleep 0.1
    done
    if ! grep -q 'ready' "$S5LOG"; then
      if e2e_s5_alive; then
        meta setup "s5tund did not log ready within ${T_START}s"
      else
        meta setup "s5tund exited before it was ready: $(tail -n 1 "$S5LOG")"
      fi
      exit 1
    fi
    e2e_wait_device "$mode" "$queues"
    meta tun_mtu "$(in_c cat "/sys/class/net/$TUN/mtu")"
  fi
  # A real exchange with the target before measuring (bounded retries).
  if ! ip netns exec "$NS_C" "$CONNRATE" probe -a "$TGT4" -p "$RR_PORT" -w "$T_START" -t 3000 \
      >"$CASE_DIR/probe.out" 2>&1; then
    meta setup "no exchange with the target within ${T_START}s: $(cat "$CASE_DIR/probe.out")"
    exit 1
  fi
  if [[ -n $S5PID ]]; then
    sleep 0.5
    read -r a b c d <<<"$(tree_mem "$S5PID")"
    meta rss_idle_kb "$a"
    meta pss_idle_kb "$b"
    meta procs "$c"
    meta threads "$d"
    say "s5tund ready: $c process(es), $d thread(s), RSS $((a / 1024)) MiB idle"
  fi
  meta setup ok
  if has_test tcp; then
    for dir in up down; do
      for p in $STREAMS; do
        iperf_run "$dir$p" "$p" "$dir"
        if [[ -n $S5PID ]] && ! e2e_s5_alive; then meta died "during $dir$p"; exit 1; fi
      done
    done
  fi
  if has_test udp; then
    # One flow both ways, then 8 (the short run: one flow, upload only).
    local runs=("udpup1 1 up" "udpdown1 1 down" "udpup8 8 up" "udpdown8 8 down") r
    [[ $SHORT == 1 ]] && runs=("udpup1 1 up")
    for r in "${runs[@]}"; do
      read -r name p dir <<<"$r"
      iperf_run "$name" "$p" "$dir" udp
      if [[ -n $S5PID ]] && ! e2e_s5_alive; then meta died "during $name"; exit 1; fi
    done
  fi
  has_test tcp && connrate_runs
  if [[ -n $S5PID ]]; then
    e2e_s5_alive || { meta died "during the connection tests"; exit 1; }
    case_exit
    trap - EXIT
  else
    in_c ip route del 10.201.0.0/24 via "$S_ADDR4" dev veth0 2>/dev/null || true
    in_c ip -6 route del fd00:201::/64 via "$S_ADDR6" dev veth0 2>/dev/null || true
  fi
}

# Stops s5tund (SIGTERM, bounded) and keeps its log; also on a failed case.
# Records how it ended: s5_exit (status after SIGTERM) or s5_gone (it had
# already ended by itself: status, or the signal that killed it).
case_exit() {
  local rc=$? i st=0
  sampler_stop
  if [[ -n $S5PID ]]; then
    if e2e_pid_running "$S5PID"; then
      kill -TERM "$S5PID" 2>/dev/null || true
      for i in $(seq $((T_STOP * 10))); do e2e_pid_running "$S5PID" || break; sleep 0.1; done
      if e2e_pid_running "$S5PID"; then
        meta stop "still running ${T_STOP}s after SIGTERM: killed"
        kill -KILL "$S5PID" 2>/dev/null || true
      fi
      wait "$S5PID" 2>/dev/null || st=$?
      meta s5_exit "$st"
    else
      wait "$S5PID" 2>/dev/null || st=$?
      if ((st > 128)); then
        meta s5_gone "killed by signal $((st - 128)) ($(kill -l $((st - 128)) 2>/dev/null || echo '?'))"
      else
        meta s5_gone "exit status $st"
      fi
    fi
    S5PID=""
  fi
  [[ -n ${S5LOG:-} && -f $S5LOG ]] && cp "$S5LOG" "$CASE_DIR/s5tund.log"
  return "$rc"
}

# ------------------------------------------------------------ the run

BENCH_PHASE=cases
for case in "${CASES[@]}"; do
  bench_log "case $case"
  # In a subshell (a failure ends the case, not the run), in the background
  # (a signal is handled at once); progress lines on fd 3.
  ( run_case "$case" ) 3>&1 >"$OUT/raw/$case.log" 2>&1 &
  CASE_PID=$!
  rc=0
  wait "$CASE_PID" || rc=$?
  CASE_PID=""
  if ((rc != 0)); then
    bench_log "case $case FAILED (exit $rc); its log, last lines:"
    tail -n 25 "$OUT/raw/$case.log" | sed 's/^/    /'
    [[ -f $OUT/raw/$case/s5tund.log ]] && { echo "    -- s5tund.log:"; tail -n 25 "$OUT/raw/$case/s5tund.log" | sed 's/^/    /'; }
    echo "case_rc=$rc" >>"$OUT/raw/$case/meta"
  fi
done

if [[ $ROWS == 1 ]] && has_test tcp; then
  BENCH_PHASE=rows
  run_rows
  [[ $UPSTREAMS == 1 ]] && run_upstream_rows
  rows_relays_down
  [[ $ROUTER == 1 ]] && run_router_rows
fi

# ------------------------------------------------------------ report

report_rc=0
"$PY" "$BENCH_DIR/report.py" report --out "$OUT" --streams "$STREAMS" --cases "${CASES[*]}" \
  --clk-tck "$CLK_TCK" --tests "$TESTS" --udp-runs "$([[ $SHORT == 1 ]] && echo udpup1 || echo udpup1 udpdown1 udpup8 udpdown8)" \
  || report_rc=$?
if has_test tcp; then
  max_streams=$(tr ' ' '\n' <<<"$STREAMS" | sort -n | tail -n 1)
  "$PY" "$BENCH_DIR/report_rows.py" sweep --out "$OUT" --cases "${CASES[*]}" --streams "$max_streams" \
    --clk-tck "$CLK_TCK" >>"$OUT/results.md" || report_rc=1
fi
if [[ $ROWS == 1 ]] && has_test tcp; then
  "$PY" "$BENCH_DIR/report_rows.py" rows --out "$OUT" --modes "$(rows_modes)" --relay-delay-ms "$RELAY_DELAY_MS" \
    --hold "$HOLD_N" >>"$OUT/results.md" || report_rc=1
  if [[ $UPSTREAMS == 1 ]]; then
    "$PY" "$BENCH_DIR/report_rows.py" upstreams --out "$OUT" --relay-delay-ms "$RELAY_DELAY_MS" \
      --clk-tck "$CLK_TCK" >>"$OUT/results.md" || report_rc=1
  fi
  if [[ $ROUTER == 1 ]]; then
    "$PY" "$BENCH_DIR/report_rows.py" router --out "$OUT" --modes "$MODES" --clk-tck "$CLK_TCK" \
      >>"$OUT/results.md" || report_rc=1
  fi
fi
# The sniff parsers' cost per parse (test/bench/sniffbench.c, built by
# CMake with the tree; one core, no network): a table of its own.
if [[ -x $BUILD_DIR/test/bench/sniffbench ]]; then
  { printf '\n### Parsing first bytes for a name (ns per parse, one core)\n\n'
    "$BUILD_DIR/test/bench/sniffbench" --markdown; } >>"$OUT/results.md" || report_rc=1
else
  bench_log "warning: $BUILD_DIR/test/bench/sniffbench is not built: no parser rows"
fi
if [[ $HAVE_GNUPLOT == 1 && -f $OUT/chart.gp ]] && has_test tcp; then
  if (cd "$OUT" && timeout 60 gnuplot chart.gp >"$OUT/raw/gnuplot.log" 2>&1); then
    bench_log "chart: $OUT/chart.png"
  else
    bench_log "warning: gnuplot failed: $(head -c 500 "$OUT/raw/gnuplot.log")"
  fi
fi
echo
cat "$OUT/results.md"
echo
chart=""
[[ -f $OUT/chart.png ]] && chart=", $OUT/chart.png"
bench_log "results: $OUT/results.md, $OUT/results.csv$chart; raw data and logs in $OUT/raw"
if ((report_rc != 0)); then
  bench_log "FAIL: a case failed or moved nothing (see \"Failures\" above; logs in $OUT/raw)"
  exit 1
fi
bench_log "every case moved traffic and completed"
