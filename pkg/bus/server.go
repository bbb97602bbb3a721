package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// serverReadyTimeout bounds how long StartServer waits for the embedded server.
const serverReadyTimeout = 30 * time.Second

// ServerOptions configures an embedded nats-server with JetStream.
type ServerOptions struct {
	// StoreDir holds the JetStream file store; required, so data never lands in a temp dir by accident.
	StoreDir string
	// Host is the client listen address; empty means 127.0.0.1.
	Host string
	// Port is the client port: -1 picks a random free port, 0 does not listen (in-process only).
	Port int
	// ServerName names the server; empty means "sealane".
	ServerName string
	// Token, if set, is the secret every client must present (nats.Token).
	Token string
	// Logger receives the server's log lines; nil silences the server.
	Logger *zap.Logger
}

// StartServer starts an embedded nats-server with JetStream on file storage in opts.StoreDir
// and waits until it accepts connections. The caller owns Shutdown and WaitForShutdown.
func StartServer(opts ServerOptions) (*server.Server, error) {
	if opts.StoreDir == "" {
		return nil, errors.New("start nats server: StoreDir is required")
	}
	if opts.Port < -1 {
		return nil, fmt.Errorf("start nats server: invalid port %d", opts.Port)
	}
	name := opts.ServerName
	if name == "" {
		name = "sealane"
	}
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	sopts := &server.Options{
		ServerName: name,
		Host:       host,
		Port:       opts.Port,
		DontListen: opts.Port == 0,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		NoSigs:     true,
		NoLog:      opts.Logger == nil,
		// The token: nats-server's Authorization option, the simplest auth it has.
		Authorization: opts.Token,
	}
	s, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("start nats server %s: %w", name, err)
	}
	if opts.Logger != nil {
		s.SetLoggerV2(serverLogger{opts.Logger.Named("nats-server").Sugar()}, false, false, false)
	}
	go s.Start()
	if !s.ReadyForConnections(serverReadyTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("start nats server %s: not ready after %s", name, serverReadyTimeout)
	}
	if !s.JetStreamEnabled() {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("start nats server %s: jetstream did not start (store %s)", name, opts.StoreDir)
	}
	return s, nil
}

// ConnectInProcess connects to an embedded server without a network socket.
func ConnectInProcess(ctx context.Context, s *server.Server, name string, opts ...nats.Option) (*nats.Conn, error) {
	if s == nil {
		return nil, errors.New("connect in-process: nil server")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect in-process %s: %w", name, err)
	}
	all := append([]nats.Option{nats.InProcessServer(s), nats.Name(name)}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("connect in-process %s: %w", name, err)
	}
	return nc, nil
}

// Reconnect settings for Connect: retry forever, half a second apart with jitter.
const (
	reconnectWait      = 500 * time.Millisecond
	reconnectJitter    = 250 * time.Millisecond
	reconnectJitterTLS = time.Second
	connectTimeout     = 5 * time.Second
)

// Connect dials a NATS server or cluster (comma-separated URLs), retrying until ctx is done,
// and returns a connection that reconnects forever. Extra options (credentials, TLS) go last.
func Connect(ctx context.Context, url, name string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(reconnectJitter, reconnectJitterTLS),
		nats.Timeout(connectTimeout),
	}, opts...)
	bo := backoff{min: 250 * time.Millisecond, max: 5 * time.Second}
	for {
		nc, err := nats.Connect(url, all...)
		if err == nil {
			return nc, nil
		}
		// Only an unreachable server is worth waiting for; bad URLs and auth errors are not.
		if !errors.Is(err, nats.ErrNoServers) && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("connect %s as %s: %w", RedactURL(url), name, RedactError(err))
		}
		if serr := sleepCtx(ctx, bo.next()); serr != nil {
			return nil, fmt.Errorf("connect %s as %s: %w (last error: %v)", RedactURL(url), name, serr, RedactError(err))
		}
	}
}

// serverLogger adapts zap to the nats-server logger interface.
type serverLogger struct{ l *zap.SugaredLogger }

func (s serverLogger) Noticef(format string, v ...any) { s.l.Infof(format, v...) }
func (s serverLogger) Warnf(format string, v ...any)   { s.l.Warnf(format, v...) }
func (s serverLogger) Errorf(format string, v ...any)  { s.l.Errorf(format, v...) }
func (s serverLogger) Fatalf(format string, v ...any)  { s.l.Errorf(format, v...) }
func (s serverLogger) Debugf(format string, v ...any)  { s.l.Debugf(format, v...) }
func (s serverLogger) Tracef(format string, v ...any)  {}
