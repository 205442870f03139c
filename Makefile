# The README's two set-up commands are `make node` and `make test`.
.PHONY: build node test fuzz bench sim-soak

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
