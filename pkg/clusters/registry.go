// Package clusters is the cluster registry: the one way a stage turns the cluster name of a
// deploy into Kubernetes clients. Its sources are the contexts of a kubeconfig (the CLI's
// embedded mode), the cluster a service runs in ("in-cluster", under a configurable name), and
// cluster Secrets in the sealane namespace (watched: a changed Secret rebuilds the clients, a
// removed one makes the cluster unknown). A Checker records reachability and the Kubernetes
// version of each; a cluster recorded unreachable, like an unknown one, is refused at once.
// What a cluster Secret holds is decided by package clusterspec.
package clusters

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/kube"
)

// DefaultInClusterName is the name of the cluster a service runs in.
const DefaultInClusterName = kube.InClusterName

// Options say which sources a Registry serves.
type Options struct {
	// Contexts serves the contexts of Kubeconfig ("" = $KUBECONFIG, then ~/.kube/config).
	Contexts   bool
	Kubeconfig string
	// InClusterName names the cluster the process runs in (its service account); empty: no
	// in-cluster source. It is served only when InCluster finds a pod's config, which also
	// serves the cluster Secrets that say in-cluster.
	InClusterName string
	// InCluster builds the in-cluster config (also used by cluster Secrets that say
	// in-cluster); nil is rest.InClusterConfig.
	InCluster func() (*rest.Config, error)
	Log       *zap.Logger
	// MaxClients bounds how many clusters' clients the registry keeps built (0:
	// DefaultMaxClients); the least recently used are dropped and built again when asked for.
	MaxClients int
}

// DefaultMaxClients is how many clusters' clients a Registry keeps by default: a cluster's
// clients are ~60 KB (typed, bounded, dynamic and metadata clients; its discovery is shared
// with the clusters answering alike), so ~30 MB, however many clusters are registered.
const DefaultMaxClients = 512

// Registry resolves cluster names to clients, building them once per name (keeping those of
// the Options.MaxClients most recently used names) and again when the cluster's Secret
// changes. It is safe for concurrent use.
type Registry struct {
	opts      Options
	log       *zap.Logger
	inCluster *rest.Config // nil: no in-cluster source

	mu      sync.Mutex
	secrets map[string]secretEntry            // by Secret namespace/name
	byName  map[string]map[string]struct{}    // the keys of secrets, by cluster name
	clients *lru.Cache[string, *kube.Cluster] // built clients, the most recently used
	status  map[string]Status
	changed chan struct{} // signalled (without blocking) when a cluster Secret changes
	// watching: WatchSecrets serves cluster Secrets (unknown names then need registering).
	watching bool
}

// secretEntry is one cluster Secret as the watcher last saw it: its spec or why it is unusable.
type secretEntry struct {
	spec    clusterspec.Spec
	err     error
	version string // the Secret's resourceVersion
}

// NewRegistry serves the contexts of one kubeconfig file ("" = the usual loading rules:
// $KUBECONFIG, then ~/.kube/config): the CLI's embedded mode, as simple as it always was.
func NewRegistry(kubeconfig string) *Registry {
	r, _ := New(Options{Contexts: true, Kubeconfig: kubeconfig})
	return r
}

// New returns a registry of the sources opts enables; cluster Secrets are added by
// WatchSecrets.
func New(opts Options) (*Registry, error) {
	if opts.MaxClients <= 0 {
		opts.MaxClients = DefaultMaxClients
	}
	clients, err := lru.New[string, *kube.Cluster](opts.MaxClients)
	if err != nil {
		return nil, fmt.Errorf("cluster clients cache: %w", err)
	}
	r := &Registry{opts: opts, log: opts.Log, secrets: map[string]secretEntry{}, byName: map[string]map[string]struct{}{}, clients: clients,
		status: map[string]Status{}, changed: make(chan struct{}, 1)}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if opts.InClusterName != "" {
		if err := clusterspec.ValidateName(opts.InClusterName); err != nil {
			return nil, fmt.Errorf("in-cluster name: %w", err)
		}
	}
	// The pod's config serves the in-cluster name and the Secrets that say in-cluster.
	get := opts.InCluster
	if get == nil {
		get = rest.InClusterConfig
	}
	if cfg, err := get(); err == nil {
		r.inCluster = cfg
	} else if opts.InClusterName != "" {
		r.log.Info("not running in a cluster: no in-cluster source", zap.String("name", opts.InClusterName), zap.Error(err))
	}
	return r, nil
}

// UnknownError is returned by Get for a name no source has.
type UnknownError struct {
	Name  string
	Known []string
	// Kubeconfig is set when the registry serves only a kubeconfig's contexts (the embedded
	// CLI): the fix is another context, not a registration.
	Kubeconfig string
}

// ErrUnknown matches every *UnknownError (errors.Is).
var ErrUnknown = errors.New("unknown cluster")

func (e *UnknownError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	if e.Kubeconfig != "" {
		return fmt.Sprintf("cluster %q is not a context of kubeconfig %s (have: %s): pass --kube-context with one of them", e.Name, e.Kubeconfig, known)
	}
	return fmt.Sprintf("cluster %q is not registered (known: %s): add it with `sealane cluster add %s --kubeconfig FILE` "+
		"(or --in-cluster), or name a registered cluster", e.Name, known, e.Name)
}

// Is makes errors.Is(err, ErrUnknown) true.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// UnreachableError is returned by Get for a cluster whose last check failed.
type UnreachableError struct{ Status Status }

// ErrUnreachable matches every *UnreachableError (errors.Is).
var ErrUnreachable = errors.New("cluster unreachable")

func (e *UnreachableError) Error() string {
	s := e.Status
	seen := "" // a cluster no check reached may still have answered the stages: no "never"
	if !s.LastSeen.IsZero() {
		seen = ", last seen: " + s.LastSeen.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cluster %q unreachable: %s (checked at %s%s); deploys to it fail until it answers "+
		"again — see `sealane cluster list`%s", s.Name, s.Error, s.CheckedAt.UTC().Format(time.RFC3339), seen, fixHint(s))
}

// fixHint is what to check when a cluster does not answer, by where it was registered.
func fixHint(s Status) string {
	switch {
	case strings.HasPrefix(s.Source, "secret "):
		return fmt.Sprintf(", or fix its Secret with `sealane cluster add %s --kubeconfig FILE --overwrite`", s.Name)
	case s.Source == SourceContext:
		return fmt.Sprintf(", or the server of kubeconfig context %q", s.Name)
	}
	return ""
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Get returns the clients of the named cluster, whatever its last check found (a deploy in
// flight retries through an outage). An unknown name is an *UnknownError, a cluster whose
// Secret is unusable the reason naming the Secret: each at once, without contacting the
// cluster.
func (r *Registry) Get(name string) (*kube.Cluster, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clientsLocked(name)
}

// recheckTimeout bounds the live check Reachable makes of a cluster last found unreachable.
const recheckTimeout = 3 * time.Second

// Reachable is nil unless name's last check failed (not checked yet counts as reachable); then
// it checks again at once (GET /version within recheckTimeout), since the cluster may be back
// before the next round, and is an *UnreachableError when it still does not answer. What a new
// deploy is refused for (pkg/pipeline).
func (r *Registry) Reachable(ctx context.Context, name string) error {
	s, ok := r.Status(name)
	if !ok || s.Reachable {
		return nil
	}
	cl, err := r.Get(name)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, recheckTimeout)
	defer cancel()
	now := time.Now()
	v, err := ServerVersion(cctx, cl)
	if err != nil {
		s.Error, s.CheckedAt = err.Error(), now
		r.SetStatus(s)
		return &UnreachableError{Status: s}
	}
	s.Reachable, s.Version, s.Error, s.LastSeen, s.CheckedAt = true, v, "", now, now
	r.SetStatus(s)
	return nil
}

// versionClient returns what the checker asks name's API server for its version with, and
// the server's address: the kept clients' REST client; else clients built and kept while there
// is room; else, for a cluster Secret, one REST client built for the check alone. So a check
// round over thousands of clusters builds no full clients (50 KB each) and does not push out
// the clients of the clusters being deployed to.
func (r *Registry) versionClient(name string) (rest.Interface, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients.Peek(name); ok {
		return c.Typed.Discovery().RESTClient(), c.Config.Host, nil
	}
	spec, found, err := r.secretLocked(name)
	if err != nil {
		return nil, "", err
	}
	if !found || spec.InCluster || r.clients.Len() < r.opts.MaxClients {
		c, err := r.buildLocked(name)
		if err != nil {
			return nil, "", err
		}
		if r.clients.Len() < r.opts.MaxClients {
			r.clients.Add(name, c)
		}
		return c.Typed.Discovery().RESTClient(), c.Config.Host, nil
	}
	cfg, err := restConfig(spec)
	if err != nil {
		return nil, "", err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("cluster %q: %w", name, err)
	}
	return dc.RESTClient(), cfg.Host, nil
}

// Changed is signalled when a cluster Secret was added, changed or removed.
func (r *Registry) Changed() <-chan struct{} { return r.changed }

// clientsLocked returns name's clients, building them when needed; r.mu is held.
func (r *Registry) clientsLocked(name string) (*kube.Cluster, error) {
	if c, ok := r.clients.Get(name); ok {
		return c, nil
	}
	c, err := r.buildLocked(name)
	if err != nil {
		return nil, err
	}
	r.clients.Add(name, c)
	return c, nil
}

// SourceContext and SourceInCluster are the Source of a cluster registered by a kubeconfig
// context and of the cluster the service runs in (a Secret's is "secret <namespace>/<name>").
const (
	SourceContext   = "kubeconfig context"
	SourceInCluster = "in-cluster"
)

// sourceLocked says where name is registered, as buildLocked finds it ("" for none); r.mu is
// held.
func (r *Registry) sourceLocked(name string) string {
	if spec, found, err := r.secretLocked(name); found && err == nil {
		return spec.Source
	}
	switch {
	case name == r.opts.InClusterName && r.inCluster != nil:
		return SourceInCluster
	case r.opts.Contexts && r.hasContext(name):
		return SourceContext
	}
	return ""
}

// buildLocked builds name's clients from its source; r.mu is held.
func (r *Registry) buildLocked(name string) (*kube.Cluster, error) {
	spec, found, err := r.secretLocked(name)
	if err != nil {
		return nil, err
	}
	var c *kube.Cluster
	switch {
	case found:
		c, err = r.build(spec)
	case name == r.opts.InClusterName && r.inCluster != nil:
		c, err = kube.NewCluster(name, r.inCluster)
	case r.opts.Contexts && r.hasContext(name):
		c, err = kube.Connect(kube.Options{Kubeconfig: r.opts.Kubeconfig, Context: name})
	default:
		return nil, r.unknownLocked(name)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, err)
	}
	return c, nil
}

// unknownLocked is the error for a name no source has; r.mu is held.
func (r *Registry) unknownLocked(name string) error {
	e := &UnknownError{Name: name, Known: r.namesLocked()}
	if r.opts.Contexts && !r.watching && (r.opts.InClusterName == "" || r.inCluster == nil) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = r.opts.Kubeconfig
		e.Kubeconfig = r.opts.Kubeconfig
		if e.Kubeconfig == "" {
			e.Kubeconfig = strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator))
		}
	}
	return e
}

// build makes the clients of a Secret's spec.
func (r *Registry) build(spec clusterspec.Spec) (*kube.Cluster, error) {
	return Build(spec, r.inCluster)
}

// Build makes the clients of spec; inCluster is the config of the cluster the process runs
// in (nil: not in one). It does not contact the cluster.
func Build(spec clusterspec.Spec, inCluster *rest.Config) (*kube.Cluster, error) {
	if spec.InCluster {
		if inCluster == nil {
			return nil, fmt.Errorf("%s registers the cluster the service runs in, but this process is not running in a cluster", spec.Source)
		}
		return kube.NewCluster(spec.Name, inCluster)
	}
	cfg, err := restConfig(spec)
	if err != nil {
		return nil, err
	}
	return kube.NewCluster(spec.Name, cfg)
}

// restConfig is the REST config of spec's kubeconfig (not an in-cluster spec).
func restConfig(spec clusterspec.Spec) (*rest.Config, error) {
	if spec.Kubeconfig == nil {
		return nil, fmt.Errorf("cluster %s: no kubeconfig", spec.Name)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*spec.Kubeconfig, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", spec.Name, err)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sealane"
	}
	return cfg, nil
}

// secretLocked finds the Secret registering name: its spec, whether there is one, and why it
// cannot be used (unusable data, or two Secrets claiming the name).
func (r *Registry) secretLocked(name string) (clusterspec.Spec, bool, error) {
	var hits []secretEntry
	for key := range r.byName[name] {
		hits = append(hits, r.secrets[key])
	}
	switch len(hits) {
	case 0:
		return clusterspec.Spec{}, false, nil
	case 1:
		if hits[0].err != nil {
			return clusterspec.Spec{}, true, fmt.Errorf("cluster %q: %w", name, hits[0].err)
		}
		return hits[0].spec, true, nil
	}
	sources := make([]string, len(hits))
	for i, h := range hits {
		sources[i] = h.spec.Source
	}
	sort.Strings(sources)
	return clusterspec.Spec{}, true, fmt.Errorf("cluster %q is registered by more than one Secret (%s): remove all but one", name, strings.Join(sources, ", "))
}

// hasContext reports whether the kubeconfig has context name.
func (r *Registry) hasContext(name string) bool {
	_, ok := r.contexts()[name]
	return ok
}

// contexts returns the kubeconfig's context names with their server URL; none when the
// kubeconfig does not load.
func (r *Registry) contexts() map[string]string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = r.opts.Kubeconfig
	cfg, err := rules.Load()
	if err != nil {
		r.log.Debug("kubeconfig does not load: no context source", zap.Error(err))
		return nil
	}
	out := map[string]string{}
	for n, c := range cfg.Contexts {
		out[n] = ""
		if cl := cfg.Clusters[c.Cluster]; cl != nil {
			out[n] = cl.Server
		}
	}
	return out
}

// DefaultName returns the cluster name to use when none is given: the current context of
// the kubeconfig.
func (r *Registry) DefaultName() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if r.opts.Kubeconfig != "" {
		rules.ExplicitPath = r.opts.Kubeconfig
	}
	cfg, err := rules.Load()
	if err != nil {
		return "", fmt.Errorf("load kubeconfig: %w", err)
	}
	if cfg.CurrentContext == "" {
		return "", fmt.Errorf("kubeconfig %s has no current-context: pass --kube-context", rules.GetLoadingPrecedence())
	}
	return cfg.CurrentContext, nil
}
