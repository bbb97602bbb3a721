package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/serve"
)

// Each command gets the flags that apply to it: the NATS connection flags only where it
// talks to the pipeline, the kubeconfig flags only where it reads the kubeconfig, --cluster
// only where it targets a cluster. Only --log-level and --log-json are global.

// flagGroupAnnotation marks a flag of a group that --help lists under a heading of its own
// (usage.go); natsGroup is the NATS connection flags' group.
const (
	flagGroupAnnotation = "sealane_flag_group"
	natsGroup           = "nats"
)

// pipelineUse says how a command reaches the pipeline.
type pipelineUse int

const (
	// sharedOnly: it needs a shared pipeline (--nats), or does without NATS when none is given.
	sharedOnly pipelineUse = iota
	// orEmbedded: without --nats it runs or joins the embedded pipeline of --data-dir.
	orEmbedded
)

// addConnectionFlags adds the NATS connection flags to cmd: --nats, the NATS credentials and
// TLS flags and --payload-key-file, with --data-dir when the command may use the embedded
// pipeline. Their defaults come from the environment, as everywhere.
func (g *globalFlags) addConnectionFlags(cmd *cobra.Command, use pipelineUse) {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	usage := serve.ConnectionUsage{
		NATS:           "NATS URL of the shared pipeline ($" + serve.NATSURLEnv + ")",
		PayloadKeyFile: "file with the 64-hex-character key that encrypts payloads in NATS ($" + serve.PayloadKeyFileEnv + "; default $" + payload.EnvKey + ")",
	}
	if use == orEmbedded {
		usage.NATS = "NATS URL of a shared pipeline, $" + serve.NATSURLEnv + " (default: embedded NATS and all stages in this process)"
		usage.PayloadKeyFile = "file with the 64-hex-character key that encrypts payloads in NATS ($" + serve.PayloadKeyFileEnv +
			"; default $" + payload.EnvKey + "; embedded: <data-dir>/payload.key, created on first use)"
	}
	serve.RegisterConnectionFlags(fs, &g.Connection, "", usage)
	if use == orEmbedded {
		fs.StringVar(&g.dataDir, "data-dir", os.Getenv("SEALANE_DATA_DIR"),
			"where the embedded NATS keeps its JetStream data ($SEALANE_DATA_DIR; default ~/.local/share/sealane)")
	}
	fs.VisitAll(func(f *pflag.Flag) {
		f.Annotations = map[string][]string{flagGroupAnnotation: {natsGroup}}
	})
	cmd.Flags().AddFlagSet(fs)
}

// inNATSGroup says whether f is one of the NATS connection flags.
func inNATSGroup(f *pflag.Flag) bool {
	group := f.Annotations[flagGroupAnnotation]
	return len(group) == 1 && group[0] == natsGroup
}

// addKubeconfigFlag adds --kubeconfig to cmd.
func (g *globalFlags) addKubeconfigFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
}

// addKubeFlags adds --kubeconfig and --kube-context (completed with the kubeconfig's
// contexts) to cmd.
func (g *globalFlags) addKubeFlags(cmd *cobra.Command) {
	g.addKubeconfigFlag(cmd)
	cmd.Flags().StringVar(&g.kubeContext, "kube-context", "", "kubeconfig context = cluster name (default: the current context)")
	_ = cmd.RegisterFlagCompletionFunc("kube-context", g.completeKubeContexts)
}

// addClusterFlag adds --cluster, the target cluster of a pipeline command, completed with
// the registered clusters.
func (g *globalFlags) addClusterFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.cluster, "cluster", os.Getenv("SEALANE_CLUSTER"),
		"target cluster: a registered cluster of the shared pipeline (--nats, see `sealane cluster list`); embedded: a kubeconfig context, like --kube-context ($SEALANE_CLUSTER)")
	_ = cmd.RegisterFlagCompletionFunc("cluster", g.completeClusters)
}

// addPipelineFlags adds what a command that sends a request through the pipeline takes: the
// connection flags (embedded or shared), the kubeconfig flags and --cluster.
func (g *globalFlags) addPipelineFlags(cmd *cobra.Command) {
	g.addConnectionFlags(cmd, orEmbedded)
	g.addKubeFlags(cmd)
	g.addClusterFlag(cmd)
}
