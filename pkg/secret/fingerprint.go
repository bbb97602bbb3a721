package secret

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
)

// fingerprintInfo is the HKDF info string of Fingerprint.
const fingerprintInfo = "sealane secret key fingerprint v1"

// Fingerprint identifies the key for caches keyed on what it decrypts (the renderer's render
// cache): 128 bits derived one-way from the key, so two keys practically never share one and
// the key cannot be recovered from it. ID's 32 bits are too few for that. The zero Key's
// fingerprint is "".
func (k Key) Fingerprint() string {
	if k.IsZero() {
		return ""
	}
	fp, err := hkdf.Key(sha256.New, k.raw, nil, fingerprintInfo, 16)
	if err != nil { // only for a length HKDF cannot give; 16 bytes always can
		panic("secret: derive key fingerprint: " + err.Error())
	}
	return hex.EncodeToString(fp)
}
