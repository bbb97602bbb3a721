package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

// serveSetup are the settings of `sealane serve` that shape the stages' dependencies.
type serveSetup struct {
	leaseTTL    time.Duration
	leaseTTLSet bool // --lease-ttl was given
	clusters    serve.ClusterOptions
	intake      *serve.IntakeFlags
}

// deps builds the dependencies of the stages names on node: the service's (serve.ServiceDeps),
// the cluster registry (cluster.go), the lease TTL, the renderer's intake settings. stop ends
// the cluster registry; call it before closing node.
func (s *serveSetup) deps(ctx context.Context, g *globalFlags, node *serve.Node, names []events.Stage, log *zap.Logger) (pipeline.Deps, func(), error) {
	deps, err := serve.ServiceDeps(node, g.kubeconfig, log)
	if err != nil {
		return pipeline.Deps{}, nil, err
	}
	if s.leaseTTLSet {
		if err := (lease.Options{TTL: s.leaseTTL}).Validate(); err != nil || s.leaseTTL == 0 {
			return pipeline.Deps{}, nil, fmt.Errorf("--lease-ttl %s: must be at least %s", s.leaseTTL, lease.MinTTL)
		}
		deps.LeaseTTL = s.leaseTTL
	}
	if runsRenderer(names) { // intakeflags.go: only the renderer reads the intake settings
		if deps.Intake, err = s.intake.Intake(); err != nil {
			return pipeline.Deps{}, nil, err
		}
		serve.LogIntake(log, deps.Intake)
	}
	registry, stop, err := g.serveClusters(ctx, s.clusters, node, log) // cluster.go
	if err != nil {
		return pipeline.Deps{}, nil, err
	}
	deps.Clusters = registry
	return deps, stop, nil
}
