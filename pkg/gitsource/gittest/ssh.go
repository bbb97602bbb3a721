package gittest

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the repositories of a Server over ssh: it runs the real git-upload-pack
// for "git-upload-pack '<path>'" exec requests of clients whose public key is authorized.
type SSHServer struct {
	root     string
	uploader string
	ln       net.Listener
	config   *ssh.ServerConfig
	hostKey  ssh.PublicKey // the ed25519 one, written by KnownHostsFile
	conns    atomic.Int64
	uploads  atomic.Int64

	ctx    context.Context // cancelled at cleanup: kills running upload-packs
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	keys  map[string]bool // authorized keys, in wire format
	open  map[net.Conn]bool
	close bool
}

// SSH starts (on the first call) an ssh server on 127.0.0.1 for the Server's repositories
// and returns it; it is closed when the test ends. Its host keys are a fresh ed25519 key and
// an ECDSA P-256 key, as real servers offer several.
func (s *Server) SSH(t testing.TB) *SSHServer {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ssh == nil {
		s.ssh = NewSSHServer(t, s.root)
	}
	return s.ssh
}

// NewSSHServer starts an ssh server on 127.0.0.1 serving the bare repositories under root;
// it is closed, and its connections ended, when the test ends.
func NewSSHServer(t testing.TB, root string) *SSHServer {
	t.Helper()
	uploader := filepath.Join(strings.TrimSpace(git(t, "", "--exec-path")), "git-upload-pack")
	if _, err := os.Stat(uploader); err != nil {
		t.Fatalf("gittest: git-upload-pack: %v", err)
	}
	s := &SSHServer{root: root, uploader: uploader, keys: map[string]bool{}, open: map[net.Conn]bool{}}
	s.config = &ssh.ServerConfig{PublicKeyCallback: s.checkKey}
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	for _, k := range []any{edKey, ecKey} {
		signer, err := ssh.NewSignerFromKey(k)
		must(t, err)
		s.config.AddHostKey(signer)
	}
	s.hostKey, err = ssh.NewPublicKey(edPub)
	must(t, err)
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.shutdown)
	return s
}

// Addr is the server's host:port (127.0.0.1:PORT).
func (s *SSHServer) Addr() string { return s.ln.Addr().String() }

// HostKey is the server's ed25519 host key, the one KnownHostsFile lists.
func (s *SSHServer) HostKey() ssh.PublicKey { return s.hostKey }

// SSHRequests is the number of ssh connections the server has accepted so far,
// authenticated or not (go-git opens one, with one session, per fetch).
func (s *SSHServer) SSHRequests() int { return int(s.conns.Load()) }

// UploadPacks is the number of git-upload-pack runs the server has started so far.
func (s *SSHServer) UploadPacks() int { return int(s.uploads.Load()) }

// AuthorizeKey lets clients authenticating with pub in.
func (s *SSHServer) AuthorizeKey(pub ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[string(pub.Marshal())] = true
}

// ClientKeyFile generates an ed25519 client key, authorizes it and returns the path of its
// private key file (OpenSSH format, mode 0600).
func (s *SSHServer) ClientKeyFile(t testing.TB) string {
	t.Helper()
	file, pub := NewKeyFile(t)
	s.AuthorizeKey(pub)
	return file
}

// KnownHostsFile writes a known_hosts file listing the server's ed25519 host key (as
// [127.0.0.1]:PORT) and returns its path.
func (s *SSHServer) KnownHostsFile(t testing.TB) string {
	t.Helper()
	return WriteKnownHosts(t, s.Addr(), s.hostKey)
}

// NewKeyFile generates an ed25519 key pair, writes the private key to a 0600 file in
// OpenSSH format and returns the file's path and the public key; nothing authorizes it.
func NewKeyFile(t testing.TB) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "gittest")
	must(t, err)
	file := filepath.Join(t.TempDir(), "id_ed25519")
	must(t, os.WriteFile(file, pem.EncodeToMemory(block), 0o600))
	sshPub, err := ssh.NewPublicKey(pub)
	must(t, err)
	return file, sshPub
}

// WriteKnownHosts writes a known_hosts file with one line, key for addr (host:port), and
// returns its path.
func WriteKnownHosts(t testing.TB, addr string, key ssh.PublicKey) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	must(t, os.WriteFile(file, []byte(line), 0o600))
	return file
}

// SSHURL is the repository's ssh URL, ssh://git@127.0.0.1:PORT/<name>.git; it panics when
// the Server's SSH has not been started.
func (r *Repo) SSHURL() string {
	r.server.mu.Lock()
	defer r.server.mu.Unlock()
	if r.server.ssh == nil {
		panic("gittest: Repo.SSHURL before Server.SSH")
	}
	return "ssh://git@" + r.server.ssh.Addr() + "/" + r.name + ".git"
}

// checkKey accepts the authorized public keys only.
func (s *SSHServer) checkKey(_ ssh.ConnMetadata, pub ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[string(pub.Marshal())] {
		return &ssh.Permissions{}, nil
	}
	return nil, errors.New("gittest: key not authorized")
}

// accept serves connections until the listener is closed.
func (s *SSHServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		s.mu.Lock()
		if s.close {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.open[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// serveConn runs the handshake and serves the connection's session channels.
func (s *SSHServer) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		_ = c.Close()
		s.mu.Lock()
		delete(s.open, c)
		s.mu.Unlock()
	}()
	conn, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		return
	}
	defer conn.Close()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ssh.DiscardRequests(reqs)
	}()
	var sessions sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.serveSession(ch, creqs)
		}()
	}
	sessions.Wait()
}

// serveSession answers the session's requests: the first exec runs, everything else is
// refused.
func (s *SSHServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	var once sync.Once
	var done sync.WaitGroup
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		ran := false
		once.Do(func() {
			ran = true
			_ = req.Reply(true, nil)
			done.Add(1)
			go func() {
				defer done.Done()
				s.exec(ch, req.Payload)
			}()
		})
		if !ran {
			_ = req.Reply(false, nil)
		}
	}
	done.Wait()
}

// exec runs the command of an exec request's payload on the channel, sends its exit status
// and closes the channel.
func (s *SSHServer) exec(ch ssh.Channel, payload []byte) {
	defer ch.Close()
	status := uint32(1)
	defer func() {
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
	}()
	var cmdline struct{ Command string }
	if err := ssh.Unmarshal(payload, &cmdline); err != nil {
		fmt.Fprintf(ch.Stderr(), "gittest: bad exec request\n")
		return
	}
	dir, err := s.repoDir(cmdline.Command)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "gittest: %v\n", err)
		return
	}
	if err := s.uploadPack(ch, dir); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			status = uint32(ee.ExitCode())
		}
		return
	}
	status = 0
}

// repoDir is the repository directory of "git-upload-pack '<path>'": a path under the root
// (with or without a leading slash) of an existing directory.
func (s *SSHServer) repoDir(command string) (string, error) {
	quoted, ok := strings.CutPrefix(command, "git-upload-pack ")
	if !ok {
		return "", fmt.Errorf("command refused: %q (only git-upload-pack)", command)
	}
	p, err := unquote(quoted)
	if err != nil {
		return "", err
	}
	rel := filepath.Clean("/" + p)[1:]
	if rel == "" || strings.Contains(p, "..") {
		return "", fmt.Errorf("path %q refused", p)
	}
	dir := filepath.Join(s.root, rel)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("repository %q not found", p)
	}
	return dir, nil
}

// unquote reverses git's shell quoting of one argument: it is in single quotes, and a
// quote or a bang inside is written as quote, backslash, the character, quote.
func unquote(s string) (string, error) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", fmt.Errorf("path %q is not quoted", s)
	}
	s = s[1 : len(s)-1]
	r := strings.NewReplacer(`'\''`, `'`, `'\!'`, `!`)
	if strings.Contains(strings.NewReplacer(`'\''`, ``, `'\!'`, ``).Replace(s), "'") {
		return "", fmt.Errorf("path %q is badly quoted", s)
	}
	return r.Replace(s), nil
}

// uploadPack runs git-upload-pack on dir with the channel as its standard streams; it is
// killed when the server shuts down.
func (s *SSHServer) uploadPack(ch ssh.Channel, dir string) error {
	cmd := exec.CommandContext(s.ctx, s.uploader, "--strict", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.uploads.Add(1)
	// Not cmd.Stdin = ch: clients do not always close their side, and Wait would wait
	// for that copy. This one ends when the channel is closed after Wait.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	return cmd.Wait()
}

// shutdown closes the listener and every connection, kills running upload-packs and waits
// for all the server's goroutines.
func (s *SSHServer) shutdown() {
	s.mu.Lock()
	s.close = true
	for c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	_ = s.ln.Close()
	s.cancel()
	s.wg.Wait()
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("gittest: %v", err)
	}
}
