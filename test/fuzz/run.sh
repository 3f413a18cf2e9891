#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the libFuzzer targets of a build made with -DS5_FUZZ=ON (make fuzz).
#
#   test/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]
#
# Each target fuzzes for SECONDS (default 60) starting from the committed
# seeds (test/fuzz/corpus/TARGET, read only) plus the working corpus
# BUILD_DIR/fuzz/corpus/TARGET, which keeps what earlier runs found. A
# crash, leak, timeout or out-of-memory input is saved in
# BUILD_DIR/fuzz/artifacts/TARGET/ and fails the run; the log of each target
# is BUILD_DIR/fuzz/TARGET.log. Prints one line per target: executions,
# executions per second, corpus size, result.
#
# To keep a crashing input as a regression test: copy it to
# test/fuzz/corpus/TARGET/crash-<what> (ctest's fuzz.replay.TARGET replays
# it from then on), fix the bug, and check with
#   BUILD_DIR/test/fuzz/TARGET test/fuzz/corpus/TARGET/crash-<what>
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ALL=(fuzz_socks5 fuzz_socks5_udp fuzz_upstream fuzz_dns fuzz_ini fuzz_http fuzz_packet fuzz_sniff_tls fuzz_sniff_http fuzz_sniff_quic fuzz_ss
  fuzz_ss_udp fuzz_ss2022 fuzz_ss2022_udp fuzz_tls)

[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [SECONDS [TARGET...]]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
SECS=${2:-60}
shift $(($# >= 2 ? 2 : 1))
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL[@]}")
[[ $SECS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: SECONDS must be a positive number, not '$SECS'" >&2; exit 2; }

OUT=$BUILD/fuzz
mkdir -p "$OUT"
# Sanitizer reports must end the input (UBSan is built without recovery;
# say it anyway for a build that was configured by hand).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

failed=0
printf '%-16s %8s %10s %8s %8s  %s\n' target seconds executions exec/s corpus result
for t in "${TARGETS[@]}"; do
  bin=$BUILD/test/fuzz/$t
  if [[ ! -x $bin ]] || ! grep -q LLVMFuzzerRunDriver "$bin" 2>/dev/null; then
    printf '%-16s %s\n' "$t" "MISSING: $bin is not a libFuzzer build (cmake -DS5_FUZZ=ON -DCMAKE_C_COMPILER=clang)"
    failed=1
    continue
  fi
  work=$OUT/corpus/$t
  art=$OUT/artifacts/$t
  log=$OUT/$t.log
  mkdir -p "$work" "$art"
  opts=(-max_total_time="$SECS" -print_final_stats=1 -artifact_prefix="$art/" -timeout=25
        -rss_limit_mb=2560 -reload=0)
  [[ -f $HERE/$t.dict ]] && opts+=(-dict="$HERE/$t.dict")
  case $t in
    fuzz_packet) opts+=(-max_len=16384) ;;   # room for several full-size packets
  esac
  before=$(find "$art" -type f | sort)
  start=$SECONDS
  rc=0
  timeout -k 10 $((SECS + 300)) "$bin" "${opts[@]}" "$work" "$HERE/corpus/$t" >"$log" 2>&1 || rc=$?
  took=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work" -type f | wc -l)
  new=$(comm -13 <(printf '%s\n' "$before") <(find "$art" -type f | sort) | sed '/^$/d')
  if ((rc == 0)) && [[ -z $new ]]; then
    result=ok
  else
    failed=1
    result="FAILED (exit $rc): ${new:+$(tr '\n' ' ' <<<"$new")}see $log"
  fi
  printf '%-16s %8s %10s %8s %8s  %s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
  if [[ $result != ok ]]; then
    grep -m1 -A12 -E '==[0-9]+==ERROR|runtime error|fuzz check failed|deadly signal|Test unit written' "$log" | sed 's/^/    /' || true
  fi
done
exit "$failed"
