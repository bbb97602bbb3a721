package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube"
)

// targetCluster is the cluster a pipeline command targets: --cluster or --kube-context (the
// same thing in embedded mode, where the clusters are the kubeconfig's contexts), else the
// kubeconfig's current context.
func (g *globalFlags) targetCluster(registry *clusters.Registry) (string, error) {
	if g.cluster != "" && g.kubeContext != "" && g.cluster != g.kubeContext {
		return "", fmt.Errorf("--cluster %s and --kube-context %s disagree: give one (embedded, --cluster names a kubeconfig context; with --nats, a registered cluster)",
			g.cluster, g.kubeContext)
	}
	if g.cluster != "" {
		return g.cluster, nil
	}
	if g.kubeContext != "" {
		return g.kubeContext, nil
	}
	name, err := registry.DefaultName()
	if err != nil && g.NATSURL != "" {
		return "", fmt.Errorf("a shared pipeline (--nats) needs the target cluster: pass --cluster NAME (see `sealane cluster list`): %w", err)
	}
	return name, err
}

// localContext is the kubeconfig context of a command that talks to the cluster from this
// process: --kube-context, else --cluster (the same thing there), else the current context.
func (g *globalFlags) localContext() string {
	if g.kubeContext != "" {
		return g.kubeContext
	}
	return g.cluster
}

// homeFlags choose the home cluster: the one whose sealane namespace holds the cluster Secrets.
type homeFlags struct {
	kubeconfig string
	context    string
	namespace  string
	timeout    time.Duration
}

func newClusterCmd(g *globalFlags) *cobra.Command {
	h := &homeFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register the clusters a shared pipeline deploys to (cluster Secrets in the sealane namespace of the home cluster)",
		Long: "Clusters are Secrets labelled sealane.dev/cluster=NAME in the sealane namespace of the home cluster, " +
			"watched by the stages: adding, changing or removing one takes effect without restarting them. " +
			"The home cluster is --home-kubeconfig/--home-context (list and remove also take --kubeconfig/--kube-context), " +
			"default: the current context.",
	}
	h.register(cmd.PersistentFlags())
	cmd.AddCommand(newClusterAddCmd(h), newClusterListCmd(g, h), newClusterRemoveCmd(g, h))
	return cmd
}

// register adds the home cluster's flags (--home-kubeconfig, --home-context,
// --sealane-namespace) and --timeout to fl.
func (h *homeFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.kubeconfig, "home-kubeconfig", os.Getenv("SEALANE_HOME_KUBECONFIG"), "kubeconfig of the home cluster ($SEALANE_HOME_KUBECONFIG; default $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&h.context, "home-context", os.Getenv("SEALANE_HOME_CONTEXT"), "context of the home cluster ($SEALANE_HOME_CONTEXT; default: the current context)")
	fl.StringVar(&h.namespace, "sealane-namespace", envOr("SEALANE_NAMESPACE", "sealane"), "namespace of the cluster Secrets on the home cluster ($SEALANE_NAMESPACE)")
	fl.DurationVar(&h.timeout, "timeout", 30*time.Second, "how long the command may take")
}

// home connects to the home cluster; list and remove fall back to the global
// --kubeconfig/--kube-context (add's --kubeconfig is the added cluster's).
func (h *homeFlags) home(g *globalFlags) (*kube.Cluster, error) {
	opts := kube.Options{Kubeconfig: h.kubeconfig, Context: h.context, Timeout: kube.RequestTimeout}
	if g != nil && opts.Kubeconfig == "" {
		opts.Kubeconfig = g.kubeconfig // a --home-context names a context of --kubeconfig
		if opts.Context == "" {
			opts.Context = g.kubeContext
		}
	}
	c, err := kube.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("home cluster: %w", err)
	}
	return c, nil
}

type clusterAddFlags struct {
	kubeconfig string
	context    string
	inCluster  bool
	labels     []string
	overwrite  bool
}

func newClusterAddCmd(h *homeFlags) *cobra.Command {
	f := &clusterAddFlags{}
	cmd := &cobra.Command{
		Use:   "add NAME (--kubeconfig FILE [--context C] | --in-cluster) [--label k=v]...",
		Short: "Register a cluster: check that it answers, then write its Secret on the home cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), h.timeout)
			defer cancel()
			return runClusterAdd(ctx, h, f, args[0], cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to add; its credentials are stored in the Secret (no exec or auth-provider plugins)")
	fl.StringVar(&f.context, "context", "", "context of --kubeconfig (default: its current context)")
	fl.BoolVar(&f.inCluster, "in-cluster", false, "register the cluster the stages run in (the home cluster), with their service accounts")
	fl.StringArrayVar(&f.labels, "label", nil, "cluster label k=v for fleet selection (repeatable)")
	fl.BoolVar(&f.overwrite, "overwrite", false, "replace the cluster's Secret when it is registered already")
	return cmd
}

func runClusterAdd(ctx context.Context, h *homeFlags, f *clusterAddFlags, name string, out io.Writer) error {
	spec, err := f.spec(name)
	if err != nil {
		return err
	}
	secret, err := clusterspec.NewSecret(h.namespace, spec)
	if err != nil {
		return err
	}
	home, err := h.home(nil)
	if err != nil {
		return err
	}
	target := home
	if !spec.InCluster {
		if target, err = clusters.Build(spec, nil); err != nil {
			return err
		}
	}
	version, err := clusters.ServerVersion(ctx, target)
	if err != nil {
		return fmt.Errorf("cluster %s does not answer, nothing was written: %w", name, err)
	}
	if err := writeClusterSecret(ctx, home, secret, f.overwrite); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "cluster %s added: server %s, Kubernetes %s; Secret %s/%s on %s\n",
		name, target.Config.Host, version, secret.Namespace, secret.Name, home.Config.Host)
	return nil
}

// spec is the cluster the flags describe, its kubeconfig reduced to one self-contained context.
func (f *clusterAddFlags) spec(name string) (clusterspec.Spec, error) {
	if err := clusterspec.ValidateName(name); err != nil {
		return clusterspec.Spec{}, err
	}
	lbl, err := clusterspec.ParseLabels(f.labels)
	if err != nil {
		return clusterspec.Spec{}, err
	}
	spec := clusterspec.Spec{Name: name, Labels: lbl, InCluster: f.inCluster}
	switch {
	case f.inCluster && (f.kubeconfig != "" || f.context != ""):
		return spec, errors.New("--in-cluster registers the home cluster: give it without --kubeconfig and --context")
	case f.inCluster:
		return spec, nil
	case f.kubeconfig == "":
		return spec, fmt.Errorf("cluster %s: give --kubeconfig FILE (and --context C) or --in-cluster", name)
	}
	cfg, err := clientcmd.LoadFromFile(f.kubeconfig)
	if err != nil {
		return spec, fmt.Errorf("kubeconfig %s: %w", f.kubeconfig, err)
	}
	// Certificates and keys referenced by path are read into the kubeconfig.
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return spec, fmt.Errorf("kubeconfig %s: %w", f.kubeconfig, err)
	}
	if spec.Kubeconfig, err = clusterspec.SelfContained(cfg, f.context, "kubeconfig "+f.kubeconfig); err != nil {
		return spec, err
	}
	return spec, nil
}

// writeClusterSecret creates the Secret, or replaces an existing one's labels and data when
// overwrite is set.
func writeClusterSecret(ctx context.Context, home *kube.Cluster, s *corev1.Secret, overwrite bool) error {
	secrets := home.Typed.CoreV1().Secrets(s.Namespace)
	_, err := secrets.Create(ctx, s, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %s does not exist on the home cluster %s: create it, or pass --sealane-namespace", s.Namespace, home.Config.Host)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create Secret %s/%s: %w", s.Namespace, s.Name, err)
	case !overwrite:
		return fmt.Errorf("cluster %s is registered already (Secret %s/%s): pass --overwrite to replace it", s.Labels[clusterspec.ClusterLabel], s.Namespace, s.Name)
	}
	old, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	old.Labels, old.Data, old.StringData, old.Type = s.Labels, s.Data, nil, s.Type
	if _, err := secrets.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

func newClusterRemoveCmd(g *globalFlags, h *homeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a cluster: delete its Secrets from the home cluster (deploys to it then fail as unknown)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), h.timeout)
			defer cancel()
			home, err := h.home(g)
			if err != nil {
				return err
			}
			secrets := home.Typed.CoreV1().Secrets(h.namespace)
			list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: clusterspec.ClusterLabel + "=" + args[0]})
			if err != nil {
				return fmt.Errorf("list cluster Secrets in %s: %w", h.namespace, err)
			}
			if len(list.Items) == 0 {
				return fmt.Errorf("cluster %s is not registered in namespace %s of %s (see `sealane cluster list`)", args[0], h.namespace, home.Config.Host)
			}
			for _, s := range list.Items {
				if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("delete Secret %s/%s: %w", s.Namespace, s.Name, err)
				}
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "cluster %s removed: Secret %s/%s deleted\n", args[0], s.Namespace, s.Name)
			}
			return nil
		},
	}
	g.addKubeFlags(cmd)
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
