# lockd — see README.md. Every target runs from the repository root.
GO      ?= go
BIN     ?= bin/lockd
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build build-unsafe run test test-deps test-short race lint golangci-lint cluster cluster-down bench bench-serving bench-compare jepsen jepsen-selftest clean

# bin/lockd (the server and its CLI) and bin/lockd-bench (the benchmarks).
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/lockd
	$(GO) build -o $(dir $(BIN))lockd-bench ./cmd/lockd-bench

# The build tag that compiles in the unsafe switches (lockd serve's
# --unsafe-debug and --unsafe-fault-injection), for tests and the fault
# harness only: make build's bin/lockd has neither flag, so a production
# binary cannot be started with a guarantee off.
UNSAFE_TAG := lockd_unsafe

# bin/lockd-unsafe: lockd with the unsafe switches, for make cluster and
# the scripts that partition nodes or skew their clocks.
build-unsafe:
	$(GO) build -tags $(UNSAFE_TAG) -ldflags "-X main.version=$(VERSION)" -o $(dir $(BIN))lockd-unsafe ./cmd/lockd

# A single-node cluster on 127.0.0.1:7400, data in ./lockd-data.
run:
	$(GO) run ./cmd/lockd serve

# The packages whose tests exercise concurrency (the lease engine, the
# peer multiplexer and its fault rules, the Go client, the state machine
# and its blocking readers): make test runs them again under the race
# detector (about 95 s on 2 busy cores; -race needs cgo). make race runs
# every package under it.
RACE_PKGS := ./lease ./internal/mux ./client ./fsm ./cmd/lockd

# The packages with tests of the unsafe switches: test files built only
# with UNSAFE_TAG, whose tests are all named *Unsafe*. (The process tests,
# test/system and jepsen, need no tag themselves: they build lockd with
# it.)
UNSAFE_PKGS := ./fsm ./lease ./server ./cmd/lockd

# What CI runs (after lint): vet of both builds, then every test tier
# (unit, in-process cluster, system) of the default build, then the tests
# of the unsafe switches in UNSAFE_PKGS with UNSAFE_TAG, then RACE_PKGS
# under the race detector, then the tests of the separate modules
# bench/compare and test/etcdcompat (etcd's client against lockd's etcd
# API), which go test ./... leaves out (a nested module is not part of
# ./...), and lockd's patch to hashicorp/raft (third_party/raft, its
# parallel leader append tests under the race detector).
test:
	$(GO) vet ./...
	$(GO) vet -tags $(UNSAFE_TAG) ./...
	$(GO) test ./...
	$(GO) test -tags $(UNSAFE_TAG) -run Unsafe $(UNSAFE_PKGS)
	$(GO) test -race $(RACE_PKGS)
	cd bench/compare && $(GO) vet ./... && $(GO) test ./...
	cd test/etcdcompat && $(GO) vet ./... && $(GO) test ./...
	cd jepsen/etcdclient && $(GO) vet ./... && $(GO) test ./...
	cd third_party/raft && $(GO) vet . && $(GO) test -race -run "ParallelAppend|NotifyFollowersOfCommit" .

# What the optional parts of make test use (Chromium, for the status
# page's browser test), installed with apt-get as root, saying so first.
# make test never installs anything: without Chromium it skips that test.
test-deps:
	scripts/test-deps.sh

# Unit tests only (skips the multi-node and process tests).
test-short:
	$(GO) test -short ./...
	$(GO) test -short -tags $(UNSAFE_TAG) -run Unsafe $(UNSAFE_PKGS)

race:
	$(GO) test -race ./...

# gofmt, go vet and golangci-lint (.golangci.yml) over lockd and over the
# separate modules bench/compare, test/etcdcompat and jepsen/etcdclient. golangci-lint is pinned and installed into
# ./bin with go install (not a dependency in go.mod), once: again only when
# ./bin/golangci-lint is missing or reports another version.
GOLANGCI_LINT_VERSION := 2.15.0
GOLANGCI_LINT         := $(CURDIR)/bin/golangci-lint

lint: golangci-lint
	@out=$$(gofmt -l . | grep -v '^vendor/'); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags $(UNSAFE_TAG) ./...
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags $(UNSAFE_TAG) ./...
	cd bench/compare && $(GO) vet ./... && $(GOLANGCI_LINT) run ./...
	cd test/etcdcompat && $(GO) vet ./... && $(GOLANGCI_LINT) run ./...
	cd jepsen/etcdclient && $(GO) vet ./... && $(GOLANGCI_LINT) run ./...

golangci-lint:
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -q ' version $(GOLANGCI_LINT_VERSION) ' || { \
	  echo "installing golangci-lint v$(GOLANGCI_LINT_VERSION) into bin/"; rm -f $(GOLANGCI_LINT); \
	  GOBIN=$(CURDIR)/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$(GOLANGCI_LINT_VERSION); }

# Message counts and time to agreement of ring, bully, invitation and Raft
# (BENCHMARKS.md, "Election modes compared"); writes bench-out/elections.{csv,svg}.
bench:
	$(GO) run ./cmd/lockd-bench elections --out bench-out

# The serving path on a 3-node cluster this target starts and stops itself
# (ports 7410-7431): uncontended lock cycles, hand-offs and keepalives at
# 1k, 10k and 100k sessions (BENCHMARKS.md, "Measuring the serving path"); writes
# bench-out/serving.json. About 5 minutes.
bench-serving: build
	scripts/bench-serving.sh

# lockd, etcd and ZooKeeper 3.8 side by side (BENCHMARKS.md, "Comparing with
# etcd and ZooKeeper"): builds etcd 3.7.3 into bin/etcd from bench/etcdserver
# (a module of its own that pins it; ETCD_BIN=etcd uses Debian's etcd-server
# 3.4 instead), installs zookeeperd (and etcd-server if used) with apt-get
# when absent, then for each system in turn starts a 3-member cluster on
# 127.0.0.1 (etcd 7511-7523, ZooKeeper 7531-7553, lockd 7610-7631; data in
# .compare/), runs the same rows against it, times 5 failovers (kill -9
# of the leader; lockd's on a cluster of its own) and stops it; prints the
# table with the ratios and targets and writes bench-out/compare.{json,md}.
# About 6 minutes, of which the failover trials take 1.5 (20-40 s a
# system), plus the install on a fresh machine. ARGS passes row flags to
# every system, e.g. ARGS="--duration 5s --workers 1,64";
# ARGS="--benches kv --workers 1,16,64 --fanout 1000" runs the kv rows of
# the namespace (put, get, cas, txn, watch fan-out) instead;
# COMPARE_FAILOVER_TRIALS=0 skips the failover trials.
# COMPARE_SYSTEMS="etcd lockd-etcd" COMPARE_FAILOVER_TRIALS=0
# ARGS="--benches etcd-api" runs the etcd-API rows (concurrency.Mutex,
# Put, Range, watch fan-out, lease KeepAliveOnce) through the same clientv3
# code against etcd and against lockd's nodes serving etcd's API (about 11
# minutes).
bench-compare: build
	cd bench/etcdserver && CGO_ENABLED=0 $(GO) build -o ../../bin/etcd . || \
	  { echo "could not build etcd from bench/etcdserver; ETCD_BIN=etcd uses Debian's etcd-server" >&2; exit 1; }
	cd bench/compare && $(GO) build -o ../../bin/lockd-compare ./cmd/lockd-compare || \
	  { echo "if go.sum is out of step with lockd's go.mod: cd bench/compare && go mod tidy" >&2; exit 1; }
	COMPARE_COMMAND="$(if $(COMPARE_SYSTEMS),COMPARE_SYSTEMS=\"$(COMPARE_SYSTEMS)\" )$(if $(COMPARE_FAILOVER_TRIALS),COMPARE_FAILOVER_TRIALS=$(COMPARE_FAILOVER_TRIALS) )make bench-compare$(if $(ARGS), ARGS=\"$(ARGS)\")" \
	  scripts/bench-compare.sh $(ARGS)

# The fault-injection campaign (about two hours): first the self-test on
# the same source (every checker must catch its own unsafe switch, every
# control must be clean; its table goes to jepsen-out/selftest.txt), and
# only if it passes, 50 seeded runs of 60 s over every fault kind, appending
# the campaign's row (with its commit) to jepsen/RESULTS.md. A checker
# shown unable to fail makes its zeros worth nothing, so the campaign does
# not run without it.
jepsen: jepsen-selftest
	$(GO) run ./jepsen --runs 50 --duration 60s --seed 1000 --faults all --results jepsen/RESULTS.md

# Proves every checker catches the --unsafe-debug switch (or harness switch)
# that breaks the guarantee it guards, and that the controls are clean (the
# harness builds lockd with UNSAFE_TAG itself, as make jepsen does);
# prints the table of which checker caught which switch (about 45 minutes)
# and keeps it in jepsen-out/selftest.txt. SELFTEST_SERVE_ARGS adds flags to
# every Raft case's nodes (make jepsen-selftest SELFTEST_SERVE_ARGS=--raft-parallel-append).
jepsen-selftest:
	scripts/jepsen-deps.sh
	mkdir -p jepsen-out
	LOCKD_JEPSEN_SELFTEST=1 LOCKD_JEPSEN_SELFTEST_SERVE_ARGS="$(SELFTEST_SERVE_ARGS)" bash -o pipefail -c '$(GO) test -count=1 -run TestSelfTest -timeout 90m -v ./jepsen 2>&1 | tee jepsen-out/selftest.txt'

# A local 3-node cluster in the background (scripts/cluster.sh), from
# bin/lockd-unsafe: its nodes run with --unsafe-fault-injection for the
# partition and clock scripts.
cluster: build-unsafe
	LOCKD_BIN=$(dir $(BIN))lockd-unsafe scripts/cluster.sh up 3

cluster-down:
	scripts/cluster.sh down

clean:
	rm -rf bin lockd-data .cluster .bench-cluster .compare bench-out jepsen-out
