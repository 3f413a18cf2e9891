#!/bin/bash
# SPDX-License-Identifier: MIT
# asan-twins.sh BUILD_DIR ASAN_SKIP: a ctest regular expression of the
# thread-mode e2e tests that the ASan suite runs (they are not in
# ASAN_SKIP) and whose case also runs in process mode in BUILD_DIR's
# suite. make test leaves them out of the plain suite: each (case, mode,
# queues) still runs once, the thread-mode one under the sanitizers, and
# the plain suite keeps every case in process mode and the mode x queues
# matrix in thread mode. Prints a pattern that matches nothing when there
# is no such test.
set -euo pipefail
build=$1 skip=$2
all=$(ctest --test-dir "$build" -N | awk '/Test +#/ { print $3 }')
asan=$(ctest --test-dir "$build" -N -E "$skip" | awk '/Test +#/ { print $3 }')
twins=()
while read -r t; do
  [[ $t =~ ^(e2e\..+)\.thread\.q[0-9]+$ ]] || continue
  base=${BASH_REMATCH[1]}
  grep -qxF "$t" <<<"$asan" || continue
  grep -q "^${base//./\\.}\.process\.q[0-9]*$" <<<"$all" || continue
  twins+=("${t//./\\.}")
done <<<"$all"
if ((${#twins[@]} == 0)); then echo '^$'; exit 0; fi
(IFS='|'; echo "^(${twins[*]})\$")
