package githook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// now is the arrival time of the test requests.
var now = time.Date(2026, 11, 20, 10, 12, 31, 0, time.UTC)

// The test secrets: plain ones and a Standard Webhooks key.
var (
	plainSecret  = []byte("It's a Secret to Everybody")
	otherSecret  = []byte("rotated-secret-2026")
	standardKey  = []byte("0123456789abcdefghijklmnopqrstuv")
	standardText = "whsec_" + base64.StdEncoding.EncodeToString(standardKey)
	otherKey     = []byte("vutsrqponmlkjihgfedcba9876543210")
	otherText    = "whsec_" + base64.StdEncoding.EncodeToString(otherKey)
)

const (
	sha1Main = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
	sha1Prev = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
	zero40   = "0000000000000000000000000000000000000000"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// header builds a header from name, value pairs.
func header(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h
}

// standardHeaders adds the Standard Webhooks headers signing body with key as id at ts.
func standardHeaders(h http.Header, key []byte, id string, ts time.Time, body []byte) http.Header {
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", SignStandard(key, id, ts, body))
	return h
}

func secrets(t testing.TB, raws ...string) []Secret {
	t.Helper()
	var out []Secret
	for _, raw := range raws {
		s, err := NewSecret(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// parseCase is one named Parse test: want is compared when wantErr is false.
type parseCase struct {
	name     string
	provider string
	header   http.Header
	body     []byte
	want     Delivery
	wantErr  bool
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.provider, Request{Header: tc.header, Body: tc.body, Now: now})
			if tc.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse() error = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse() (-want +got):\n%s", diff)
			}
		})
	}
}
