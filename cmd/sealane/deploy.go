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
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/progress"
	"github.com/sealane/sealane/pkg/render"
	"github.com/sealane/sealane/pkg/serve"
)

type deployFlags struct {
	chartFlags
	timeout       time.Duration
	output        string
	applyMethod   string
	takeOwnership bool
	autoRollback  bool
	supersede     bool
	progress      progressFlags
	storage       storageFlags
}

func newDeployCmd(g *globalFlags) *cobra.Command {
	f := &deployFlags{}
	cmd := &cobra.Command{
		Use:   "deploy CHART",
		Short: "Install or upgrade a release from a chart (directory, werf project, .tgz, repository or OCI) and wait until it is ready",
		Example: `  # a chart directory to the kubeconfig's current context, through a pipeline in this process
  sealane deploy ./chart --release shop --namespace shop --set image.tag=1.4.2

  # through a shared pipeline (sealane serve) to one of its registered clusters
  sealane deploy ./chart --release shop -n shop --nats nats://nats.example.com:4222 \
    --nats-creds client.creds --cluster prod-eu

  # a chart of a Helm repository, with values files, JSON events on stdout
  sealane deploy shop --repo https://charts.example.com --version 1.x \
    -f values.yaml -f values-prod.yaml -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeploy(cmd.Context(), g, f, args[0])
		},
	}
	fl := cmd.Flags()
	f.chartFlags.register(fl)
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the whole deploy may take")
	fl.StringVarP(&f.output, "output", "o", "text", "text (progress table and log blocks) or json (one CloudEvent per line)")
	f.progress.register(fl)
	fl.StringVar(&f.applyMethod, "apply-method", "ssa", "how existing objects are updated: ssa (server-side apply) or 3wm (client-side three-way merge)")
	fl.BoolVar(&f.takeOwnership, "take-ownership", false, "adopt existing objects whatever release (or nobody) owns them")
	fl.BoolVar(&f.autoRollback, "auto-rollback", false, "when the deploy fails, roll back to the last deployed revision (its rollback hooks run)")
	fl.BoolVar(&f.supersede, "supersede", false, "when the release is busy, drop the deploys queued for it (they fail, \"superseded by deploy <id>\") and run next")
	f.storage.register(fl, true)
	g.addPipelineFlags(cmd) // flags.go
	return cmd
}

func runDeploy(ctx context.Context, g *globalFlags, f *deployFlags, chartDir string) error {
	if _, err := apply.ParseMethod(f.applyMethod); err != nil {
		return fmt.Errorf("--apply-method: %w", err)
	}
	storage, err := f.storage.value()
	if err != nil {
		return err
	}
	secrets, err := f.secrets(chartDir)
	if err != nil {
		return err
	}
	return runOperation(ctx, g, operationOptions{output: f.output, timeout: f.timeout, secrets: secrets, progress: f.progress, uploads: true},
		func(ctx context.Context, s *session) (client.Result, error) {
			req, err := f.request(chartDir, s.cluster, f.timeout)
			if err != nil {
				return client.Result{}, err
			}
			req.RequestedBy = whoami()
			req.ApplyMethod, req.TakeOwnership = f.applyMethod, f.takeOwnership
			req.Supersede = f.supersede
			if req.ReplyKey, err = s.replyKey(g); err != nil {
				return client.Result{}, err
			}
			req.ReleaseStorage = storage
			if g.NATSURL != "" && (f.secretKey != "" || f.ignoreSecretKey) {
				s.log.Warn("--secret-key and --ignore-secret-key do not travel to a shared pipeline: its renderer decrypts with its own key")
			}
			res, err := client.Deploy(ctx, s.node.Bus, req, s.onEvent)
			if err == nil || !f.autoRollback || !errors.Is(err, client.ErrDeployFailed) {
				return res, err
			}
			fmt.Println("auto-rollback: rolling back to the last deployed revision")
			target := res.Target
			if target.Release == "" {
				return res, err // the request never reached a release
			}
			rb, rbErr := client.Request(ctx, s.node.Bus, events.RequestedData{Target: target, Operation: events.OperationRollback,
				RollbackToDeployed: true, Timeout: events.Duration(f.timeout), RequestedBy: req.RequestedBy, ReleaseStorage: storage}, s.onEvent)
			if rbErr != nil {
				return res, fmt.Errorf("%w; auto-rollback failed too: %w", err, rbErr)
			}
			return res, fmt.Errorf("%w; rolled back: revision %d restores the last deployed one", err, rb.Revision)
		})
}

// operationOptions are what every pipeline command (deploy, rollback) shares.
type operationOptions struct {
	output  string
	timeout time.Duration
	secrets render.Secrets
	// done is the last word of the success line ("deployed" by default).
	done string
	// progress sets how --output text prints the progress table.
	progress progressFlags
	// uploads: the request carries a chart and values, sealed to the pipeline's public key.
	uploads bool
}

// progressFlags are the flags of --output text: how often the progress table is printed and
// whether it is coloured.
type progressFlags struct {
	interval time.Duration
	color    string
}

func (f *progressFlags) register(fl *pflag.FlagSet) {
	fl.DurationVar(&f.interval, "progress-interval", progress.DefaultInterval, "with --output text, how often the progress table and the pods' logs are printed")
	fl.StringVar(&f.color, "color", "auto", "colour the progress table's STATE column: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
}

// useColor reads --color; auto colours only a terminal.
func (f progressFlags) useColor() (bool, error) {
	switch f.color {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && term.IsTerminal(int(os.Stdout.Fd())), nil
	}
	return false, fmt.Errorf("--color %q: use auto, always or never", f.color)
}

// pipelineRun is the pipeline a CLI command talks to: a NATS node (embedded, with all four
// stages running in this process, or a shared one at --nats) and the cluster to target.
type pipelineRun struct {
	log     *zap.Logger
	node    *serve.Node
	cluster string
	close   func()
	// bundles are the embedded stages' render bundles (nil with --nats): the client reads the
	// notes from there.
	bundles *pipeline.BundleCache
}

// openPipeline connects to the shared pipeline at --nats, or starts an embedded NATS server
// with the four stages in this process; close stops them.
func openPipeline(ctx context.Context, g *globalFlags, secrets render.Secrets) (*pipelineRun, error) {
	return openPipelineWith(ctx, g, secrets, clusters.NewRegistry(g.kubeconfig))
}

// openUploadPipeline is openPipeline for a command that uploads a chart and values when
// uploads is set: with --nats, the key they are sealed to is checked before anything is sent.
func openUploadPipeline(ctx context.Context, g *globalFlags, secrets render.Secrets, uploads bool) (*pipelineRun, error) {
	if !uploads || g.NATSURL == "" {
		return openPipeline(ctx, g, secrets)
	}
	if err := checkKeyConfig(g); err != nil { // payloadkey.go
		return nil, err
	}
	p, err := openPipeline(ctx, g, secrets)
	if err != nil {
		return nil, err
	}
	if err := checkUploadKey(ctx, p.node); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// openPipelineWith is openPipeline with the embedded stages' cluster registry (a fleet rollout
// adds the home cluster's registered clusters to the kubeconfig's contexts).
func openPipelineWith(ctx context.Context, g *globalFlags, secrets render.Secrets, registry *clusters.Registry) (*pipelineRun, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	cluster, err := g.targetCluster(registry) // cluster.go
	if err != nil {
		return nil, err
	}
	var schemas *pipeline.SchemaCache
	if g.NATSURL == "" {
		tuneGC() // this process hosts the whole pipeline for one deploy
		if _, err := registry.Get(cluster); err != nil {
			return nil, err
		}
		// Validation needs the cluster's OpenAPI schema (~100 ms to fetch and parse): fetched
		// now, while NATS starts and the chart is packed.
		schemas = pipeline.NewSchemaCache(pipeline.SchemaTTL, nil)
		schemas.Warm(registry, cluster)
	}
	leaseTTL, err := serve.LeaseTTLFromEnv()
	if err != nil {
		return nil, err
	}
	node, err := serve.Open(ctx, serve.Options{NATSURL: g.NATSURL, Auth: g.NATSAuth, DataDir: g.dataDir, Name: "sealane-cli", Log: log, PayloadKeyFile: g.PayloadKeyFile})
	if err != nil {
		return nil, err
	}
	stagesCtx, stopStages := context.WithCancel(ctx)
	stagesDone := make(chan error, 1)
	var bundles *pipeline.BundleCache
	if g.NATSURL == "" {
		stageLog, err := g.stageLogger()
		if err != nil {
			node.Close()
			stopStages()
			return nil, err
		}
		// Trusted: this process's own pipeline, for its user's own charts (docs/operations.md, "Chart sources").
		bundles = pipeline.NewBundleCache(4)
		deps := pipeline.Deps{Blobs: node.Bus, Clusters: registry, Log: stageLog, Secrets: secrets, LeaseTTL: leaseTTL, Schemas: schemas,
			Admission: pipeline.TrustedAdmission(), Bundles: bundles}
		go func() { stagesDone <- serve.RunStages(stagesCtx, node.Runner(stageLog), deps) }()
	} else {
		close(stagesDone)
	}
	return &pipelineRun{log: log, node: node, cluster: cluster, bundles: bundles, close: func() {
		stopStages()
		<-stagesDone
		node.Close()
		_ = log.Sync()
	}}, nil
}

// session is one CLI run against the pipeline: the logger, the NATS node (embedded, with all
// four stages running in this process, or a shared one) and the progress output.
type session struct {
	log       *zap.Logger
	node      *serve.Node
	cluster   string
	onEvent   func(cloudevents.Event)
	renderRef string
	// reply is the key the renderer seals its replies with (a shared pipeline's), notesRef
	// the notes it sealed.
	reply    string
	notesRef string
}

// replyKey makes the key a shared pipeline's renderer seals its replies to this request with,
// so that a client without the payload key reads its notes; "" for the embedded pipeline,
// whose notes this process reads from its own render.
func (s *session) replyKey(g *globalFlags) (string, error) {
	if g.NATSURL == "" {
		return "", nil
	}
	k, err := payload.GenerateKey()
	if err != nil {
		return "", err
	}
	s.reply = k
	return k, nil
}

// runOperation opens the pipeline, runs start (which publishes a request and follows it) and
// reports the outcome: exit status 1 with the reason when the pipeline failed it.
func runOperation(ctx context.Context, g *globalFlags, o operationOptions, start func(context.Context, *session) (client.Result, error)) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: use text or json", o.output)
	}
	color, err := o.progress.useColor()
	if err != nil {
		return err
	}
	if o.progress.interval < 0 {
		return fmt.Errorf("--progress-interval %s: want a positive duration", o.progress.interval)
	}
	p, err := openUploadPipeline(ctx, g, o.secrets, o.uploads)
	if err != nil {
		return err
	}
	defer p.close()
	log, node, cluster := p.log, p.node, p.cluster

	var show func(cloudevents.Event)
	closeShow := func() {}
	if o.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		show = func(e cloudevents.Event) { _ = enc.Encode(e) }
	} else {
		live := progress.NewLive(os.Stdout, o.progress.interval, color)
		show, closeShow = live.Print, live.Close
	}
	defer closeShow() // Close may run twice
	s := &session{log: log, node: node, cluster: cluster}
	s.onEvent = func(e cloudevents.Event) {
		if events.Type(e.Type()) == events.DeployRendered {
			var d events.RenderedData
			if events.DecodeData(e, &d) == nil {
				s.renderRef, s.notesRef = d.RenderRef, d.NotesRef
			}
		}
		show(e)
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout+2*time.Minute)
	defer cancel()
	res, err := start(waitCtx, s)
	closeShow() // the last table and logs, before the outcome
	if err != nil {
		if errors.Is(err, client.ErrDeployFailed) {
			return &exitError{code: 1, err: fmt.Errorf("release %s: %w", res.Target.Release, err)}
		}
		return err
	}
	if o.output == "text" {
		if res.UpToDate {
			fmt.Printf("release %s (namespace %s) is up to date at revision %d\n", res.Target.Release, res.Target.Namespace, res.Revision)
			return nil
		}
		if o.done != "" {
			fmt.Printf("release %s (namespace %s) %s\n", res.Target.Release, res.Target.Namespace, o.done)
			return nil
		}
		fmt.Printf("release %s (namespace %s) revision %d deployed\n", res.Target.Release, res.Target.Namespace, res.Revision)
		printNotes(waitCtx, node, p.bundles, s, log)
	}
	return nil
}

// printNotes prints the chart's rendered NOTES.txt after a successful deploy, as helm does. The
// notes may hold values, so they are read from the Object Store, never from an event: the
// renderer's reply sealed with this request's reply key, else (the embedded pipeline, or a
// client holding the payload key) the render itself.
func printNotes(ctx context.Context, node *serve.Node, bundles *pipeline.BundleCache, s *session, log *zap.Logger) {
	var notes string
	var err error
	switch {
	case s.notesRef != "" && s.reply != "":
		var key *payload.Key
		if key, err = payload.ParseKey(s.reply); err == nil {
			var raw []byte
			raw, err = node.Bus.GetReply(ctx, s.notesRef, key)
			notes = string(raw)
		}
	case s.renderRef != "" && (bundles != nil || node.PayloadKey() != nil):
		notes, err = pipeline.Notes(ctx, node.Bus, bundles, s.renderRef)
	default:
		return
	}
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
