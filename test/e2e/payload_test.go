package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

// payloadEnv is os.Environ without any payload key setting, plus extra.
func payloadEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, payload.EnvKey+"=") || strings.HasPrefix(kv, "SEALANE_PAYLOAD_KEY_FILE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runEnv is run with the environment env.
func runEnv(t *testing.T, timeout time.Duration, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sealaneBin, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Dir, cmd.Env = repoRoot, env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("sealane %s: %v (ctx %v)\n%s", strings.Join(args, " "), err, ctx.Err(), buf.String())
		}
		code = ee.ExitCode()
	}
	t.Logf("$ sealane %s  (exit %d)\n%s", strings.Join(args, " "), code, buf.String())
	return result{out: buf.String(), code: code}
}

// startEnv starts the sealane binary with the environment env.
func startEnv(t *testing.T, name string, env []string, args ...string) *process {
	t.Helper()
	return startProcess(t, name, sealaneBin, env, args...)
}

// secretForms are the ways the werf project's decrypted password can appear in a render.
func secretForms() [][]byte {
	return [][]byte{[]byte(canaries[0]), []byte(base64.StdEncoding.EncodeToString([]byte(canaries[0]))), []byte(canaries[1])}
}

// storedObjects calls fn with the name and raw bytes of every object of bucket, after checking
// that none holds the decrypted secret in any form; it fails the test when bucket is empty.
func storedObjects(t *testing.T, js jetstream.JetStream, bucket string, fn func(name string, raw []byte)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(ctx)
	if err != nil || len(infos) == 0 {
		t.Fatalf("bucket %s: %d objects, %v", bucket, len(infos), err)
	}
	for _, info := range infos {
		raw, err := obs.GetBytes(ctx, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range secretForms() {
			if bytes.Contains(raw, form) {
				t.Errorf("stored object %s/%s contains the secret in clear", bucket, info.Name)
			}
		}
		fn(info.Name, raw)
	}
}

// checkStoredRenders reads every object of the blob bucket raw: none may contain the decrypted
// secret in any form, each must be sealed with key and a render, opened, contain it (so the
// check is not vacuous). It returns how many renders it checked.
func checkStoredRenders(t *testing.T, js jetstream.JetStream, key *payload.Key) int {
	t.Helper()
	renders := 0
	storedObjects(t, js, bus.DefaultBlobBucket, func(name string, raw []byte) {
		if id, ok := payload.KeyIDOf(raw); !ok || id != key.ID() {
			t.Errorf("stored object %s: key id %q (sealed %v), want %s", name, id, ok, key.ID())
		}
		if !strings.HasPrefix(name, "renders/") {
			return
		}
		renders++
		plain, err := key.Open(bus.BlobRef(bus.DefaultBlobBucket, name), raw)
		if err != nil {
			t.Fatalf("open %s with the pipeline's key: %v", name, err)
		}
		found := false
		for _, form := range secretForms() {
			found = found || bytes.Contains(plain, form)
		}
		if !found {
			t.Errorf("render %s does not hold the decrypted secret at all: the check proves nothing", name)
		}
	})
	return renders
}

// werfDeployArgs deploys the werf project of render_test.go into ns as release rel.
func werfDeployArgs(t *testing.T, rel, ns string, extra ...string) []string {
	dir, extraSecrets := werfProject(t, werfKey)
	args := []string{"deploy", dir, "--release", rel, "--namespace", ns, "--env", "staging", "--project", "shop",
		"--secret-values", extraSecrets, "--image", "web=registry.example.com/shop/web:1.4.2", "--git-commit", "0f3a9c1", "--timeout", "2m"}
	return append(args, extra...)
}

// TestPayloadEmbeddedGeneratedKey deploys with the embedded pipeline and no payload key
// configured: the CLI creates <data-dir>/payload.key (0600) and every stored blob, including the
// render bundle with the decrypted werf secrets, is sealed with it. A second deploy reuses it.
func TestPayloadEmbeddedGeneratedKey(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	env := payloadEnv()
	args := append(werfDeployArgs(t, "sealed", ns, "--secret-key", werfKey), "--data-dir", data)
	r := runEnv(t, 5*time.Minute, env, args...)
	if r.code != 0 {
		t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
	}
	keyFile := filepath.Join(data, payload.KeyFileName)
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("no generated payload key: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", keyFile, fi.Mode().Perm())
	}
	key, err := payload.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keyText, _ := os.ReadFile(keyFile)
	if strings.Contains(r.out, strings.TrimSpace(string(keyText))) {
		t.Error("the deploy output shows the payload key")
	}
	// A second deploy (an upgrade) on the same data dir reads the same key.
	r = runEnv(t, 5*time.Minute, env, append(args, "--set", "replicas=2")...)
	if r.code != 0 {
		t.Fatalf("second deploy exit %d:\n%s", r.code, r.out)
	}
	if again, err := payload.ReadKeyFile(keyFile); err != nil || again.ID() != key.ID() {
		t.Fatalf("the key file changed between deploys: %v, %v", again, err)
	}
	if hist := helmHistory(t, ns, "sealed"); len(hist) != 2 {
		t.Errorf("helm history = %+v, want 2 revisions", hist)
	}

	// Read the stored objects raw from the data dir's JetStream store.
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(data, "jetstream"), Port: 0, ServerName: "payload-check"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, srv, "payload-check")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if n := checkStoredRenders(t, js, key); n != 2 {
		t.Errorf("checked %d stored renders, want 2", n)
	}
}

// TestPayloadSeparateProcesses runs the stages as two `sealane serve` processes against one
// nats-server with the same $SEALANE_PAYLOAD_KEY. A CLI without the key deploys: it seals its
// uploads to the public key the stages published, cannot open them, and prints the notes the
// renderer returned sealed with its request's own key; nothing in the object stores is clear
// text. A renderer with another key fails the deploy with an error naming both keys.
func TestPayloadSeparateProcesses(t *testing.T) {
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := payload.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	withKey := payloadEnv(payload.EnvKey+"="+hexKey, "SEALANE_SECRET_KEY="+werfKey)

	t.Run("same key", func(t *testing.T) {
		url := startNATS(t)
		startEnv(t, "serve renderer applier", withKey, "serve", "renderer", "applier", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
		startEnv(t, "serve tracker recorder", withKey, "serve", "tracker", "recorder", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
		ns := namespace(t)

		// No key on the CLI: its uploads are sealed to the stages' public key, its notes come
		// back sealed with its request's key.
		args := werfDeployArgs(t, "shared", ns, "--nats", url)
		notes := filepath.Join(args[1], ".helm", "templates", "NOTES.txt")
		if err := os.WriteFile(notes, []byte("shop {{ .Release.Name }} is deployed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runEnv(t, 5*time.Minute, payloadEnv(), args...)
		if r.code != 0 {
			t.Fatalf("deploy without a payload key against %s: exit %d\n%s", url, r.code, r.out)
		}
		if !strings.Contains(r.out, "NOTES:\nshop shared is deployed") {
			t.Errorf("the keyless client printed no notes:\n%s", r.out)
		}
		checkStoredInputs(t, connectJS(t, url), key)

		r = runEnv(t, 5*time.Minute, withKey, args...)
		if r.code != 0 {
			t.Fatalf("deploy with the shared key exit %d:\n%s", r.code, r.out)
		}
		if rels := helmList(t, ns); len(rels) != 1 || rels[0].Status != "deployed" {
			t.Fatalf("helm list = %+v, want one deployed release", rels)
		}
		if n := checkStoredRenders(t, connectJS(t, url), key); n != 1 {
			t.Errorf("checked %d stored renders, want 1", n)
		}
	})

	t.Run("renderer with another key", func(t *testing.T) {
		otherHex, err := payload.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		other, err := payload.ParseKey(otherHex)
		if err != nil {
			t.Fatal(err)
		}
		url := startNATS(t)
		startEnv(t, "serve renderer (other key)", payloadEnv(payload.EnvKey+"="+otherHex, "SEALANE_SECRET_KEY="+werfKey),
			"serve", "renderer", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
		startEnv(t, "serve applier tracker recorder", withKey, "serve", "applier", "tracker", "recorder", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info")
		ns := namespace(t)
		r := runEnv(t, 3*time.Minute, withKey, werfDeployArgs(t, "mixed", ns, "--nats", url)...)
		if r.code == 0 {
			t.Fatalf("deploy with a renderer on another key succeeded:\n%s", r.out)
		}
		want := fmt.Sprintf("was sealed to public key %s, the public key of this process's key %s is %s", key.PublicKey().ID(), other.ID(), other.PublicKey().ID())
		if !strings.Contains(r.out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, r.out)
		}
		if strings.Contains(r.out, hexKey) || strings.Contains(r.out, otherHex) {
			t.Error("the output shows a payload key")
		}
		if rels := helmList(t, ns); len(rels) != 0 {
			t.Errorf("helm list = %+v, want no release", rels)
		}
	})
}

// checkStoredInputs reads every object of the shared input bucket raw: each upload is sealed
// to key's public key (format version 2), and nothing holds the secret in clear.
func checkStoredInputs(t *testing.T, js jetstream.JetStream, key *payload.Key) {
	t.Helper()
	storedObjects(t, js, bus.DefaultInputBucket, func(name string, raw []byte) {
		if strings.HasPrefix(name, "replies/") {
			return // sealed with the request's own key
		}
		if id, ok := payload.KeyIDOf(raw); !ok || id != key.PublicKey().ID() {
			t.Errorf("stored upload %s: key id %q (sealed %v), want the public key's %s", name, id, ok, key.PublicKey().ID())
		}
	})
}

// startNATS starts a standalone nats-server with JetStream and returns its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	port := harness.FreePort(t)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// connectJS connects to url for raw JetStream reads.
func connectJS(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// sharePayloadKey sets a fresh $SEALANE_PAYLOAD_KEY for the test, so that the stage processes
// and the CLI it starts share it.
func sharePayloadKey(t *testing.T) {
	t.Helper()
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, hexKey)
}
