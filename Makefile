# sealane — the two commands a newcomer needs:
#   make demo   brings up the sandbox cluster and deploys examples/demo through the pipeline
#   make test   brings up the sandbox (three clusters) and runs the whole test suite
SHELL := /bin/bash
REPO := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(REPO)/bin
SEALANE_SANDBOX_DIR ?= $(REPO)/.sandbox
export SEALANE_SANDBOX_DIR
SANDBOX_KUBECONFIG := $(SEALANE_SANDBOX_DIR)/kubeconfig
export PATH := $(HOME)/.cache/sealane/bin:$(PATH)
GO_PACKAGES := ./... ./events/... ./examples/audit-consumer/...

.PHONY: fuzz build demo test test-short bench vet fmt clean chaos-soak image

include $(REPO)/Makefile.sandbox.mk

# Binaries are built static (CGO_ENABLED=0), as the image is: a cgo build links dynamically and,
# because a dependency imports "plugin", exports every symbol — 12-14 MB more resident memory
# per process for the dynamic symbol tables and the loader's work.
# `sealane version` names the commit (Go stamps none in workspace mode).
LDFLAGS := -X github.com/sealane/sealane/pkg/version.Commit=$(shell git -C $(REPO) rev-parse HEAD 2>/dev/null)
build:
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/sealane ./cmd/sealane
	for s in renderer applier tracker recorder webhook rollout console; do CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/sealane-$$s ./services/$$s || exit 1; done

# The image of deployments/chart: the CLI and the service binaries (the four stages, the webhook intake, the rollout coordinator, the console)
# (deployments/Dockerfile), with docker or podman.
IMAGE ?= ghcr.io/sealane/sealane:dev
image:
	@tool=$$(command -v docker || command -v podman) || { echo "make image needs docker or podman"; exit 1; }; \
	$$tool build -f deployments/Dockerfile --build-arg COMMIT=$$(git rev-parse HEAD) -t $(IMAGE) .

demo: sandbox-up build
	$(BIN)/sealane deploy examples/demo --env demo --kubeconfig $(SANDBOX_KUBECONFIG) \
		--data-dir $(SEALANE_SANDBOX_DIR)/sealane-data --timeout 2m
	@echo; echo "helm sees it too:"; helm --kubeconfig $(SANDBOX_KUBECONFIG) list -A

# The suite needs the 3-cluster sandbox: fleet rollouts (test/e2e/rollout_test.go) and
# test/multicluster run across sandbox-1..3.
test: CLUSTERS = 3
test: sandbox-up vet
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -tags multicluster -count=1 -timeout 60m $(GO_PACKAGES)

test-short:
	go test -short -count=1 $(GO_PACKAGES)

# Runs test/chaos N times (default 20) with fresh random seeds, printing each seed and result.
N ?= 20
chaos-soak: sandbox-up
	N=$(N) $(REPO)/hack/chaos-soak.sh

# Benchmarks report sealane against helm side by side, as ratios (see bench/README.md).
# Three control planes: the fleet rollout benchmarks roll out to sandbox-1..3.
bench: CLUSTERS = 3
bench: sandbox-up
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'Pipeline' -benchtime 10x -timeout 30m ./bench/...
	go test -run '^$$' -bench 'Render1000$$' -benchtime 5x -timeout 30m ./bench/...
	go test -run '^$$' -bench 'RenderFleet' -benchtime 1x -timeout 30m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'Deploy' -benchtime 1x -timeout 60m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'Track' -benchtime 1x -timeout 30m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'Floor' -benchtime 1x -count 3 -timeout 60m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'RealCharts' -benchtime 1x -timeout 90m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'Rollout' -benchtime 1x -timeout 60m ./bench/...
	go test -run '^$$' -bench 'WebhookIntake' -benchtime 10x -timeout 10m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'ObservabilityOverhead' -benchtime 30x -count 3 -timeout 20m ./bench/...
	SEALANE_KUBECONFIG=$(SANDBOX_KUBECONFIG) go test -run '^$$' -bench 'ConsoleFanout' -benchtime 1x -timeout 20m ./bench/...
	go test -run '^$$' -bench 'Checkout' -benchtime 5x -timeout 10m ./pkg/gitsource/

# Runs every fuzz target (their seed corpora run in `make test` already) for FUZZTIME each.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$(go list ./pkg/...); do \
	  for f in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	  done; \
	done

vet:
	go vet $(GO_PACKAGES)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

clean:
	rm -rf $(BIN)
