package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// Status is what the last check of a cluster found; it is kept in the registry (Get refuses a
// cluster whose last check failed) and in the KV bucket sealane-clusters, key = the name.
type Status struct {
	Name   string            `json:"name"`
	Source string            `json:"source"`
	Server string            `json:"server,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Version is the Kubernetes version the API server reported (e.g. v1.34.2).
	Version   string `json:"version,omitempty"`
	Reachable bool   `json:"reachable"`
	// Error is why the check failed (never a credential).
	Error string `json:"error,omitempty"`
	// LastSeen is when the cluster last answered; CheckedAt when it was last checked.
	LastSeen  time.Time `json:"lastSeen,omitzero"`
	CheckedAt time.Time `json:"checkedAt"`
}

// SetStatus records the result of a check; Get refuses the cluster while it is unreachable.
func (r *Registry) SetStatus(s Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status[s.Name] = s
}

// Status returns the last recorded check of name.
func (r *Registry) Status(name string) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.status[name]
	return s, ok
}

// StatusStore keeps cluster statuses where other processes read them.
type StatusStore interface {
	Put(ctx context.Context, s Status) error
	Delete(ctx context.Context, name string) error
}

// KVStatus keeps statuses in a KV bucket (bus.Bus.Clusters: sealane-clusters).
type KVStatus struct{ KV *bus.KV }

// Put stores s under its cluster's key.
func (k KVStatus) Put(ctx context.Context, s Status) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode status of cluster %s: %w", s.Name, err)
	}
	if _, err := k.KV.Put(ctx, StatusKey(s.Name), data); err != nil {
		return fmt.Errorf("store status of cluster %s in %s: %w", s.Name, k.KV.Bucket(), err)
	}
	return nil
}

// Delete removes name's status.
func (k KVStatus) Delete(ctx context.Context, name string) error {
	if err := k.KV.Delete(ctx, StatusKey(name), 0); err != nil {
		return fmt.Errorf("delete status of cluster %s from %s: %w", name, k.KV.Bucket(), err)
	}
	return nil
}

// List returns every stored status, by cluster name.
func (k KVStatus) List(ctx context.Context) (map[string]Status, error) {
	keys, err := k.KV.Keys(ctx, ">")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", k.KV.Bucket(), err)
	}
	out := map[string]Status{}
	for _, key := range keys {
		e, err := k.KV.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", k.KV.Bucket(), key, err)
		}
		var s Status
		if err := json.Unmarshal(e.Value(), &s); err != nil {
			return nil, fmt.Errorf("decode %s/%s: %w", k.KV.Bucket(), key, err)
		}
		out[s.Name] = s
	}
	return out, nil
}

var keyUnsafe = regexp.MustCompile(`[^-_=a-zA-Z0-9]`)

// StatusKey is the KV key of cluster name: the name, with characters a key may not hold
// (a kubeconfig context may have any) replaced by '_'.
func StatusKey(name string) string { return keyUnsafe.ReplaceAllString(name, "_") }
