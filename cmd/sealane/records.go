package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/release"
)

// recordFlags are the flags of the commands that read release records straight from the
// cluster (list, history, get): no pipeline is involved, these are plain reads.
type recordFlags struct {
	namespace string
	storage   storageFlags
}

func (f *recordFlags) register(fl *pflag.FlagSet) {
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the release (default: the kubeconfig context's namespace, else default)")
	f.storage.register(fl, false)
}

// records is an open view of release records: the cluster connection, the resolved release
// namespace and the release storage.
type records struct {
	cluster   *kube.Cluster
	namespace string
	storage   events.ReleaseStorage
}

// open connects to the cluster and resolves the namespace and the storage flags.
func (f *recordFlags) open(g *globalFlags) (*records, error) {
	storage, err := f.storage.value()
	if err != nil {
		return nil, err
	}
	cluster, err := kube.Connect(kube.Options{Kubeconfig: g.kubeconfig, Context: g.kubeContext})
	if err != nil {
		return nil, err
	}
	ns := f.namespace
	if ns == "" {
		ns = contextNamespace(g)
	}
	return &records{cluster: cluster, namespace: ns, storage: storage}, nil
}

// store opens the records of one release exactly as the pipeline's stages open them.
func (r *records) store(releaseName string) *release.Store {
	target := events.Target{Cluster: r.cluster.Name, Namespace: r.namespace, Release: releaseName}
	return release.Open(r.cluster.Bounded(), target, r.storage, nil)
}

// where names the place records are read from, for messages.
func (r *records) where() string {
	driver := r.storage.Driver
	if driver == "" {
		driver = release.DriverSecret
	}
	if r.storage.Namespace != "" && r.storage.Namespace != r.namespace {
		return fmt.Sprintf("namespace %s (%s records in storage namespace %s)", r.namespace, driver, r.storage.Namespace)
	}
	return fmt.Sprintf("namespace %s (%s records)", r.namespace, driver)
}

// contextNamespace is the namespace of the kubeconfig's (or --kube-context's) context, or
// "default", as helm and kubectl use it.
func contextNamespace(g *globalFlags) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.kubeContext})
	if ns, _, err := cc.Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}
