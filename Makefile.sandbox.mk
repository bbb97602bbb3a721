# Local sandbox Kubernetes control plane (etcd + kube-apiserver + controller-manager +
# scheduler + kwok fake node). See hack/sandbox/README.md.
# Included by the main Makefile; SEALANE_SANDBOX_DIR (default .sandbox) selects the state dir.
SANDBOX_SCRIPTS := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))/hack/sandbox

.PHONY: sandbox-build sandbox-up sandbox-down sandbox-purge sandbox-status

sandbox-build: ## build/cache the sandbox binaries (~/.cache/sealane/bin)
	@$(SANDBOX_SCRIPTS)/build.sh

sandbox-up: ## start the sandbox (no-op when healthy); prints the kubeconfig path
	@$(SANDBOX_SCRIPTS)/up.sh

sandbox-down: ## stop the sandbox, keep its state
	@$(SANDBOX_SCRIPTS)/down.sh

sandbox-purge: ## stop the sandbox and delete its state dir
	@$(SANDBOX_SCRIPTS)/down.sh --purge

sandbox-status: ## exit 0 when the sandbox is healthy
	@$(SANDBOX_SCRIPTS)/status.sh
