// Package secrettest gives tests secret keys.
package secrettest

import (
	"testing"

	"github.com/sealane/sealane/pkg/secret"
)

// Key parses s with secret.ParseKey, failing t when s is not a valid secret key.
func Key(t testing.TB, s string) secret.Key {
	t.Helper()
	k, err := secret.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
