// Package kube holds the Kubernetes clients of one cluster (and the discovery they need: REST
// mappings, the OpenAPI document). It knows nothing about charts, releases or the event bus.
package kube

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/manifest"
)

// ErrNamespaceRequired is returned by ResourceFor for a namespaced kind referenced without a
// namespace.
var ErrNamespaceRequired = errors.New("namespaced kind needs a namespace")

// Options selects and tunes the connection to one cluster.
type Options struct {
	// Kubeconfig is an explicit kubeconfig file; "" uses $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// Context overrides the kubeconfig's current-context.
	Context string
	// QPS and Burst are the client-side rate limits (defaults 500 and 1000: high enough that
	// client-go's limiter never throttles a deploy; the apiserver's priority and fairness is
	// the real limit).
	QPS   float32
	Burst int
	// Timeout bounds every single request (0: none). It cuts watches too (informers then
	// re-establish them), so leave it 0 for clusters that Track watches.
	Timeout time.Duration
}

// DefaultOptions returns the defaults Connect uses for unset fields.
func DefaultOptions() Options {
	return Options{QPS: 500, Burst: 1000}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.QPS < 0 || o.Burst < 0 || o.Timeout < 0 {
		return fmt.Errorf("kube options: QPS, Burst and Timeout must not be negative (got %v, %d, %s)", o.QPS, o.Burst, o.Timeout)
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.QPS == 0 {
		o.QPS = d.QPS
	}
	if o.Burst == 0 {
		o.Burst = d.Burst
	}
	return o
}

// Cluster holds the clients of one cluster. Build it with Connect or NewCluster.
type Cluster struct {
	// Name is the kubeconfig context the clients were built from.
	Name string
	// Config is the REST config all clients were built from.
	Config *rest.Config
	// Dynamic serves any kind as unstructured objects; Typed serves the built-in kinds.
	Dynamic dynamic.Interface
	Typed   kubernetes.Interface
	// Metadata reads objects' metadata only (no spec, no data): what deciding on an object
	// without reading it whole needs. Nil (test clusters) means read objects whole.
	Metadata metadata.Interface
	// Mapper maps kinds to resources from cached discovery; ResourceFor resets it once when a
	// kind is unknown (e.g. a CRD applied a moment ago). NewCluster's shares the discovery
	// answer and the mapper built from it with every cluster that answers alike.
	Mapper meta.ResettableRESTMapper
	// discovery is the shared-discovery mapper NewCluster made Mapper (nil for clusters built
	// by hand).
	discovery *sharedMapper

	mu       sync.Mutex
	resetGen uint64
	// mappings caches Mapping's answers until the next discovery reset: the discovery
	// mapper scans every resource of the cluster on each call.
	mappings map[schema.GroupVersionKind]*meta.RESTMapping
	bounded  kubernetes.Interface
	// as are the clusters impersonating a user (As), by user; impersonated is the user this
	// one impersonates.
	as           map[string]*Cluster
	impersonated string
}

// RequestTimeout bounds each request of the client Bounded returns.
const RequestTimeout = 30 * time.Second

// Bounded returns a typed client whose every request ends within RequestTimeout, for
// request/response work that must not hang (release records: Helm's storage drivers pass no
// deadline of their own). Typed stays unbounded because informers' watches run long.
func (c *Cluster) Bounded() kubernetes.Interface {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bounded != nil {
		return c.bounded
	}
	if c.Config == nil || (c.Config.Timeout > 0 && c.Config.Timeout <= RequestTimeout) {
		c.bounded = c.Typed
		return c.bounded
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = RequestTimeout
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil { // the same config built Typed: not expected
		c.bounded = c.Typed
		return c.bounded
	}
	c.bounded = typed
	return c.bounded
}

// InClusterName is the Cluster.Name of a connection made from the pod's service account.
const InClusterName = "in-cluster"

// Connect loads the kubeconfig (explicit file, else $KUBECONFIG, else ~/.kube/config), applies
// the context override and builds the clients; with no kubeconfig at all, inside a pod, it uses
// the pod's service account. It does not contact the cluster.
func Connect(opts Options) (*Cluster, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	where := strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator))
	if opts.Kubeconfig != "" {
		where = opts.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: opts.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", where, err)
	}
	name := raw.CurrentContext
	if opts.Context != "" {
		name = opts.Context
	}
	if len(raw.Contexts) == 0 {
		if opts.Kubeconfig == "" && opts.Context == "" {
			if cfg, err := rest.InClusterConfig(); err == nil {
				cfg.QPS, cfg.Burst, cfg.Timeout = opts.QPS, opts.Burst, opts.Timeout
				return NewCluster(InClusterName, cfg)
			}
		}
		return nil, fmt.Errorf("kubeconfig %s: no contexts found (is the file missing or empty?)", where)
	}
	if name == "" {
		return nil, fmt.Errorf("kubeconfig %s: no current-context set and no context given", where)
	}
	if _, ok := raw.Contexts[name]; !ok {
		names := make([]string, 0, len(raw.Contexts))
		for n := range raw.Contexts {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("kubeconfig %s: context %q not found (have %s)", where, name, strings.Join(names, ", "))
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %q: %w", where, name, err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = opts.QPS, opts.Burst, opts.Timeout
	c, err := NewCluster(name, cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %q: %w", where, name, err)
	}
	return c, nil
}

// NewCluster builds the clients for cfg; name is for messages. A cfg without any client-side
// rate limit (QPS, Burst and RateLimiter unset, which client-go would turn into 5 QPS, burst 10
// — minutes for a big release) gets DefaultOptions' QPS and Burst; other settings are kept.
func NewCluster(name string, cfg *rest.Config) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "sealane"
	}
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		d := DefaultOptions()
		cfg.QPS, cfg.Burst = d.QPS, d.Burst
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("typed client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	mapper := newSharedMapper(typed.Discovery(), snapshots)
	return &Cluster{Name: name, Config: cfg, Dynamic: dyn, Typed: typed, Metadata: md, Mapper: mapper, discovery: mapper}, nil
}

// APIVersions returns what Helm's .Capabilities.APIVersions holds for the cluster, sorted,
// from the discovery its mapper shares with the clusters that answered alike: no request when
// it is cached. ok is false for a cluster without a shared mapper (a test's fake).
func (c *Cluster) APIVersions() (versions []string, ok bool, err error) {
	if c.discovery == nil {
		return nil, false, nil
	}
	snap, err := c.discovery.current()
	if err != nil {
		return nil, true, err
	}
	return snap.apiVersions(), true, nil
}

// StatusSubresource reports whether the cluster serves a status subresource for resource gvr,
// from the cached discovery the mapper reads (no request when it is cached); known is false
// when discovery cannot say.
func (c *Cluster) StatusSubresource(gvr schema.GroupVersionResource) (has, known bool) {
	if c.discovery == nil {
		return false, false
	}
	snap, err := c.discovery.current()
	if err != nil {
		return false, false
	}
	list, ok := snap.resources(gvr.GroupVersion())
	if !ok {
		return false, false
	}
	for _, r := range list {
		if r.Name == gvr.Resource+"/status" {
			return true, true
		}
	}
	return false, true
}

// Mapping returns the REST mapping of gvk. On a no-match error it resets the discovery cache
// once (at most one reset for a burst of concurrent misses) and asks again.
func (c *Cluster) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, gen, err := c.lookup(gvk)
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	c.mu.Lock()
	if c.resetGen == gen {
		c.Mapper.Reset()
		c.resetGen++
		c.mappings = nil
	}
	c.mu.Unlock()
	m, _, err = c.lookup(gvk)
	return m, err
}

// Lookup returns the REST mapping of gvk (an empty version: the preferred one) as the discovery
// cache knows it, without resetting the cache on a miss.
func (c *Cluster) Lookup(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, _, err := c.lookup(gvk)
	return m, err
}

// lookup returns gvk's cached mapping or asks the mapper (and caches the answer), with the
// discovery generation it read.
func (c *Cluster) lookup(gvk schema.GroupVersionKind) (*meta.RESTMapping, uint64, error) {
	c.mu.Lock()
	gen, m := c.resetGen, c.mappings[gvk]
	c.mu.Unlock()
	if m != nil {
		return m, gen, nil
	}
	var err error
	if gvk.Version == "" {
		m, err = c.Mapper.RESTMapping(gvk.GroupKind())
	} else {
		m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err == nil {
		c.remember(gen, gvk, m)
	}
	return m, gen, err
}

// remember caches m for gvk unless discovery was reset since gen.
func (c *Cluster) remember(gen uint64, gvk schema.GroupVersionKind, m *meta.RESTMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resetGen != gen {
		return
	}
	if c.mappings == nil {
		c.mappings = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	c.mappings[gvk] = m
}

// ResourceFor returns the dynamic client for ref's resource, scoped to ref's namespace when the
// kind is namespaced (the namespace of a cluster-scoped ref is ignored), and the mapping used.
func (c *Cluster) ResourceFor(ref manifest.Ref) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.APIVersion == "" {
		return nil, nil, fmt.Errorf("%s: invalid apiVersion %q", ref, ref.APIVersion)
	}
	m, err := c.Mapping(gv.WithKind(ref.Kind))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cluster %s: %w", ref, c.Name, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource), m, nil
	}
	if ref.Namespace == "" {
		return nil, nil, fmt.Errorf("%s: %w", ref, ErrNamespaceRequired)
	}
	return c.Dynamic.Resource(m.Resource).Namespace(ref.Namespace), m, nil
}

// EnsureNamespace creates namespace ns unless it exists; werf and sealane create the
// release namespace instead of failing like helm without --create-namespace.
func (c *Cluster) EnsureNamespace(ctx context.Context, ns string) error {
	_, err := c.Typed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", ns, err)
	}
	_, err = c.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}
