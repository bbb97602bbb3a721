package secret

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Format is the encryption format of a value or a file.
type Format string

// The formats. FormatWerf and FormatV2 are written; FormatWerfGCM is only read. FormatPlain
// and FormatMixed describe files and values rather than encryption formats.
const (
	FormatPlain   Format = "plain"
	FormatWerf    Format = "werf"
	FormatV2      Format = "v2"
	FormatWerfGCM Format = "werf-gcm"
	FormatMixed   Format = "mixed"
)

// V2Prefix starts every v2 value. It cannot be confused with a werf value, which is hex.
const V2Prefix = "sealane:v2:"

const (
	werfVersionCBC = 16 // uint16LE at the start of a werf value: "1000" in hex
	werfVersionGCM = 2  // uint16LE at the start of a werf-gcm value: "0200" in hex
	versionSize    = 2
	gcmNonceSize   = 12
	gcmTagSize     = 16
	keyIDSize      = 4
)

// randReader is the source of IVs and nonces; tests replace it to get fixed vectors.
var randReader io.Reader = rand.Reader

var v2Encoding = base64.RawURLEncoding

// ParseFormat parses a --format value: "v2" (the default for "") or "werf" (alias "v1").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "v2", "sealane":
		return FormatV2, nil
	case "werf", "v1", "legacy":
		return FormatWerf, nil
	}
	return "", fmt.Errorf("unknown secret format %q: use v2 (authenticated, default) or werf (werf's AES-CBC format)", s)
}

// Description is a short human description of the format.
func (f Format) Description() string {
	switch f {
	case FormatWerf:
		return "werf format (AES-CBC, not authenticated)"
	case FormatV2:
		return "sealane v2 format (AES-GCM, authenticated)"
	case FormatWerfGCM:
		return "werf AES-GCM format (authenticated, read only)"
	case FormatMixed:
		return "mixed formats"
	case FormatPlain:
		return "not encrypted"
	}
	return string(f)
}

// FormatOf tells the format of one encrypted value or of a whole secret file; surrounding
// whitespace is ignored. Anything that is not recognisably encrypted is FormatPlain.
func FormatOf(value []byte) Format {
	v := bytes.TrimSpace(value)
	if bytes.HasPrefix(v, []byte(V2Prefix)) {
		return FormatV2
	}
	if len(v)%2 != 0 || !isHex(v) {
		return FormatPlain
	}
	switch {
	case bytes.HasPrefix(v, []byte("1000")) && len(v) >= 2*(versionSize+2*aes.BlockSize):
		return FormatWerf
	case bytes.HasPrefix(v, []byte("0200")) && len(v) >= 2*(versionSize+gcmNonceSize+gcmTagSize):
		return FormatWerfGCM
	}
	return FormatPlain
}

// EncryptValue encrypts plaintext into one value in the given format (v2 for "").
func EncryptValue(plaintext []byte, key Key, format Format) (string, error) {
	if key.IsZero() {
		return "", ErrNoKey
	}
	switch format {
	case "", FormatV2:
		return encryptV2(plaintext, key)
	case FormatWerf:
		return encryptWerf(plaintext, key)
	}
	return "", fmt.Errorf("cannot write secrets in the %q format: use v2 or werf", format)
}

// DecryptValue decrypts one value of any readable format. An empty value decrypts to empty
// plaintext, as in werf. The result is not checked to be text, since secret files may be binary.
func DecryptValue(value string, key Key) ([]byte, error) {
	if key.IsZero() {
		return nil, ErrNoKey
	}
	v := strings.TrimSpace(value)
	if v == "" {
		return []byte{}, nil
	}
	switch FormatOf([]byte(v)) {
	case FormatV2:
		return decryptV2(v, key)
	case FormatWerf:
		return decryptWerf(v, key)
	case FormatWerfGCM:
		return decryptWerfGCM(v, key)
	}
	return nil, fmt.Errorf("%w (expected a werf value, hex starting with 1000, or a %s value)", ErrNotEncrypted, V2Prefix)
}

// encryptWerf writes hex(uint16LE(16) || IV || AES-CBC(PKCS#7(plaintext))).
func encryptWerf(plaintext []byte, key Key) (string, error) {
	block, err := aes.NewCipher(key.raw)
	if err != nil {
		return "", fmt.Errorf("werf format: %w", err)
	}
	padLen := aes.BlockSize - len(plaintext)%aes.BlockSize
	buf := make([]byte, versionSize+aes.BlockSize+len(plaintext)+padLen)
	binary.LittleEndian.PutUint16(buf, werfVersionCBC)
	iv := buf[versionSize : versionSize+aes.BlockSize]
	if _, err := io.ReadFull(randReader, iv); err != nil {
		return "", fmt.Errorf("werf format: read random IV: %w", err)
	}
	body := buf[versionSize+aes.BlockSize:]
	copy(body, plaintext)
	for i := len(plaintext); i < len(body); i++ {
		body[i] = byte(padLen)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(body, body)
	return hex.EncodeToString(buf), nil
}

func decryptWerf(value string, key Key) ([]byte, error) {
	data, err := hex.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("%w: werf value is not hex", ErrMalformed)
	}
	body := data[versionSize+aes.BlockSize:]
	if len(body) == 0 || len(body)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: werf value has %d bytes, not a whole number of AES blocks", ErrMalformed, len(data))
	}
	if binary.LittleEndian.Uint16(data) != werfVersionCBC {
		return nil, fmt.Errorf("%w: werf value does not start with 1000", ErrMalformed)
	}
	block, err := aes.NewCipher(key.raw)
	if err != nil {
		return nil, fmt.Errorf("werf format: %w", err)
	}
	out := make([]byte, len(body))
	cipher.NewCBCDecrypter(block, data[versionSize:versionSize+aes.BlockSize]).CryptBlocks(out, body)
	n := int(out[len(out)-1])
	if n == 0 || n > aes.BlockSize {
		return nil, fmt.Errorf("%w (invalid padding after decryption; werf-format values carry no integrity check, so the value may also have been modified)", ErrKeyMismatch)
	}
	bad := byte(0)
	for _, b := range out[len(out)-n:] {
		bad |= b ^ byte(n)
	}
	if bad != 0 {
		return nil, fmt.Errorf("%w (invalid padding after decryption; werf-format values carry no integrity check, so the value may also have been modified)", ErrKeyMismatch)
	}
	return out[:len(out)-n], nil
}

// encryptV2 writes V2Prefix + base64url(keyID || nonce || AES-GCM(k2, nonce, plaintext, aad)).
func encryptV2(plaintext []byte, key Key) (string, error) {
	aead, err := newGCM(key.v2)
	if err != nil {
		return "", fmt.Errorf("v2 format: %w", err)
	}
	buf := make([]byte, keyIDSize+gcmNonceSize, keyIDSize+gcmNonceSize+len(plaintext)+gcmTagSize)
	copy(buf, key.id[:])
	nonce := buf[keyIDSize:]
	if _, err := io.ReadFull(randReader, nonce); err != nil {
		return "", fmt.Errorf("v2 format: read random nonce: %w", err)
	}
	buf = aead.Seal(buf, nonce, plaintext, v2AAD(key.id[:]))
	return V2Prefix + v2Encoding.EncodeToString(buf), nil
}

func decryptV2(value string, key Key) ([]byte, error) {
	data, err := v2Encoding.DecodeString(strings.TrimPrefix(value, V2Prefix))
	if err != nil {
		return nil, fmt.Errorf("%w: v2 value is not unpadded URL-safe base64", ErrMalformed)
	}
	if len(data) < keyIDSize+gcmNonceSize+gcmTagSize {
		return nil, fmt.Errorf("%w: v2 value is too short (%d bytes)", ErrMalformed, len(data))
	}
	id := data[:keyIDSize]
	if !bytes.Equal(id, key.id[:]) {
		return nil, fmt.Errorf("%w: the value was encrypted with key %x, this key is %s", ErrKeyMismatch, id, key.ID())
	}
	aead, err := newGCM(key.v2)
	if err != nil {
		return nil, fmt.Errorf("v2 format: %w", err)
	}
	nonce := data[keyIDSize : keyIDSize+gcmNonceSize]
	out, err := aead.Open(nil, nonce, data[keyIDSize+gcmNonceSize:], v2AAD(id))
	if err != nil {
		return nil, ErrModified
	}
	return out, nil
}

func decryptWerfGCM(value string, key Key) ([]byte, error) {
	data, err := hex.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("%w: werf-gcm value is not hex", ErrMalformed)
	}
	aead, err := newGCM(key.raw)
	if err != nil {
		return nil, fmt.Errorf("werf-gcm format: %w", err)
	}
	nonce := data[versionSize : versionSize+gcmNonceSize]
	out, err := aead.Open(nil, nonce, data[versionSize+gcmNonceSize:], nil)
	if err != nil {
		return nil, fmt.Errorf("%w, or %w", ErrKeyMismatch, ErrModified)
	}
	return out, nil
}

func newGCM(k []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func v2AAD(id []byte) []byte {
	return append([]byte(V2Prefix), id...)
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !isHexDigit(rune(c)) {
			return false
		}
	}
	return true
}
