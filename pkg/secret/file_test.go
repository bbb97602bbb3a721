package secret

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"text/template"
)

func TestFileRoundTrip(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	contents := [][]byte{
		{},
		[]byte("tls key\n"),
		[]byte("no trailing newline"),
		[]byte("-----BEGIN KEY-----\nabc\n-----END KEY-----\n\n"),
		{0x00, 0xff, 0x10, 0x00, 0x80}, // binary
	}
	for _, f := range []Format{FormatV2, FormatWerf} {
		for _, c := range contents {
			enc, err := EncryptFile("secret/x", c, k, f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(enc, []byte("\n")) || bytes.Count(enc, []byte("\n")) != 1 {
				t.Errorf("encrypted file must be one line ending in a newline: %q", enc)
			}
			if got := FormatOf(enc); got != f {
				t.Errorf("FormatOf = %s, want %s", got, f)
			}
			dec, err := DecryptFile("secret/x", enc, k)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dec, c) {
				t.Errorf("%s: got %q, want %q", f, dec, c)
			}
		}
	}
}

// TestFileWerfFixture decrypts werf's e2e fixture .helm/secret/secret-config.txt as stored in
// werf's repository (the hex value and a newline).
func TestFileWerfFixture(t *testing.T) {
	const file = "100052fb0fa1cc8ef1cb123be089cdb853cc153772691b8fb743d612a7b64d65614d4d8745250752564941227eb8d7161523\n"
	got, err := DecryptFile("secret/secret-config.txt", []byte(file), mustKey(t, werfFixtureKey))
	if err != nil || string(got) != "secretConfigContent\n" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestFileErrors(t *testing.T) {
	k, other := mustKey(t, werfUnitKey), mustKey(t, werfFixtureKey)
	enc, _ := EncryptFile("secret/tls.key", []byte("private"), k, FormatV2)
	tests := []struct {
		name string
		data []byte
		key  Key
		want error
	}{
		{"plain file", []byte("private\n"), k, ErrNotEncrypted},
		{"wrong key", enc, other, ErrKeyMismatch},
		{"tampered", []byte(tamperV2(t, string(enc), 25) + "\n"), k, ErrModified},
		{"no key", enc, Key{}, ErrNoKey},
	}
	for _, tt := range tests {
		_, err := DecryptFile("secret/tls.key", tt.data, tt.key)
		if !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), "secret/tls.key: ") || strings.Contains(err.Error(), "private") {
			t.Errorf("%s: got %v, want %v naming the file", tt.name, err, tt.want)
		}
	}
	if _, err := EncryptFile("secret/tls.key", enc, k, FormatV2); !errors.Is(err, ErrAlreadyEncrypted) {
		t.Errorf("double encryption: %v", err)
	}
}

func TestRotateFile(t *testing.T) {
	oldKey, newKey := mustKey(t, werfUnitKey), mustKey(t, werfFixtureKey)
	for _, tc := range []struct{ from, to, want Format }{
		{FormatWerf, "", FormatWerf}, {FormatV2, "", FormatV2}, {FormatWerf, FormatV2, FormatV2},
	} {
		enc, _ := EncryptFile("f", []byte("content\n"), oldKey, tc.from)
		rot, err := RotateFile("f", enc, oldKey, newKey, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if FormatOf(rot) != tc.want {
			t.Errorf("%s->%s: format %s", tc.from, tc.to, FormatOf(rot))
		}
		if got, err := DecryptFile("f", rot, newKey); err != nil || string(got) != "content\n" {
			t.Errorf("got %q, %v", got, err)
		}
		if _, err := RotateFile("f", rot, oldKey, newKey, ""); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "old key") {
			t.Errorf("wrong old key: %v", err)
		}
	}
}

func TestSecretFileFunc(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	enc := func(s string, f Format) []byte {
		b, err := EncryptFile("x", []byte(s), k, f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := map[string][]byte{
		"secret/tls.crt":           enc("CERT\n", FormatWerf),
		"secret/backend/stage/key": enc("KEY\n", FormatV2),
		"templates/secret.yaml":    []byte("not a secret file"),
		"secret/broken":            []byte("plain text\n"),
		"secret/secret-config.txt": []byte("100052fb0fa1cc8ef1cb123be089cdb853cc153772691b8fb743d612a7b64d65614d4d8745250752564941227eb8d7161523\n"),
	}
	fn := SecretFileFunc(files, k)
	tests := []struct {
		path, want, wantErr string
	}{
		{"tls.crt", "CERT\n", ""},
		{"backend/stage/key", "KEY\n", ""},
		{"./backend//stage/key", "KEY\n", ""},
		{"missing.txt", "", `werf_secret_file "missing.txt": no file secret/missing.txt; the chart has: backend/stage/key, broken, secret-config.txt, tls.crt`},
		{"/etc/passwd", "", "expected a path relative"},
		{"broken", "", `werf_secret_file "broken": secret/broken: not an encrypted value`},
		{"secret-config.txt", "", "secret/secret-config.txt: the secret key does not match"},
	}
	for _, tt := range tests {
		got, err := fn(tt.path)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: got %v, want %q", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v", tt.path, got, err)
		}
	}

	if _, err := SecretFileFunc(nil, k)("a"); err == nil || !strings.Contains(err.Error(), "the chart has no secret/ files") {
		t.Errorf("no files: %v", err)
	}
	if _, err := SecretFileFunc(files, Key{})("tls.crt"); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}

	tpl := template.Must(template.New("t").Funcs(TemplateFuncs(files, k)).Parse(`{{ werf_secret_file "tls.crt" | printf "%q" }} {{ secret_file "backend/stage/key" | printf "%q" }}`))
	var out strings.Builder
	if err := tpl.Execute(&out, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != `"CERT\n" "KEY\n"` {
		t.Errorf("template output %s", out.String())
	}
}
