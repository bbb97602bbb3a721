package serve

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/render"
)

// ServiceDeps are the stage dependencies of a long-running service: the node's bus, clusters
// from kubeconfig, and the secret key from the environment ($SEALANE_SECRET_KEY,
// $WERF_SECRET_KEY, ~/.werf/global_secret_key; $SEALANE_IGNORE_SECRET_KEY=true renders
// without decrypting). It fails with ErrNoPayloadKey when node has no payload key.
func ServiceDeps(node *Node, kubeconfig string, log *zap.Logger) (pipeline.Deps, error) {
	if err := node.requirePayloadKey(); err != nil {
		return pipeline.Deps{}, err
	}
	secrets, err := render.LoadSecrets("", "", os.Getenv("SEALANE_IGNORE_SECRET_KEY") == "true")
	if err != nil {
		return pipeline.Deps{}, err
	}
	ttl, err := LeaseTTLFromEnv()
	if err != nil {
		return pipeline.Deps{}, err
	}
	return pipeline.Deps{Blobs: node.Bus, Clusters: clusters.NewRegistry(kubeconfig), Log: log, Secrets: secrets, LeaseTTL: ttl}, nil
}

// LeaseTTLEnv names the environment variable with the release lease lifetime (a Go duration).
const LeaseTTLEnv = "SEALANE_LEASE_TTL"

// LeaseTTLFromEnv reads $SEALANE_LEASE_TTL; unset is 0 (the lease package's default, 2m).
func LeaseTTLFromEnv() (time.Duration, error) {
	v := os.Getenv(LeaseTTLEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("$%s=%q: want a positive duration such as 2m", LeaseTTLEnv, v)
	}
	if err := (lease.Options{TTL: d}).Validate(); err != nil {
		return 0, fmt.Errorf("$%s: %w", LeaseTTLEnv, err)
	}
	return d, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
