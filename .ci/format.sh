#!/bin/bash
# SPDX-License-Identifier: MIT
# format.sh --check | --fix: every C file git knows is formatted the way
# .clang-format says (core/'s style). --check is ctest's lint.format
# (clang-format --dry-run --Werror); --fix rewrites the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v clang-format >/dev/null 2>&1 || { echo "format.sh: clang-format is missing (make deps installs it)" >&2; exit 1; }

files() { git ls-files -z --cached --others --exclude-standard -- '*.c' '*.h'; }

case ${1:-} in
  --check) files | xargs -0 clang-format --dry-run --Werror ;;
  --fix) files | xargs -0 clang-format -i ;;
  *) echo "usage: $0 --check | --fix" >&2; exit 2 ;;
esac
