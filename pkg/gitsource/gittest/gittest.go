// Package gittest serves real git repositories over smart HTTP (git-http-backend behind
// net/http/cgi on a loopback httptest server) and over ssh (git-upload-pack behind an
// x/crypto/ssh server) for tests of code that fetches from git.
//
// It needs the git command line: a test using it fails when git, git-http-backend or
// git-upload-pack is missing, it is never skipped.
package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Server serves the bare repositories under one directory over git's smart HTTP protocol
// and counts the requests it receives.
type Server struct {
	root     string
	srv      *httptest.Server
	requests atomic.Int64
	sent     atomic.Int64

	mu       sync.Mutex
	user     string
	password string
	hold     chan struct{}
	ssh      *SSHServer
}

// NewServer starts a git smart-HTTP server on loopback for the test; it is closed when the
// test ends. (A function cannot share the name of the Server type in Go.)
func NewServer(t testing.TB) *Server {
	t.Helper()
	backend := filepath.Join(strings.TrimSpace(git(t, "", "--exec-path")), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("gittest: git-http-backend: %v", err)
	}
	s := &Server{root: t.TempDir()}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if hold := s.holdChan(); hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		cgiHandler.ServeHTTP(countingWriter{w, &s.sent}, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// RequireBasicAuth makes the server answer 401 to every later request that does not carry
// this user name and password.
func (s *Server) RequireBasicAuth(user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password = user, password
}

// Hold makes later requests wait until the returned function is called (or the client
// gives up), for tests of cancellation and timeouts.
func (s *Server) Hold() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.hold = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.hold = nil
			s.mu.Unlock()
			close(ch)
		})
	}
}

func (s *Server) holdChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hold
}

func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user == "" && s.password == "" {
		return true
	}
	u, p, ok := r.BasicAuth()
	return ok && u == s.user && p == s.password
}

// Requests is the number of HTTP requests the server has received so far.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// BytesSent is the number of response body bytes the server has sent so far.
func (s *Server) BytesSent() int64 { return s.sent.Load() }

// countingWriter counts the bytes of a response body.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// Repo is a repository served by a Server: a working clone where tests commit, pushed to
// the served bare repository after every change.
type Repo struct {
	name   string
	work   string
	bare   string
	server *Server
}

// Init creates an empty repository name (served as <server>/<name>.git) whose default
// branch is main.
func (s *Server) Init(t testing.TB, name string) *Repo {
	t.Helper()
	r := &Repo{name: name, work: t.TempDir(), bare: filepath.Join(s.root, name+".git"), server: s}
	git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	git(t, r.work, "init", "--quiet", "--initial-branch=main")
	git(t, r.work, "remote", "add", "origin", r.bare)
	return r
}

// URL is the repository's smart-HTTP URL.
func (r *Repo) URL() string { return r.server.URL() + "/" + r.name + ".git" }

// Dir is the working directory where tests may write files (symlinks, executables) before
// a Commit.
func (r *Repo) Dir() string { return r.work }

// Commit writes files (path → content, directories created) into the working directory,
// commits every change there on the current branch with msg, pushes the branch and
// returns the commit's sha.
func (r *Repo) Commit(t testing.TB, files map[string]string, msg string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("gittest: %v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatalf("gittest: %v", err)
		}
	}
	git(t, r.work, "add", "--all")
	git(t, r.work, "commit", "--quiet", "--allow-empty", "-m", msg)
	git(t, r.work, "push", "--quiet", "origin", "HEAD")
	return r.Head(t)
}

// Head is the sha of the working directory's current commit.
func (r *Repo) Head(t testing.TB) string {
	t.Helper()
	return strings.TrimSpace(git(t, r.work, "rev-parse", "HEAD"))
}

// Tag creates the annotated tag name at the current commit and pushes it.
func (r *Repo) Tag(t testing.TB, name string) {
	t.Helper()
	git(t, r.work, "tag", "-a", "-m", name, name)
	git(t, r.work, "push", "--quiet", "origin", "refs/tags/"+name)
}

// Branch switches the working directory to branch name, creating it at the current commit
// when it does not exist; later Commits go to it.
func (r *Repo) Branch(t testing.TB, name string) {
	t.Helper()
	if _, err := gitErr(r.work, "rev-parse", "--verify", "--quiet", "refs/heads/"+name); err == nil {
		git(t, r.work, "checkout", "--quiet", name)
		return
	}
	git(t, r.work, "checkout", "--quiet", "-b", name)
}

// Push pushes refspec (for example "HEAD:refs/pull/1/head") to the served repository.
func (r *Repo) Push(t testing.TB, refspec string) {
	t.Helper()
	git(t, r.work, "push", "--quiet", "--force", "origin", refspec)
}

// Git runs git with args in the working directory and returns its output.
func (r *Repo) Git(t testing.TB, args ...string) string {
	t.Helper()
	return git(t, r.work, args...)
}

// ServerConfig sets a git config key of the served bare repository (for example
// uploadpack.allowReachableSHA1InWant).
func (r *Repo) ServerConfig(t testing.TB, key, value string) {
	t.Helper()
	git(t, r.bare, "config", key, value)
}

// git runs git in dir (the process's directory when empty) and fails the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("gittest: git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// gitErr runs git with a fixed identity and no user or system configuration.
func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.invalid",
		"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.invalid",
		"GIT_TERMINAL_PROMPT=0",
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
