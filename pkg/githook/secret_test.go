package githook

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func TestNewSecret(t *testing.T) {
	for _, tc := range []struct {
		name     string
		raw      string
		standard bool
		wantErr  bool
	}{
		{name: "plain", raw: "It's a Secret to Everybody"},
		{name: "standard", raw: standardText, standard: true},
		{name: "standard unpadded", raw: "whsec_" + base64.RawStdEncoding.EncodeToString([]byte("0123456789abcdefghijklmnopq")), standard: true},
		{name: "empty", raw: "", wantErr: true},
		{name: "standard bad base64", raw: "whsec_!!not base64!!", wantErr: true},
		{name: "standard too short", raw: "whsec_" + base64.StdEncoding.EncodeToString([]byte("23 bytes is not enough!")), wantErr: true},
		{name: "standard empty key", raw: "whsec_", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSecret(tc.raw)
			if tc.wantErr {
				if err == nil {
					t.Fatal("NewSecret() error = nil")
				}
				if key := strings.TrimPrefix(tc.raw, "whsec_"); key != "" && strings.Contains(err.Error(), key) {
					t.Errorf("NewSecret() error %q contains the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSecret() error = %v", err)
			}
			if s.Standard() != tc.standard {
				t.Errorf("Standard() = %v, want %v", s.Standard(), tc.standard)
			}
		})
	}
}

func TestSecretPrintsNoKey(t *testing.T) {
	s := secrets(t, "hunter2-hunter2")[0]
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T%v"} {
		out := fmt.Sprintf(verb, s)
		if strings.Contains(out, "hunter2") || strings.Contains(out, fmt.Sprintf("%x", "hunter2")) {
			t.Errorf("Sprintf(%s) = %q shows the secret", verb, out)
		}
	}
}

func TestKnown(t *testing.T) {
	for _, p := range []string{GitHub, GitLab, Bitbucket, GenericHMAC, StandardWebhooks, CloudEvents} {
		if !Known(p) {
			t.Errorf("Known(%q) = false", p)
		}
	}
	for _, p := range []string{"", "GitHub", "gitea", "svn"} {
		if Known(p) {
			t.Errorf("Known(%q) = true", p)
		}
	}
}

func TestZeroSecretNeverMatches(t *testing.T) {
	body := []byte(`{}`)
	for _, provider := range []string{GitHub, Bitbucket, GenericHMAC} {
		h := header("X-Hub-Signature-256", SignGitHub(nil, body), "X-Hub-Signature", SignHMAC(nil, body),
			"X-Signature", SignHMAC(nil, body))
		if err := Verify(provider, Request{Header: h, Body: body, Now: now}, []Secret{{}}); err == nil {
			t.Errorf("Verify(%s) with a zero Secret accepted an empty-key signature", provider)
		}
	}
}
