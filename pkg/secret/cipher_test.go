package secret

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Keys of werf's own tests: werf/werf pkg/secret/aes_encoder_test.go and the e2e fixtures in
// werf/werf test/e2e/converge/_fixtures/complex/state0.
const (
	werfUnitKey    = "11ac8312520b5ff037bae386ea2e8a07"
	werfFixtureKey = "bc3458408a5687e60b9417adb84e4ad0"
)

func mustKey(t *testing.T, s string) Key {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fixedRand makes IVs and nonces deterministic for the duration of a test.
func fixedRand(t *testing.T, b []byte) {
	t.Helper()
	old := randReader
	randReader = bytes.NewReader(b)
	t.Cleanup(func() { randReader = old })
}

func seq(from byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = from + byte(i)
	}
	return b
}

// TestWerfVectors decrypts values that werf itself wrote, copied from werf's repository.
func TestWerfVectors(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"werf unit test", werfUnitKey, "10000f13a718d019612ab8ad30d9bec8e2c09df0f2d168c179bef954e78371bf6a5a", "flant"},
		{"e2e secret-values.yaml", werfFixtureKey, "1000a493a30a9787a7785a6226baefef32a8d54724f6504ef07202557d5cb4d61a7f11fef08d52f3d9e52003be6e492587ef", "secretOptionValue"},
		{"e2e secret-values-extra.yaml", werfFixtureKey, "1000dc58aec55b8ce919d24fd1a9c5435f983d9a39f1fba0971d2452ae30d03788dffd4ff2d179b426e62badec66c12e2f7d", "added_via_secret_values_extra"},
		{"e2e secret/secret-config.txt", werfFixtureKey, "100052fb0fa1cc8ef1cb123be089cdb853cc153772691b8fb743d612a7b64d65614d4d8745250752564941227eb8d7161523\n", "secretConfigContent\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f := FormatOf([]byte(tt.value)); f != FormatWerf {
				t.Fatalf("FormatOf = %s", f)
			}
			got, err := DecryptValue(tt.value, mustKey(t, tt.key))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWerfHandBuilt builds werf values following the format description with the standard
// library only (not with encryptWerf), then decrypts them; and checks encryptWerf against a
// vector whose ciphertext came from `openssl enc -aes-128-cbc`.
func TestWerfHandBuilt(t *testing.T) {
	iv := seq(0, 16)
	for _, keyHex := range []string{werfUnitKey, strings.Repeat("ab", 24), strings.Repeat("0f", 32)} {
		for _, plain := range []string{"", "x", "exactly 16 bytes", "a longer value\nwith two lines\n"} {
			t.Run(fmt.Sprintf("%d/%q", len(keyHex)*4, plain), func(t *testing.T) {
				raw, _ := hex.DecodeString(keyHex)
				block, _ := aes.NewCipher(raw)
				pad := 16 - len(plain)%16
				body := append([]byte(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
				cipher.NewCBCEncrypter(block, iv).CryptBlocks(body, body)
				value := hex.EncodeToString(append(append([]byte{16, 0}, iv...), body...))
				if !strings.HasPrefix(value, "1000") {
					t.Fatalf("hand-built value %q does not start with 1000", value)
				}
				got, err := DecryptValue(value, mustKey(t, keyHex))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != plain {
					t.Errorf("got %q, want %q", got, plain)
				}
				fixedRand(t, iv)
				enc, err := EncryptValue([]byte(plain), mustKey(t, keyHex), FormatWerf)
				if err != nil {
					t.Fatal(err)
				}
				if enc != value {
					t.Errorf("EncryptValue = %s, want %s", enc, value)
				}
			})
		}
	}

	// printf 'sealane werf vector\n' | openssl enc -aes-128-cbc -K 11ac...8a07 -iv 0001...0e0f
	const want = "1000" + "000102030405060708090a0b0c0d0e0f" + "363426019e69ee17df5bf924f43f81a465ca2c9528253c8f8adeb437189ca234"
	fixedRand(t, iv)
	got, err := EncryptValue([]byte("sealane werf vector\n"), mustKey(t, werfUnitKey), FormatWerf)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("werf vector:\n got %s\nwant %s", got, want)
	}
}

// TestV2Vector pins the v2 format. The expected value was computed independently with
// Python's cryptography package (HKDF-SHA256 and AESGCM).
func TestV2Vector(t *testing.T) {
	const want = "sealane:v2:LK75dCAhIiMkJSYnKCkqKwrWI7flxu29jut3ydgMq7i-dr2kLr4i-uYYPlMCRAdTLA8"
	k := mustKey(t, werfUnitKey)
	if k.ID() != "2caef974" {
		t.Errorf("key ID = %s", k.ID())
	}
	fixedRand(t, seq(0x20, 12))
	got, err := EncryptValue([]byte("sealane v2 vector\n"), k, FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	plain, err := DecryptValue(want, k)
	if err != nil || string(plain) != "sealane v2 vector\n" {
		t.Errorf("DecryptValue = %q, %v", plain, err)
	}
}

// TestWerfGCMVector reads werf/common-go's AES-GCM format (vector made with Python's AESGCM).
func TestWerfGCMVector(t *testing.T) {
	const v = "0200202122232425262728292a2b66e3eebb32842b0a8f38c35d53d2f830793bf2527022b698860cf5ff1fe135"
	if f := FormatOf([]byte(v)); f != FormatWerfGCM {
		t.Fatalf("FormatOf = %s", f)
	}
	got, err := DecryptValue(v, mustKey(t, werfUnitKey))
	if err != nil || string(got) != "werf gcm vector" {
		t.Fatalf("DecryptValue = %q, %v", got, err)
	}
	_, err = DecryptValue(v, mustKey(t, werfFixtureKey))
	if !errors.Is(err, ErrKeyMismatch) || !errors.Is(err, ErrModified) {
		t.Errorf("wrong key: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	plains := [][]byte{
		{}, []byte("a"), []byte("15 bytes long.."), []byte("exactly 16 bytes"), []byte("seventeen bytes!!"),
		[]byte("multi\nline\n\n"), []byte("ünïcödé ✓"), {0, 1, 2, 0xff, 0xfe}, bytes.Repeat([]byte("z"), 5000),
	}
	for _, keyHex := range []string{strings.Repeat("1", 32), strings.Repeat("2", 48), strings.Repeat("3", 64)} {
		k := mustKey(t, keyHex)
		for _, f := range []Format{FormatV2, FormatWerf, ""} {
			for _, p := range plains {
				v, err := EncryptValue(p, k, f)
				if err != nil {
					t.Fatal(err)
				}
				wantFormat := f
				if f == "" {
					wantFormat = FormatV2
				}
				if got := FormatOf([]byte(v)); got != wantFormat {
					t.Errorf("FormatOf(%s value) = %s", wantFormat, got)
				}
				got, err := DecryptValue(v, k)
				if err != nil {
					t.Fatalf("AES-%d %s %q: %v", k.Bits(), f, p, err)
				}
				if !bytes.Equal(got, p) {
					t.Errorf("AES-%d %s: got %q, want %q", k.Bits(), f, got, p)
				}
			}
		}
	}
}

func TestWrongKey(t *testing.T) {
	right, wrong := mustKey(t, werfUnitKey), mustKey(t, werfFixtureKey)
	fixedRand(t, seq(0, 16+12))
	werfValue, _ := EncryptValue([]byte("db-password"), right, FormatWerf)
	v2Value, _ := EncryptValue([]byte("db-password"), right, FormatV2)
	for _, v := range []string{werfValue, v2Value, "10000f13a718d019612ab8ad30d9bec8e2c09df0f2d168c179bef954e78371bf6a5a"} {
		_, err := DecryptValue(v, wrong)
		if !errors.Is(err, ErrKeyMismatch) {
			t.Errorf("%s: got %v, want a key mismatch", FormatOf([]byte(v)), err)
		}
		if err != nil && strings.Contains(err.Error(), "db-password") {
			t.Errorf("error shows the plaintext: %v", err)
		}
	}
	_, err := DecryptValue(v2Value, wrong)
	if err == nil || !strings.Contains(err.Error(), "encrypted with key "+right.ID()+", this key is "+wrong.ID()) {
		t.Errorf("v2 wrong key error should name both key IDs: %v", err)
	}
}

func TestTamperedV2(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	v, err := EncryptValue([]byte("postgres://user:hunter2@db/app"), k, FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := v2Encoding.DecodeString(strings.TrimPrefix(v, V2Prefix))
	for i := range raw {
		for bit := range 8 {
			b := bytes.Clone(raw)
			b[i] ^= 1 << bit
			_, err := DecryptValue(V2Prefix+v2Encoding.EncodeToString(b), k)
			switch {
			case i < keyIDSize && !errors.Is(err, ErrKeyMismatch):
				t.Fatalf("byte %d bit %d: got %v, want a key mismatch", i, bit, err)
			case i >= keyIDSize && !errors.Is(err, ErrModified):
				t.Fatalf("byte %d bit %d: got %v, want an authentication failure", i, bit, err)
			}
		}
	}
	// Cutting the value short is caught too.
	if _, err := DecryptValue(v[:len(v)-4], k); !errors.Is(err, ErrModified) {
		t.Errorf("truncated: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	k := mustKey(t, werfUnitKey)
	tests := []struct {
		value string
		want  error
	}{
		{"sealane:v2:***", ErrMalformed},
		{"sealane:v2:AAAA", ErrMalformed},
		{"1000" + strings.Repeat("00", 40), ErrMalformed}, // 42 bytes: not whole blocks
		{"just a password", ErrNotEncrypted},
		{"1000abc", ErrNotEncrypted},
	}
	for _, tt := range tests {
		if _, err := DecryptValue(tt.value, k); !errors.Is(err, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.value, err, tt.want)
		}
	}
	if _, err := DecryptValue("sealane:v2:x", Key{}); !errors.Is(err, ErrNoKey) {
		t.Errorf("zero key: %v", err)
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{"", FormatPlain},
		{"hello", FormatPlain},
		{"sealane:v2:abc", FormatV2},
		{"  sealane:v2:abc\n", FormatV2},
		{"10000f13a718d019612ab8ad30d9bec8e2c09df0f2d168c179bef954e78371bf6a5a", FormatWerf},
		{"10000f13a718d019612ab8ad30d9bec8e2c09df0f2d168c179bef954e78371bf6a5a\n", FormatWerf},
		{"10000f13a718d019612ab8ad30d9bec8e2c09df0f2d168c179bef954e78371bf6a5", FormatPlain}, // odd
		{"1000abcd", FormatPlain},
		{"0200" + strings.Repeat("ab", 28), FormatWerfGCM},
		{"0300" + strings.Repeat("ab", 40), FormatPlain},
	}
	for _, tt := range tests {
		if got := FormatOf([]byte(tt.in)); got != tt.want {
			t.Errorf("FormatOf(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatV2, "v2": FormatV2, "werf": FormatWerf, "V1": FormatWerf} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %s, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("werf-gcm"); err == nil {
		t.Error("werf-gcm is read only and must not be accepted for writing")
	}
	if _, err := EncryptValue([]byte("x"), mustKey(t, werfUnitKey), FormatWerfGCM); err == nil {
		t.Error("EncryptValue wrote werf-gcm")
	}
}
