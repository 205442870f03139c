# The README's two set-up commands are `make node` and `make test`.
.PHONY: build node test fuzz bench

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
