// Package githook verifies and reads the webhook deliveries of git hosts (GitHub, Gitea and
// Forgejo, GitLab, Bitbucket Cloud and Data Center) and of senders of sealane's generic push
// payload (signed with an HMAC, the Standard Webhooks way, or as a CloudEvent).
//
// A receiver checks the content type with AcceptsContentType, authenticates the request with
// Verify against the secrets configured for it, and only then reads it with Parse. The package
// is pure: no network, no clock (a Request carries the time it arrived), and stdlib crypto with
// constant-time comparisons. Limiting the body size is the caller's job (http.MaxBytesReader).
//
// Errors never carry a secret, a header value or bytes of the body: every verification failure
// wraps ErrUnauthorized and every parse failure wraps ErrMalformed.
package githook
