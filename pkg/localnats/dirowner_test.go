//go:build unix

package localnats

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenRefusesADataDirOthersCanReach(t *testing.T) {
	open := func(dir string, private ...bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := Open(ctx, Options{Dir: dir, Private: len(private) > 0})
		if err == nil {
			n.Close()
		}
		return err
	}

	loose := filepath.Join(t.TempDir(), "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := open(loose, true); err == nil || !strings.Contains(err.Error(), "chmod 700 "+loose) {
		t.Errorf("open a 0755 private data dir: err = %v, want one telling to chmod 700", err)
	}
	if _, err := os.Stat(filepath.Join(loose, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("a token was written into the refused directory (stat: %v)", err)
	}

	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := open(loose); err == nil || !strings.Contains(err.Error(), "mode 777") {
		t.Errorf("open a 0777 data dir: err = %v, want a refusal naming the mode", err)
	}
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := open(loose); err != nil {
		t.Errorf("open a 0755 data dir of one's own (not private): %v", err)
	}

	// A directory of another user: as root, one given away; otherwise the root directory.
	foreign := "/"
	if os.Getuid() == 0 {
		foreign = filepath.Join(t.TempDir(), "foreign")
		if err := os.Mkdir(foreign, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := open(foreign); err == nil || !strings.Contains(err.Error(), "not to you") {
		t.Errorf("open %s: err = %v, want one saying it belongs to another user", foreign, err)
	}

	if err := open(filepath.Join(t.TempDir(), "new")); err != nil {
		t.Errorf("open a fresh data dir: %v", err)
	}
}
