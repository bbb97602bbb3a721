package githook

import (
	"crypto/sha256"
	"strings"
)

// ContentDigest is the SHA-256 of what a delivery's signature covers, so that a captured
// delivery replayed under a fresh (unsigned) delivery id is known as the same delivery: the
// body; for Standard Webhooks (standard-webhooks, cloudevents, and GitLab with a signing token,
// decided as Verify decides it) also the signed webhook-id, but not the timestamp, which a
// sender's retry changes. The provider names the digest, so receivers of different types never
// share one.
func ContentDigest(provider string, req Request, secrets []Secret) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(provider))
	h.Write([]byte{0})
	if standardSigned(provider, req, secrets) {
		h.Write([]byte("webhook-id\x00" + singleHeader(req.Header, standardIDHeader) + "\x00"))
	}
	h.Write(req.Body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// standardSigned reports whether Verify checks the request's Standard Webhooks signature.
func standardSigned(provider string, req Request, secrets []Secret) bool {
	switch provider {
	case StandardWebhooks, CloudEvents:
		return true
	case GitLab:
		return gitlabStandard(req, secrets)
	}
	return false
}

// gitlabStandard reports whether a GitLab request is checked as a Standard Webhooks
// signature (a signing token configured and the request signed) rather than by its token.
func gitlabStandard(req Request, secrets []Secret) bool {
	return len(keys(secrets, true)) > 0 && strings.TrimSpace(req.Header.Get(standardSignatureHeader)) != ""
}
