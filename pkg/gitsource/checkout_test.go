package gitsource

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckoutWritesExactlyTheCommit(t *testing.T) {
	_, repo, c1, c2 := chartRepo(t)
	o := opts(t)

	got := files(t, mustCheckout(t, repo.URL(), c1, "chart", o))
	if diff := cmp.Diff(underPrefix(chart1, "chart"), got); diff != "" {
		t.Errorf("commit 1 (not the head) (-want +got):\n%s", diff)
	}
	got = files(t, mustCheckout(t, repo.URL(), c2, "chart", o))
	if diff := cmp.Diff(underPrefix(merge(chart1, chart2), "chart"), got); diff != "" {
		t.Errorf("commit 2 (-want +got):\n%s", diff)
	}
	got = files(t, mustCheckout(t, repo.URL(), strings.ToUpper(c1), "", o))
	if diff := cmp.Diff(chart1, got); diff != "" {
		t.Errorf("whole repository at commit 1 (-want +got):\n%s", diff)
	}
}

func TestCheckoutUsesTheCacheAndFetchesIncrementally(t *testing.T) {
	srv, repo, c1, _ := chartRepo(t)
	o := opts(t)
	noise := make([]byte, 64<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	repo.Commit(t, map[string]string{"noise.bin": string(noise)}, "incompressible history")

	mustCheckout(t, repo.URL(), c1, "chart", o)
	clones, _ := filepath.Glob(filepath.Join(o.CacheDir, "*.git"))
	if len(clones) != 1 || len(filepath.Base(clones[0])) != 16+len(".git") {
		t.Fatalf("clones in the cache = %v, want one <16 hex>.git", clones)
	}
	if st, err := os.Stat(clones[0]); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("clone directory mode = %v (%v), want 0700", st.Mode().Perm(), err)
	}
	before, _ := os.Stat(clones[0])

	n, first := srv.Requests(), srv.BytesSent()
	mustCheckout(t, repo.URL(), c1, "chart", o)
	if got := srv.Requests(); got != n {
		t.Errorf("a cached commit made %d requests, want none", got-n)
	}

	c3 := repo.Commit(t, map[string]string{"chart/values.yaml": "replicas: 3\n"}, "three replicas")
	got := files(t, mustCheckout(t, repo.URL(), c3, "chart", o))
	if got["values.yaml"] != "replicas: 3\n" {
		t.Errorf("values.yaml at the new commit = %q", got["values.yaml"])
	}
	if srv.Requests() == n {
		t.Error("a new commit made no request")
	}
	if incr := srv.BytesSent() - first; incr*10 > first {
		t.Errorf("the new commit's fetch received %d bytes, the first clone %d: not incremental", incr, first)
	}
	after, err := os.Stat(clones[0])
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the clone directory was not reused (%v)", err)
	}
}

func TestCheckoutFindsTagsAndOtherBranches(t *testing.T) {
	srv, repo, _, c2 := chartRepo(t)
	o := opts(t)
	mustCheckout(t, repo.URL(), c2, "", o) // the clone exists before the new refs

	// A commit only a tag holds: tagged, then main is reset and force-pushed past it.
	tagged := repo.Commit(t, map[string]string{"chart/tagged.txt": "tag\n"}, "release")
	repo.Tag(t, "v1.0.0")
	repo.Git(t, "reset", "--quiet", "--hard", c2)
	repo.Push(t, "main")
	// A commit only on a branch other than the default one.
	repo.Branch(t, "feature")
	feature := repo.Commit(t, map[string]string{"chart/feature.txt": "feature\n"}, "feature")
	repo.Branch(t, "main")

	if got := files(t, mustCheckout(t, repo.URL(), tagged, "chart", o)); got["tagged.txt"] != "tag\n" {
		t.Errorf("tagged commit: tagged.txt = %q", got["tagged.txt"])
	}
	if got := files(t, mustCheckout(t, repo.URL(), feature, "chart", o)); got["feature.txt"] != "feature\n" {
		t.Errorf("feature commit: feature.txt = %q", got["feature.txt"])
	}
	tagObject := strings.TrimSpace(repo.Git(t, "rev-parse", "v1.0.0"))
	n := srv.Requests()
	if got := files(t, mustCheckout(t, repo.URL(), tagObject, "chart", o)); got["tagged.txt"] != "tag\n" {
		t.Errorf("annotated tag's object: tagged.txt = %q", got["tagged.txt"])
	}
	if srv.Requests() != n {
		t.Error("the annotated tag was fetched again")
	}
}

func TestCheckoutFetchesAShaNoRefHoldsWhereAllowed(t *testing.T) {
	_, repo, _, c2 := chartRepo(t)
	o := opts(t)
	repo.Branch(t, "pr")
	pr := repo.Commit(t, map[string]string{"chart/pr.txt": "pr\n"}, "pull request")
	repo.Push(t, "HEAD:refs/pull/1/head")
	repo.Git(t, "push", "--quiet", "origin", "--delete", "pr")
	repo.Branch(t, "main")
	mustCheckout(t, repo.URL(), c2, "", o)

	_, err := checkoutOf(context.Background(), repo.URL(), pr, "", t.TempDir(), o)
	if !errors.Is(err, ErrCommitNotFound) {
		t.Fatalf("pull request commit without allowReachableSHA1InWant: err = %v, want ErrCommitNotFound", err)
	}
	repo.ServerConfig(t, "uploadpack.allowReachableSHA1InWant", "true")
	if got := files(t, mustCheckout(t, repo.URL(), pr, "chart", o)); got["pr.txt"] != "pr\n" {
		t.Errorf("pull request commit: pr.txt = %q", got["pr.txt"])
	}
}

func TestCheckoutUnknownCommit(t *testing.T) {
	_, repo, _, _ := chartRepo(t)
	unknown := strings.Repeat("ab", 20)
	out := t.TempDir()
	_, err := checkoutOf(context.Background(), repo.URL(), unknown, "", out, opts(t))
	if !errors.Is(err, ErrCommitNotFound) {
		t.Fatalf("err = %v, want ErrCommitNotFound", err)
	}
	for _, want := range []string{repo.URL(), unknown, "not be pushed yet", "force-pushed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a failed Checkout left %d entries in dir", len(entries))
	}
}

func TestCheckoutRefuses(t *testing.T) {
	_, repo, c1, _ := chartRepo(t)
	cases := []struct {
		name, url, commit, path string
	}{
		{"dot-dot path", repo.URL(), c1, "chart/../../etc"},
		{"dot-dot only", repo.URL(), c1, ".."},
		{"absolute path", repo.URL(), c1, "/etc"},
		{"file URL", "file:///etc", c1, ""},
		{"local path", "/srv/git/app.git", c1, ""},
		{"git protocol", "git://example.com/app.git", c1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkoutOf(context.Background(), tc.url, tc.commit, tc.path, t.TempDir(), opts(t))
			if !errors.Is(err, ErrNotAllowed) {
				t.Errorf("err = %v, want ErrNotAllowed", err)
			}
		})
	}
	for _, bad := range []string{"abc", strings.Repeat("g", 40), c1[:39]} {
		if _, err := checkoutOf(context.Background(), repo.URL(), bad, "", t.TempDir(), opts(t)); err == nil {
			t.Errorf("commit %q: no error", bad)
		}
	}
	if _, err := checkoutOf(context.Background(), repo.URL(), c1, "", t.TempDir(), Options{}); err == nil {
		t.Error("no CacheDir: no error")
	}
}

func TestCheckoutFileModesAndSymlinks(t *testing.T) {
	srv := newRepoWithLinks(t)
	o := opts(t)
	dir := mustCheckout(t, srv.url, srv.inside, "chart", o)
	got := files(t, dir)
	want := map[string]string{
		"Chart.yaml":        "name: demo\n",
		"values.yaml":       "a: 1\n",
		"hook.sh":           "#!/bin/sh\n",
		"values-link.yaml":  "-> values.yaml",
		"templates/up.yaml": "-> ../values.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for name, mode := range map[string]os.FileMode{"Chart.yaml": 0o644, "hook.sh": 0o755} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", name, st.Mode().Perm(), err, mode)
		}
	}

	for name, commit := range map[string]string{"escaping the repository": srv.escape, "escaping the chart path": srv.outsidePath} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			_, err := checkoutOf(context.Background(), srv.url, commit, "chart", out, o)
			if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "chart") && !strings.Contains(err.Error(), "templates/") {
				t.Fatalf("err = %v, want ErrNotAllowed naming the link", err)
			}
			if !strings.Contains(err.Error(), "symlink templates/") {
				t.Errorf("error %q does not name the symlink", err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("the refused checkout left %d entries", len(entries))
			}
		})
	}
}

func TestCheckoutMaxBytes(t *testing.T) {
	srv := gittestServerWithBigFile(t)
	o := opts(t)
	o.MaxBytes = 1 << 20
	out := t.TempDir()
	_, err := checkoutOf(context.Background(), srv.url, srv.commit, "", out, o)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1048576 bytes") {
		t.Fatalf("err = %v, want ErrTooLarge naming the limit", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("the refused checkout left %d entries", len(entries))
	}
	o.MaxBytes = 3 << 20
	mustCheckout(t, srv.url, srv.commit, "", o)
}

func TestCheckoutCancelledContextReturnsPromptly(t *testing.T) {
	srv, repo, c1, _ := chartRepo(t)
	release := srv.Hold()
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := checkoutOf(ctx, repo.URL(), c1, "", t.TempDir(), opts(t))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Checkout took %v after the cancel", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}

	o := opts(t)
	o.Timeout = 300 * time.Millisecond
	_, err = checkoutOf(context.Background(), repo.URL(), c1, "", t.TempDir(), o)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("err = %v, want a timeout", err)
	}
}

func TestCheckoutConcurrently(t *testing.T) {
	_, repo, c1, c2 := chartRepo(t)
	o := opts(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit := c1
			if i%2 == 1 {
				commit = c2
			}
			_, errs[i] = checkoutOf(context.Background(), repo.URL(), commit, "chart", t.TempDir(), o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("checkout %d: %v", i, err)
		}
	}
}

func TestCheckoutRecoversACorruptClone(t *testing.T) {
	_, repo, c1, c2 := chartRepo(t)
	o := opts(t)
	mustCheckout(t, repo.URL(), c1, "", o)
	clones, _ := filepath.Glob(filepath.Join(o.CacheDir, "*.git"))

	if err := os.WriteFile(filepath.Join(clones[0], "config"), []byte("[[[not git config"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCheckout(t, repo.URL(), c1, "", o)

	packs, _ := filepath.Glob(filepath.Join(clones[0], "objects", "pack", "*.pack"))
	for _, p := range packs {
		if err := os.Truncate(p, 100); err != nil {
			t.Fatal(err)
		}
	}
	got := files(t, mustCheckout(t, repo.URL(), c2, "chart", o))
	if got["templates/deploy.yaml"] != "kind: Deployment\n" {
		t.Errorf("after a truncated pack: %v", got)
	}
}
