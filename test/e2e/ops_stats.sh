# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034,SC2153  # run.sh sourced lib.sh (its globals) before this file
# End-to-end cases of operations, what an operator reads (run.sh runs
# them; ctest e2e.ops.CASE.MODE.qN): the stats socket, the metrics
# endpoint, slow and holding clients, descriptor limits.
# shellcheck source=ops_lib.sh
source "$HERE/ops_lib.sh"

# The daemon's sleeps ended, every thread of every process: voluntary
# context switches (a preemption is not one).
stats_wakeups() {
  local p n=0 v
  for p in "$S5PID" $(e2e_workers); do
    for v in $(cat /proc/"$p"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches:/ {print $2}'); do
      n=$((n + v))
    done
  done
  echo "$n"
}

# Idle, each loop (the control loop, every worker) wakes about once a
# second: the workers' lwIP timer runs at its 250 ms only while lwIP has a
# connection. Counted over 4 s from 1 s after READY=1, once the pool is
# warm and before its first recycling (20 s); the limit, twice a second per
# loop, is half of what four ticks a second made.
stats_idle_wakeups() {
  local loops=$((QUEUES + 1)) secs=4 w0 w1
  if grep -qa __tsan_init "$S5TUND"; then # a thread of its own in every process, 10 wake-ups a second
    log "idle wake-ups not counted: ThreadSanitizer's runtime thread wakes on its own"
    return 0
  fi
  sleep 1
  w0=$(stats_wakeups)
  sleep "$secs"
  w1=$(stats_wakeups)
  log "idle: $((w1 - w0)) wake-ups in ${secs} s over $loops loops"
  (((w1 - w0) <= 2 * loops * secs)) || fail "idle: $((w1 - w0)) wake-ups in ${secs} s, expected at most $((2 * loops * secs)) (about one a second per loop)"
}

# stats: a known transfer (8 MiB up, 12 MiB down) moves bytes_to_proxy and
# bytes_from_proxy by exactly the bytes the client protocol sent, the TUN
# byte counters by the payload plus sane header overhead and exactly as the
# kernel counted; per-queue counters add up to the totals; the table of
# --stats equals the JSON; SIGUSR1 logs one line per queue and a total.
# Idle before it, each loop wakes about once a second (stats_idle_wakeups).
case_stats() {
  ops_setup
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  [[ -S $STATS_SOCK ]] || fail "no stats socket at $STATS_SOCK"
  stats_idle_wakeups
  ops stats --stats "$STATS_SOCK" --s5tund "$S5TUND" --pid "$S5PID" --log "$S5LOG" \
    --tun "$TUN" --host "$TGT4" --port "$TGT_PORT"
  e2e_require_alive "after the stats checks"
  e2e_s5_log_clean
  ops_stop_ok
  [[ ! -e $STATS_SOCK ]] || fail "the stats socket $STATS_SOCK is still there after exit"
  log "stats socket removed at exit"
}

# metrics: [stats] http on loopback in C. Parsed by Debian's
# prometheus_client: every counter per queue, equal to --stats --json, the
# byte counters moved by exactly a known transfer, the gauges, info, a
# reload (SIGHUP) counted with its time. Then
# garbage, wrong methods and paths, a 64 KiB request line and 1 MiB of
# headers (each its 4xx and a close), a request cut short, 40 slowloris
# connections (all cut, none answered; scrapes and an echo through the
# tunnel go on meanwhile), and afterwards the endpoint still serves and
# agrees. A second start on the unspecified address warns that it is not
# loopback and serves; a third on a port already taken exits 1 naming it.
case_metrics() {
  local port=9553 line rc=0 i holder
  ops_setup
  ops_start "http = 127.0.0.1:$port"
  e2e_wait_ready "$MODE" "$QUEUES"
  line=$(e2e_wait_log "$S5LOG" "metrics: http://127\.0\.0\.1:$port/metrics" 10 "'metrics: http://...' line")
  log "${line#* info  }"
  ops metrics --stats "$STATS_SOCK" --s5tund "$S5TUND" --http "127.0.0.1:$port" --mode "$MODE" \
    --pid "$S5PID" --host "$TGT4" --port "$TGT_PORT"
  e2e_require_alive "after the metrics checks"
  e2e_s5_log_clean
  ops_stop_ok
  in_c ss -Hltn "sport = :$port" | grep -q . && fail "port $port still listening after exit"

  ops_start "http = [::]:$port"
  e2e_wait_ready "$MODE" "$QUEUES"
  line=$(e2e_wait_log "$S5LOG" "warn .*\[stats\] http \[::\]:$port is not a loopback address" 10 \
    "warning about a non-loopback [stats] http")
  log "${line#* warn  }"
  OPS_T=$T_STEP ops scrape --stats "$STATS_SOCK" --s5tund "$S5TUND" --http "[::1]:$port" --mode "$MODE"
  ops_stop_ok

  # A port already taken: the start fails, saying which.
  # (SO_REUSEADDR: the port may still have connections in TIME_WAIT; two
  # sockets cannot both listen on it all the same.)
  in_c "$PY" -c 'import socket,sys,time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(120)' \
    "$port" "$WORK/holder.ready" >"$WORK/holder.log" 2>&1 &
  holder=$!
  for i in $(seq $((T_START * 10))); do [[ -e $WORK/holder.ready ]] && break; sleep 0.1; done
  [[ -e $WORK/holder.ready ]] || fail "could not hold port $port: $(oneline "$(cat "$WORK/holder.log")")"
  ops_start "http = 127.0.0.1:$port"
  for i in $(seq $((T_START * 10))); do e2e_s5_alive || break; sleep 0.1; done
  e2e_s5_alive && fail "s5tund still running with [stats] http on a port in use"
  wait "$S5PID" || rc=$?
  S5PID=""
  kill "$holder" 2>/dev/null || true
  wait "$holder" 2>/dev/null || true
  ((rc == 1)) || fail "s5tund exited $rc with [stats] http on a port in use, expected 1"
  line=$(grep -E "error main \[stats\] http 127\.0\.0\.1:$port: Address already in use" "$S5LOG") \
    || fail "no error naming [stats] http and the port: $(oneline "$(tail -5 "$S5LOG")")"
  e2e_tun_exists && fail "$TUN still exists after the failed start"
  log "port in use: exit 1, $line"
}

# stats_slow: clients of the stats socket that never send (60 of them, held
# open) and that trickle a byte every 150 ms without ever ending their
# request (4) must not hold up the control loop: meanwhile --stats answers,
# a SIGHUP is handled (the reload's log line), and SIGTERM stops the daemon.
case_stats_slow() {
  ops_setup
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  touch "$WORK/slow.on"
  "$PY" - "$STATS_SOCK" "$WORK/slow.on" >"$WORK/slow.log" 2>&1 <<'PYEOF' &
import os, socket, sys, threading, time
path, flag = sys.argv[1], sys.argv[2]
def trickle(s):
    try:
        while os.path.exists(flag):
            s.send(b"c")
            time.sleep(0.15)
    except OSError:
        pass
for i in range(4):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    threading.Thread(target=trickle, args=(s,), daemon=True).start()
silent = []
for i in range(60):   # without waiting for the backlog: EAGAIN is fine
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect(path)
    except OSError:
        pass
    silent.append(s)
print("holding", flush=True)
while os.path.exists(flag):
    time.sleep(0.1)
PYEOF
  local slow=$! rc=0 out n0
  e2e_wait_log "$WORK/slow.log" "^holding" "$T_STEP" "the slow clients" >/dev/null
  n0=$(grep -c "configuration reloaded" "$S5LOG" || true)
  kill -HUP "$S5PID"
  for _ in $(seq 100); do
    (($(grep -c "configuration reloaded" "$S5LOG" || true) > n0)) && break
    sleep 0.1
  done
  (($(grep -c "configuration reloaded" "$S5LOG" || true) > n0)) || fail "SIGHUP not handled within 10 s among slow stats clients"
  out=$(timeout 20 "$S5TUND" --stats "$STATS_SOCK" --json 2>&1) || rc=$?
  ((rc == 0)) || fail "--stats among silent and trickling clients exited $rc: $out"
  log "among 60 silent and 4 trickling stats clients: --stats answered, SIGHUP handled"
  ops_stop_ok
  rm -f "$WORK/slow.on"
  wait "$slow" 2>/dev/null || true
}

# stats_hold: the Bar of the one control plane. 50 clients of the stats
# socket at once, half silent (connect, say nothing) and half trickling (a
# byte every 100-500 ms, never a whole request), each connecting again as
# soon as the daemon closes it, delay neither traffic through the tunnel,
# nor the restart of a worker killed with SIGKILL (process mode), nor the
# exit on SIGTERM; --stats still answers. No wall-clock limit: each step is timed on a daemon
# without the clients and then on one with them, in the same run, and
# with them may take at most twice as long plus 1 s. (A stats server that
# serves one connection at a time inside the control loop, 200 ms for each
# silent one, holds SIGTERM and restarts as long as the clients keep on.)
stats_hold_ms() { echo $(($(date +%s%N) / 1000000)); }

# stats_hold_until T0 LIMIT_MS CMD...: CMD polled until it succeeds; the
# time from T0 (ms) in HOLD_T. Fails (1) once LIMIT_MS have passed.
stats_hold_until() {
  local t0=$1 limit=$2
  shift 2
  until "$@"; do
    (($(stats_hold_ms) - t0 > limit)) && return 1
    sleep 0.02
  done
  HOLD_T=$(($(stats_hold_ms) - t0))
}

# stats_hold_traffic with|without: 8 MiB each way through the tunnel three
# times; the median time (ms) in HOLD_TRAFFIC (one slow transfer on a busy
# machine says nothing about the daemon).
stats_hold_traffic() {
  local t0 times=()
  for _ in 1 2 3; do
    t0=$(stats_hold_ms)
    client --host "$TGT4" bulk --size 8M --upload-mode length \
      || fail "traffic through the tunnel failed ($1 the stats clients)"
    times+=($(($(stats_hold_ms) - t0)))
  done
  HOLD_TRAFFIC=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
}

stats_hold_started() { (($(grep -c "worker 0 started" "$S5LOG") > $1)); }
stats_hold_exited() { ! e2e_pid_running "$S5PID"; }

# stats_hold_clients: the 50 clients, in the background until
# $WORK/hold.on goes (HOLD_PID); returns once each has connected (or,
# after T_STEP, once each has at least found the backlog full: then it
# tries again every 50 ms).
stats_hold_clients() {
  touch "$WORK/hold.on"
  "$PY" - "$STATS_SOCK" "$WORK/hold.on" >"$WORK/hold.log" 2>&1 <<'PYEOF' &
import os, random, socket, sys, threading, time
path, flag = sys.argv[1], sys.argv[2]
lock, count = threading.Lock(), {"connects": 0, "closed": 0, "clients": 0}
tried = threading.Semaphore(0)
def bump(k):
    with lock:
        count[k] += 1
def connect(first):
    while os.path.exists(flag):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(1.0)
        try:
            s.connect(path)
            bump("connects")
            return s
        except OSError:  # the backlog full, or the daemon gone: again
            s.close()
            if first:
                tried.release()
                first = False
            time.sleep(0.05)
    return None
def silent(s):
    while os.path.exists(flag):
        try:
            if s.recv(4096) == b"":
                return
        except socket.timeout:
            pass
def trickle(s):
    rnd = random.Random()
    while os.path.exists(flag):
        s.send(b"s")  # never a newline: the request never ends
        time.sleep(rnd.uniform(0.1, 0.5))
def client(talk):  # one connection after another until the flag goes
    s = connect(True)
    if s is not None:
        bump("clients")
        tried.release()
    while s is not None:
        try:
            talk(s)
        except OSError:
            pass
        s.close()
        bump("closed")
        s = connect(False)
for i in range(50):
    threading.Thread(target=client, args=(silent if i % 2 else trickle,), daemon=True).start()
for i in range(50):  # each connected or queued for the backlog
    tried.acquire()
print("holding", flush=True)
while os.path.exists(flag) and count["clients"] < 50:
    time.sleep(0.05)
print("all connected" if count["clients"] == 50 else "not all connected", flush=True)
while os.path.exists(flag):
    time.sleep(0.1)
print("clients connected %d, connections %d, closed by the daemon %d"
      % (count["clients"], count["connects"], count["closed"]), flush=True)
PYEOF
  HOLD_PID=$!
  e2e_wait_log "$WORK/hold.log" "^holding" "$T_STEP" "start of the 50 stats clients" >/dev/null
  # Each has had a connection once (checked at the end): a few found the
  # backlog full at first. Not a condition to go on: the daemon's answers
  # are what is measured.
  for _ in $(seq $((T_STEP * 10))); do
    grep -q "^all connected" "$WORK/hold.log" && break
    sleep 0.1
  done
}

# stats_hold_round with|without LIMIT_TRAFFIC LIMIT_RESTART LIMIT_STOP: a
# daemon, the clients or not, the three steps timed into HOLD_TRAFFIC,
# HOLD_RESTART (process mode) and HOLD_STOP (ms); a step over its limit fails.
stats_hold_round() {
  local with=$1 lim_traffic=$2 lim_restart=$3 lim_stop=$4 t0 victim n0 rc=0 ticks
  ops_start
  e2e_wait_ready "$MODE" "$QUEUES"
  [[ $with == with ]] && stats_hold_clients
  ticks=$(fdlimit_cpu_ticks)
  stats_hold_traffic "$with"
  # The stats socket itself still answers (its client's own 5 s timeout).
  "$S5TUND" --stats "$STATS_SOCK" --json >/dev/null || fail "--stats failed $with the stats clients"
  ((HOLD_TRAFFIC <= lim_traffic)) \
    || fail "8 MiB each way took $HOLD_TRAFFIC ms (median of 3) $with the stats clients, limit $lim_traffic ms"
  HOLD_RESTART=0
  if [[ $MODE == process ]]; then
    victim=$(sed -nE 's/.*worker 0 started \(pid ([0-9]+)\).*/\1/p' "$S5LOG" | tail -n 1)
    n0=$(grep -c "worker 0 started" "$S5LOG")
    t0=$(stats_hold_ms)
    kill -KILL "$victim"
    stats_hold_until "$t0" "$lim_restart" stats_hold_started "$n0" \
      || fail "worker 0 (pid $victim) killed $with the stats clients: not restarted within $lim_restart ms"
    HOLD_RESTART=$HOLD_T
    client --host "$TGT4" echo --count 3 --retry-for "$T_START" --timeout 10
  fi
  ticks=$(($(fdlimit_cpu_ticks) - ticks))
  t0=$(stats_hold_ms)
  kill -TERM "$S5PID"
  stats_hold_until "$t0" "$lim_stop" stats_hold_exited \
    || fail "SIGTERM $with the stats clients: s5tund still running after $lim_stop ms"
  HOLD_STOP=$HOLD_T
  wait "$S5PID" || rc=$?
  S5PID=""
  ((rc == 0)) || fail "s5tund exited with status $rc after SIGTERM ($with the stats clients), expected 0"
  e2e_tun_exists && fail "$TUN still exists after s5tund exited"
  if e2e_sanitizer_reports; then fail "sanitizer reports from s5tund (above)"; fi
  if [[ $with == with ]]; then
    rm -f "$WORK/hold.on"
    wait "$HOLD_PID" || fail "the stats clients failed: $(oneline "$(cat "$WORK/hold.log")")"
  fi
  log "$with 50 stats clients: traffic $HOLD_TRAFFIC ms, restart $HOLD_RESTART ms, SIGTERM $HOLD_STOP ms;" \
    "control loop's CPU meanwhile $ticks ticks of $(getconf CLK_TCK)/s"
}

case_stats_hold() {
  local traffic restart stop
  ops_setup
  stats_hold_round without $((T_BULK * 1000)) $((T_STEP * 1000)) $((T_STOP * 1000))
  traffic=$HOLD_TRAFFIC restart=$HOLD_RESTART stop=$HOLD_STOP
  stats_hold_round with $((2 * traffic + 1000)) $((2 * restart + 1000)) $((2 * stop + 1000))
  log "$(tail -n 1 "$WORK/hold.log")"
  grep -q "^clients connected 50," "$WORK/hold.log" || fail "not every stats client got a connection"
}

# fdlimit: the control loop at the descriptor limit. Thread mode shares one
# descriptor table between the workers and the listeners: connections held
# through the tunnel until the proxy connects fail with EMFILE, then a
# --stats and a silent client on the stats socket: the main thread must not
# spin on the queued connection (its CPU time over 3 s, from /proc), and
# --stats answers (the descriptor reserve takes it). Both modes: a stalled
# daemon (SIGSTOP) makes --stats fail with a message within its timeout
# instead of hanging.
fdlimit_cpu_ticks() {   # utime + stime of the main thread
  awk '{print $14 + $15}' "/proc/$S5PID/task/$S5PID/stat"
}

case_fdlimit() {
  ops_setup
  local out rc ticks0 ticks1 hz held
  hz=$(getconf CLK_TCK)
  if [[ $MODE == thread ]]; then
    E2E_S5_WRAP=(prlimit --nofile=64:64 --)
    ops_start
    E2E_S5_WRAP=()
  else
    ops_start
  fi
  e2e_wait_ready "$MODE" "$QUEUES"
  if [[ $MODE == thread ]]; then
    # Hold connections until the tunnel refuses more (EMFILE at the proxy
    # connect), then keep them until the file goes.
    touch "$WORK/hold.on"
    ip netns exec "$NS_C" "$PY" - "$TGT4" "$TGT_PORT" "$WORK/hold.on" >"$WORK/hold.log" 2>&1 <<'PYEOF' &
import os, socket, sys, time
host, port, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
held = []
for i in range(200):
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"ECHO\nx\n")
        if not s.recv(64):
            raise OSError("closed")
        held.append(s)
    except OSError as e:
        print("held %d, then %s" % (len(held), e), flush=True)
        break
else:
    print("held %d, never refused" % len(held), flush=True)
while os.path.exists(flag):
    time.sleep(0.2)
PYEOF
    local hold_pid=$!
    e2e_wait_log "$WORK/hold.log" "^held" "$T_STEP" "the holder's count" >/dev/null
    held=$(cat "$WORK/hold.log")
    [[ $held == *"never refused"* ]] && fail "200 connections held without reaching the descriptor limit: $held"
    log "at the descriptor limit: $held"
    # A silent client queued on the stats socket, and --stats.
    "$PY" -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(6)' \
      "$STATS_SOCK" &
    local silent=$!
    ticks0=$(fdlimit_cpu_ticks)
    rc=0
    out=$(timeout 20 "$S5TUND" --stats "$STATS_SOCK" --json 2>&1) || rc=$?
    ((rc == 0)) || fail "--stats at the descriptor limit exited $rc: $out"
    grep -q '"tcp_total"' <<<"$out" || fail "--stats at the descriptor limit: no document: $out"
    sleep 3
    ticks1=$(fdlimit_cpu_ticks)
    # Idle, the main thread wakes every so often; spinning costs a full core.
    ((ticks1 - ticks0 < hz)) || fail "the main thread used $(((ticks1 - ticks0) * 1000 / hz)) ms of CPU in ~3 s at the descriptor limit (spinning?)"
    log "main thread: $(((ticks1 - ticks0) * 1000 / hz)) ms of CPU in ~3 s at the descriptor limit; --stats answered"
    wait "$silent" 2>/dev/null || true
    rm -f "$WORK/hold.on"
    wait "$hold_pid" 2>/dev/null || true
  fi
  # A stalled daemon: --stats fails within its timeout, saying so.
  kill -STOP "$S5PID"
  rc=0
  out=$(timeout 20 "$S5TUND" --stats "$STATS_SOCK" 2>&1) || rc=$?
  kill -CONT "$S5PID"
  ((rc == 1)) || fail "--stats against a stopped daemon exited $rc, expected 1: $out"
  grep -q "no answer within 5 s" <<<"$out" || fail "--stats against a stopped daemon: $out"
  log "stalled daemon: --stats exit 1: $out"
  "$S5TUND" --stats "$STATS_SOCK" >/dev/null || fail "--stats after SIGCONT failed"
  ops_stop_ok
}

# nofile: [run] limit-nofile = 65536 where the hard limit of open files is
# lower and cannot be raised (prlimit 1024:4096, CAP_SYS_RESOURCE out of the
# bounding and inheritable sets, as in a container): s5tund starts, every
# process of it runs with 4096 (soft and hard), it serves, and it logs one
# warning naming 65536 and 4096. As root (CAP_SYS_RESOURCE), a limit above
# fs.nr_open is the same: the hard limit, a warning. A hard limit below what
# the queues need at all (nofile_floor in threads/main.c: 32 + 8 a queue),
# and a limit-nofile below it: exit 1 with one error line, no device.
NOFILE_NOCAP=(setpriv --bounding-set -sys_resource --inh-caps -sys_resource --)

nofile_limits_all() {   # every process of the daemon runs with soft = hard = $1
  local pid lim
  for pid in "$S5PID" $(e2e_workers); do
    lim=$(awk '/^Max open files/ {print $4, $5}' "/proc/$pid/limits")
    [[ $lim == "$1 $1" ]] || fail "process $pid of s5tund: open files $lim, expected $1 $1"
  done
}

nofile_warned() {   # LIMIT HARD: the one warning (and nothing else at warn or above)
  local line bad
  line=$(e2e_wait_log "$S5LOG" "warn .*\[run\] limit-nofile = $1: the hard limit of open files is $2 .*running with $2" 10 \
    "warning naming limit-nofile = $1 and the hard limit $2")
  bad=$(e2e_s5_warns | grep -vF "${line#* warn  }" || true)
  [[ -z $bad ]] || fail "more than the one warning: $(oneline "$bad")"
  [[ $(grep -c "limit-nofile" "$S5LOG") == 1 ]] || fail "limit-nofile logged more than once: $(oneline "$(grep "limit-nofile" "$S5LOG")")"
  log "${line#* warn  }"
}

nofile_refused() {   # WHAT REGEX PRLIMIT-ARGS...: exit 1 naming the key, no device
  local what=$1 re=$2 ini=$WORK/nofile-refused.ini rc=0 out
  shift 2
  cp "$WORK/nofile.ini" "$ini"
  printf '%s\n' "limit-nofile = $NOFILE_REFUSED" >>"$ini"
  out=$(in_c timeout -k 5 "$T_STOP" prlimit "$@" "${NOFILE_NOCAP[@]}" "$S5TUND" --config "$ini" 2>&1) || rc=$?
  ((rc == 1)) || fail "$what: exit status $rc, expected 1: $(oneline "$out")"
  grep -Eq "error main \[run\] limit-nofile = $NOFILE_REFUSED: $re" <<<"$out" \
    || fail "$what: no error line matching /$re/: $(oneline "$out")"
  e2e_tun_exists && fail "$what: $TUN left behind"
  log "$what: exit 1: $(oneline "$(grep -F "limit-nofile" <<<"$out")")"
}

case_nofile() {
  local need=$((32 + 8 * QUEUES)) nr_open cap
  ops_setup
  # limit-nofile goes last, so that each run can append its own.
  CFG_MODE=$MODE CFG_QUEUES=$QUEUES CFG_PROXY_ADDR=$S_ADDR4 CFG_PROXY_PORT=$MS_PORT \
    e2e_write_config "$WORK/nofile.ini"
  printf '%s\n' "" "[stats]" "socket = $WORK/stats.sock" "" "[run]" >>"$WORK/nofile.ini"
  STATS_SOCK=$WORK/stats.sock

  cp "$WORK/nofile.ini" "$WORK/nofile-65536.ini"
  echo "limit-nofile = 65536" >>"$WORK/nofile-65536.ini"
  E2E_S5_WRAP=(prlimit --nofile=1024:4096 "${NOFILE_NOCAP[@]}")
  e2e_start_s5tund --config "$WORK/nofile-65536.ini"
  E2E_S5_WRAP=()
  e2e_wait_ready "$MODE" "$QUEUES"
  cap=$(awk '/^CapBnd:/ {print $2}' "/proc/$S5PID/status")
  ((0x$cap & (1 << 24))) && fail "s5tund has CAP_SYS_RESOURCE in its bounding set ($cap): the case tests nothing"
  nofile_limits_all 4096
  nofile_warned 65536 4096
  client --host "$TGT4" concurrent 100
  client --host "$TGT6" echo --count 3
  ops_stop_ok
  log "hard limit 4096 without CAP_SYS_RESOURCE: ran with 4096 open files and served"

  # As root, a limit the kernel cannot grant (above fs.nr_open): the same.
  nr_open=$(cat /proc/sys/fs/nr_open)
  cp "$WORK/nofile.ini" "$WORK/nofile-nr_open.ini"
  echo "limit-nofile = $((nr_open + 64))" >>"$WORK/nofile-nr_open.ini"
  E2E_S5_WRAP=(prlimit --nofile=1024:4096)
  e2e_start_s5tund --config "$WORK/nofile-nr_open.ini"
  E2E_S5_WRAP=()
  e2e_wait_ready "$MODE" "$QUEUES"
  nofile_limits_all 4096
  nofile_warned $((nr_open + 64)) 4096
  ops_stop_ok

  # Too low to run at all: a hard limit below what the queues need, and a
  # limit-nofile below it.
  NOFILE_REFUSED=65536 nofile_refused "hard limit $((need - 1))" \
    "the hard limit of open files is $((need - 1)) and cannot be raised .*below the minimum of $need for $QUEUES queues?$" \
    --nofile=$((need - 1)):$((need - 1))
  NOFILE_REFUSED=$((need - 1)) nofile_refused "limit-nofile $((need - 1))" \
    "below the minimum of $need open files for $QUEUES queues?$" --nofile=1024:4096
}
