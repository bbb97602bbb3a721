package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/payload"
)

func TestOpenEmbeddedGeneratesPayloadKey(t *testing.T) {
	t.Setenv(payload.EnvKey, "")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func() string {
		t.Helper()
		n, err := Open(ctx, Options{DataDir: dir, Name: "test"})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if n.PayloadKey() == nil {
			t.Fatal("embedded node has no payload key")
		}
		ref, err := n.Bus.PutBlob(ctx, "inputs/x", []byte("values"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := n.Bus.GetBlob(ctx, ref); err != nil || string(got) != "values" {
			t.Fatalf("GetBlob = %q, %v", got, err)
		}
		return n.PayloadKey().ID()
	}
	first := open()
	fi, err := os.Stat(filepath.Join(dir, payload.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("payload key file mode %v, want 0600", fi.Mode().Perm())
	}
	if again := open(); again != first {
		t.Errorf("reopening the data dir gave key %s, want %s", again, first)
	}

	// A configured key wins over the data dir's.
	hexKey, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, hexKey)
	want, _ := payload.ParseKey(hexKey)
	n, err := Open(ctx, Options{DataDir: dir, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.PayloadKey().ID() != want.ID() {
		t.Errorf("with $%s the node has key %s, want %s", payload.EnvKey, n.PayloadKey().ID(), want.ID())
	}
}

func TestRemoteWithoutPayloadKey(t *testing.T) {
	t.Setenv(payload.EnvKey, "")
	o := Options{NATSURL: "nats://nats:4222", Log: zap.NewNop()}
	sealer, key, err := o.payloadSealer()
	if err != nil || key != nil {
		t.Fatalf("payloadSealer = %v, %v; want no key and no error", key, err)
	}
	if _, err := sealer.Seal("nats-obj://sealane-blobs/charts/x", []byte("chart")); !errors.Is(err, payload.ErrNoKey) {
		t.Errorf("Seal without a key: %v, want ErrNoKey", err)
	}
	_, err = ServiceDeps(&Node{}, "", nil)
	if !errors.Is(err, ErrNoPayloadKey) {
		t.Fatalf("ServiceDeps without a payload key: %v, want ErrNoPayloadKey", err)
	}
	for _, want := range []string{"$" + payload.EnvKey, "--payload-key-file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
