package serve

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/metrics"
)

// RolloutSigningKeyEnv names the environment variable with --rollout-signing-key.
const RolloutSigningKeyEnv = "SEALANE_ROLLOUT_SIGNING_KEY"

// RolloutSigningKeyUsage is the help text of --rollout-signing-key.
const RolloutSigningKeyUsage = "file with a user nkey seed (SU…) that signs the rollouts' deploy requests, for renderers with " +
	"--client-keys when the coordinator's NATS user has no nkey ($" + RolloutSigningKeyEnv + ")"

// RunRollout runs the rollout coordinator on node's router until ctx ends: it creates the
// rollout bucket when missing and consumes rollout requests, commands and the pipeline's
// answers. fleet is the cluster registry rollouts select their clusters from; specs reads
// the rollout files webhook routes name.
func RunRollout(ctx context.Context, node *Node, fleet coordinator.Fleet, specs coordinator.SpecFiles, log *zap.Logger) error {
	kv, err := coordinator.OpenBucket(ctx, node.Bus, true)
	if err != nil {
		return err
	}
	c := &coordinator.Coordinator{KV: kv, Fleet: fleet, Log: log.With(zap.String("stage", "rollout")), Metrics: node.metrics,
		SpecFiles: specs}
	if node.metrics != nil {
		// An error is a second coordinator in this process: the first one's collector counts.
		_ = node.metrics.Register(metrics.NewCountCollector(metrics.RolloutActive,
			"Fleet rollouts not finished yet (running or queued for their release).", c.ActiveRollouts, log))
		_ = node.metrics.Register(metrics.NewCountCollector(metrics.RolloutsHalted,
			"Halted fleet rollouts this replica drives, waiting for a retry or an abort (sum over the replicas).", c.HaltedRollouts, log))
	}
	return node.Runner(log).Run(ctx, c.Stage())
}

// GitSpecFiles reads the rollout files webhook routes name from git, with the renderer's git
// settings: the clone cache, the credentials and the chart source allowlist (--git-cache-dir,
// --git-credentials, --allow-chart-source).
type GitSpecFiles struct{ Options gitsource.Options }

// ReadSpecFile reads f; a missing file or commit, a repository the allowlist refuses and a
// file over gitsource.MaxFileBytes are final (coordinator.ErrSpecFile).
func (g GitSpecFiles) ReadSpecFile(ctx context.Context, f events.GitFile) ([]byte, error) {
	data, err := gitsource.ReadFile(ctx, gitsource.Source{URL: f.URL, Commit: f.Commit}, f.Path, g.Options)
	for _, final := range []error{gitsource.ErrFileNotFound, gitsource.ErrCommitNotFound, gitsource.ErrNotAllowed, gitsource.ErrTooLarge} {
		if errors.Is(err, final) {
			return nil, fmt.Errorf("%w: %w", coordinator.ErrSpecFile, err)
		}
	}
	return data, err
}
