//go:build unix

package localnats

import (
	"fmt"
	"os"
	"syscall"
)

// checkDataDir refuses a data directory another user owns or others may write — it holds the
// NATS token and the payload key (the fallback /tmp/sealane may have been made by anyone) —
// and, when private, one others may read at all.
func checkDataDir(dir string, private bool) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user id %d, not to you (%d): it would hold your payload key; pass --data-dir with a directory of your own", dir, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 || private && perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %o: others could reach the payload key it holds; run `chmod 700 %s` or pass another --data-dir", dir, perm, dir)
	}
	return nil
}
