package chartsource

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// bigMarker is incompressible text of n bytes, to make a chart archive large.
func bigMarker(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestResolveSizeLimit: a download over Options.MaxBytes fails with ErrTooLarge naming the
// limit, from a Helm repository, an OCI registry and a dependency alike; under it, it works.
func TestResolveSizeLimit(t *testing.T) {
	big := testChart{name: "big", version: "1.0.0", marker: bigMarker(t, 400<<10)}
	small := testChart{name: "small", version: "1.0.0"}
	repo := newChartRepo(t, big, small)
	reg := newOCIRegistry(t, "", "")
	reg.push(t, "charts", big)
	reg.push(t, "charts", small)
	withDep := testChart{name: "web", version: "1.0.0", deps: []map[string]any{{"name": "big", "version": "1.0.0", "repository": repo.URL}}}
	packed := withDep.pack(t, t.TempDir())
	const limit = 128 << 10
	for _, tt := range []struct {
		name string
		src  Source
	}{
		{"Helm repository", NewSource("big", repo.URL, "")},
		{"OCI registry", NewSource("oci://"+reg.host()+"/charts/big:1.0.0", "", "")},
		{"dependency", Source{Path: packed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := Resolve(t.Context(), tt.src, Options{PlainHTTP: true, MaxBytes: limit})
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit of 131072 bytes (128 KiB)") {
				t.Fatalf("Resolve = %v, want ErrTooLarge naming the limit", err)
			}
		})
	}
	for _, src := range []Source{NewSource("small", repo.URL, ""), NewSource("oci://"+reg.host()+"/charts/small:1.0.0", "", "")} {
		if _, _, _, err := Resolve(t.Context(), src, Options{PlainHTTP: true, MaxBytes: limit}); err != nil {
			t.Errorf("%s under the limit: %v", src, err)
		}
	}
}

// TestResolveAllow: Options.Allow is asked about the source and every dependency repository,
// file:// ones included, and its refusal is ErrNotAllowed; nothing refused is downloaded.
func TestResolveAllow(t *testing.T) {
	repo := newChartRepo(t, testChart{name: "dep", version: "1.0.0"})
	localDep := testChart{name: "dep", version: "1.0.0"}.write(t, t.TempDir())
	other := newChartRepo(t, testChart{name: "dep", version: "1.0.0"},
		testChart{name: "web", version: "1.0.0", deps: []map[string]any{{"name": "dep", "version": "1.0.0", "repository": repo.URL}}},
		testChart{name: "web", version: "2.0.0", deps: []map[string]any{{"name": "dep", "version": "1.0.0", "repository": "file://" + localDep}}})
	var asked []string
	onlyOther := func(loc string) error {
		asked = append(asked, loc)
		if strings.HasPrefix(loc, other.URL) {
			return nil
		}
		return errors.New("not on the list")
	}
	for _, tt := range []struct {
		name string
		src  Source
		want string
	}{
		{"source", NewSource("dep", repo.URL, ""), repo.URL},
		{"http dependency of an allowed chart", NewSource("web", other.URL, "1.0.0"), repo.URL},
		{"file dependency of an allowed chart", NewSource("web", other.URL, "2.0.0"), "file://" + localDep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			_, _, _, err := Resolve(t.Context(), tt.src, Options{Allow: onlyOther})
			if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), "not on the list") {
				t.Fatalf("Resolve = %v, want ErrNotAllowed", err)
			}
			if len(asked) == 0 || asked[len(asked)-1] != tt.want {
				t.Errorf("Allow was asked about %v, want last %s", asked, tt.want)
			}
		})
	}
	if repo.requested("/dep-1.0.0.tgz") {
		t.Error("a refused repository was downloaded from")
	}
}
