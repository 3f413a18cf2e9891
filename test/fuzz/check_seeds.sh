#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctest fuzz.seeds.fuzz_packet: the packet seeds still reach what they were
# written for (a replay that passes proves nothing if the seeds stopped
# getting past the first packet: a changed input format, a changed
# handshake). Runs fuzz_packet with S5_FUZZ_TRACE=1 on a few seeds and
# checks its counters loosely (more than zero where it matters).
#
#   check_seeds.sh FUZZ_PACKET_BINARY CORPUS_DIR
set -euo pipefail
bin=$1 dir=$2
failed=0

# seed  "counter>min ..."  (counter names as fuzz_packet's trace line prints them)
check() {
  local seed=$1 want=$2 line name min val
  line=$(S5_FUZZ_TRACE=1 "$bin" -runs=1 "$dir/$seed" 2>&1 | grep '^fuzz_packet:' | tail -1) || true
  if [[ -z $line ]]; then
    echo "FAIL $seed: no trace line (did it run?)"
    failed=1
    return
  fi
  for w in $want; do
    name=${w%%>*}
    min=${w#*>}
    val=$(grep -oE "$name [0-9]+" <<<"$line" | head -1 | awk '{print $NF}')
    if [[ -z $val || $val -le $min ]]; then
      echo "FAIL $seed: '$name' is ${val:-missing}, expected more than $min: $line"
      failed=1
    fi
  done
  echo "ok   $seed: $line"
}

check seed-tcp4_session        "to_proxy>0 from_proxy>0"
check seed-tcp6_session        "to_proxy>0 from_proxy>0"
check seed-offload_tcp4_session "to_proxy>0 from_proxy>0"
check seed-tcp4_big_mtu        "from_proxy>50000"
check seed-udp4_associate      "udp>0 from_proxy>0"
check seed-udp6_associate      "udp>0 from_proxy>0"
check seed-frag4_udp           "from_proxy>1000"
check seed-frag6_udp           "from_proxy>1000"
check seed-dns4                "out>3"
check seed-tcp4_max_sessions   "drop_max>0"
check seed-icmp_off            "drop_icmp>0"
exit "$failed"
