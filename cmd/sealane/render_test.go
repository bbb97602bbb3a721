package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runCLI runs `sealane ARGS...` in process and returns stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

const corpus = "../../pkg/chart/testdata/corpus"

// corpusArgs turns a corpus case's helm template arguments into sealane render arguments:
// the release name becomes --release, everything else is spelt the same.
func corpusArgs(t *testing.T, dir string) (args []string, expectError bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "sealane-test.args"))
	if err != nil {
		t.Fatal(err)
	}
	release := true
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "#!expect-error"):
			expectError = true
		case line == "" || strings.HasPrefix(line, "#"):
		case release:
			args = append(args, "--release="+line)
			release = false
		default:
			args = append(args, line)
		}
	}
	return args, expectError
}

// stricterThanHelm are corpus charts helm template prints although a deploy of them cannot
// work; sealane render refuses them as a deploy would, naming the template and the value.
var stricterThanHelm = map[string][]string{
	"hooks":        {"hooks/templates/config-hooks.yaml:38", `"pre-instal"`, "hooks/templates/backup.yaml:8", "helm.sh/hook-weight"},
	"values-merge": {"telemetry/templates/configmap.yaml:10", "example.com/on-call", "boolean"},
}

// TestRenderCorpusLikeHelm runs `sealane render` on every corpus chart: the output must be
// byte for byte what `helm template` printed into the golden file, except in lines that print
// .Values.global, where sealane's service values (global.env, global.werf.*...) show.
func TestRenderCorpusLikeHelm(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(corpus, "*", "sealane-test.args"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("corpus has %d cases", len(cases))
	}
	for _, c := range cases {
		dir, _ := filepath.Abs(filepath.Dir(c))
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			args, expectError := corpusArgs(t, dir)
			golden, err := os.ReadFile(dir + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", t.TempDir())
			t.Chdir(dir)
			out, err := runCLI(t, append([]string{"render", "."}, args...)...)
			if expectError {
				if err == nil {
					t.Fatal("render succeeded; helm failed")
				}
				return
			}
			if want, ok := stricterThanHelm[name]; ok {
				if err == nil {
					t.Fatal("render succeeded; want a validation error")
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not mention %s:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := serviceValueDiff(out, string(golden), derivedFromGlobals[name]...); d != "" {
				t.Errorf("sealane render differs from helm template (%d vs %d bytes)\n%s", len(out), len(golden), d)
			}
		})
	}
}

// derivedFromGlobals are lines of corpus charts computed from a template that prints
// .Values.global (a checksum over it), so they change with the service values too.
var derivedFromGlobals = map[string][]string{
	"imports": {"checksum/imports:"},
}

// serviceValueDiff compares sealane's output with helm's line by line and describes the
// first difference that is not explained by service values ("global" or "werf" in sealane's
// line, or one of the derived markers); "" when there is none.
func serviceValueDiff(ours, helms string, derived ...string) string {
	al, bl := strings.Split(ours, "\n"), strings.Split(helms, "\n")
	if len(al) != len(bl) {
		return "line counts differ: " + strconv.Itoa(len(al)) + " vs " + strconv.Itoa(len(bl))
	}
	for i := range al {
		if al[i] == bl[i] || strings.Contains(al[i], "global") || strings.Contains(al[i], "werf") {
			continue
		}
		explained := false
		for _, d := range derived {
			explained = explained || strings.Contains(al[i], d)
		}
		if !explained {
			return "line " + strconv.Itoa(i+1) + ":\n  sealane: " + al[i] + "\n  helm:    " + bl[i]
		}
	}
	return ""
}
