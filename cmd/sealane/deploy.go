package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/progress"
	"github.com/sealane/sealane/pkg/serve"
)

type deployFlags struct {
	env, project, release, namespace string
	values, set, setString, setJSON  []string
	timeout                          time.Duration
	output                           string
}

func newDeployCmd(g *globalFlags) *cobra.Command {
	f := &deployFlags{}
	cmd := &cobra.Command{
		Use:   "deploy CHART_DIR",
		Short: "Install or upgrade a release from a chart directory (or a project with .helm/) and wait until it is ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeploy(cmd.Context(), g, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.env, "env", "", "environment (staging, production...): part of the default release and namespace names")
	fl.StringVar(&f.project, "project", "", "project name (default: the chart name)")
	fl.StringVar(&f.release, "release", "", "release name (default <project>-<env>)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace (default <project>-<env>)")
	fl.StringArrayVarP(&f.values, "values", "f", nil, "values file (repeatable, later wins)")
	fl.StringArrayVar(&f.set, "set", nil, "set a value: key=value (repeatable)")
	fl.StringArrayVar(&f.setString, "set-string", nil, "set a string value: key=value (repeatable)")
	fl.StringArrayVar(&f.setJSON, "set-json", nil, "set a JSON value: key=json (repeatable)")
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
			stagesDone <- serve.RunStages(stagesCtx, node.Runner(log), pipeline.Deps{Blobs: node.Bus, Clusters: registry, Log: log})
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
	waitCtx, cancel := context.WithTimeout(ctx, f.timeout+2*time.Minute)
	defer cancel()
	res, err := client.Deploy(waitCtx, node.Bus, client.DeployRequest{
		ChartDir: chartDir, Project: f.project, Env: f.env, Release: f.release, Namespace: f.namespace, Cluster: cluster, ValuesFiles: f.values, Set: f.set,
		SetString: f.setString, SetJSON: f.setJSON, Timeout: f.timeout, RequestedBy: whoami(),
	}, show)
	if err != nil {
		if errors.Is(err, client.ErrDeployFailed) {
			return &exitError{code: 1, err: fmt.Errorf("release %s: %w", res.Target.Release, err)}
		}
		return err
	}
	if f.output == "text" {
		fmt.Printf("release %s (namespace %s) revision %d deployed\n", res.Target.Release, res.Target.Namespace, res.Revision)
	}
	return nil
}

func whoami() string {
	host, _ := os.Hostname()
	if u, err := user.Current(); err == nil {
		return u.Username + "@" + host
	}
	return host
}
