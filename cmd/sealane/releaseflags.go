package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
)

// releaseFlags are the flags of the commands that act on an existing release (rollback,
// dismiss, test).
type releaseFlags struct {
	namespace string
	timeout   time.Duration
	output    string
	progress  progressFlags
	storage   storageFlags
}

func (f *releaseFlags) register(cmd *cobra.Command, what string) {
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the release")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the whole "+what+" may take")
	fl.StringVarP(&f.output, "output", "o", "text", "text (progress table and log blocks) or json (one CloudEvent per line)")
	f.progress.register(fl)
	f.storage.register(fl, what == "rollback")
}

// releaseOp is what one command does to an existing release: its verb for errors, the last
// word of its success line ("" for "revision N deployed") and its request data.
type releaseOp struct {
	verb string
	done string
	data events.RequestedData
}

// run sends op's request data (its target and timeout filled in) through the pipeline and
// follows it.
func (f *releaseFlags) run(ctx context.Context, g *globalFlags, releaseName string, op releaseOp) error {
	verb, done, data := op.verb, op.done, op.data
	if f.namespace == "" {
		return fmt.Errorf("%s %s: --namespace is required (the release's namespace)", verb, releaseName)
	}
	storage, err := f.storage.value()
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, releaseName, err)
	}
	data.ReleaseStorage = storage
	return runOperation(ctx, g, operationOptions{output: f.output, timeout: f.timeout, done: done, progress: f.progress},
		func(ctx context.Context, s *session) (client.Result, error) {
			data.Target = events.Target{Cluster: s.cluster, Namespace: f.namespace, Release: releaseName}
			data.Timeout, data.RequestedBy = events.Duration(f.timeout), whoami()
			return client.Request(ctx, s.node.Bus, data, s.onEvent)
		})
}
