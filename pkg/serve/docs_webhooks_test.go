package serve

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/webhook"
)

// docBlock is one fenced example of a document: its language and text.
type docBlock struct{ lang, text string }

var fenceRe = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")

func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	for _, m := range fenceRe.FindAllStringSubmatch(string(raw), -1) {
		out = append(out, docBlock{m[1], m[2]})
	}
	return out
}

// TestDocsWebhooksExamples runs every example of docs/webhooks.md: the serve command names
// flags that exist, the git credentials and the receivers file load, the receivers route the
// pushes the page describes (also with the templates its comments suggest, for a branch name
// too long for a namespace), the generic payload parses, and the generic-hmac shell example,
// run by bash with openssl and curl, is accepted by a real intake.
func TestDocsWebhooksExamples(t *testing.T) {
	blocks := docBlocks(t, "../../docs/webhooks.md")
	var langs []string
	for _, b := range blocks {
		langs = append(langs, b.lang)
	}
	if got := strings.Join(langs, ","); got != ",bash,yaml,yaml,yaml,json,bash" {
		t.Fatalf("docs/webhooks.md has examples %q: a new example needs its check here", got)
	}
	t.Run("serve command", func(t *testing.T) {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.String("nats", "", "")
		o := WebhookOptionsFromEnv()
		o.RegisterFlags(fs)
		in := AdmissionFlagsFromEnv()
		in.Register(fs)
		for _, m := range regexp.MustCompile(`--([a-z-]+)`).FindAllStringSubmatch(blocks[1].text, -1) {
			if fs.Lookup(m[1]) == nil {
				t.Errorf("the serve example's --%s is no flag", m[1])
			}
		}
	})
	t.Run("git credentials", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "git-credentials.yaml")
		if err := os.WriteFile(f, []byte(blocks[2].text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := gitsource.LoadCredentials(f); err != nil {
			t.Error(err)
		}
	})
	t.Run("receivers file", func(t *testing.T) { docsReceivers(t, blocks[3].text) })
	t.Run("rollout routes", func(t *testing.T) { docsRolloutRoutes(t, blocks[4].text) })
	t.Run("generic payload", func(t *testing.T) {
		body := strings.NewReplacer(`"…"`, `"`+strings.Repeat("0", 40)+`"`, `<40 or 64 hex>`, strings.Repeat("a", 40)).Replace(blocks[5].text)
		d, err := githook.Parse(githook.GenericHMAC, githook.Request{Header: http.Header{}, Body: []byte(body)})
		if err != nil || len(d.Pushes) != 1 || d.Pushes[0].Branch != "main" {
			t.Errorf("generic payload: %+v, %v", d, err)
		}
	})
	t.Run("generic-hmac shell", func(t *testing.T) { docsGenericShell(t, blocks[6].text) })
}

// docsReceivers loads the documented receivers file and routes pushes through it.
func docsReceivers(t *testing.T, text string) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shop-github")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		return map[string]string{"SHOP_GITHUB_SECRET_NEXT": "next"}[k], k == "SHOP_GITHUB_SECRET_NEXT"
	}
	load := func(text string) *webhook.Receiver {
		t.Helper()
		f := filepath.Join(dir, "webhooks.yaml")
		if err := os.WriteFile(f, []byte(strings.ReplaceAll(text, "/etc/sealane/webhook/shop-github", secret)), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := webhook.LoadConfig(f, env)
		if err != nil {
			t.Fatal(err)
		}
		rcv, ok := cfg.Receiver("shop-github")
		if !ok {
			t.Fatal("no receiver shop-github")
		}
		return rcv
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	push := func(branch, tag string) webhook.Push {
		p := webhook.Push{Kind: webhook.EventPush, Repository: "acme/shop", RepositoryURL: "https://git.example.com/acme/shop.git",
			Ref: "refs/heads/" + branch, Branch: branch, Commit: sha, Sender: "alice"}
		if tag != "" {
			p.Kind, p.Ref, p.Branch, p.Tag = webhook.EventTagPush, "refs/tags/"+tag, "", tag
		}
		return p
	}
	resolve := func(rcv *webhook.Receiver, p webhook.Push) []webhook.Deploy {
		t.Helper()
		var out []webhook.Deploy
		for _, rt := range rcv.MatchRoutes(p) {
			d, err := rt.Resolve(p)
			if err != nil {
				t.Fatalf("%s: %v", p.Ref, err)
			}
			out = append(out, d)
		}
		return out
	}
	rcv := load(text)
	for _, c := range []struct {
		p    webhook.Push
		want string
	}{
		{push("main", ""), "sandbox/shop/shop image.tag=0123456"},
		{push("release/2.1", ""), "sandbox/shop/shop image.tag=0123456"},
		{push("", "v1.2.0"), "prod/shop/shop"},
	} {
		ds := resolve(rcv, c.p)
		if len(ds) != 1 {
			t.Fatalf("%s: %d deploys, want 1", c.p.Ref, len(ds))
		}
		got := ds[0].Target.Cluster + "/" + ds[0].Target.Namespace + "/" + ds[0].Target.Release
		if len(ds[0].Set) > 0 {
			got += " " + strings.Join(ds[0].Set, " ")
		}
		if got != c.want {
			t.Errorf("%s deploys %q, want %q", c.p.Ref, got, c.want)
		}
	}
	if ds := resolve(rcv, push("dev", "")); len(ds) != 0 {
		t.Errorf("branch dev deploys %d, want none", len(ds))
	}
	// the comment's template, with a branch too long for a namespace, and a hostile branch name
	review := strings.Replace(text, `namespace: shop        # templates allowed: "review-{{ .Branch | slug }}"`,
		`namespace: "review-{{ .Branch | slug }}"`, 1)
	review = strings.Replace(review, `branches: [main, "release/*"]`, `branches: [main, "feature/*"]`, 1)
	if review == text {
		t.Fatal("the receivers example no longer has the namespace template comment")
	}
	long := "feature/" + strings.Repeat("a-very-long-branch-name-", 4) + "x,securityContext.privileged=true"
	ds := resolve(load(review), push(long, ""))
	if len(ds) != 1 || len(ds[0].Target.Namespace) > 63 || !strings.HasPrefix(ds[0].Target.Namespace, "review-feature-a-very-long") {
		t.Fatalf("review namespace of a long branch: %+v, want review-… within 63 characters", ds)
	}
}

// docsGenericShell runs the generic-hmac example with bash against a real intake.
func docsGenericShell(t *testing.T, script string) {
	for _, tool := range []string{"bash", "openssl", "curl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed: the docs example of the generic-hmac receiver needs it (install it; CI has it)", tool)
		}
	}
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err := Open(ctx, Options{NATSURL: srv.ClientURL(), Provision: true, Name: "docs-webhook", Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("ci-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(cfg, []byte(`receivers:
  - id: ci
    type: generic-hmac
    secrets: [{file: `+filepath.Join(dir, "secret")+`}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: shop}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	o := WebhookOptionsFromEnv()
	o.Config, o.Addr = cfg, "127.0.0.1:0"
	o.Listening = func(a string) { addr <- "http://" + a }
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- RunWebhook(runCtx, node, o, zap.NewNop()) }()
	base := <-addr
	defer func() { stop(); <-done }()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	script = strings.ReplaceAll(script, "https://sealane.example.com", base)
	cmd := exec.CommandContext(ctx, "bash", "-euc", script)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CI_JOB_ID=job-1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"status":"accepted"`) {
		t.Errorf("the generic-hmac example: %v\n%s", err, out)
	}
}

// docsRolloutRoutes loads the documented rollout routes: a main push rolls out in the inline
// waves with {{ .Cluster }} kept; a tag push names the rollout file at its commit.
func docsRolloutRoutes(t *testing.T, text string) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shop-fleet")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(f, []byte(strings.ReplaceAll(text, "/etc/sealane/webhook/shop-fleet", secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := webhook.LoadConfig(f, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	rcv, ok := cfg.Receiver("shop-fleet")
	if !ok {
		t.Fatal("no receiver shop-fleet")
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	p := webhook.Push{Kind: webhook.EventPush, Repository: "acme/shop", RepositoryURL: "https://git.example.com/acme/shop.git",
		Ref: "refs/heads/main", Branch: "main", Commit: sha, Sender: "alice"}
	main, err := rcv.MatchRoutes(p)[0].Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	s := main.Rollout.Spec
	if s.Namespace != "shop-{{ .Cluster }}" || len(s.Waves) != 2 || s.Waves[1].MaxParallel.String() != "25%" || main.Rollout.File != nil || main.Set[0] != "image.tag=0123456" {
		t.Errorf("main push: %+v, spec %+v", main, s)
	}
	p.Kind, p.Ref, p.Branch, p.Tag = webhook.EventTagPush, "refs/tags/v1.0.0", "", "v1.0.0"
	tag, err := rcv.MatchRoutes(p)[0].Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	if f := tag.Rollout.File; f == nil || f.Path != "deploy/rollout.yaml" || f.Commit != sha {
		t.Errorf("tag push: rollout file %+v, want deploy/rollout.yaml at %s", f, sha)
	}
}
