package renderer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

// TestCheckGitChart: what admission refuses of a git chart, each error naming the problem.
func TestCheckGitChart(t *testing.T) {
	allowed, err := admission.NewSourcePolicy([]string{"https://git.example.com/acme/**", "ssh://git.example.com/acme/**"})
	if err != nil {
		t.Fatal(err)
	}
	in := stagekit.Admission{Sources: allowed}
	for _, tc := range []struct {
		name string
		g    events.GitChart
		want string // "" = accepted
	}{
		{"https", events.GitChart{URL: "https://git.example.com/acme/shop.git", Commit: sha}, ""},
		{"scp-like", events.GitChart{URL: "git@git.example.com:acme/shop.git", Commit: sha, Path: ".helm"}, ""},
		{"branch name", events.GitChart{URL: "https://git.example.com/acme/shop.git", Commit: "main"}, "is not a full commit SHA"},
		{"short sha", events.GitChart{URL: "https://git.example.com/acme/shop.git", Commit: sha[:7]}, "is not a full commit SHA"},
		{"absolute path", events.GitChart{URL: "https://git.example.com/acme/shop.git", Commit: sha, Path: "/etc"}, `path "/etc"`},
		{"values outside", events.GitChart{URL: "https://git.example.com/acme/shop.git", Commit: sha, ValuesFiles: []string{"../x.yaml"}}, `path "../x.yaml"`},
		{"not allowed", events.GitChart{URL: "https://evil.example.com/acme/shop.git", Commit: sha}, "evil.example.com"},
		{"local file", events.GitChart{URL: "file:///srv/repo.git", Commit: sha}, "file:///srv/repo.git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkGitChart(in, &tc.g)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	if err := checkGitChart(stagekit.Admission{Trusted: true}, &events.GitChart{URL: "file:///srv/repo.git", Commit: sha}); err != nil {
		t.Errorf("the embedded pipeline takes any repository: %v", err)
	}
}

// TestStoreGitChart fetches a werf project from a real repository at one commit: its chart
// and values files are that commit's, not the head's; a missing values file and a commit the
// repository does not have are refusals, not retries.
func TestStoreGitChart(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.Init(t, "shop")
	first := repo.Commit(t, map[string]string{
		"werf.yaml":                 "project: shop\nconfigVersion: 1\n",
		".helm/Chart.yaml":          "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		".helm/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
		".helm/values-staging.yaml": "message: first\n",
	}, "first")
	repo.Commit(t, map[string]string{".helm/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.2.0\n",
		".helm/values-staging.yaml": "message: second\n"}, "second")
	in := stagekit.Admission{Trusted: true, Git: gitsource.Options{CacheDir: t.TempDir()}}
	blobs := bustest.NewBlobs()
	ctx := context.Background()
	src, values, err := storeGitChart(ctx, blobs, events.GitChart{URL: repo.URL(), Commit: first, ValuesFiles: []string{".helm/values-staging.yaml"}}, in)
	if err != nil {
		t.Fatal(err)
	}
	if src.Name != "shop" || src.Version != "0.1.0" || src.Git == nil || src.Git.Commit != first || !stored(blobs, "charts/"+src.Digest) {
		t.Errorf("stored %+v, want chart shop 0.1.0 of the first commit, in the blob store", src)
	}
	if len(values) != 1 || string(values[0].Content) != "message: first\n" {
		t.Errorf("values %+v, want the first commit's values file", values)
	}
	_, _, err = storeGitChart(ctx, blobs, events.GitChart{URL: repo.URL(), Commit: first, ValuesFiles: []string{".helm/values-prod.yaml"}}, in)
	if err == nil || !strings.Contains(err.Error(), "values-prod.yaml") || !strings.Contains(err.Error(), "not in the repository at this commit") {
		t.Errorf("missing values file: %v", err)
	}
	_, _, err = storeGitChart(ctx, blobs, events.GitChart{URL: repo.URL(), Commit: sha}, in)
	if !errors.Is(err, gitsource.ErrCommitNotFound) {
		t.Fatalf("unknown commit: %v, want ErrCommitNotFound", err)
	}
	if reason, ok := fetchRefused(ctx, in, err); !ok || !strings.Contains(reason, sha) {
		t.Errorf("unknown commit refused = %v (%q), want a refusal naming it (retrying cannot fix it)", ok, reason)
	}
}

// TestInsideTree: a checked-out chart may use its own tree (file:// dependencies), nothing
// outside it unless the policy allows.
func TestInsideTree(t *testing.T) {
	refuse := func(loc string) error { return errors.New("refused " + loc) }
	allow := insideTree("/tmp/co", refuse)
	for loc, ok := range map[string]bool{
		"file:///tmp/co":             true,
		"file:///tmp/co/charts/lib":  true,
		"file:///tmp/co/../etc":      false,
		"file:///tmp/cosy":           false,
		"https://charts.example.com": false,
	} {
		if err := allow(loc); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", loc, err, ok)
		}
	}
	if insideTree("/tmp/co", nil) != nil {
		t.Error("a trusted admission (no policy) stays without one")
	}
}
