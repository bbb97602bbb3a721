package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/kube"
)

// Checker checks every cluster of a registry periodically — does its API server answer, with
// which Kubernetes version — and records the result in the registry and the store.
type Checker struct {
	Registry *Registry
	// Store receives every status (nil: only the registry does).
	Store StatusStore
	// Interval between rounds (default DefaultCheckInterval); Timeout bounds one cluster's
	// check (default DefaultCheckTimeout).
	Interval time.Duration
	Timeout  time.Duration
	// Clock stamps the statuses; nil is time.Now.
	Clock func() time.Time
	Log   *zap.Logger

	mu     sync.Mutex
	last   map[string]Status // by name: the previous round, for LastSeen and removals
	stored map[string]Status // by name: the status last stored
}

// Defaults of Checker.
const (
	DefaultCheckInterval = 30 * time.Second
	DefaultCheckTimeout  = 10 * time.Second
	// maxParallelChecks bounds the clusters checked at once.
	maxParallelChecks = 16
	// storeTimeout bounds one status write (retried inside by the bus's call rule).
	storeTimeout = 15 * time.Second
)

// Run checks every cluster now, then every Interval and whenever a cluster Secret changes,
// until ctx ends.
func (c *Checker) Run(ctx context.Context) {
	interval := c.Interval
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.CheckAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.Registry.Changed():
		}
	}
}

// CheckAll checks every cluster of the registry at once and records the results; it returns
// them by name. Clusters that left the registry lose their stored status.
func (c *Checker) CheckAll(ctx context.Context) map[string]Status {
	entries := c.Registry.Entries()
	results := make([]Status, len(entries))
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelChecks)
	for i, e := range entries {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			results[i] = c.check(ctx, e)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // cut short: the results say nothing about the clusters
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last, c.stored = map[string]Status{}, map[string]Status{}
	}
	now := map[string]Status{}
	for _, s := range results {
		if !s.Reachable {
			s.LastSeen = c.last[s.Name].LastSeen
			c.log().Warn("cluster unreachable", zap.String("cluster", s.Name), zap.String("server", s.Server), zap.String("error", s.Error))
		}
		now[s.Name] = s
		c.Registry.SetStatus(s)
		c.store(ctx, s)
	}
	for name := range c.stored {
		if _, ok := now[name]; !ok {
			c.forget(ctx, name)
		}
	}
	c.last = now
	return now
}

// check checks one cluster.
func (c *Checker) check(ctx context.Context, e Entry) Status {
	now := c.now()
	s := Status{Name: e.Name, Source: e.Source, Server: e.Server(), Labels: e.Labels, CheckedAt: now}
	if e.Err != nil {
		s.Error = e.Err.Error()
		return s
	}
	rc, host, err := c.Registry.versionClient(e.Name)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if s.Server == "" || e.InCluster {
		s.Server = host
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := serverVersion(cctx, rc, host)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Version, s.Reachable, s.LastSeen = v, true, now
	return s
}

// ServerVersion asks cl's API server for its version (GET /version) within ctx.
func ServerVersion(ctx context.Context, cl *kube.Cluster) (string, error) {
	return serverVersion(ctx, cl.Typed.Discovery().RESTClient(), cl.Config.Host)
}

// serverVersion asks the API server at host, through rc, for its version within ctx.
func serverVersion(ctx context.Context, rc rest.Interface, host string) (string, error) {
	raw, err := rc.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("no answer from %s within the check's deadline: %w", host, err)
		}
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			return "", err // names the request already: Get "https://…/version": …
		}
		return "", fmt.Errorf("GET %s/version: %w", host, err)
	}
	var info version.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("GET %s/version: not a version: %w", host, err)
	}
	return info.GitVersion, nil
}

func (c *Checker) store(ctx context.Context, s Status) {
	if c.Store == nil {
		return
	}
	if prev, ok := c.stored[s.Name]; ok && sameCheck(prev, s) && s.CheckedAt.Sub(prev.CheckedAt) < StatusRefresh {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := c.Store.Put(ctx, s); err != nil {
		c.log().Warn("could not store the cluster's status", zap.String("cluster", s.Name), zap.Error(err))
		return
	}
	c.stored[s.Name] = s
}

// StatusRefresh is how old a stored status may grow while its checks find the same: a
// round stores only what changed (at 10,000 clusters, every process storing every status
// each round was 10,000 writes per interval each), and the rest this often, so that the
// stored check times stay recent.
const StatusRefresh = 5 * time.Minute

// sameCheck reports whether two checks of a cluster found the same (their times aside).
func sameCheck(a, b Status) bool {
	return a.Name == b.Name && a.Source == b.Source && a.Server == b.Server && maps.Equal(a.Labels, b.Labels) &&
		a.Version == b.Version && a.Reachable == b.Reachable && a.Error == b.Error
}

func (c *Checker) forget(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := c.Store.Delete(ctx, name); err != nil {
		c.log().Warn("could not delete the status of a removed cluster", zap.String("cluster", name), zap.Error(err))
		return
	}
	delete(c.stored, name)
}

func (c *Checker) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock()
}

func (c *Checker) log() *zap.Logger {
	if c.Log == nil {
		return zap.NewNop()
	}
	return c.Log
}
