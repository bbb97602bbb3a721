# Local sandbox Kubernetes control plane (etcd + kube-apiserver + controller-manager +
# scheduler + kwok fake node). See hack/sandbox/README.md.
# Included by the main Makefile; SEALANE_SANDBOX_DIR (default .sandbox) selects the state dir.
# CLUSTERS=N (default 1, or $SEALANE_SANDBOX_CLUSTERS) starts N control planes on one etcd.
SANDBOX_SCRIPTS := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))/hack/sandbox
CLUSTERS ?= $(or $(SEALANE_SANDBOX_CLUSTERS),1)
SANDBOX_ENV = SEALANE_SANDBOX_CLUSTERS=$(CLUSTERS)

.PHONY: sandbox-build sandbox-up sandbox-down sandbox-purge sandbox-status test-multicluster

sandbox-build: ## build/cache the sandbox binaries (~/.cache/sealane/bin)
	@$(SANDBOX_SCRIPTS)/build.sh

sandbox-up: ## start the sandbox, CLUSTERS=N control planes (no-op when healthy); prints the kubeconfig path
	@$(SANDBOX_ENV) $(SANDBOX_SCRIPTS)/up.sh

sandbox-down: ## stop the sandbox (all its clusters), keep its state
	@$(SANDBOX_ENV) $(SANDBOX_SCRIPTS)/down.sh

sandbox-purge: ## stop the sandbox (all its clusters) and delete its state dir
	@$(SANDBOX_ENV) $(SANDBOX_SCRIPTS)/down.sh --purge

sandbox-status: ## exit 0 when the sandbox (CLUSTERS=N) is healthy
	@$(SANDBOX_ENV) $(SANDBOX_SCRIPTS)/status.sh

# Brings up a 3-cluster sandbox and runs test/multicluster alone (build tag multicluster;
# `make test` runs it too). The sandbox stays up, as after `make test`.
test-multicluster: ## start a 3-cluster sandbox and run test/multicluster against it
	@kc=$$(SEALANE_SANDBOX_CLUSTERS=3 $(SANDBOX_SCRIPTS)/up.sh) && \
	SEALANE_KUBECONFIG=$$kc go test -tags multicluster -count=1 -timeout 5m -v ./test/multicluster/
