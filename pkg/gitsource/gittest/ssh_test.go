package gittest

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// dialSSH connects to the server with the key of keyFile, checking its host key against
// its known_hosts file.
func dialSSH(t *testing.T, s *SSHServer, keyFile string) (*ssh.Client, error) {
	t.Helper()
	pem, err := os.ReadFile(keyFile)
	must(t, err)
	signer, err := ssh.ParsePrivateKey(pem)
	must(t, err)
	hosts, err := knownhosts.New(s.KnownHostsFile(t))
	must(t, err)
	return ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User: "git", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hosts, HostKeyAlgorithms: []string{ssh.KeyAlgoED25519},
	})
}

// run runs command in a new session and returns its exit status and output.
func run(t *testing.T, c *ssh.Client, command string) (int, string) {
	t.Helper()
	sess, err := c.NewSession()
	must(t, err)
	defer sess.Close()
	var out, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &stderr
	sess.Stdin = strings.NewReader("0000")
	err = sess.Run(command)
	if ee, ok := err.(*ssh.ExitError); ok {
		return ee.ExitStatus(), out.String() + stderr.String()
	}
	must(t, err)
	return 0, out.String() + stderr.String()
}

func TestSSHServer(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // registered first: runs last
	srv := NewServer(t)
	repo := srv.Init(t, "acme/shop")
	repo.Commit(t, map[string]string{"a": "1"}, "one")
	s := srv.SSH(t)
	if s2 := srv.SSH(t); s2 != s {
		t.Error("a second SSH call started another server")
	}
	if want := "ssh://git@" + s.Addr() + "/acme/shop.git"; repo.SSHURL() != want {
		t.Errorf("SSHURL = %s, want %s", repo.SSHURL(), want)
	}

	stranger, _ := NewKeyFile(t)
	if _, err := dialSSH(t, s, stranger); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("unauthorized key: err = %v", err)
	}
	c, err := dialSSH(t, s, s.ClientKeyFile(t))
	must(t, err)
	defer c.Close()

	for _, p := range []string{"'/acme/shop.git'", "'acme/shop.git'"} {
		status, out := run(t, c, "git-upload-pack "+p)
		if status != 0 || !strings.Contains(out, "refs/heads/main") {
			t.Errorf("git-upload-pack %s: status %d, output %q", p, status, out)
		}
	}
	refused := []string{
		"git-receive-pack '/acme/shop.git'", "sh -c id", "git-upload-pack '/../acme/shop.git'",
		"git-upload-pack '../" + repo.name + "'", "git-upload-pack '/etc'", "git-upload-pack /acme/shop.git",
		"git-upload-pack '/acme/missing.git'",
	}
	for _, cmd := range refused {
		if status, out := run(t, c, cmd); status != 1 || strings.Contains(out, "refs/heads") {
			t.Errorf("%s: status %d, output %q; want refused with status 1", cmd, status, out)
		}
	}
	if got := s.UploadPacks(); got != 2 {
		t.Errorf("UploadPacks = %d, want 2", got)
	}
	if got := s.SSHRequests(); got != 2 {
		t.Errorf("SSHRequests = %d, want 2 connections", got)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`'a b'`: "a b", `'it'\''s'`: "it's", `'wow'\!''`: "wow!"} {
		if got, err := unquote(in); err != nil || got != want {
			t.Errorf("unquote(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`a`, `'a'b'`, `'`} {
		if _, err := unquote(in); err == nil {
			t.Errorf("unquote(%s): no error", in)
		}
	}
}
