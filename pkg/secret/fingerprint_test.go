package secret

import "testing"

func TestFingerprint(t *testing.T) {
	a, err := ParseKey("00112233445566778899aabbccddeeff")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseKey("00112233445566778899aabbccddeefe")
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint() == "" || len(a.Fingerprint()) != 32 {
		t.Errorf("fingerprint %q, want 32 hex characters", a.Fingerprint())
	}
	if a.Fingerprint() != a.Fingerprint() || a.Fingerprint() == b.Fingerprint() {
		t.Errorf("fingerprints %q, %q: want stable and distinct per key", a.Fingerprint(), b.Fingerprint())
	}
	if a.Fingerprint() == "00112233445566778899aabbccddeeff" || (Key{}).Fingerprint() != "" {
		t.Error("the fingerprint must not be the key, and the zero key has none")
	}
}
