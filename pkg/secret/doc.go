// Package secret encrypts and decrypts secret values files and secret files in a way that is
// compatible with werf and nelm, and adds an authenticated format.
//
// # Key
//
// A secret key is 32, 48 or 64 hex characters (AES-128, AES-192 or AES-256), the same keys
// werf uses. LoadKey looks for it in --secret-key, $SEALANE_SECRET_KEY, $WERF_SECRET_KEY,
// ./.werf_secret_key and ~/.werf/global_secret_key, in that order.
//
// # Formats
//
// An encrypted value is a single line of text. Two formats are written and three are read:
//
//	werf (v1)   hex( uint16LE(16) || IV[16] || AES-CBC(key, IV, PKCS#7(plaintext)) )
//	v2          "sealane:v2:" base64url( keyID[4] || nonce[12] || AES-GCM(k2, nonce, plaintext, aad) )
//	werf-gcm    hex( uint16LE(2) || nonce[12] || AES-GCM(key, nonce, plaintext) )   read only
//
// The werf format is werf's legacy format: values start with "1000". It has no integrity check,
// so a wrong key is only noticed through invalid PKCS#7 padding (and, for YAML values, through a
// result that is not UTF-8 text), and modified data can decrypt to garbage. Write it only for
// interoperability with werf (--format werf).
//
// The v2 format is the default. k2 is HKDF-SHA256(key, info "sealane secret v2 aes-gcm") with the
// length of the key, keyID is the first 4 bytes of HKDF-SHA256(key, info "sealane secret v2 key
// id"), and aad is "sealane:v2:" || keyID. The base64 alphabet is the URL-safe one without
// padding, so a value needs no quoting in YAML. The key ID tells a wrong key ("encrypted with key
// 1a2b3c4d, this key is 5e6f7a8b") apart from modified data (authentication failure). A value is
// bound to nothing but the key: it may be copied between files and between YAML paths.
//
// werf-gcm is the authenticated format that werf/common-go started to write; it is decrypted but
// never written.
//
// # Values files
//
// Only YAML leaf scalars are encrypted; keys, order, comments, anchors and document structure are
// kept. Null leaves stay as they are, and an empty string leaf decrypts to an empty string, as in
// werf. In the werf format every leaf becomes a string on decryption (werf's behaviour), so
// `replicas: 3` comes back as `replicas: "3"`. In the v2 format the YAML tag of a non-string leaf
// is kept inside the encrypted payload (plaintext "\x00" tag "\x00" value), so numbers, booleans
// and custom tags survive a round trip; a string leaf's plaintext is the string itself.
//
// # Files
//
// A file under a chart's secret/ directory is encrypted as one value over its whole content
// (trailing newline included), followed by a newline; decryption ignores surrounding whitespace.
//
// Errors name the file and, for values, the YAML path and line; they never contain plaintext or
// key material.
package secret
