//go:build !unix

package localnats

import (
	"errors"
	"os"
)

// tryLock is not implemented off unix: embedded mode there needs --nats.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("sharing a data directory needs flock (unix); use --nats with a NATS server")
}
