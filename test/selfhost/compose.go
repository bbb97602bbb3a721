package selfhost

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sealane/sealane/test/podrun"
)

// LoadCompose reads repoRoot's docker-compose.yaml with the compose library, interpolating env
// as `docker compose` would from the shell.
func LoadCompose(ctx context.Context, repoRoot string, env map[string]string) (*types.Project, error) {
	file := filepath.Join(repoRoot, "docker-compose.yaml")
	p, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  repoRoot,
		ConfigFiles: []types.ConfigFile{{Filename: file}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("sealane", true) })
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", file, err)
	}
	return p, nil
}

// ComposeProc returns service s of a compose project as a local process: its entrypoint or
// command (command[0] — or, without one, the image — mapped to a local binary by binaries),
// its environment, and its bind mounts and volumes as local paths (named volumes become
// directories under root). rewrite is applied to every argument and variable after that, for
// what the host network would differ in (ports).
func ComposeProc(t *testing.T, s types.ServiceConfig, binaries map[string]string, root string, rewrite func(string) string) podrun.Proc {
	t.Helper()
	argv := append(append([]string{}, s.Entrypoint...), s.Command...)
	key := s.Image
	if len(s.Entrypoint) > 0 || s.Image == "" || s.Build != nil {
		key, argv = argv[0], argv[1:]
	}
	bin, ok := binaries[key]
	if !ok {
		t.Fatalf("compose service %s: no local binary for %q", s.Name, key)
	}
	paths := map[string]string{}
	for _, v := range s.Volumes {
		switch v.Type {
		case types.VolumeTypeBind:
			paths[v.Target] = v.Source
		default:
			paths[v.Target] = filepath.Join(root, "volumes", v.Source)
		}
	}
	mapPath := func(a string) string {
		for target, local := range paths {
			if a == target || strings.HasPrefix(a, target+"/") {
				return local + strings.TrimPrefix(a, target)
			}
		}
		return a
	}
	p := podrun.Proc{Name: s.Name, Path: bin, Root: root}
	for _, a := range argv {
		p.Args = append(p.Args, rewrite(mapPath(a)))
	}
	for k, v := range s.Environment {
		if v != nil {
			p.Env = append(p.Env, k+"="+rewrite(mapPath(*v)))
		}
	}
	return p
}
