package githook

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"
)

// The providers, also the receiver `type` values in configuration.
const (
	// GitHub is GitHub, Gitea and Forgejo: X-Hub-Signature-256 HMAC-SHA256.
	GitHub = "github"
	// GitLab is GitLab: a Standard Webhooks signature (signing token) when a whsec_ secret is
	// configured and the request carries webhook-signature, which then alone decides; otherwise
	// the X-Gitlab-Token secret token.
	GitLab = "gitlab"
	// Bitbucket is Bitbucket Cloud and Data Center: X-Hub-Signature HMAC-SHA256.
	Bitbucket = "bitbucket"
	// GenericHMAC is sealane's generic push payload signed in X-Signature with HMAC-SHA256.
	GenericHMAC = "generic-hmac"
	// StandardWebhooks is sealane's generic push payload signed the Standard Webhooks way.
	StandardWebhooks = "standard-webhooks"
	// CloudEvents is a CloudEvent (binary or structured mode) carrying the generic push payload,
	// signed the Standard Webhooks way.
	CloudEvents = "cloudevents"
)

// ErrUnauthorized is wrapped by every verification failure; the error does not say which part
// of the request failed.
var ErrUnauthorized = errors.New("signature or token not valid")

// ErrMalformed is wrapped by every parse failure.
var ErrMalformed = errors.New("malformed payload")

// Known reports whether provider is one of the providers this package handles.
func Known(provider string) bool {
	switch provider {
	case GitHub, GitLab, Bitbucket, GenericHMAC, StandardWebhooks, CloudEvents:
		return true
	}
	return false
}

// Request is one request as a receiver got it.
type Request struct {
	// Header is the request's header.
	Header http.Header
	// Body is the raw body exactly as received: signatures are over these bytes.
	Body []byte
	// Now is when the request arrived; Standard Webhooks timestamps must be within five minutes
	// of it.
	Now time.Time
}

// Verify checks the request's signature or token against each secret (one, or two during a
// rotation; any match is accepted) in constant time, and returns an error wrapping
// ErrUnauthorized when none matches or the request is not signed the provider's way.
func Verify(provider string, req Request, secrets []Secret) error {
	var ok bool
	switch provider {
	case GitHub:
		ok = verifyHexHMAC(req.Header, githubSignatureHeader, req.Body, secrets)
	case Bitbucket:
		ok = verifyHexHMAC(req.Header, bitbucketSignatureHeader, req.Body, secrets)
	case GenericHMAC:
		ok = verifyHexHMAC(req.Header, genericSignatureHeader, req.Body, secrets)
	case GitLab:
		ok = verifyGitLab(req, secrets)
	case StandardWebhooks:
		ok = verifyStandard(req, secrets)
	case CloudEvents:
		ok = verifyCloudEvent(req, secrets)
	default:
		return fmt.Errorf("verify delivery: unknown provider %q: %w", provider, ErrUnauthorized)
	}
	if !ok {
		return fmt.Errorf("verify %s delivery: %w", provider, ErrUnauthorized)
	}
	return nil
}

// Parse reads a verified request into a Delivery; errors wrap ErrMalformed. A push of a ref
// elsewhere under refs/ (refs/notes/..., refs/pull/...) is a KindOther push, a ref not under
// refs/ or a pushed commit that is not a 40 or 64 hex digit sha is malformed. It never panics,
// whatever the header and body.
func Parse(provider string, req Request) (Delivery, error) {
	var (
		d   Delivery
		err error
	)
	switch provider {
	case GitHub:
		d, err = parseGitHub(req)
	case GitLab:
		d, err = parseGitLab(req)
	case Bitbucket:
		d, err = parseBitbucket(req)
	case GenericHMAC:
		d, err = parseGeneric(Delivery{ID: req.Header.Get(genericDeliveryHeader)}, req.Body)
	case StandardWebhooks:
		d, err = parseGeneric(Delivery{ID: req.Header.Get(standardIDHeader)}, req.Body)
	case CloudEvents:
		d, err = parseCloudEvent(req)
	default:
		return Delivery{}, fmt.Errorf("parse delivery: unknown provider %q: %w", provider, ErrMalformed)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("parse %s delivery: %v: %w", provider, err, ErrMalformed)
	}
	return d, nil
}

// AcceptsContentType reports whether provider's deliveries may come with contentType:
// application/json (parameters such as charset allowed) for all, and for cloudevents also
// application/cloudevents+json (structured mode). It is false for an unknown provider.
func AcceptsContentType(provider, contentType string) bool {
	if !Known(provider) {
		return false
	}
	mediaType := mediaTypeOf(contentType)
	return mediaType == "application/json" ||
		provider == CloudEvents && mediaType == cloudEventsMediaType
}

// mediaTypeOf is the lower-cased media type of a Content-Type value, "" when it is not valid.
func mediaTypeOf(contentType string) string {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mediaType
}

// firstHeader is the first non-empty value among the named headers.
func firstHeader(h http.Header, names ...string) string {
	for _, name := range names {
		if v := h.Get(name); v != "" {
			return v
		}
	}
	return ""
}

// singleHeader is the value of a header sent exactly once, "" otherwise.
func singleHeader(h http.Header, name string) string {
	values := h.Values(name)
	if len(values) != 1 {
		return ""
	}
	return values[0]
}
