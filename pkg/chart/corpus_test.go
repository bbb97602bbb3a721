package chart

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The corpus: testdata/corpus/<case>/ is a chart -- or a werf-style project directory
// with the chart in .helm/ -- whose sealane-test.args holds the `helm template`
// arguments of the case; testdata/corpus/<case>.golden is what the real helm CLI
// printed for them (stdout, or stderr for a '#!expect-error' case).
// hack/regen-chart-golden.sh regenerates the golden files; testdata/corpus/README.md
// lists the cases and what each one covers.
const (
	corpusDir      = "testdata/corpus"
	corpusArgsFile = "sealane-test.args"
	minCorpusCases = 15
)

// corpusCase is one sealane-test.args, parsed.
type corpusCase struct {
	name  string
	dir   string   // the case directory: the chart, or a project with the chart in .helm/
	chart string   // the chart argument of helm, relative to dir: "." or ".helm"
	args  []string // helm template arguments, without the chart

	release     Release
	opts        Options
	print       PrintOptions
	in          Inputs
	expectError bool
	// errorContains are the parts of helm's error message that Render's error must
	// contain too (file names, lines, the failed check); each must be in the golden.
	errorContains []string
}

// loadCorpus reads every case of the corpus.
func loadCorpus(t *testing.T) []*corpusCase {
	t.Helper()
	specs, err := filepath.Glob(filepath.Join(corpusDir, "*", corpusArgsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < minCorpusCases {
		t.Fatalf("corpus has %d cases, want at least %d", len(specs), minCorpusCases)
	}
	var cases []*corpusCase
	for _, spec := range specs {
		dir := filepath.Dir(spec)
		c, err := parseCorpusCase(filepath.Base(dir), dir)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// parseCorpusCase parses dir/sealane-test.args: one helm argument per line, verbatim;
// blank lines and '#' lines are skipped, except the directives '#!expect-error' and
// '#!error-contains <text>'. Flags must be written as --flag=value. Files named by
// --values and --set-file are read relative to dir, where helm runs. The chart is dir
// itself when it holds a Chart.yaml, else dir/.helm (a werf project): helm gets "." or
// ".helm", Pack gets dir and must find the chart the same way.
func parseCorpusCase(name, dir string) (*corpusCase, error) {
	data, err := os.ReadFile(filepath.Join(dir, corpusArgsFile))
	if err != nil {
		return nil, err
	}
	c := &corpusCase{name: name, dir: dir, chart: ".", release: Release{Revision: 1}}
	if !fileExists(filepath.Join(dir, "Chart.yaml")) {
		c.chart = WerfChartDir
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case line == "#!expect-error":
			c.expectError = true
			continue
		case strings.HasPrefix(line, "#!error-contains "):
			c.errorContains = append(c.errorContains, strings.TrimPrefix(line, "#!error-contains "))
			continue
		case strings.HasPrefix(line, "#!"):
			return nil, fmt.Errorf("unknown directive %q", line)
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		c.args = append(c.args, line)
		if !strings.HasPrefix(line, "-") {
			if c.release.Name != "" {
				return nil, fmt.Errorf("second positional argument %q: the release name is %q and the chart is implied (%q)", line, c.release.Name, c.chart)
			}
			c.release.Name = line
			continue
		}
		if err := c.applyFlag(line); err != nil {
			return nil, err
		}
	}
	if c.release.Name == "" {
		return nil, errors.New("no release name")
	}
	if c.release.Namespace == "" {
		return nil, errors.New("no --namespace (helm would take it from the kubeconfig)")
	}
	if c.opts.KubeVersion == "" {
		// A helm built without Helm's release ldflags reports Kubernetes v1.20.0, an
		// official build v1.34.0 (DefaultKubeVersion): pin it so both agree.
		return nil, errors.New("no --kube-version")
	}
	if !c.expectError && len(c.errorContains) > 0 {
		return nil, errors.New("#!error-contains without #!expect-error")
	}
	return c, nil
}

// applyFlag maps one `helm template` flag onto Render's inputs.
func (c *corpusCase) applyFlag(arg string) error {
	flag, value, hasValue := strings.Cut(arg, "=")
	readFile := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(c.dir, name)) }
	switch flag {
	case "--is-upgrade":
		c.release.IsUpgrade = true
	case "--include-crds":
		c.print.IncludeCRDs = true
	case "--skip-tests":
		c.print.SkipTests = true
	default:
		if !hasValue {
			return fmt.Errorf("%q: unknown flag or not written as --flag=value", arg)
		}
		switch flag {
		case "--namespace":
			c.release.Namespace = value
		case "--kube-version":
			c.opts.KubeVersion = value
		case "--api-versions":
			// A string slice flag: comma-separated values are several API versions.
			c.opts.APIVersions = append(c.opts.APIVersions, strings.Split(value, ",")...)
		case "--values":
			content, err := readFile(value)
			if err != nil {
				return err
			}
			c.in.ValuesFiles = append(c.in.ValuesFiles, ValuesFile{Name: value, Content: content})
		case "--set":
			c.in.Set = append(c.in.Set, value)
		case "--set-string":
			c.in.SetString = append(c.in.SetString, value)
		case "--set-json":
			c.in.SetJSON = append(c.in.SetJSON, value)
		case "--set-literal":
			c.in.SetLiteral = append(c.in.SetLiteral, value)
		case "--set-file":
			key, file, ok := strings.Cut(value, "=")
			if !ok {
				return fmt.Errorf("%q: want --set-file=KEY=PATH", arg)
			}
			content, err := readFile(file)
			if err != nil {
				return err
			}
			c.in.SetFile = append(c.in.SetFile, FileValue{Key: key, Name: file, Content: content})
		default:
			return fmt.Errorf("%q: flag not supported by the corpus test", arg)
		}
	}
	return nil
}

func (c *corpusCase) goldenPath() string { return filepath.Join(corpusDir, c.name+".golden") }

// helmCommand is the command line that made the golden file, for messages.
func (c *corpusCase) helmCommand() string {
	return fmt.Sprintf("(cd %s && helm template %s %s)", filepath.ToSlash(c.dir), shellQuote(c.args), c.chart)
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"'`$\\{}[]*?&|;<>()!#,") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// render runs a deploy's path: Pack the chart directory, Load the archive, merge the
// user values, Render, and print like `helm template`.
func (c *corpusCase) render() (string, error) {
	archive, _, _, err := Pack(c.dir)
	if err != nil {
		return "", err
	}
	ch, err := Load(archive)
	if err != nil {
		return "", err
	}
	vals, err := UserValues(c.in)
	if err != nil {
		return "", err
	}
	r, err := Render(ch, vals, c.release, c.opts)
	if err != nil {
		return "", err
	}
	return r.TemplateOutput(c.print), nil
}

// TestCorpus renders every corpus chart through the package and compares the result
// byte for byte with the output of the real `helm template` checked in as the golden.
func TestCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			want := string(readFile(t, c.goldenPath()))
			got, err := c.render()
			if c.expectError {
				if err == nil {
					t.Fatalf("rendered without error; helm failed with:\n%s", want)
				}
				if len(c.errorContains) == 0 {
					t.Fatal("an #!expect-error case needs #!error-contains lines")
				}
				for _, part := range c.errorContains {
					if !strings.Contains(want, part) {
						t.Errorf("#!error-contains %q is not in helm's error (golden %s):\n%s", part, c.goldenPath(), want)
					}
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error lacks %q (from helm's error)\n got: %v\nhelm: %s", part, err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v\nhelm printed (%s):\n%s", err, c.helmCommand(), want)
			}
			if got != want {
				t.Errorf("output differs from %s, made by\n  %s\n%s", c.goldenPath(), c.helmCommand(), unifiedDiff(want, got, "helm", "sealane"))
			}
		})
	}
}

// TestCorpusGoldensCurrent runs the real helm CLI on every case and checks that the
// checked-in golden files are what it prints. helm is $HELM_BIN, else
// ~/.cache/sealane/bin/helm, else helm on PATH (as in test/e2e); without helm the test
// fails, except in -short mode, where it is skipped.
func TestCorpusGoldensCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the helm CLI; skipped in -short mode")
	}
	bin, err := findHelmCLI()
	if err != nil {
		t.Fatal(err)
	}
	env := helmEnv(t)
	for _, c := range loadCorpus(t) {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(append([]string{"template"}, c.args...), c.chart)...)
			cmd.Dir = c.dir
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			var exitErr *exec.ExitError
			if runErr != nil && !errors.As(runErr, &exitErr) {
				t.Fatalf("%s: %v", bin, runErr)
			}
			got := stdout.String()
			switch {
			case c.expectError && runErr == nil:
				t.Fatalf("helm succeeded, but the case expects an error")
			case c.expectError:
				got = stderr.String()
			case runErr != nil:
				t.Fatalf("helm: %v\n%s", runErr, stderr.String())
			}
			want := string(readFile(t, c.goldenPath()))
			if c.expectError {
				// helm lists several schema violations in no fixed order.
				got, want = sortedLines(got), sortedLines(want)
			}
			if got != want {
				t.Errorf("%s is out of date: run hack/regen-chart-golden.sh %s\n%s", c.goldenPath(), c.name, unifiedDiff(want, got, "golden", "helm"))
			}
		})
	}
}

// findHelmCLI finds the reference helm CLI: $HELM_BIN, ~/.cache/sealane/bin/helm, PATH.
func findHelmCLI() (string, error) {
	if bin := os.Getenv("HELM_BIN"); bin != "" {
		return bin, nil
	}
	home, _ := os.UserHomeDir()
	if p := filepath.Join(home, ".cache", "sealane", "bin", "helm"); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p, nil
	}
	return "", errors.New("no helm binary: run `make sandbox-build` (builds helm v3.19.2 into ~/.cache/sealane/bin), set HELM_BIN, or use -short")
}

// helmEnv is the environment hack/regen-chart-golden.sh gives helm: the caller's
// without HELM_* and KUBECONFIG, and empty helm config, cache and data dirs.
func helmEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HELM_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	tmp := t.TempDir()
	return append(env,
		"HELM_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"HELM_DATA_HOME="+filepath.Join(tmp, "data"),
		"KUBECONFIG="+filepath.Join(tmp, "kubeconfig"),
	)
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// unifiedDiff is a unified diff (3 lines of context) of the lines of a and b. Lines
// with a carriage return or trailing blanks are quoted, so that whitespace-only
// differences show.
func unifiedDiff(a, b, nameA, nameB string) string {
	x, y := diffLines(a), diffLines(b)
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		line string
		i, j int // line numbers (0-based) in x and y before this op
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', x[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', y[j], i, j})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk runs from context lines before a change to context lines after the
		// last change that follows the previous one within 2*context equal lines.
		start, last := max(0, k-context), k
		for n := k + 1; n < len(ops) && n-last <= 2*context; n++ {
			if ops[n].kind != ' ' {
				last = n
			}
		}
		end := min(len(ops), last+1+context)
		var countA, countB int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				countA++
			}
			if o.kind != '-' {
				countB++
			}
		}
		// An empty range starts at the line before it, as in diff -u.
		fromA, fromB := ops[start].i+1, ops[start].j+1
		if countA == 0 {
			fromA--
		}
		if countB == 0 {
			fromB--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", fromA, countA, fromB, countB)
		for _, o := range ops[start:end] {
			line := strings.TrimSuffix(o.line, "\n")
			if strings.ContainsRune(line, '\r') || strings.TrimRight(line, " \t") != line {
				line = strconv.Quote(line)
			}
			out.WriteByte(o.kind)
			out.WriteString(line)
			out.WriteByte('\n')
			if !strings.HasSuffix(o.line, "\n") {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}

// diffLines splits s into lines that keep their "\n"; a last line without one
// stays without.
func diffLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
