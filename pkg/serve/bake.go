package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bake"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/stage"
)

// bakeStage returns the tracker's bake stage (bake.Stage) to run beside stages — when
// the tracker is one of them — with the runner's log and ack wait; nil otherwise.
func bakeStage(r *stage.Runner, deps pipeline.Deps, stages []stage.Stage) *stage.Stage {
	for _, st := range stages {
		if st.Name == events.StageTracker {
			log := r.Log
			if log == nil {
				log = zap.NewNop()
			}
			baker := &bake.Baker{Clusters: deps.Clusters, Clock: deps.Clock,
				Log: log.With(zap.String("stage", string(events.StageTracker)), zap.String("handler", "bake"))}
			bakes := bake.Stage(baker, cmp.Or(r.AckWait, bake.DefaultAckWait))
			return &bakes
		}
	}
	return nil
}

// runBakes runs the bake stage (nil: none) with r until ctx ends; an error other than ctx's
// is returned. Bakes are not pooled: every tracker's bakes share one consumer, as before
// regional pools (r's Shape is left out).
func runBakes(ctx context.Context, r *stage.Runner, bakes *stage.Stage) error {
	if bakes == nil {
		return nil
	}
	plain := *r
	plain.Shape = nil
	if err := plain.Run(ctx, *bakes); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("tracker bakes: %w", err)
	}
	return nil
}
