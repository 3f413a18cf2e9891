#!/bin/bash
# SPDX-License-Identifier: MIT
# spdx.sh --check | --fix: every source file git knows carries an
# "SPDX-License-Identifier: MIT" line (LICENSE) in its first 3 lines.
#
# Source files: *.c *.h *.py *.sh *.cmake, CMakeLists.txt, Makefile,
# debian/rules, *.in (the unit template) and man pages (*.8). Not
# checked: patches (lwIP's own files, under its license), test inputs and
# corpora (test/unit/configs/*.ini: their line numbers are what the tests
# expect), data (CSV, PNG, dictionaries), Markdown, the example config.
#
#   --check  lists every source file without the line; exit 1 if any
#   --fix    inserts it as the first line, or after a #! line, in the
#            comment syntax of the file; then --check passes
set -euo pipefail

id="SPDX-License-Identifier: MIT"
cd "$(dirname "$0")/.."

# The comment that carries the line, by file; empty: not a source file.
comment_for() {
  case $1 in
    *.patch | */corpus/*) ;;
    *.c | *.h) echo "/* $id */" ;;
    *.py | *.sh | *.cmake | */CMakeLists.txt | CMakeLists.txt | Makefile | */Makefile | debian/rules | *.in) echo "# $id" ;;
    *.8) echo ".\\\" $id" ;;
  esac
}

# Whether a file is a source file (comment_for's list, without a subshell).
is_source() {
  case $1 in
    *.patch | */corpus/*) return 1 ;;
    *.c | *.h | *.py | *.sh | *.cmake | */CMakeLists.txt | CMakeLists.txt | Makefile | */Makefile | debian/rules | *.in | *.8) return 0 ;;
  esac
  return 1
}

missing() {
  # Tracked files, and new ones not yet added (but not ignored ones); their
  # first 3 lines read by one awk (a process or three per file took seconds).
  local files=() f
  while IFS= read -r -d '' f; do
    [ -f "$f" ] && is_source "$f" && files+=("$f")
  done < <(git ls-files -z --cached --others --exclude-standard)
  ((${#files[@]} > 0)) || return 0
  for f in "${files[@]}"; do [ -s "$f" ] || printf '%s\n' "$f"; done # empty: no line at all
  awk 'FNR == 1 { if (name != "" && !ok) print name; name = FILENAME; ok = 0 }
       /SPDX-License-Identifier:/ { ok = 1 }
       FNR >= 3 { nextfile }
       END { if (name != "" && !ok) print name }' "${files[@]}"
}

fix_one() {
  local f=$1 line tmp
  line=$(comment_for "$f")
  tmp=$(mktemp "$f.spdx.XXXXXX")
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; printf '%s\n' "$line"; tail -n +2 "$f"; } >"$tmp"
  else
    { printf '%s\n' "$line"; cat "$f"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
}

case ${1:---check} in
  --check)
    list=$(missing)
    if [ -n "$list" ]; then
      echo "spdx.sh: $(wc -l <<<"$list") source files lack '$id' in their first 3 lines (fix: .ci/spdx.sh --fix):"
      sed 's/^/  /' <<<"$list"
      exit 1
    fi
    echo "spdx.sh: every source file has an SPDX line"
    ;;
  --fix)
    n=0
    while IFS= read -r f; do
      [ -n "$f" ] || continue
      fix_one "$f"
      n=$((n + 1))
    done < <(missing)
    echo "spdx.sh: added the SPDX line to $n files"
    ;;
  *)
    echo "usage: spdx.sh --check | --fix" >&2
    exit 2
    ;;
esac
