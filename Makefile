# Quick start: `make run` (install what is missing, build, serve with an
# admin key printed) and `make test` (install what is missing, run every test).
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test test-long setup build bench fuzz clean-data

setup:
	@scripts/setup.sh

build: setup
	cargo build --release --locked

run: build
	@scripts/run.sh

test: setup
	@scripts/test.sh

# The long tests (`#[ignore]`d in `make test`: 20 minutes of audio
# transcribed in bounded memory); CI runs them after `make test` when time
# allows.
test-long: setup
	@scripts/test-long.sh

bench: build
	@bench/platform.sh

# Ten minutes of fuzzing per parser (make test-long runs each briefly).
fuzz: setup
	@scripts/fuzz.sh 600

clean-data:
	rm -rf data
