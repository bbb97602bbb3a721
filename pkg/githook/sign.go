package githook

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"
)

// SignGitHub returns the X-Hub-Signature-256 value a GitHub (or Gitea, Forgejo) sender puts on
// body: "sha256=" and the hex HMAC-SHA256 of body keyed with secret.
func SignGitHub(secret, body []byte) string { return SignHMAC(secret, body) }

// SignHMAC returns "sha256=" and the hex HMAC-SHA256 of body keyed with secret: the value a
// Bitbucket sender puts in X-Hub-Signature and a generic-hmac sender in X-Signature.
func SignHMAC(secret, body []byte) string {
	return hexSignaturePrefix + hex.EncodeToString(hmacSHA256(secret, body))
}

// SignStandard returns the webhook-signature value ("v1," and the base64 HMAC-SHA256 of
// id.timestamp.body) a Standard Webhooks sender puts on body sent with webhook-id id and
// webhook-timestamp ts (unix seconds); key is the decoded secret, without whsec_.
func SignStandard(key []byte, id string, ts time.Time, body []byte) string {
	mac := standardMAC(key, id, strconv.FormatInt(ts.Unix(), 10), body)
	return "v1," + base64.StdEncoding.EncodeToString(mac)
}
