package gitsource

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"go.uber.org/goleak"
)

// The ssh tests use the ssh://git@127.0.0.1:PORT/ form only: the scp-like form
// git@127.0.0.1:shop.git cannot carry a port, and the test server cannot listen on 22.

// sshRepo is a repository with the two chart commits served over ssh, and a credentials
// entry for the server with an authorized key and a known_hosts file listing its host key.
type sshRepo struct {
	srv         *gittest.SSHServer
	repo        *gittest.Repo
	c1, c2      string
	key, hosts  string
	credsPrefix string
}

func newSSHRepo(t *testing.T) sshRepo {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // registered first: runs last
	srv := gittest.NewServer(t)
	r := sshRepo{repo: srv.Init(t, "shop")}
	r.c1 = r.repo.Commit(t, chart1, "chart 0.1.0")
	r.c2 = r.repo.Commit(t, chart2, "chart 0.2.0")
	r.srv = srv.SSH(t)
	r.key, r.hosts = r.srv.ClientKeyFile(t), r.srv.KnownHostsFile(t)
	r.credsPrefix = "ssh://git@" + r.srv.Addr() + "/"
	return r
}

// options are Options with a fresh cache and a credentials file of one ssh entry.
func (r sshRepo) options(t *testing.T, key, hosts string) Options {
	t.Helper()
	dir := t.TempDir()
	creds, err := LoadCredentials(writeFile(t, dir, "creds.yaml",
		"- url: "+r.credsPrefix+"\n  sshKeyFile: "+key+"\n  knownHostsFile: "+hosts+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := opts(t)
	o.Credentials = creds
	return o
}

func TestCheckoutOverSSH(t *testing.T) {
	r := newSSHRepo(t)
	o := r.options(t, r.key, r.hosts)
	url := r.repo.SSHURL()

	got := files(t, mustCheckout(t, url, r.c1, "chart", o))
	if diff := cmp.Diff(underPrefix(chart1, "chart"), got); diff != "" {
		t.Errorf("commit 1 over ssh (-want +got):\n%s", diff)
	}
	if r.srv.SSHRequests() == 0 {
		t.Fatal("the checkout made no ssh connection")
	}
	n := r.srv.SSHRequests()
	got = files(t, mustCheckout(t, url, r.c1, "chart", o))
	if diff := cmp.Diff(underPrefix(chart1, "chart"), got); diff != "" {
		t.Errorf("commit 1 from the cache (-want +got):\n%s", diff)
	}
	if d := r.srv.SSHRequests() - n; d != 0 {
		t.Errorf("a cached commit made %d ssh connections, want none", d)
	}
	got = files(t, mustCheckout(t, url, r.c2, "chart", o))
	if diff := cmp.Diff(underPrefix(merge(chart1, chart2), "chart"), got); diff != "" {
		t.Errorf("commit 2 over ssh (-want +got):\n%s", diff)
	}
}

func TestCheckoutOverSSHWithAWrongKey(t *testing.T) {
	r := newSSHRepo(t)
	wrong, _ := gittest.NewKeyFile(t)
	_, err := checkoutOf(context.Background(), r.repo.SSHURL(), r.c1, "", t.TempDir(), r.options(t, wrong, r.hosts))
	if err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("err = %v, want an authentication failure", err)
	}
	if r.srv.SSHRequests() == 0 || r.srv.UploadPacks() != 0 {
		t.Errorf("%d connections, %d upload-packs: want the server contacted and nothing served", r.srv.SSHRequests(), r.srv.UploadPacks())
	}
	t.Logf("wrong key: %v", err)
	assertNoKeyMaterial(t, err, wrong)
}

func TestCheckoutOverSSHRefusesAnotherHostKey(t *testing.T) {
	r := newSSHRepo(t)
	_, other := gittest.NewKeyFile(t)
	hosts := gittest.WriteKnownHosts(t, r.srv.Addr(), other)
	_, err := checkoutOf(context.Background(), r.repo.SSHURL(), r.c1, "", t.TempDir(), r.options(t, r.key, hosts))
	if err == nil || !strings.Contains(err.Error(), "host key") {
		t.Fatalf("err = %v, want a host key error", err)
	}
	if r.srv.SSHRequests() == 0 || r.srv.UploadPacks() != 0 {
		t.Errorf("%d connections, %d upload-packs: want the server contacted and nothing served", r.srv.SSHRequests(), r.srv.UploadPacks())
	}
	t.Logf("other host key: %v", err)
	assertNoKeyMaterial(t, err, r.key)

	// A known_hosts without the server at all is refused too.
	unknown := gittest.WriteKnownHosts(t, "127.0.0.1:1", r.srv.HostKey())
	_, err = checkoutOf(context.Background(), r.repo.SSHURL(), r.c1, "", t.TempDir(), r.options(t, r.key, unknown))
	if err == nil || !strings.Contains(err.Error(), "host key") {
		t.Fatalf("unknown host: err = %v, want a host key error", err)
	}
	if r.srv.UploadPacks() != 0 {
		t.Errorf("%d upload-packs for an unknown host, want none", r.srv.UploadPacks())
	}
	t.Logf("unknown host: %v", err)
}

// assertNoKeyMaterial fails when the error shows any line of the private key file.
func assertNoKeyMaterial(t *testing.T, err error, keyFile string) {
	t.Helper()
	data := string(mustRead(t, keyFile))
	for _, line := range strings.Split(data, "\n") {
		if len(line) > 8 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
			t.Errorf("the error shows the private key: %v", err)
		}
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("the error shows the private key: %v", err)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCheckoutOverSSHEndsAtTheTimeout: a server that accepts the connection and never
// answers holds a Checkout no longer than its Timeout (go-git's ssh handshake takes no context;
// the connection carries the deadline).
func TestCheckoutOverSSHEndsAtTheTimeout(t *testing.T) {
	r := newSSHRepo(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept() // and never a word
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	r.credsPrefix = "ssh://git@" + ln.Addr().String() + "/"
	o := r.options(t, r.key, r.hosts)
	o.Timeout = 500 * time.Millisecond
	start := time.Now()
	_, err = checkoutOf(context.Background(), r.credsPrefix+"shop.git", r.c1, "", t.TempDir(), o)
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Fatalf("Checkout against a silent server: %v after %s, want an error within the 500ms timeout", err, took)
	}
}
