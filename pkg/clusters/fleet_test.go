package clusters

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// BenchmarkRegistryFleet: a registry of 10,000 cluster Secrets answers a cluster's spec
// (what every client build and check asks) and lists every entry (each check round, each
// rollout's Select). A lookup once scanned every Secret: 10,000 lookups a check round were
// 10^8 name comparisons in every process.
func BenchmarkRegistryFleet(b *testing.B) {
	r, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	for i := range n {
		r.PutSecret(clusterSecret(fmt.Sprintf("c-%05d", i), fmt.Sprintf("c-%05d", i), map[string]string{
			clusterspec.KubeconfigKey: "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://c.example:6443\"}}]\n" +
				"users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"}))
	}
	b.Run("lookup", func(b *testing.B) {
		for i := range b.N {
			r.mu.Lock()
			_, found, err := r.secretLocked(fmt.Sprintf("c-%05d", i%n))
			r.mu.Unlock()
			if !found || err != nil {
				b.Fatal(found, err)
			}
		}
	})
	b.Run("entries", func(b *testing.B) {
		for range b.N {
			if got := len(r.Entries()); got != n {
				b.Fatalf("%d entries", got)
			}
		}
	})
}

// BenchmarkCheckRound: one check round over 1,000 cluster Secrets with room for 16 clients,
// against one API server; B/op over 1,000 is what a round allocates per cluster. A round once
// built every cluster's full clients (~53 KB each) to ask GET /version.
func BenchmarkCheckRound(b *testing.B) {
	_, kubeconfig, _ := versionAPI(b)
	r, err := New(Options{MaxClients: 16})
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	for i := range n {
		r.PutSecret(clusterSecret(fmt.Sprintf("c-%04d", i), fmt.Sprintf("c-%04d", i), map[string]string{clusterspec.KubeconfigKey: kubeconfig}))
	}
	c := &Checker{Registry: r, Timeout: 5 * time.Second}
	b.ReportAllocs()
	for range b.N {
		for name, s := range c.CheckAll(context.Background()) {
			if !s.Reachable {
				b.Fatalf("%s: %s", name, s.Error)
			}
		}
	}
}
