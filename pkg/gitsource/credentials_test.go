package gitsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadCredentialsRefuses(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"inline token", "- url: https://h/\n  tokenFile: /t\n- url: https://g/\n  token: abc\n", `entry 1: field "token": inline secrets`},
		{"inline password", "- url: https://h/\n  password: abc\n", `entry 0: field "password": inline secrets`},
		{"inline key", "- url: ssh://git@h/\n  sshKey: abc\n", `entry 0: field "sshKey": inline secrets`},
		{"unknown field", "- url: https://h/\n  tokenFil: /t\n", `entry 0: unknown field "tokenFil"`},
		{"no url", "- tokenFile: /t\n", `entry 0 (): field "url" is required`},
		{"https without tokenFile", "- url: https://h/\n", "needs tokenFile"},
		{"ssh without known hosts", "- url: ssh://git@h/\n  sshKeyFile: /k\n", "needs sshKeyFile and knownHostsFile"},
		{"scp-like without key", "- url: git@h:acme/\n  knownHostsFile: /k\n", "needs sshKeyFile and knownHostsFile"},
		{"password in the url", "- url: https://bot:abc123@h/\n  tokenFile: /t\n", "credentials in the URL"},
		{"not a list", "url: https://h/\n", "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "creds.yaml", tc.yaml)
			_, err := LoadCredentials(file)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("err = %v, want one naming %s and saying %q", err, file, tc.want)
			}
			if strings.Contains(err.Error(), "abc") {
				t.Errorf("the error shows the inline secret: %v", err)
			}
		})
	}
	if _, err := LoadCredentials(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestCredentialsLongestPrefixWins(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "org", "org-token")
	writeFile(t, dir, "app", "app-token")
	file := writeFile(t, dir, "creds.yaml", `
- url: https://git.example.com/acme/
  tokenFile: `+filepath.Join(dir, "org")+`
- url: https://git.example.com/acme/app
  username: x-access-token
  tokenFile: `+filepath.Join(dir, "app")+`
`)
	c, err := LoadCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*githttp.BasicAuth{
		"https://git.example.com/acme/app.git":        {Username: "x-access-token", Password: "app-token"},
		"https://git.example.com/acme/other.git":      {Username: "git", Password: "org-token"},
		"https://tok@git.example.com/acme/other.git":  {Username: "git", Password: "org-token"},
		"https://git.example.com/elsewhere/other.git": nil,
	}
	for url, want := range cases {
		auth, _, err := c.auth(normalize(url))
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		if want == nil {
			if auth != nil {
				t.Errorf("%s: auth %v, want none", url, auth)
			}
			continue
		}
		got, ok := auth.(*githttp.BasicAuth)
		if !ok || *got != *want {
			t.Errorf("%s: auth %+v, want %+v", url, auth, want)
		}
	}
}

func TestCredentialsSSHKeyErrorsNameTheFileNotItsContent(t *testing.T) {
	dir := t.TempDir()
	key := writeFile(t, dir, "id_ed25519", "PRIVATE-KEY-MATERIAL-xyz")
	hosts := writeFile(t, dir, "known_hosts", "")
	file := writeFile(t, dir, "creds.yaml", "- url: git@git.example.com:acme/\n  sshKeyFile: "+key+"\n  knownHostsFile: "+hosts+"\n")
	c, err := LoadCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	_, err = checkoutOf(context.Background(), "git@git.example.com:acme/app.git", strings.Repeat("a", 40), "", t.TempDir(), Options{CacheDir: t.TempDir(), Credentials: c})
	if err == nil || !strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "MATERIAL") {
		t.Errorf("bad key: err = %v, want one naming %s without its content", err, key)
	}
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	_, err = checkoutOf(context.Background(), "ssh://git@git.example.com/acme/app.git", strings.Repeat("a", 40), "", t.TempDir(), Options{CacheDir: t.TempDir(), Credentials: c})
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing key: err = %v, want one naming %s", err, key)
	}
}

func TestCheckoutWithTokenFile(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.Init(t, "private/app")
	c1 := repo.Commit(t, chart1, "chart")
	srv.RequireBasicAuth("x-access-token", "right-token-42")

	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", "wrong-token-17\n")
	creds, err := LoadCredentials(writeFile(t, dir, "creds.yaml",
		"- url: "+srv.URL()+"/private/\n  username: x-access-token\n  tokenFile: "+tokenFile+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{CacheDir: t.TempDir(), Credentials: creds}

	_, err = checkoutOf(context.Background(), repo.URL(), c1, "", t.TempDir(), o)
	if err == nil || !strings.Contains(err.Error(), repo.URL()) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("wrong token: err = %v, want an authentication failure naming %s", err, repo.URL())
	}
	if strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("the error shows the token: %v", err)
	}

	inline := strings.Replace(repo.URL(), "http://", "http://bot:inline-secret-99@", 1)
	_, err = checkoutOf(context.Background(), inline, c1, "", t.TempDir(), Options{CacheDir: t.TempDir()})
	if err == nil || strings.Contains(err.Error(), "inline-secret") || !strings.Contains(err.Error(), repo.URL()) {
		t.Errorf("credentials in the URL: err = %v, want one naming the URL without them", err)
	}

	writeFile(t, dir, "token", "right-token-42\n") // rotated: read again by the next Checkout
	mustCheckout(t, repo.URL(), c1, "chart", o)

	right := strings.Replace(repo.URL(), "http://", "http://x-access-token:right-token-42@", 1)
	mustCheckout(t, right, c1, "chart", Options{CacheDir: t.TempDir()})
}

func TestCheckoutWithoutCredentialsForSSH(t *testing.T) {
	_, err := checkoutOf(context.Background(), "git@git.example.com:acme/app.git", strings.Repeat("a", 40), "", t.TempDir(), Options{CacheDir: t.TempDir()})
	if err == nil || errors.Is(err, ErrCommitNotFound) || !strings.Contains(err.Error(), "knownHostsFile") {
		t.Errorf("err = %v, want one saying ssh needs a key and known hosts", err)
	}
}

// TestCredentialsMatchOnURLBoundaries: an entry covers its own scheme, host and port and the
// paths at or below its path at a "/" boundary, never a longer host name, another port or a
// sibling path sharing its characters; the default port is the same as none.
func TestCredentialsMatchOnURLBoundaries(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tok", "host-token")
	writeFile(t, dir, "app", "app-token")
	file := writeFile(t, dir, "creds.yaml", `
- url: https://git.example.com
  tokenFile: `+filepath.Join(dir, "tok")+`
- url: https://git.example.com/acme/app
  tokenFile: `+filepath.Join(dir, "app")+`
`)
	c, err := LoadCredentials(file)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"https://git.example.com/acme/app.git":          "app-token",
		"https://git.example.com/acme/app/sub.git":      "app-token",
		"https://git.example.com:443/acme/app.git":      "app-token",
		"https://GIT.example.com/acme/app-fork.git":     "host-token",
		"https://git.example.com/acme/application.git":  "host-token",
		"https://git.example.com.evil.net/acme/app.git": "",
		"https://git.example.com:8443/acme/app.git":     "",
		"http://git.example.com/acme/app.git":           "",
		"https://git.example.community/x.git":           "",
	}
	for url, want := range cases {
		auth, _, err := c.auth(normalize(url))
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		got := ""
		if b, ok := auth.(*githttp.BasicAuth); ok {
			got = b.Password
		}
		if got != want {
			t.Errorf("%s: token %q, want %q", url, got, want)
		}
	}
}
