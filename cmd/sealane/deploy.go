package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/progress"
	"github.com/sealane/sealane/pkg/serve"
)

type deployFlags struct {
	chartFlags
	timeout time.Duration
	output  string
}

func newDeployCmd(g *globalFlags) *cobra.Command {
	f := &deployFlags{}
	cmd := &cobra.Command{
		Use:   "deploy CHART",
		Short: "Install or upgrade a release from a chart (directory, werf project, .tgz, repository or OCI) and wait until it is ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeploy(cmd.Context(), g, f, args[0])
		},
	}
	fl := cmd.Flags()
	f.chartFlags.register(fl)
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the whole deploy may take")
	fl.StringVarP(&f.output, "output", "o", "text", "text (progress lines) or json (one CloudEvent per line)")
	return cmd
}

func runDeploy(ctx context.Context, g *globalFlags, f *deployFlags, chartDir string) error {
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("--output %q: use text or json", f.output)
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	registry := clusters.NewRegistry(g.kubeconfig)
	cluster := g.kubeContext
	if cluster == "" {
		if cluster, err = registry.DefaultName(); err != nil {
			return err
		}
	}
	req, err := f.request(chartDir, cluster, f.timeout)
	if err != nil {
		return err
	}
	req.RequestedBy = whoami()
	secrets, err := f.secrets(chartDir)
	if err != nil {
		return err
	}
	if g.natsURL != "" && (f.secretKey != "" || f.ignoreSecretKey) {
		log.Warn("--secret-key and --ignore-secret-key do not travel to a shared pipeline: its renderer decrypts with its own key")
	}
	node, err := serve.Open(ctx, serve.Options{NATSURL: g.natsURL, DataDir: g.dataDir, Name: "sealane-cli", Log: log})
	if err != nil {
		return err
	}
	defer node.Close()

	stagesCtx, stopStages := context.WithCancel(ctx)
	stagesDone := make(chan error, 1)
	if g.natsURL == "" {
		if _, err := registry.Get(cluster); err != nil {
			stopStages()
			return err
		}
		go func() {
			stagesDone <- serve.RunStages(stagesCtx, node.Runner(log), pipeline.Deps{Blobs: node.Bus, Clusters: registry, Log: log, Secrets: secrets})
		}()
	} else {
		close(stagesDone)
	}
	defer func() { stopStages(); <-stagesDone }()

	show := progress.Printer{W: os.Stdout}.Print
	if f.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		show = func(e cloudevents.Event) { _ = enc.Encode(e) }
	}
	var renderRef string
	onEvent := func(e cloudevents.Event) {
		if events.Type(e.Type()) == events.DeployRendered {
			var d events.RenderedData
			if events.DecodeData(e, &d) == nil {
				renderRef = d.RenderRef
			}
		}
		show(e)
	}
	waitCtx, cancel := context.WithTimeout(ctx, f.timeout+2*time.Minute)
	defer cancel()
	res, err := client.Deploy(waitCtx, node.Bus, req, onEvent)
	if err != nil {
		if errors.Is(err, client.ErrDeployFailed) {
			return &exitError{code: 1, err: fmt.Errorf("release %s: %w", res.Target.Release, err)}
		}
		return err
	}
	if f.output == "text" {
		fmt.Printf("release %s (namespace %s) revision %d deployed\n", res.Target.Release, res.Target.Namespace, res.Revision)
		printNotes(waitCtx, node.Bus, renderRef, log)
	}
	return nil
}

// printNotes prints the chart's rendered NOTES.txt after a successful deploy, as helm does. The
// notes may hold values, so they are read from the Object Store, never from an event.
func printNotes(ctx context.Context, blobs pipeline.Blobs, renderRef string, log *zap.Logger) {
	if renderRef == "" {
		return
	}
	notes, err := pipeline.Notes(ctx, blobs, renderRef)
	if err != nil {
		log.Warn("could not read the chart's notes", zap.Error(err))
		return
	}
	if strings.TrimSpace(notes) != "" {
		fmt.Printf("\nNOTES:\n%s\n", strings.TrimRight(notes, "\n"))
	}
}

func whoami() string {
	host, _ := os.Hostname()
	if u, err := user.Current(); err == nil {
		return u.Username + "@" + host
	}
	return host
}
