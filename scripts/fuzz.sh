#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each (default 8s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-8s}
git grep -l '^func Fuzz' -- '*_test.go' | while read -r file; do
  pkg="./$(dirname "$file")"
  for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/mnemo-fuzz.log 2>&1 || { cat /tmp/mnemo-fuzz.log; exit 1; }
  done
done
