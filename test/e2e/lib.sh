# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared shell library of the s5tund end-to-end tests: the topology, the
# SOCKS5 servers, the target, s5tund itself, and the clean-up trap.
# Sourced by run.sh and test/demo.sh; needs bash, root, iproute2, procps.
#
# Topology (names unique per run so that runs can go in parallel):
#
#   namespace C (s5c-<name>-<pid>)          namespace S (s5s-<name>-<pid>)
#     s5tund, owns tun0                       microsocks 10.200.0.2:1080
#     client.py                               danted     10.200.0.2:1081,
#     veth0 10.200.0.1/24 fd00:200::1/64        [fd00:200::2]:1081
#                                             badproxy.py 10.200.0.2:1082,
#                                               [fd00:200::2]:1082
#     route 10.201.0.0/24  dev tun0  <---->   veth0 10.200.0.2/24 fd00:200::2/64
#     route fd00:201::/64  dev tun0           lo: 10.201.0.1/32 fd00:201::1/128
#                                             target.py port 7000 on both
#
# All traffic stays inside these two namespaces (and loopback).

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONDONTWRITEBYTECODE=1
export PATH="$PATH:/usr/sbin:/sbin"   # ip, danted
PY=/usr/bin/python3           # Debian's, stdlib only (another python3 may be first in PATH)

C_ADDR4=10.200.0.1
S_ADDR4=10.200.0.2
C_ADDR6=fd00:200::1
S_ADDR6=fd00:200::2
TGT4=10.201.0.1
TGT6=fd00:201::1
TGT_PORT=7000
MS_PORT=1080                  # microsocks
DANTE_PORT=1081               # danted
SQUID_PORT=3128               # squid (HTTP CONNECT, Basic authentication)
SQUID_USER=alice
SQUID_PASS='p@ss:w%rd'        # as squid checks it
BP_PORT=1082                  # badproxy.py (the misbehaving SOCKS5 server)
# CONNECT ports that choose badproxy's behaviour, and the bytes it sends
# (badproxy.DATA, with the escape client.py read-end expects); for run.sh.
# shellcheck disable=SC2034
{
  BP_PORT_HANG=7001
  BP_PORT_DATA_RST=7002
  BP_PORT_DATA_FIN=7003
  BP_PORT_LATE_DATA_RST=7004
  BP_PORT_FILL_RST=7005
  BP_FILL=1048576               # badproxy.FILL
  BP_PORT_TRICKLE_FIN=7006
  BP_PORT_FIN_SLOW_READ=7007
  BP_PORT_FIN_SLOWER_READ=7008
  BP_TRICKLE_FILL=262144        # badproxy.TRICKLE_FILL
  BP_DATA='badproxy: these bytes come before the end\n'
}
TUN=tun0
TUN_IPV4=198.18.0.1/15
TUN_IPV6=fc00::1/64

# Bounds (seconds): generous, only there so that nothing can hang forever.
T_START=${E2E_T_START:-30}    # daemon up, proxy listening, first traffic
T_STEP=${E2E_T_STEP:-60}      # one client step
# shellcheck disable=SC2034  # used by run.sh and demo.sh
T_BULK=${E2E_T_BULK:-300}     # one bulk transfer step
T_STOP=${E2E_T_STOP:-30}      # daemon exit after SIGTERM

NS_C=""
NS_S=""
WORK=""
S5PID=""
S5LOG=""
E2E_NAME=""
E2E_CLEANED=0
E2E_LOGS=()                   # logs printed on failure

oneline() { tr '\n' ' ' <<<"$1" | sed 's/ *$//'; }   # "a\nb\n" -> "a b"
log()  { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[e2e %s] FAIL: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }
skip() { printf '[e2e] SKIP: %s\n' "$*"; exit 77; }

# ------------------------------------------------------------ prerequisites

e2e_require_root() {
  [[ $EUID -eq 0 ]] || skip "needs root (network namespaces, TUN devices)"
  [[ -c /dev/net/tun ]] || skip "/dev/net/tun is missing"
  ip netns list >/dev/null 2>&1 || skip "cannot use network namespaces (ip netns)"
}

e2e_require_tools() {
  local t missing=()
  for t in ip ss pgrep timeout microsocks danted "$PY"; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  ((${#missing[@]} == 0)) || fail "missing tools: ${missing[*]} (run 'make deps')"
}

# Resolves the s5tund binary: argument, $S5TUND, or build/s5tund.
e2e_find_s5tund() {
  S5TUND=${1:-${S5TUND:-$E2E_DIR/../../build/s5tund}}
  [[ -x $S5TUND ]] || fail "s5tund binary not found or not executable: $S5TUND"
  S5TUND=$(readlink -f "$S5TUND")
}

# e2e_process_only: the case is about worker processes (run.sh set MODE).
e2e_process_only() {
  [[ $MODE == process ]] || fail "$E2E_NAME is for process mode, not '$MODE'"
}

# ------------------------------------------------------------ namespaces

# Namespaces left behind by a run that was killed hard (SIGKILL, so that its
# trap could not run): ours by name, and their owner pid no longer exists.
e2e_reap_stale() {
  local ns owner
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns =~ ^s5[cs]-.*-([0-9]+)$ ]] || continue
    owner=${BASH_REMATCH[1]}
    kill -0 "$owner" 2>/dev/null && continue
    log "removing stale namespace $ns (run $owner is gone)"
    e2e_ns_destroy "$ns"
  done
}

# Ends every process inside namespace $1 (only our own test processes live
# there), then deletes it.
e2e_ns_destroy() {
  local ns=$1 pids i
  [[ -e /run/netns/$ns ]] || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for i in $(seq 50); do
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [[ -z $pids ]] && break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    if [[ -n $pids ]]; then kill -KILL $pids 2>/dev/null || true; fi
  fi
  ip netns del "$ns" 2>/dev/null || true
}

e2e_dump_logs() {
  local f
  echo "================ diagnostics ($E2E_NAME) ================"
  if [[ -n $NS_C && -e /run/netns/$NS_C ]]; then
    echo "---- namespace C: links, addresses, routes, sockets"
    ip -n "$NS_C" -d link show 2>&1 | sed 's/^/  /'
    ip -n "$NS_C" addr show 2>&1 | grep -E 'inet|^[0-9]' | sed 's/^/  /'
    ip -n "$NS_C" route show 2>&1 | sed 's/^/  /'
    ip -n "$NS_C" -6 route show 2>&1 | sed 's/^/  /'
    echo "---- processes in C"
    for f in $(ip netns pids "$NS_C" 2>/dev/null); do
      echo "  $f (ppid $(awk '{print $4}' "/proc/$f/stat" 2>/dev/null)): $(tr '\0' ' ' <"/proc/$f/cmdline" 2>/dev/null)"
    done
  fi
  if [[ -n $NS_S && -e /run/netns/$NS_S ]]; then
    echo "---- namespace S: listening sockets"
    ip netns exec "$NS_S" ss -Hltnp 2>&1 | sed 's/^/  /'
  fi
  for f in "${E2E_LOGS[@]}"; do
    [[ -f $f ]] || continue
    echo "---- $(basename "$f") (last 150 lines)"
    tail -n 150 "$f"
  done
  echo "================ end of diagnostics ================"
}

E2E_ERR_SEEN=0
e2e_on_err() {   # names the failed command and where (once: ERR fires per function level)
  ((E2E_ERR_SEEN)) && return 0
  E2E_ERR_SEEN=1
  local i=0 where="" frame
  while frame=$(caller "$i"); do
    # frame: LINE FUNCTION FILE
    # shellcheck disable=SC2086
    set -- $frame
    where+=" <- $(basename "$3"):$1 ${2}"
    i=$((i + 1))
  done
  printf '[e2e %s] FAIL: command failed: %s\n    at%s\n' "$(date +%H:%M:%S)" "$BASH_COMMAND" "$where" >&2
}

e2e_cleanup() {
  local rc=$?
  ((E2E_CLEANED)) && return 0
  E2E_CLEANED=1
  trap - EXIT INT TERM HUP ERR
  trap '' PIPE                # a reader that went away must not cut the clean-up short
  set +e
  if ((rc != 0 && rc != 77)); then
    e2e_dump_logs
  fi
  if [[ -n $S5PID ]] && kill -0 "$S5PID" 2>/dev/null; then
    kill -TERM "$S5PID" 2>/dev/null
    for _ in $(seq 50); do e2e_pid_running "$S5PID" || break; sleep 0.1; done
    kill -KILL "$S5PID" 2>/dev/null || true
  fi
  if [[ -n ${E2E_WATCHDOG:-} ]]; then
    kill $(pgrep -P "$E2E_WATCHDOG") "$E2E_WATCHDOG" 2>/dev/null
  fi
  [[ -n $NS_C ]] && e2e_ns_destroy "$NS_C"
  [[ -n $NS_S ]] && e2e_ns_destroy "$NS_S"
  local san=0   # sanitizer reports (every process has ended by now)
  if e2e_sanitizer_reports; then san=1; fi
  if [[ -n $WORK && -d $WORK ]]; then
    if [[ -n ${E2E_KEEP:-} ]]; then
      log "kept work directory $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  ((rc == 0)) || log "exit status $rc"
  if ((san && rc == 0)); then
    printf '[e2e %s] FAIL: sanitizer reports from s5tund (above)\n' "$(date +%H:%M:%S)" >&2
    exit 1   # from the EXIT trap, only exit sets the status
  fi
  return "$rc"
}

# ------------------------------------------------------------ sanitizers
# In a sanitizer build (cmake -DS5_SANITIZE=...: make test-asan, make
# test-tsan) s5tund writes its reports (ASan, LeakSanitizer, UBSan, TSan)
# into $WORK/sanitizer/: log_path is appended to whatever ASAN_OPTIONS,
# UBSAN_OPTIONS and TSAN_OPTIONS the caller set, for every process of the
# case. e2e_stop_s5tund and the clean-up fail the case when a report exists,
# even if everything else looked right (process mode restarts a worker that
# aborted; leaks show only at exit). Programs built without sanitizers
# ignore these variables.
E2E_SAN_DIR=""
E2E_SAN_SHOWN=0

e2e_sanitizer_setup() {
  E2E_SAN_DIR=$WORK/sanitizer
  mkdir -p "$E2E_SAN_DIR"
  chmod 1777 "$E2E_SAN_DIR"   # workers may have dropped to [run] user
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$E2E_SAN_DIR/asan"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$E2E_SAN_DIR/ubsan"
  export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$E2E_SAN_DIR/tsan"
}

# e2e_sanitizer_reports: true when a report exists; prints them (once).
e2e_sanitizer_reports() {
  local f found=1
  [[ -n $E2E_SAN_DIR && -d $E2E_SAN_DIR ]] || return 1
  for f in "$E2E_SAN_DIR"/*; do
    [[ -f $f ]] || continue
    found=0
    ((E2E_SAN_SHOWN)) && continue
    printf '[e2e] ---- sanitizer report %s\n' "$(basename "$f")" >&2
    head -n 200 "$f" >&2
  done
  ((found != 0)) || E2E_SAN_SHOWN=1
  return "$found"
}

# e2e_init NAME: work directory, namespace names, trap. Call first.
e2e_init() {
  E2E_NAME=$1
  NS_C="s5c-$E2E_NAME-$$"
  NS_S="s5s-$E2E_NAME-$$"
  trap e2e_cleanup EXIT
  trap e2e_on_err ERR
  trap 'log "interrupted"; exit 130' INT
  trap 'log "terminated"; exit 143' TERM
  trap 'exit 129' HUP
  trap 'exit 141' PIPE
  # Watchdog: the whole case is bounded (ctest's own timeout would SIGKILL
  # us, leaving no chance to clean up).
  ( sleep "${E2E_DEADLINE:-600}"
    printf '[e2e] FAIL: watchdog: case still running after %ss\n' "${E2E_DEADLINE:-600}" >&2
    kill -TERM $$ ) &
  E2E_WATCHDOG=$!
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/s5e2e-$E2E_NAME.XXXXXX")
  chmod 755 "$WORK"           # danted's unprivileged children read nothing here, but may log
  e2e_sanitizer_setup
  e2e_reap_stale
}

e2e_topology_up() {
  ip netns add "$NS_C"
  ip netns add "$NS_S"
  ip -n "$NS_C" link set lo up
  ip -n "$NS_S" link set lo up
  ip -n "$NS_C" link add veth0 type veth peer name veth0 netns "$NS_S"
  ip -n "$NS_C" addr add "$C_ADDR4/24" dev veth0
  ip -n "$NS_S" addr add "$S_ADDR4/24" dev veth0
  ip -n "$NS_C" addr add "$C_ADDR6/64" dev veth0 nodad
  ip -n "$NS_S" addr add "$S_ADDR6/64" dev veth0 nodad
  ip -n "$NS_C" link set veth0 up
  ip -n "$NS_S" link set veth0 up
  # Target addresses exist only in S.
  ip -n "$NS_S" addr add "$TGT4/32" dev lo
  ip -n "$NS_S" addr add "$TGT6/128" dev lo nodad
  log "topology up: C=$NS_C S=$NS_S"
}

# Runs a command in C / S.
in_c() { ip netns exec "$NS_C" "$@"; }
in_s() { ip netns exec "$NS_S" "$@"; }

# ------------------------------------------------------------ servers in S

# e2e_wait_listen PORT [ADDR]: until something in S listens on PORT.
e2e_wait_listen() {
  local port=$1 addr=${2:-} i
  for i in $(seq $((T_START * 10))); do
    if [[ -n $addr ]]; then
      in_s ss -Hltn "sport = :$port" | grep -qF "$addr" && return 0
    else
      [[ -n $(in_s ss -Hltn "sport = :$port") ]] && return 0
    fi
    sleep 0.1
  done
  return 1
}

e2e_start_target() {
  local ready=$WORK/target.ready
  E2E_LOGS+=("$WORK/target.log")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/target.py" --listen "$TGT4" --listen "$TGT6" \
    --port "$TGT_PORT" --ready-file "$ready" >"$WORK/target.log" 2>&1 &
  local i
  for i in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "target listening on $TGT4 and [$TGT6] port $TGT_PORT"; return 0; }
    sleep 0.1
  done
  fail "target.py did not start"
}

# e2e_start_microsocks [USER PASS]
e2e_start_microsocks() {
  local auth=()
  [[ $# -eq 2 ]] && auth=(-u "$1" -P "$2")
  E2E_LOGS+=("$WORK/microsocks.log")
  # No -1 (auth_once): that would whitelist an address after one good login
  # and hide authentication failures.
  ip netns exec "$NS_S" microsocks -i "$S_ADDR4" -p "$MS_PORT" "${auth[@]}" >>"$WORK/microsocks.log" 2>&1 &
  MS_PID=$!
  e2e_wait_listen "$MS_PORT" "$S_ADDR4" || fail "microsocks does not listen on $S_ADDR4:$MS_PORT"
  log "microsocks listening on $S_ADDR4:$MS_PORT${auth:+ (username/password)} pid $MS_PID"
}

e2e_stop_microsocks() {
  [[ -n ${MS_PID:-} ]] || return 0
  kill -TERM "$MS_PID" 2>/dev/null || true
  wait "$MS_PID" 2>/dev/null || true
  MS_PID=""
}

# e2e_start_dante: danted in S on S_ADDR4 and S_ADDR6 port DANTE_PORT
# (CONNECT and UDP ASSOCIATE), pid in DANTE_PID. Its log goes to DANTE_LOG
# (default $WORK/danted.log), with a line per connection unless
# DANTE_LOG_SESSIONS=0 (the benchmark: that logging would be measured).
# DANTE_INTERNAL="ADDR...": further addresses (of S) it listens on.
# DANTE_CONF: its configuration file (default $WORK/danted.conf; a second
# danted takes another, with DANTE_PORT and DANTE_LOG of its own).
# DANTE_NICE: its niceness (default 0), for a proxy that must not take the
# daemon's CPU on a shared machine.
e2e_start_dante() {
  local conf=${DANTE_CONF:-$WORK/danted.conf} dlog=${DANTE_LOG:-$WORK/danted.log} slog="error connect disconnect" a
  [[ ${DANTE_LOG_SESSIONS:-1} == 0 ]] && slog=error
  E2E_LOGS+=("$dlog")
  cat >"$conf" <<EOF
# danted for the s5tund end-to-end tests (namespace $NS_S)
logoutput: $dlog
internal: $S_ADDR4 port = $DANTE_PORT
internal: $S_ADDR6 port = $DANTE_PORT
$(for a in ${DANTE_INTERNAL:-}; do echo "internal: $a port = $DANTE_PORT"; done)
external: $S_ADDR4
external: $S_ADDR6
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
  command: connect udpassociate udpreply
  log: $slog
}
EOF
  # Foreground (no -D), our own pid file so that parallel runs do not clash.
  ip netns exec "$NS_S" nice -n "${DANTE_NICE:-0}" danted -f "$conf" -p "${conf%.conf}.pid" >>"$dlog" 2>&1 &
  DANTE_PID=$!
  e2e_wait_listen "$DANTE_PORT" "$S_ADDR4" || fail "danted does not listen on $S_ADDR4:$DANTE_PORT"
  e2e_wait_listen "$DANTE_PORT" "$S_ADDR6" || fail "danted does not listen on [$S_ADDR6]:$DANTE_PORT"
  for a in ${DANTE_INTERNAL:-}; do
    e2e_wait_listen "$DANTE_PORT" "$a" || fail "danted does not listen on $a:$DANTE_PORT"
  done
  log "danted listening on $S_ADDR4:$DANTE_PORT and [$S_ADDR6]:$DANTE_PORT pid $DANTE_PID"
}

# e2e_start_squid: squid in S on S_ADDR4 and [S_ADDR6] port SQUID_PORT, in
# the foreground (-N), its files under $WORK/squid (owned by its user),
# Basic authentication (SQUID_AUTH=digest: Digest) against a password file
# of one user (SQUID_USER, SQUID_PASS), CONNECT to any port for that user, nothing for anyone else,
# nothing cached; pid in SQUID_PID, access log in SQUID_LOG.
e2e_start_squid() {
  local d=$WORK/squid
  mkdir -p "$d"
  htpasswd -bc "$d/passwd" "$SQUID_USER" "$SQUID_PASS" 2>/dev/null
  printf '%s:%s\n' "$SQUID_USER" "$SQUID_PASS" >"$d/dpasswd"
  echo "$TGT4 target.test" >"$d/hosts"
  cat >"$d/squid.conf" <<EOF
# squid for the s5tund end-to-end tests (namespace $NS_S)
http_port $S_ADDR4:$SQUID_PORT
http_port [$S_ADDR6]:$SQUID_PORT
$(if [[ ${SQUID_AUTH:-basic} == digest ]]; then
    echo "auth_param digest program /usr/lib/squid/digest_file_auth $d/dpasswd"
    echo "auth_param digest children 2 startup=1"
    echo "auth_param digest realm s5tund-e2e"
  else
    echo "auth_param basic program /usr/lib/squid/basic_ncsa_auth $d/passwd"
    echo "auth_param basic children 2 startup=1"
    echo "auth_param basic realm s5tund-e2e"
  fi)
acl authed proxy_auth REQUIRED
http_access allow authed
http_access deny all
cache deny all
cache_mem 8 MB
access_log stdio:$d/access.log squid
cache_log $d/cache.log
cache_store_log none
pid_filename $d/squid.pid
coredump_dir $d
hosts_file $d/hosts
dns_nameservers 127.0.0.1
shutdown_lifetime 0 seconds
logfile_rotate 0
max_filedescriptors 4096
${SQUID_EXTRA:-}
EOF
  chown -R proxy:proxy "$d"
  SQUID_LOG=$d/access.log
  E2E_LOGS+=("$d/cache.log" "$d/access.log")
  in_s squid -k parse -f "$d/squid.conf" >"$d/parse.log" 2>&1 || { cat "$d/parse.log"; fail "squid -k parse"; }
  ip netns exec "$NS_S" squid -N -f "$d/squid.conf" >>"$d/cache.log" 2>&1 &
  SQUID_PID=$!
  e2e_wait_listen "$SQUID_PORT" "$S_ADDR4" || fail "squid does not listen on $S_ADDR4:$SQUID_PORT"
  e2e_wait_listen "$SQUID_PORT" "$S_ADDR6" || fail "squid does not listen on [$S_ADDR6]:$SQUID_PORT"
  log "squid listening on $S_ADDR4:$SQUID_PORT and [$S_ADDR6]:$SQUID_PORT (${SQUID_AUTH:-basic}, user $SQUID_USER)"
}

# The misbehaving SOCKS5 server: its behaviour is chosen by the port the
# CONNECT asks for (see badproxy.py); other ports are relayed honestly.
e2e_start_badproxy() {
  local ready=$WORK/badproxy.ready
  BP_LOG=$WORK/badproxy.log
  E2E_LOGS+=("$BP_LOG")
  ip netns exec "$NS_S" "$PY" "$E2E_DIR/badproxy.py" --listen "$S_ADDR4" --listen "$S_ADDR6" \
    --port "$BP_PORT" --ready-file "$ready" >"$BP_LOG" 2>&1 &
  local i
  for i in $(seq $((T_START * 10))); do
    [[ -s $ready ]] && { log "badproxy listening on $S_ADDR4 and [$S_ADDR6] port $BP_PORT"; return 0; }
    sleep 0.1
  done
  fail "badproxy.py did not start"
}

# e2e_wait_log FILE ERE SECONDS: until a line of FILE matches ERE (bounded);
# prints the line. Fails naming WHAT (the 4th argument) when none does.
e2e_wait_log() {
  local f=$1 re=$2 secs=$3 what=${4:-"a line matching /$2/ in $(basename "$1")"} i line
  for i in $(seq $((secs * 10))); do
    line=$(grep -E -m 1 -- "$re" "$f" 2>/dev/null || true)
    [[ -n $line ]] && { printf '%s\n' "$line"; return 0; }
    sleep 0.1
  done
  fail "no $what within ${secs}s"
}

# ------------------------------------------------------------ s5tund

e2e_pid_running() {   # true while $1 exists and is not a zombie
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}

# e2e_write_config FILE: an INI file from the variables CFG_MODE, CFG_QUEUES,
# CFG_PROXY_ADDR, CFG_PROXY_PORT, CFG_USER, CFG_PASS, CFG_MARK, CFG_PERSIST,
# CFG_IDLE_TIMEOUT, CFG_MAX_SESSIONS, CFG_POOL, CFG_OPTIMISTIC, CFG_LOG_SESSIONS (a
# session log line each, for diagnosis), CFG_DRAIN_TIMEOUT ([run]
# drain-timeout; a [run] section of its own) (empty ones are left out) and
# CFG_CONNECT_TIMEOUT (default 10). E2E_POOL, when set, is CFG_POOL's
# default: E2E_POOL=0 runs any case without the warm pool of proxy
# connections, E2E_POOL=8 with a bigger one.
e2e_write_config() {
  local f=$1 pool=${CFG_POOL:-${E2E_POOL:-}}
  {
    echo "# s5tund configuration for e2e test $E2E_NAME"
    [[ -n ${CFG_MODE:-} ]] && echo "mode = $CFG_MODE"
    [[ -n ${CFG_QUEUES:-} ]] && echo "queues = $CFG_QUEUES"
    echo
    echo "[tun]"
    echo "name = $TUN"
    echo "ipv4 = $TUN_IPV4"
    echo "ipv6 = $TUN_IPV6"
    [[ -n ${CFG_PERSIST:-} ]] && echo "persist = $CFG_PERSIST"
    echo
    if [[ -n ${CFG_PROXY_ADDR:-} || -n ${CFG_USER:-} || -n ${CFG_MARK:-} || -n ${CFG_PIPELINE:-} || -n $pool || -n ${CFG_OPTIMISTIC:-} ]]; then
      echo "[socks5]"
      [[ -n ${CFG_PROXY_ADDR:-} ]] && echo "address = $CFG_PROXY_ADDR"
      [[ -n ${CFG_PROXY_PORT:-} ]] && echo "port = $CFG_PROXY_PORT"
      [[ -n ${CFG_USER:-} ]] && echo "username = $CFG_USER"
      [[ -n ${CFG_PASS:-} ]] && echo "password = $CFG_PASS"
      [[ -n ${CFG_MARK:-} ]] && echo "mark = $CFG_MARK"
      [[ -n ${CFG_PIPELINE:-} ]] && echo "pipeline = $CFG_PIPELINE"
      [[ -n $pool ]] && echo "pool = $pool"
      [[ -n ${CFG_OPTIMISTIC:-} ]] && echo "optimistic = $CFG_OPTIMISTIC"
      echo
    fi
    echo "[session]"
    echo "connect-timeout = ${CFG_CONNECT_TIMEOUT:-10}"
    [[ -n ${CFG_IDLE_TIMEOUT:-} ]] && echo "tcp-idle-timeout = $CFG_IDLE_TIMEOUT"
    [[ -n ${CFG_MAX_SESSIONS:-} ]] && echo "max-sessions = $CFG_MAX_SESSIONS"
    [[ -n ${CFG_TCP_BUFFER:-} ]] && echo "tcp-buffer = $CFG_TCP_BUFFER"
    echo
    echo "[log]"
    echo "level = ${CFG_LOG_LEVEL:-info}"
    if [[ -n ${CFG_LOG_SESSIONS:-} ]]; then echo "sessions = true"; fi
    if [[ -n ${CFG_DRAIN_TIMEOUT:-} ]]; then printf '%s\n' "" "[run]" "drain-timeout = $CFG_DRAIN_TIMEOUT"; fi
  } >"$f"
}

# e2e_start_s5tund ARGS...: starts s5tund in C (stdout+stderr to its log),
# sets S5PID. Does not wait for readiness. E2E_S5_WRAP (an array, optional)
# is a command s5tund runs under that execs it (its pid stays S5PID).
e2e_start_s5tund() {
  S5LOG=$WORK/s5tund.$((${S5_RUNS:-0} + 1)).log
  S5_RUNS=$((${S5_RUNS:-0} + 1))
  E2E_LOGS+=("$S5LOG")
  echo "+ $S5TUND $*" >"$S5LOG"
  ip netns exec "$NS_C" ${E2E_S5_WRAP[@]+"${E2E_S5_WRAP[@]}"} "$S5TUND" "$@" >>"$S5LOG" 2>&1 &
  S5PID=$!
  log "s5tund started (pid $S5PID): $*"
}

e2e_tun_up() { [[ -n $(in_c ip link show dev "$TUN" up 2>/dev/null) ]]; }
e2e_tun_exists() { in_c ip link show dev "$TUN" >/dev/null 2>&1; }

# Number of queues attached to the TUN device.
e2e_tun_numqueues() {
  local n
  n=$(in_c ip -d link show dev "$TUN" 2>/dev/null | grep -o 'numqueues [0-9]*' | awk '{print $2}')
  if [[ -z $n ]]; then
    n=$(in_c sh -c "ls -d /sys/class/net/$TUN/queues/tx-* 2>/dev/null | wc -l")
  fi
  echo "${n:-0}"
}

# Byte counters of the TUN device: "TX RX" (TX: from the kernel, i.e. the
# client, into s5tund; RX: written by s5tund towards the client).
e2e_tun_bytes() {
  echo "$(in_c cat "/sys/class/net/$TUN/statistics/tx_bytes") $(in_c cat "/sys/class/net/$TUN/statistics/rx_bytes")"
}

# e2e_check_through_tun "TX0 RX0" MIN: both counters grew by at least MIN
# bytes since TX0 RX0: the traffic really went through the TUN device.
e2e_check_through_tun() {
  local before after min=$2
  read -r -a before <<<"$1"
  read -r -a after <<<"$(e2e_tun_bytes)"
  local tx=$((after[0] - before[0])) rx=$((after[1] - before[1]))
  ((tx >= min && rx >= min)) \
    || fail "$TUN carried $tx bytes in and $rx bytes out, expected at least $min each way"
  log "$TUN carried $tx bytes from the client and $rx bytes back"
}

# e2e_s5_warns [LOG]: its lines at level error or warn, but the start's
# warning about credentials in clear (every proxy with a login here is in
# namespace S, not loopback; e2e.upstream_squid checks that warning).
e2e_s5_warns() {
  grep -E '^[0-9T:.-]+ (error|warn) ' "${1:-$S5LOG}" | grep -vE "warn  main upstream .*: its credentials cross the network in clear" || true
}

# e2e_s5_log_clean [LOG]: s5tund's log (default: the current run's) has no
# line at level error or warn.
e2e_s5_log_clean() {
  local f=${1:-$S5LOG} bad
  bad=$(e2e_s5_warns "$f")
  [[ -z $bad ]] || fail "s5tund logged errors or warnings ($(basename "$f")): $(oneline "$bad")"
}

# Worker processes of s5tund (its children), one pid a line.
e2e_workers() { pgrep -P "$S5PID" 2>/dev/null || true; }

# e2e_unix_sockets: how many AF_UNIX sockets the daemon's processes (the
# supervisor and its workers) hold open (their descriptors whose inodes
# are in their network namespace's /proc/PID/net/unix).
e2e_unix_sockets() {
  "$PY" - "$S5PID" $(e2e_workers) <<'PYEOF'
import os, sys
n = 0
for pid in sys.argv[1:]:
    try:
        with open("/proc/%s/net/unix" % pid) as f:
            unix = {w[6] for w in (line.split() for line in f.readlines()[1:]) if len(w) >= 7}
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        n += link.startswith("socket:[") and link[8:-1] in unix
print(n)
PYEOF
}

# The fewest of five counts 0.2 s apart: a warm pool's connection (its
# pair until a session takes it) replaced at its age is a blip, not a hold.
e2e_unix_sockets_min() {
  local i c min=
  for i in 1 2 3 4 5; do
    c=$(e2e_unix_sockets)
    if [[ -z $min ]] || ((c < min)); then min=$c; fi
    sleep 0.2
  done
  echo "$min"
}

# e2e_no_pair_held N [CLIENT ARGS...]: N sessions through an encrypted
# upstream (TLS, Shadowsocks; a pooled one taken is replaced by one with
# its pair), each after one echo held open, add fewer than N AF_UNIX sockets to the daemon: their bulk phase goes
# through the codec, the handshake's socket pair closed (with the pair
# each held two).
e2e_no_pair_held() {
  local n=$1 before after i pids=()
  shift
  before=$(e2e_unix_sockets_min)
  for i in $(seq "$n"); do
    client "$@" hold --hold 60 >"$WORK/held$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq "$n"); do
    e2e_wait_log "$WORK/held$i.log" "hold: connection to .* open" "$T_STEP" "session $i held open" >/dev/null
  done
  after=$(e2e_unix_sockets_min)
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  ((after - before < n)) ||
    fail "$n held sessions: the daemon's AF_UNIX sockets went from $before to $after (a socket pair each)"
  log "$n held sessions: AF_UNIX sockets $before before, $after during (no socket pair in the bulk phase)"
}

e2e_s5_alive() { e2e_pid_running "$S5PID"; }

e2e_require_alive() {
  e2e_s5_alive || fail "s5tund (pid $S5PID) is not running any more ($*)"
}

# e2e_wait_ready MODE QUEUES: e2e_wait_device, then an echo through the
# tunnel (retried for a bounded time).
e2e_wait_ready() {
  e2e_wait_device "$@"
  client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10 \
    || fail "no traffic through the tunnel within ${T_START}s"
}

# e2e_wait_device MODE QUEUES: TUN device up with every queue attached, the
# workers there (processes in process mode, threads in thread mode), and the
# routes to the targets through it.
e2e_wait_device() {
  local mode=$1 queues=$2 i nq=0 nw=0
  for i in $(seq $((T_START * 10))); do
    e2e_s5_alive || fail "s5tund exited before its device came up"
    e2e_tun_up && break
    sleep 0.1
  done
  e2e_tun_up || fail "device $TUN is not up after ${T_START}s"
  for i in $(seq $((T_START * 10))); do
    nq=$(e2e_tun_numqueues)
    if [[ $mode == process ]]; then
      nw=$(e2e_workers | wc -l)
    else
      nw=$(ls "/proc/$S5PID/task" 2>/dev/null | wc -l)
    fi
    if [[ $mode == process ]]; then
      ((nq == queues && nw == queues)) && break
    else
      ((nq == queues && nw >= queues)) && break
    fi
    sleep 0.1
  done
  ((nq == queues)) || fail "$TUN has $nq queues attached, expected $queues"
  if [[ $mode == process ]]; then
    ((nw == queues)) || fail "s5tund has $nw worker processes, expected $queues"
    log "$TUN up, $nq queue(s), worker pids: $(e2e_workers | tr '\n' ' ')"
  else
    ((nw >= queues)) || fail "s5tund has $nw threads, expected at least $queues"
    log "$TUN up, $nq queue(s), $nw threads"
  fi
  e2e_add_routes
}

e2e_add_routes() {
  in_c ip route replace 10.201.0.0/24 dev "$TUN"
  in_c ip -6 route replace fd00:201::/64 dev "$TUN"
}

# e2e_stop_s5tund: SIGTERM, wait (bounded); sets S5RC to its exit status.
e2e_stop_s5tund() {
  local i
  kill -TERM "$S5PID" 2>/dev/null || true
  for i in $(seq $((T_STOP * 10))); do
    e2e_pid_running "$S5PID" || break
    sleep 0.1
  done
  if e2e_pid_running "$S5PID"; then
    fail "s5tund (pid $S5PID) still running ${T_STOP}s after SIGTERM"
  fi
  S5RC=0
  wait "$S5PID" || S5RC=$?
  log "s5tund exited with status $S5RC"
  S5PID=""
  if e2e_sanitizer_reports; then fail "sanitizer reports from s5tund (above)"; fi
}

# bg_wait CMD...: runs CMD in the background and waits for it, so that a
# signal (Ctrl-C, the watchdog) is handled at once instead of after CMD ends.
bg_wait() {
  "$@" &
  wait $!
}

# sclient ARGS...: client.py in S (the harness's own checks), bounded.
sclient() {
  bg_wait ip netns exec "$NS_S" timeout -k 5 "${CLIENT_T:-$T_STEP}" \
    "$PY" "$E2E_DIR/client.py" --port "$TGT_PORT" "$@"
}

# client ARGS...: client.py in C, bounded by T_STEP (or $CLIENT_T).
client() {
  bg_wait ip netns exec "$NS_C" timeout -k 5 "${CLIENT_T:-$T_STEP}" \
    "$PY" "$E2E_DIR/client.py" --port "$TGT_PORT" "$@"
}

# s5tund with everything in an INI file (mode, queues, proxy, credentials).
start_with_config() {   # PROXY_ADDR PROXY_PORT [USER PASS]
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$1 CFG_PROXY_PORT=$2 \
    CFG_USER=${3:-} CFG_PASS=${4:-} e2e_write_config "$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini"
  e2e_start_s5tund --config "$WORK/s5tund.$((${S5_RUNS:-0} + 1)).ini"
}

# s5tund with mode, queues and proxy given as flags (the INI file only has
# the [tun] and [log] sections).
start_with_flags() {    # ADDR:PORT
  CFG_MODE="" CFG_QUEUES="" CFG_PROXY_ADDR="" CFG_USER="" e2e_write_config "$WORK/s5tund.flags.ini"
  e2e_start_s5tund --config "$WORK/s5tund.flags.ini" --mode "$MODE" --queues "$QUEUES" --socks5 "$1"
}
