package serve

import (
	"context"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/coordinator"
)

// RunRollout runs the rollout coordinator on node until ctx ends: it creates the rollout bucket
// when missing and consumes rollout requests, commands and the pipeline's answers. fleet is
// the cluster registry rollouts select their clusters from.
func RunRollout(ctx context.Context, node *Node, fleet coordinator.Fleet, log *zap.Logger) error {
	kv, err := node.Bus.Rollouts(ctx, true)
	if err != nil {
		return err
	}
	c := &coordinator.Coordinator{Bus: node.Bus, KV: kv, Fleet: fleet, Log: log.With(zap.String("stage", "rollout"))}
	return c.Run(ctx)
}
