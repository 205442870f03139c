#!/usr/bin/env bash
# The project's test command (README: `make test`): formatting, vet, the race-enabled
# test suite, then every fuzz target for a short fixed time.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 ./...

echo "== simulator sweep (500 seeds of real nodes, mixed faults, 4-10 nodes; without -race)"
go test -count=1 -run TestSweep ./sim/ -sweep=500 -record=testdata/sweeps.log -v | grep -E '^(---|ok|FAIL|\s+sim_test)' 

bash scripts/test-mcp-ts.sh
bash scripts/test-ui-e2e.sh
echo "== fuzz"
FUZZTIME=${FUZZTIME:-8s} bash scripts/fuzz.sh
echo "all checks passed"
