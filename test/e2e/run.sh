#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# s5tund end-to-end tests: the one entry, one case per invocation.
#
#   run.sh CASE [MODE QUEUES] [S5TUND]
#   run.sh              lists the cases and the file of each
#   run.sh --check CASE...   each CASE defined exactly once, and no case
#                       defined twice (ctest lint.e2e_cases: what CMake registers)
#
# CASE     a case_CASE function of one of the case files (every *.sh here
#          that defines case_* functions: tcp.sh, ops_stats.sh, udp.sh, ...)
# MODE     thread | process (left out for the cases that take none)
# QUEUES   number of TUN queues (with MODE)
# S5TUND   the binary; default $S5TUND, then build/s5tund
#
# The case file is sourced (its top level only defines functions and
# variables; it may set E2E_DEADLINE from CASE), then the usual preparation
# runs (root, tools, the binary, lib.sh's e2e_init: work directory,
# namespace names, trap, watchdog), then setup_FILE if the file defines one
# (e.g. setup_hostile for hostile.sh: what all of its cases share), then
# case_CASE. Exit status: 0 passed, 1 failed, 2 usage, 77 skipped (not
# root, no /dev/net/tun). Each run builds its own network namespaces (see
# lib.sh), sends traffic only inside them, and removes them on exit,
# failure or signal. E2E_KEEP=1 keeps the work directory (logs, configs).
set -eEuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# e2e_case_files NAME: the files defining case_NAME ('*' for every case),
# one "FILE NAME" line per definition.
e2e_case_files() {
  local pat=${1//\*/[a-z0-9_]*}
  grep -Ho "^case_${pat}() *{" "$HERE"/*.sh | sed -E 's#^.*/([a-z0-9_]+)\.sh:case_([a-z0-9_]+)\(.*#\1 \2#'
}

usage() {
  echo "usage: $0 CASE [thread|process QUEUES] [S5TUND]" >&2
  echo "cases (file: names):" >&2
  e2e_case_files '*' | awk '{ c[$1] = c[$1] " " $2 } END { for (f in c) print "  " f ".sh:" c[f] }' | sort >&2
  exit 2
}

# --check CASE...: no root, no namespaces; exit 0 or 1 naming what is wrong.
e2e_check_cases() {
  local c bad=0 dups
  dups=$(e2e_case_files '*' | awk '{print $2}' | sort | uniq -d)
  for c in $dups; do
    echo "case_$c defined more than once: $(e2e_case_files "$c" | awk '{print $1 ".sh"}' | xargs)" >&2
    bad=1
  done
  for c in "$@"; do
    [[ -n $(e2e_case_files "$c") ]] || { echo "no case_$c in $HERE/*.sh" >&2; bad=1; }
  done
  ((bad == 0)) && echo "$# registered cases, each defined once"
  return "$bad"
}

CASE=${1:-}
if [[ $CASE == --check ]]; then
  shift
  e2e_check_cases "$@"
  exit
fi
[[ $CASE =~ ^[a-z0-9_]+$ ]] || usage
shift
mapfile -t E2E_DEFS < <(e2e_case_files "$CASE")
((${#E2E_DEFS[@]} > 0)) || { echo "no case_$CASE in $HERE/*.sh" >&2; usage; }
((${#E2E_DEFS[@]} == 1)) || { echo "case_$CASE defined more than once: ${E2E_DEFS[*]}" >&2; exit 2; }
E2E_FILE=${E2E_DEFS[0]%% *}
MODE=""
QUEUES=""
if [[ ${1:-} == thread || ${1:-} == process ]]; then
  MODE=$1 QUEUES=${2:-}
  [[ $QUEUES =~ ^[1-9][0-9]*$ ]] || usage
  shift 2
fi
(($# <= 1)) || usage

# shellcheck source=/dev/null
source "$HERE/$E2E_FILE.sh"
e2e_require_root
e2e_require_tools
e2e_find_s5tund "${1:-}"
e2e_init "$CASE"
log "case $CASE ($E2E_FILE.sh)${MODE:+ mode=$MODE queues=$QUEUES} binary=$S5TUND"
if declare -F "setup_$E2E_FILE" >/dev/null; then
  "setup_$E2E_FILE"
fi
"case_$CASE"
log "PASS: $CASE${MODE:+ mode=$MODE queues=$QUEUES}"
