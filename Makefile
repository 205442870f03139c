# The README's two set-up commands are `make node` and `make test`.
.PHONY: build node test fuzz bench sim-soak soak

build:
	go build -o bin/mnemo ./cmd/mnemo

node: build
	./bin/mnemo node

test:
	bash scripts/test.sh

fuzz:
	FUZZTIME=$${FUZZTIME:-60s} bash scripts/fuzz.sh

bench:
	go test -run='^$$' -bench=. -benchtime=1x ./...

# Sweep the simulator's mixed-fault runs from a fresh seed for SOAK (default
# 10m), append the result to the clean-seed log and print the running total.
sim-soak: build
	./bin/mnemo sim --mixed --for $${SOAK:-10m} --seed $${SEED:-$$(date +%s)000} --record sim/testdata/sweeps.log
	./bin/mnemo sim --total sim/testdata/sweeps.log

# Run 5 real nodes on loopback for SOAK (default 10m) under writes from 3
# agents per node while a seeded fault script (SEED, default the clock) kills
# and restarts nodes on new ports and stops and resumes them; then check that
# every acknowledged save is on every node, digests agree and RSS held.
soak: build
	./bin/mnemo soak --for $${SOAK:-10m} $${SEED:+--seed $$SEED} $${KEEP:+--keep $$KEEP}
