package gitsource

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestReadFile reads one file of a commit (in a directory and at the root); a path the
// commit lacks, file or directory, is ErrFileNotFound, a directory is not a file, and an
// unknown commit is ErrCommitNotFound.
func TestReadFile(t *testing.T) {
	_, repo, c1, c2 := chartRepo(t)
	o := opts(t)
	ctx := context.Background()
	src := Source{URL: repo.URL(), Commit: c1}
	for name, want := range map[string]string{"chart/values.yaml": "replicas: 1\n", "README.md": "repo root\n", "./other/unrelated/file.txt": "not the chart\n"} {
		got, err := ReadFile(ctx, src, name, o)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"chart/templates/deploy.yaml", "nowhere/rollout.yaml", "chart/templates"} {
		if _, err := ReadFile(ctx, src, name, o); !errors.Is(err, ErrFileNotFound) || !strings.Contains(err.Error(), strings.TrimPrefix(name, "./")) {
			t.Errorf("ReadFile(%s) at the first commit: %v, want ErrFileNotFound naming it", name, err)
		}
	}
	if got, err := ReadFile(ctx, Source{URL: repo.URL(), Commit: c2}, "chart/templates/deploy.yaml", o); err != nil || string(got) != "kind: Deployment\n" {
		t.Errorf("second commit: %q, %v", got, err)
	}
	if _, err := ReadFile(ctx, Source{URL: repo.URL(), Commit: strings.Repeat("ab", 20)}, "README.md", o); !errors.Is(err, ErrCommitNotFound) {
		t.Errorf("unknown commit: %v, want ErrCommitNotFound", err)
	}
}
