package clusters

import (
	"fmt"
	"testing"

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
