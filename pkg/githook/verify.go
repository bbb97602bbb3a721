package githook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The signature and token headers.
const (
	githubSignatureHeader    = "X-Hub-Signature-256"
	bitbucketSignatureHeader = "X-Hub-Signature"
	genericSignatureHeader   = "X-Signature"
	gitlabTokenHeader        = "X-Gitlab-Token"
	standardIDHeader         = "webhook-id"
	standardTimestampHeader  = "webhook-timestamp"
	standardSignatureHeader  = "webhook-signature"
)

// hexSignaturePrefix starts a hex HMAC-SHA256 signature header value; no other hash is accepted.
const hexSignaturePrefix = "sha256="

// standardTolerance is how far a Standard Webhooks timestamp may be from Request.Now, either way.
const standardTolerance = 5 * time.Minute

// maxStandardSignatures bounds the v1 signatures of one webhook-signature header tried.
const maxStandardSignatures = 8

// verifyHexHMAC checks a header sent once as "sha256=" and 64 hex digits against the
// HMAC-SHA256 of body under each plain secret.
func verifyHexHMAC(h http.Header, name string, body []byte, secrets []Secret) bool {
	encoded, ok := strings.CutPrefix(singleHeader(h, name), hexSignaturePrefix)
	if !ok || len(encoded) != 2*sha256.Size {
		return false
	}
	sig, err := hex.DecodeString(encoded)
	if err != nil {
		return false
	}
	matched := false
	for _, key := range keys(secrets, false) {
		if hmac.Equal(hmacSHA256(key, body), sig) {
			matched = true
		}
	}
	return matched
}

// verifyGitLab checks a Standard Webhooks signature when a standard secret is configured and
// the request carries one; otherwise the X-Gitlab-Token against the plain secrets.
func verifyGitLab(req Request, secrets []Secret) bool {
	if gitlabStandard(req, secrets) {
		return verifyStandard(req, secrets)
	}
	token := singleHeader(req.Header, gitlabTokenHeader)
	if token == "" {
		return false
	}
	// Hashing both sides first makes the comparison length-independent.
	got := sha256.Sum256([]byte(token))
	matched := false
	for _, key := range keys(secrets, false) {
		want := sha256.Sum256(key)
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			matched = true
		}
	}
	return matched
}

// verifyStandard checks the Standard Webhooks headers: a fresh timestamp and a v1 signature
// made with one of the standard secrets over id.timestamp.body.
func verifyStandard(req Request, secrets []Secret) bool {
	id := singleHeader(req.Header, standardIDHeader)
	timestamp := singleHeader(req.Header, standardTimestampHeader)
	if id == "" || !timestampFresh(timestamp, req.Now) {
		return false
	}
	candidates := standardSignatures(singleHeader(req.Header, standardSignatureHeader))
	matched := false
	for _, key := range keys(secrets, true) {
		mac := standardMAC(key, id, timestamp, req.Body)
		for _, c := range candidates {
			if hmac.Equal(mac, c) {
				matched = true
			}
		}
	}
	return matched
}

// standardSignatures decodes the v1 entries of a webhook-signature value, skipping other
// versions and entries that are not a base64 SHA-256 MAC.
func standardSignatures(header string) [][]byte {
	var sigs [][]byte
	for _, entry := range strings.Fields(header) {
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil || len(sig) != sha256.Size {
			continue
		}
		sigs = append(sigs, sig)
		if len(sigs) == maxStandardSignatures {
			break
		}
	}
	return sigs
}

// timestampFresh reports whether a webhook-timestamp (decimal unix seconds) is within
// standardTolerance of now.
func timestampFresh(timestamp string, now time.Time) bool {
	if timestamp == "" || len(timestamp) > 12 {
		return false
	}
	for _, c := range timestamp {
		if c < '0' || c > '9' {
			return false
		}
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	skew := now.Unix() - seconds
	limit := int64(standardTolerance / time.Second)
	return skew <= limit && skew >= -limit
}

// verifyCloudEvent checks the Standard Webhooks signature and that the signed webhook-id is the
// CloudEvent's id, so a signed event cannot be replayed under another id.
func verifyCloudEvent(req Request, secrets []Secret) bool {
	if !verifyStandard(req, secrets) {
		return false
	}
	id, ok := cloudEventID(req)
	return ok && id == singleHeader(req.Header, standardIDHeader)
}

func hmacSHA256(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// standardMAC is the Standard Webhooks HMAC-SHA256 of id.timestamp.body.
func standardMAC(key []byte, id, timestamp string, body []byte) []byte {
	dot := []byte{'.'}
	return hmacSHA256(key, []byte(id), dot, []byte(timestamp), dot, body)
}
