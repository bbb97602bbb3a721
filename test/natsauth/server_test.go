// Package natsauth tests deployments/nats — the nats-server configuration with one user per
// role — against a real nats-server started in this process from that configuration, with
// TLS and a throwaway CA: what each role may and may not do, and a whole deploy with every
// stage on its own user.
package natsauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
)

// roles are the users of deployments/nats/users.conf, plus the scoped client the test adds
// the way docs/operations.md says.
var roles = []string{"renderer", "applier", "tracker", "recorder", "client", "audit", "provisioner", "webhook", "rollout", "console", "client_team_a"}

// natsEnv is a running nats-server from the shipped configuration.
type natsEnv struct {
	url   string // tls://127.0.0.1:<port>
	dir   string
	caPEM string            // CA file that verifies the server
	seeds map[string]string // role → nkey seed file

	mu         sync.Mutex
	violations []string // permission violations the server logged
	trace      *os.File // $NATSAUTH_TRACE
}

// startNATS starts nats-server from deployments/nats/{permissions,users}.conf with a TLS
// listener on a free port, JetStream in a temp dir, and a fresh nkey per role.
func startNATS(t *testing.T) *natsEnv {
	t.Helper()
	e := &natsEnv{dir: t.TempDir(), seeds: map[string]string{}}
	_, file, _, _ := runtime.Caller(0)
	shipped := filepath.Join(filepath.Dir(file), "..", "..", "deployments", "nats")
	perms, err := os.ReadFile(filepath.Join(shipped, "permissions.conf"))
	if err != nil {
		t.Fatal(err)
	}
	users, err := os.ReadFile(filepath.Join(shipped, "users.conf"))
	if err != nil {
		t.Fatal(err)
	}
	consolePerms, err := os.ReadFile(filepath.Join(shipped, "permissions-console.conf"))
	if err != nil {
		t.Fatal(err)
	}
	scopedPerms, err := os.ReadFile(filepath.Join(shipped, "scoped-client.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// A scoped client, added as docs/operations.md says: its permissions and one more user line.
	scoped := "    { nkey: $SEALANE_NKEY_CLIENT_TEAM_A, permissions: $CLIENT_TEAM_A }\n  ]"
	users = []byte(strings.Replace(string(users), "  ]", scoped, 1))
	users = []byte(strings.Replace(string(users), "include ./permissions.conf", "include ./permissions.conf\ninclude ./scoped-client.conf", 1))
	write(t, filepath.Join(e.dir, "permissions.conf"), perms)
	write(t, filepath.Join(e.dir, "permissions-console.conf"), consolePerms)
	write(t, filepath.Join(e.dir, "scoped-client.conf"), scopedPerms)
	write(t, filepath.Join(e.dir, "users.conf"), users)
	for _, r := range roles {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		e.seeds[r] = filepath.Join(e.dir, r+".nk")
		write(t, e.seeds[r], seed)
		t.Setenv("SEALANE_NKEY_"+strings.ToUpper(r), pub)
	}
	cert, key := e.writeTLS(t)
	port := harness.FreePort(t)
	conf := fmt.Sprintf(`listen: 127.0.0.1:%d
jetstream { store_dir: %q }
tls { ca_file: %q, cert_file: %q, key_file: %q, timeout: 2 }
include ./users.conf
`, port, filepath.Join(e.dir, "js"), e.caPEM, cert, key)
	confFile := filepath.Join(e.dir, "nats-server.conf")
	write(t, confFile, []byte(conf))
	opts, err := server.ProcessConfigFile(confFile)
	if err != nil {
		t.Fatalf("nats-server configuration: %v", err)
	}
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	// $NATSAUTH_TRACE=FILE writes every protocol line the server sees to FILE: how the
	// permissions were derived (grep the PUB/HPUB lines per connection name).
	trace := os.Getenv("NATSAUTH_TRACE")
	if trace != "" {
		f, err := os.Create(trace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		e.trace = f
		opts.Trace = true
	}
	s.SetLoggerV2(violationLog{e}, false, trace != "", false)
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	e.url = fmt.Sprintf("tls://127.0.0.1:%d", port)
	return e
}

// auth is how role connects: its nkey seed file, the test CA, and a stage's (or the webhook
// intake's, the rollout coordinator's, the console's) own inbox prefix.
func (e *natsEnv) auth(role string) bus.Auth {
	a := bus.Auth{NkeyFile: e.seeds[role], TLSCA: e.caPEM}
	switch {
	case stageRole(role) || role == "webhook" || role == "rollout" || role == "console":
		a.InboxPrefix = "_INBOX_" + role
	case role == "client_team_a":
		a.InboxPrefix = "_INBOX_team-a" // scoped-client.conf
	}
	return a
}

func stageRole(role string) bool {
	switch role {
	case "renderer", "applier", "tracker", "recorder":
		return true
	}
	return false
}

// connect connects as role; the connection closes with the test.
func (e *natsEnv) connect(t *testing.T, role string) *nats.Conn {
	t.Helper()
	nc, err := e.dial(role)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (e *natsEnv) dial(role string) (*nats.Conn, error) {
	opts, err := e.auth(role).Options()
	if err != nil {
		return nil, err
	}
	return nats.Connect(e.url, append(opts, nats.Name("natsauth-"+role), nats.MaxReconnects(0))...)
}

// takeViolations returns and forgets the permission violations logged so far.
func (e *natsEnv) takeViolations() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.violations
	e.violations = nil
	return v
}

// violationLog keeps the server's permission violations (errors naming the user and subject).
type violationLog struct{ e *natsEnv }

func (l violationLog) Noticef(string, ...any) {}
func (l violationLog) Warnf(string, ...any)   {}
func (l violationLog) Fatalf(format string, v ...any) {
	l.Errorf(format, v...)
}
func (l violationLog) Debugf(string, ...any) {}
func (l violationLog) Tracef(format string, v ...any) {
	if l.e.trace != nil {
		l.e.mu.Lock()
		fmt.Fprintf(l.e.trace, format+"\n", v...)
		l.e.mu.Unlock()
	}
}
func (l violationLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "Violation") {
		l.e.mu.Lock()
		l.e.violations = append(l.e.violations, msg)
		l.e.mu.Unlock()
	}
}

// writeTLS writes a throwaway CA (e.caPEM) and a server certificate for 127.0.0.1 signed by it.
func (e *natsEnv) writeTLS(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sealane test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "nats"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	e.caPEM = filepath.Join(e.dir, "ca.pem")
	certFile, keyFile = filepath.Join(e.dir, "server.pem"), filepath.Join(e.dir, "server-key.pem")
	write(t, e.caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
