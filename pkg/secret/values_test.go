package secret

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
)

const complexValues = `# Database settings
db:
  host: db.internal # primary
  password: "s3cr3t: with colon"
  port: 5432
  ssl: true
  ratio: 0.5
  empty: ""
  none: null
  tilde: ~
hosts:
  - a.example.com
  - name: b
    token: tok-b
    # token of b
  - [x, y]
cert: |
  -----BEGIN CERT-----
  abc
  -----END CERT-----
trailing_spaces: "  padded  "
common: &common
  user: admin
copy: *common
merged:
  <<: *common
  extra: e
vault: !vault ref
quoted_number: "3"
unicode: "ünïcödé ✓"
"key.with.dots": v
`

func unmarshal(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return v
}

// canonical is how yaml.v3 writes a document; decrypt(encrypt(x)) must give it back exactly.
func canonical(t *testing.T, data string) []byte {
	t.Helper()
	docs, err := parseYAML("x", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := emitYAML("x", docs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValuesRoundTripV2(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	enc, err := EncryptValues("secret-values.yaml", []byte(complexValues), k, FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"db.internal", "s3cr3t", "5432", "tok-b", "BEGIN CERT", "admin", "ref", "ünïcödé"} {
		if strings.Contains(string(enc), secret) {
			t.Errorf("encrypted file still contains %q:\n%s", secret, enc)
		}
	}
	for _, kept := range []string{"# Database settings", "# primary", "# token of b", "&common", "*common", "<<: *common", "none: null", "tilde: ~", `"key.with.dots":`, `password: "sealane:v2:`} {
		if !strings.Contains(string(enc), kept) {
			t.Errorf("encrypted file lost %q:\n%s", kept, enc)
		}
	}
	if f, err := ValuesFormat("secret-values.yaml", enc); err != nil || f != FormatV2 {
		t.Errorf("ValuesFormat = %s, %v", f, err)
	}
	dec, err := DecryptValues("secret-values.yaml", enc, k)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(unmarshal(t, []byte(complexValues)), unmarshal(t, dec)); diff != "" {
		t.Errorf("values changed (-want +got):\n%s\n%s", diff, dec)
	}
	if want := canonical(t, complexValues); string(dec) != string(want) {
		t.Errorf("decrypted text differs:\n--- want\n%s--- got\n%s", want, dec)
	}
	if !strings.Contains(string(dec), "vault: !vault ref") || !strings.Contains(string(dec), "port: 5432") {
		t.Errorf("v2 lost a tag:\n%s", dec)
	}
}

func TestValuesRoundTripWerf(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	enc, err := EncryptValues("secret-values.yaml", []byte(complexValues), k, FormatWerf)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := ValuesFormat("secret-values.yaml", enc); err != nil || f != FormatWerf {
		t.Errorf("ValuesFormat = %s, %v", f, err)
	}
	dec, err := DecryptValues("secret-values.yaml", enc, k)
	if err != nil {
		t.Fatal(err)
	}
	// werf's format keeps only the text of a leaf: every leaf comes back as a string.
	want := strings.NewReplacer("port: 5432", `port: "5432"`, "ssl: true", `ssl: "true"`, "ratio: 0.5", `ratio: "0.5"`, "vault: !vault ref", "vault: ref").Replace(complexValues)
	if diff := cmp.Diff(unmarshal(t, []byte(want)), unmarshal(t, dec)); diff != "" {
		t.Errorf("values changed (-want +got):\n%s\n%s", diff, dec)
	}
	for _, comment := range []string{"# Database settings", "# primary", "# token of b"} {
		if !strings.Contains(string(dec), comment) {
			t.Errorf("lost comment %q", comment)
		}
	}
}

// TestValuesWerfFixture decrypts a values file werf wrote (werf's e2e fixtures).
func TestValuesWerfFixture(t *testing.T) {
	const file = "added_via_secret_values_extra: 1000dc58aec55b8ce919d24fd1a9c5435f983d9a39f1fba0971d2452ae30d03788dffd4ff2d179b426e62badec66c12e2f7d\n" +
		"overridden_via_secret_values_extra: 1000b52f32b4f9a78fb8b53e2a4d4211408b0de9c9bc83a8cda7a6be77e288f307bf90d016b476960f3c99ab51be48b318fcb4f404a4559bec045631902ec5f49728\n"
	got, err := DecryptValues("secret-values-extra.yaml", []byte(file), mustKey(t, werfFixtureKey))
	if err != nil {
		t.Fatal(err)
	}
	const want = "added_via_secret_values_extra: added_via_secret_values_extra\noverridden_via_secret_values_extra: overridden_via_secret_values_extra\n"
	if string(got) != want {
		t.Errorf("got %q", got)
	}
}

func TestValuesWerfGCMFrame(t *testing.T) {
	// A werf-gcm leaf holding werf/common-go's "tag NUL style NUL value" frame for the int 42.
	const file = "replicas: 0200202122232425262728292a2b30a7f5b366e378679b7c44f82d82590328ef5a1b3d390a2d7ff9\n"
	got, err := DecryptValues("v.yaml", []byte(file), mustKey(t, werfUnitKey))
	if err != nil || string(got) != "replicas: 42\n" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestValuesErrors(t *testing.T) {
	k, other := mustKey(t, werfUnitKey), mustKey(t, werfFixtureKey)
	const plain = "db:\n  user: admin\n  password: hunter2\nlist:\n  - one\n  - two\n"
	encV2, err := EncryptValues("v.yaml", []byte(plain), k, FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	encWerf, err := EncryptValues("v.yaml", []byte(plain), k, FormatWerf)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(encV2, &doc); err != nil {
		t.Fatal(err)
	}
	pw := doc.Content[0].Content[1].Content[3]
	tampered := strings.Replace(string(encV2), pw.Value, tamperV2(t, pw.Value, 20), 1)

	tests := []struct {
		name     string
		data     string
		key      Key
		want     error
		wantText []string
	}{
		{"plain leaf", strings.Replace(string(encV2), pw.Value, "hunter2", 1), k, ErrNotEncrypted, []string{"v.yaml: .db.password (line 3)", "plain string"}},
		{"plain int leaf", string(encV2) + "port: 5432\n", k, ErrNotEncrypted, []string{"v.yaml: .port (line 7)", "plain int value"}},
		{"wrong key v2", string(encV2), other, ErrKeyMismatch, []string{"v.yaml: .db.user (line 2)", "encrypted with key " + k.ID() + ", this key is " + other.ID()}},
		{"wrong key werf", string(encWerf), other, ErrKeyMismatch, []string{"v.yaml: .db.user (line 2)", "does not match"}},
		{"tampered", tampered, k, ErrModified, []string{"v.yaml: .db.password (line 3)", "authentication failed"}},
		{"bad yaml", "a: [\n", k, nil, []string{"v.yaml: parse YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecryptValues("v.yaml", []byte(tt.data), tt.key)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) || se.File != "v.yaml" {
				t.Errorf("not an *Error naming the file: %#v", err)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, secret := range []string{"hunter2", "admin", "5432"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows plaintext %q: %v", secret, err)
				}
			}
		})
	}
}

// tamperV2 flips one bit of byte i of a v2 value's payload.
func tamperV2(t *testing.T, v string, i int) string {
	t.Helper()
	raw, err := v2Encoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(v), V2Prefix))
	if err != nil {
		t.Fatal(err)
	}
	raw[i] ^= 1
	return V2Prefix + v2Encoding.EncodeToString(raw)
}

func TestValuesStyles(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	const in = "folded: >\n  one\n  two\nliteral: |-\n  a\n  b\nsingle: 'x'\ndouble: \"a\\nb\"\n"
	for _, f := range []Format{FormatV2, FormatWerf} {
		enc, err := EncryptValues("v.yaml", []byte(in), k, f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(enc), "|") || strings.Contains(string(enc), ">") {
			t.Errorf("%s: an encrypted value kept a block style:\n%s", f, enc)
		}
		dec, err := DecryptValues("v.yaml", enc, k)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(unmarshal(t, []byte(in)), unmarshal(t, dec)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f, diff)
		}
		if !strings.Contains(string(dec), "literal: |-\n  a\n  b\n") || !strings.Contains(string(dec), "single: 'x'") {
			t.Errorf("%s: styles not kept:\n%s", f, dec)
		}
	}
}

func TestValuesAlreadyEncrypted(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	for _, f := range []Format{FormatV2, FormatWerf} {
		enc, err := EncryptValues("v.yaml", []byte("a: b\n"), k, f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EncryptValues("v.yaml", enc, k, FormatV2); !errors.Is(err, ErrAlreadyEncrypted) || !strings.Contains(err.Error(), ".a") {
			t.Errorf("%s: got %v", f, err)
		}
	}
	// A hex string that does not decrypt with the key is an ordinary value.
	hexLike := "a: 1000" + strings.Repeat("ab", 32) + "\n"
	if _, err := EncryptValues("v.yaml", []byte(hexLike), k, FormatV2); err != nil {
		t.Errorf("hex-like plaintext refused: %v", err)
	}
}

func TestValuesEmptyAndComments(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	for _, in := range []string{"", "# only a comment\n", "\n\n"} {
		for _, f := range []func([]byte) ([]byte, error){
			func(b []byte) ([]byte, error) { return EncryptValues("v.yaml", b, k, FormatV2) },
			func(b []byte) ([]byte, error) { return DecryptValues("v.yaml", b, k) },
		} {
			got, err := f([]byte(in))
			if err != nil || string(got) != in {
				t.Errorf("%q: got %q, %v", in, got, err)
			}
		}
	}
}

func TestValuesMultiDocument(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	in := "a: one\n---\nb: two\n"
	enc, err := EncryptValues("v.yaml", []byte(in), k, FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), "one") || strings.Count(string(enc), "---") != 1 {
		t.Errorf("encrypted:\n%s", enc)
	}
	dec, err := DecryptValues("v.yaml", enc, k)
	if err != nil || string(dec) != in {
		t.Errorf("got %q, %v", dec, err)
	}
	bad := strings.Replace(string(enc), "b: sealane", "b: plain #", 1)
	if _, err := DecryptValues("v.yaml", []byte(bad), k); err == nil || !strings.Contains(err.Error(), "(document 2) .b") {
		t.Errorf("got %v", err)
	}
}

func TestUpdateValuesKeepsUnchangedCiphertext(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	for _, f := range []Format{FormatV2, FormatWerf} {
		t.Run(string(f), func(t *testing.T) {
			orig := "a: one\nb: two\nn: 3\nlist:\n  - x\n"
			enc, err := EncryptValues("v.yaml", []byte(orig), k, f)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecryptValues("v.yaml", enc, k)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(dec), "b: two", "b: TWO", 1) + "c: new\n"
			upd, err := UpdateValues("v.yaml", enc, []byte(edited), k, f)
			if err != nil {
				t.Fatal(err)
			}
			oldLines, newLines := strings.Split(string(enc), "\n"), strings.Split(string(upd), "\n")
			for i, prefix := range []string{"a:", "b:", "n:", "list:", "  - "} {
				same := oldLines[i] == newLines[i]
				if want := prefix != "b:"; same != want {
					t.Errorf("line %q: unchanged=%v, want %v", prefix, same, want)
				}
			}
			got, err := DecryptValues("v.yaml", upd, k)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(unmarshal(t, []byte(edited)), unmarshal(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRotateValues(t *testing.T) {
	oldKey, newKey := mustKey(t, werfUnitKey), mustKey(t, werfFixtureKey)
	const plain = "a: one\nn: 3\nnested:\n  list: [x, \"\"]\nnull_leaf: null\n"
	tests := []struct {
		from, to, want Format
	}{
		{FormatWerf, "", FormatWerf},
		{FormatV2, "", FormatV2},
		{FormatWerf, FormatV2, FormatV2},
		{FormatV2, FormatWerf, FormatWerf},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+"->"+string(tt.to), func(t *testing.T) {
			enc, err := EncryptValues("v.yaml", []byte(plain), oldKey, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			rot, err := RotateValues("v.yaml", enc, oldKey, newKey, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if f, _ := ValuesFormat("v.yaml", rot); f != tt.want {
				t.Errorf("format after rotation = %s, want %s", f, tt.want)
			}
			if _, err := DecryptValues("v.yaml", rot, oldKey); !errors.Is(err, ErrKeyMismatch) {
				t.Errorf("old key still works: %v", err)
			}
			a, err := DecryptValues("v.yaml", enc, oldKey)
			if err != nil {
				t.Fatal(err)
			}
			b, err := DecryptValues("v.yaml", rot, newKey)
			if err != nil {
				t.Fatal(err)
			}
			if string(a) != string(b) && !(tt.from == FormatV2 && tt.to == FormatWerf) {
				t.Errorf("rotation changed the values:\n%s\n%s", a, b)
			}
			if _, err := RotateValues("v.yaml", rot, oldKey, newKey, ""); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "old key") {
				t.Errorf("rotating with the wrong old key: %v", err)
			}
		})
	}
}

func TestValuesFormat(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	v2, _ := EncryptValue([]byte("x"), k, FormatV2)
	werf, _ := EncryptValue([]byte("x"), k, FormatWerf)
	tests := []struct {
		in   string
		want Format
	}{
		{"", FormatPlain},
		{"a: null\nb: \"\"\n", FormatPlain},
		{"a: b\n", FormatPlain},
		{"a: " + v2 + "\n", FormatV2},
		{"a: " + werf + "\nb: " + werf + "\n", FormatWerf},
		{"a: " + werf + "\nb: " + v2 + "\n", FormatMixed},
		{"a: " + v2 + "\nb: 3\n", FormatMixed},
	}
	for _, tt := range tests {
		if got, err := ValuesFormat("v.yaml", []byte(tt.in)); err != nil || got != tt.want {
			t.Errorf("ValuesFormat(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestV2Frame(t *testing.T) {
	for _, tc := range []struct{ tag, value string }{
		{"!!str", "plain"}, {"!!str", ""}, {"!!str", "\x00starts with NUL"}, {"!!int", "3"}, {"!vault", "a\x00b"},
	} {
		v, tag, err := unframeV2(frameV2(tc.tag, tc.value))
		if err != nil || v != tc.value || tag != tc.tag {
			t.Errorf("%q %q: got %q %q %v", tc.tag, tc.value, tag, v, err)
		}
	}
	if string(frameV2("!!str", "x")) != "x" {
		t.Error("a string's v2 plaintext must be the string itself")
	}
	if _, _, err := unframeV2([]byte("\x00!!int")); !errors.Is(err, ErrMalformed) {
		t.Errorf("broken frame: %v", err)
	}
}
