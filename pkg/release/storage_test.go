package release

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParseDriver(t *testing.T) {
	for in, want := range map[string]string{"": DriverSecret, "secret": DriverSecret, "Secrets": DriverSecret,
		"configmap": DriverConfigMap, "configmaps": DriverConfigMap} {
		if got, err := ParseDriver(in); err != nil || got != want {
			t.Errorf("ParseDriver(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"memory", "sql", "cm"} {
		if _, err := ParseDriver(bad); err == nil || !strings.Contains(err.Error(), "use secret (the default) or configmap") {
			t.Errorf("ParseDriver(%q) = %v, want a refusal", bad, err)
		}
	}
}

// storeIn is a Store keeping the records of release namespace ns in storage namespace recs.
func storeIn(client kubernetes.Interface, recs, ns string, opts ...Option) *Store {
	return NewStore(client, recs, nil, append([]Option{WithClock(clock()), WithReleaseNamespace(ns)}, opts...)...)
}

func pendingIn(ns string, rev int) Pending {
	p := pending(rev)
	p.Namespace = ns
	return p
}

func TestStorageNamespace(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	shop := storeIn(client, "records", testNS, WithDriver(DriverConfigMap))
	for rev := 1; rev <= 2; rev++ {
		if _, err := shop.RecordPending(ctx, pendingIn(testNS, rev)); err != nil {
			t.Fatal(err)
		}
		if _, err := shop.RecordResult(ctx, "web", rev, true, ""); err != nil {
			t.Fatal(err)
		}
	}
	cms, _ := client.CoreV1().ConfigMaps("records").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if len(cms.Items) != 2 {
		t.Errorf("%d record ConfigMaps in the storage namespace, want 2", len(cms.Items))
	}
	if s, _ := client.CoreV1().Secrets(testNS).List(ctx, metav1.ListOptions{}); len(s.Items) != 0 {
		t.Errorf("%d Secrets in the release namespace, want none", len(s.Items))
	}
	d, err := shop.Deployed(ctx, "web")
	if err != nil || d.Version != 2 || d.Namespace != testNS {
		t.Fatalf("Deployed = %+v, %v; want revision 2 of namespace %s", d, err, testNS)
	}

	// Another release namespace sees nothing of it and may not take the name.
	other := storeIn(client, "records", "other", WithDriver(DriverConfigMap))
	if h, err := other.History(ctx, "web"); err != nil || len(h) != 0 {
		t.Errorf("History from namespace other = %d records, %v; want none", len(h), err)
	}
	if _, err := other.Get(ctx, "web", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get from namespace other = %v, want ErrNotFound", err)
	}
	if _, err := other.Deployed(ctx, "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Deployed from namespace other = %v, want ErrNotFound", err)
	}
	_, err = other.RecordPending(ctx, pendingIn("other", 1))
	if err == nil || !strings.Contains(err.Error(), "storage namespace records already holds release web of namespace shop") {
		t.Errorf("RecordPending of the same name from another namespace = %v, want a refusal", err)
	}

	// List sees the storage namespace's releases; Latest keeps the newest revision of each.
	all, err := NewStore(client, "records", nil, WithDriver(DriverConfigMap)).List(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d records, %v; want 2", len(all), err)
	}
	latest := Latest(all)
	if len(latest) != 1 || latest[0].Version != 2 || latest[0].Namespace != testNS {
		t.Errorf("Latest = %+v, want revision 2 of web", latest)
	}
	if got, _ := other.List(ctx); len(got) != 0 {
		t.Errorf("List from namespace other = %d records, want none", len(got))
	}
	// The Secret driver there sees none of the ConfigMap records.
	if got, err := NewStore(client, "records", nil).List(ctx); err != nil || len(got) != 0 {
		t.Errorf("List with the Secret driver = %d, %v; want none", len(got), err)
	}
}

func TestListAllNamespaces(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	for _, ns := range []string{"b", "a"} {
		s := NewStore(client, ns, nil, WithClock(clock()))
		for rev := 1; rev <= 2; rev++ {
			if _, err := s.RecordPending(ctx, pendingIn(ns, rev)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RecordResult(ctx, "web", rev, rev == 1, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := NewStore(client, "", nil).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest := Latest(all)
	if len(latest) != 2 || latest[0].Namespace != "a" || latest[1].Namespace != "b" || latest[0].Version != 2 ||
		latest[0].Info.Status.String() != "failed" {
		t.Errorf("Latest over all namespaces = %+v", latest)
	}
}
