// Package localnats runs the NATS of a data directory (the CLI's embedded mode) so that any
// number of sealane processes can use one directory at once: the first serves its JetStream
// store on a loopback port and the others connect to it; when the serving process exits (or
// dies), one of the others takes the store over and the rest reconnect to it.
//
// One store is never served by two servers: serving takes an exclusive lock on the directory
// (flock on nats.lock, released by the kernel when a process dies), and a server is started
// only while holding it. Clients find the server through nats.addr, written by the process that
// serves, and authenticate with nats.token, a secret only the directory's owner can read.
package localnats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

// Files in the data directory.
const (
	StoreDir  = "jetstream"  // the JetStream file store
	lockFile  = "nats.lock"  // flock'd by the serving process
	addrFile  = "nats.addr"  // host:port of the server, written by the serving process
	tokenFile = "nats.token" // the clients' secret, created once
)

// Timings of the take-over.
const (
	// standbyPoll is how often a process that does not serve checks whether the store needs a
	// server (its connection is down and the lock is free).
	standbyPoll = 200 * time.Millisecond
	// reconnectWait is the pause between a client's reconnect attempts; the serving process
	// may have just handed over, and the next one needs a moment to start.
	reconnectWait = 100 * time.Millisecond
	dialTimeout   = 2 * time.Second
)

// Options configure Open.
type Options struct {
	Dir  string      // the data directory; created (0700) when missing
	Name string      // this process's connection name
	Log  *zap.Logger // nil: no logs
	// Private refuses a Dir others may read (not 0700), as for a fallback in a shared place
	// like /tmp. Any Dir must belong to this user and not be writable by others.
	Private bool
}

// Node is one process's place on a data directory's NATS: a connection that follows the
// server wherever it is served, and, while this process serves, the server itself.
type Node struct {
	dir   string
	token string
	log   *zap.Logger
	conn  *nats.Conn

	mu     sync.Mutex
	lock   *os.File       // held while serving
	server *server.Server // while serving
	closed bool

	stop chan struct{}
	done chan struct{}
}

// Open joins the data directory's NATS: it serves the store when no process does, else
// connects to the process that does, retrying until ctx ends while that one starts.
func Open(ctx context.Context, o Options) (*Node, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", o.Dir, err)
	}
	if err := checkDataDir(o.Dir, o.Private); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	token, err := readOrCreateToken(filepath.Join(o.Dir, tokenFile))
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", o.Dir, err)
	}
	n := &Node{dir: o.Dir, token: token, log: o.Log.Named("localnats"), stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := n.tryServe(); err != nil {
		return nil, err
	}
	if n.conn, err = n.connect(ctx, o.Name); err != nil {
		n.shutdown()
		return nil, fmt.Errorf("connect to the NATS of %s: %w", o.Dir, err)
	}
	go n.standby()
	return n, nil
}

// connect dials the server until ctx ends; while it waits, the serving process may leave, so
// it tries to serve the store itself between attempts.
func (n *Node) connect(ctx context.Context, name string) (*nats.Conn, error) {
	wait := reconnectWait
	for {
		nc, err := nats.Connect("nats://sealane-local:4222", nats.Name(name),
			nats.SetCustomDialer(n), nats.SkipHostLookup(), nats.IgnoreDiscoveredServers(), nats.Token(n.token),
			nats.MaxReconnects(-1), nats.ReconnectWait(reconnectWait), nats.ReconnectJitter(reconnectWait, reconnectWait),
			nats.Timeout(dialTimeout))
		if err == nil {
			return nc, nil
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("%w: the server of the data directory refused its token (%s)", err, tokenFile)
		}
		if _, serr := n.tryServe(); serr != nil {
			return nil, serr
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// Conn returns the connection; it reconnects on its own when the serving process changes.
func (n *Node) Conn() *nats.Conn { return n.conn }

// Serving reports whether this process serves the store now.
func (n *Node) Serving() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.server != nil
}

// Close closes the connection and, if this process serves the store, stops the server and
// frees the store for the next process. Stop what uses the connection first.
func (n *Node) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	<-n.done
	if n.conn != nil {
		_ = n.conn.Drain()
		n.conn.Close()
	}
	n.shutdown()
}

// Dial connects to the server named in the address file, wherever it is now; it makes Node a
// nats.CustomDialer (the address nats.go asks for is ignored).
func (n *Node) Dial(network, _ string) (net.Conn, error) {
	b, err := os.ReadFile(filepath.Join(n.dir, addrFile))
	if err != nil {
		return nil, fmt.Errorf("no NATS serves %s yet: %w", n.dir, err)
	}
	return net.DialTimeout(network, strings.TrimSpace(string(b)), dialTimeout)
}

// standby takes the store over when the connection is down and no process holds the lock.
func (n *Node) standby() {
	defer close(n.done)
	t := time.NewTicker(standbyPoll)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if n.Serving() || n.conn.IsConnected() {
			continue
		}
		if ok, err := n.tryServe(); err != nil {
			n.log.Warn("take over the data directory's NATS", zap.String("dir", n.dir), zap.Error(err))
		} else if ok {
			n.log.Info("took over the data directory's NATS: its last server stopped", zap.String("dir", n.dir))
		}
	}
}

// tryServe starts the server if this process can take the lock; it reports whether it did.
func (n *Node) tryServe() (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.server != nil || n.closed {
		return false, nil
	}
	f, err := os.OpenFile(filepath.Join(n.dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", n.dir, err)
	}
	if held, err := tryLock(f); err != nil || !held {
		f.Close()
		if err != nil {
			return false, fmt.Errorf("lock %s: %w", n.dir, err)
		}
		return false, nil
	}
	srv, err := bus.StartServer(bus.ServerOptions{
		StoreDir: filepath.Join(n.dir, StoreDir), Port: -1, ServerName: "sealane-local", Token: n.token,
	})
	if err != nil {
		f.Close()
		return false, fmt.Errorf("serve the NATS of %s: %w", n.dir, err)
	}
	if err := writeAtomic(filepath.Join(n.dir, addrFile), srv.Addr().String()+"\n"); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		f.Close()
		return false, fmt.Errorf("serve the NATS of %s: %w", n.dir, err)
	}
	n.server, n.lock = srv, f
	n.log.Debug("serving the data directory's NATS", zap.String("dir", n.dir), zap.String("addr", srv.Addr().String()))
	return true, nil
}

// shutdown stops the server this process serves, if any, and frees the store.
func (n *Node) shutdown() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.server == nil {
		return
	}
	addr := n.server.Addr().String()
	path := filepath.Join(n.dir, addrFile)
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == addr {
		_ = os.Remove(path)
	}
	// JetStream first, while the clients are still connected: Shutdown alone would first tell
	// every waiting pull request "409 Server Shutdown" and keep delivering to those requests
	// for another 50 ms (nats-server 2.15 Server.signalPullConsumers), and a message delivered
	// to a request its client has given up on only comes back after the consumer's ack wait.
	// With JetStream stopped first nothing is delivered any more; the clients' calls get
	// "JetStream not enabled" and are tried again on the next server (bus.call).
	if err := n.server.ShutdownJetStream(); err != nil {
		n.log.Warn("stop JetStream before the hand-over", zap.Error(err))
	}
	n.server.Shutdown()
	n.server.WaitForShutdown()
	_ = n.lock.Close() // releases the flock: the next process may serve the store now
	n.server, n.lock = nil, nil
}

// readOrCreateToken returns the directory's client secret, creating it (0600) on first use.
func readOrCreateToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	// Written aside, then linked into place: a process that loses the race reads the winner's
	// whole token, never a half-written one.
	tmp, err := writeTemp(path, hex.EncodeToString(raw)+"\n")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if tok := strings.TrimSpace(string(b)); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("%s is empty: remove it and try again", path)
}

// writeAtomic replaces path with data (a temporary file renamed over it).
func writeAtomic(path, data string) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data to a new temporary file (0600) beside path and returns its name.
func writeTemp(path, data string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
