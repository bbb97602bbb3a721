package clusters

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sealane/sealane/pkg/clusterspec"
)

// shortSyncCheck makes WatchSecrets look at an unfinished first listing every 100ms.
func shortSyncCheck(t *testing.T) {
	old := syncCheck
	syncCheck = 100 * time.Millisecond
	t.Cleanup(func() { syncCheck = old })
}

// A first listing that is only slow (no error; here 1s, ten times the check) is waited for: the
// registry then holds its clusters. One that fails ends WatchSecrets with the apiserver's
// reason after the check.
func TestWatchSecretsWaitsForASlowListing(t *testing.T) {
	shortSyncCheck(t)
	cs := fake.NewClientset(clusterSecret("cluster-prod", "prod", map[string]string{clusterspec.KubeconfigKey: testKubeconfig}))
	cs.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(time.Second)
		return false, nil, nil // then the tracker answers
	})
	r, _ := New(Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stop, err := r.WatchSecrets(ctx, cs, "sealane")
	if err != nil {
		t.Fatalf("WatchSecrets over a slow listing: %v", err)
	}
	defer stop()
	if es := r.Entries(); len(es) != 1 || es[0].Name != "prod" {
		t.Errorf("entries %+v, want the one cluster prod", es)
	}

	failing := fake.NewClientset()
	failing.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("secrets is forbidden: User cannot list resource")
	})
	if _, err := r.WatchSecrets(ctx, failing, "sealane"); err == nil || !strings.Contains(err.Error(), "forbidden") ||
		!strings.Contains(err.Error(), "needs get, list and watch on secrets") {
		t.Errorf("WatchSecrets over a refused listing = %v, want the reason and the fix", err)
	}
	if ctx.Err() != nil {
		t.Error("the refused listing waited for the caller's deadline: want it to fail after the check")
	}
}
