package secret

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		bits    int
		wantErr string
	}{
		{"11ac8312520b5ff037bae386ea2e8a07", 128, ""},
		{"  11AC8312520B5FF037BAE386EA2E8A07\n", 128, ""},
		{strings.Repeat("a1", 24), 192, ""},
		{strings.Repeat("b2", 32), 256, ""},
		{"", 0, "empty"},
		{"11ac8312520b5ff037bae386ea2e8a", 0, "30 hex characters"},
		{strings.Repeat("a", 33), 0, "33 hex characters"},
		{"11ac8312520b5ff037bae386ea2e8axx", 0, "character 31 is not a hex digit"},
	}
	for _, tt := range tests {
		k, err := ParseKey(tt.in)
		if tt.wantErr != "" {
			if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseKey(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			if err != nil && len(strings.TrimSpace(tt.in)) > 4 && strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
				t.Errorf("error repeats the key: %v", err)
			}
			continue
		}
		if err != nil || k.Bits() != tt.bits {
			t.Errorf("ParseKey(%q) = %d bits, %v", tt.in, k.Bits(), err)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey()
	if len(a) != 32 || a == b || strings.ToLower(a) != a {
		t.Errorf("GenerateKey = %q, %q", a, b)
	}
	if k, err := ParseKey(a); err != nil || k.Bits() != 128 {
		t.Errorf("generated key does not parse as AES-128: %v", err)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	const s = "11ac8312520b5ff037bae386ea2e8a07"
	k := mustKey(t, s)
	raw, _ := hex.DecodeString(s)
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s %x", k, k, k, k, k), k.String()} {
		if strings.Contains(strings.ToLower(out), s) || strings.Contains(out, string(raw)) {
			t.Errorf("key material printed: %q", out)
		}
	}
	if got := k.String(); got != "AES-128 secret key 2caef974" {
		t.Errorf("String() = %q", got)
	}
}

func TestLoadKey(t *testing.T) {
	const (
		flagKey   = "11111111111111111111111111111111"
		envKey    = "22222222222222222222222222222222"
		werfKey   = "33333333333333333333333333333333"
		localKey  = "44444444444444444444444444444444"
		globalKey = "55555555555555555555555555555555"
	)
	work, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, KeyFileName), []byte(localKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".werf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, filepath.FromSlash(GlobalKeyFile)), []byte("  "+globalKey+"  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyWork := t.TempDir()

	tests := []struct {
		name                string
		explicit, env, wenv string
		workDir             string
		wantKey, wantSource string
	}{
		{"flag wins", flagKey, envKey, werfKey, work, flagKey, "--secret-key"},
		{"sealane env", "", envKey, werfKey, work, envKey, "$SEALANE_SECRET_KEY"},
		{"werf env", "", "", werfKey, work, werfKey, "$WERF_SECRET_KEY"},
		{"whitespace env is unset", "", "  ", werfKey, work, werfKey, "$WERF_SECRET_KEY"},
		{"local file", "", "", "", work, localKey, filepath.Join(work, KeyFileName)},
		{"global file", "", "", "", emptyWork, globalKey, filepath.Join(home, ".werf", "global_secret_key")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv(EnvKey, tt.env)
			t.Setenv(EnvWerfKey, tt.wenv)
			k, source, err := LoadKey(tt.explicit, tt.workDir)
			if err != nil {
				t.Fatal(err)
			}
			if k.ID() != mustKey(t, tt.wantKey).ID() || source != tt.wantSource {
				t.Errorf("got %v from %s, want %s from %s", k, source, tt.wantKey, tt.wantSource)
			}
		})
	}

	t.Run("none found", func(t *testing.T) {
		t.Setenv("HOME", t.TempDir())
		t.Setenv(EnvKey, "")
		t.Setenv(EnvWerfKey, "")
		_, _, err := LoadKey("", emptyWork)
		if !errors.Is(err, ErrNoKey) {
			t.Fatalf("got %v", err)
		}
		for _, place := range []string{"--secret-key", "$SEALANE_SECRET_KEY", "$WERF_SECRET_KEY", filepath.Join(emptyWork, KeyFileName), "global_secret_key", "generate-key"} {
			if !strings.Contains(err.Error(), place) {
				t.Errorf("error does not mention %s: %v", place, err)
			}
		}
	})

	t.Run("invalid key names its source", func(t *testing.T) {
		t.Setenv(EnvKey, "not-a-key-"+envKey)
		_, _, err := LoadKey("", emptyWork)
		if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "$SEALANE_SECRET_KEY") || strings.Contains(err.Error(), envKey) {
			t.Errorf("got %v", err)
		}
	})

	t.Run("empty key file", func(t *testing.T) {
		t.Setenv(EnvKey, "")
		t.Setenv(EnvWerfKey, "")
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, KeyFileName), []byte("\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadKey("", dir); !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "is empty") {
			t.Errorf("got %v", err)
		}
	})
}
