package stagekit

import (
	"time"

	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/gitsource"
)

// DefaultMaxChartBytes bounds what the renderer downloads for one remote chart (its
// dependencies included) when Admission.MaxChartBytes is zero.
const DefaultMaxChartBytes = 100 << 20

// DefaultFetchTimeout bounds fetching a remote chart and its dependencies when
// Admission.FetchTimeout is zero.
const DefaultFetchTimeout = 2 * time.Minute

// Admission is the renderer's policy for the requests it takes from the bus (see pkg/admission):
// which chart sources it fetches, how much and for how long, and whose requests it accepts.
// The zero value is a shared service's strictest: only charts uploaded with the request, no
// local paths, unsigned requests accepted (no client keys) and their requestedBy as claimed.
// The renderer checks requests against it (renderer/admission.go).
type Admission struct {
	// Trusted fetches any chart source a request names, local paths included: the CLI's
	// embedded pipeline, whose only requester is the user running it, with their own files.
	Trusted bool
	// Sources are the remote sources (Helm repositories, OCI repositories, archive URLs) a
	// request may name besides uploaded charts (--allow-chart-source).
	Sources admission.SourcePolicy
	// Verifier checks request signatures against the client keys (--client-keys); without
	// keys nothing is checked.
	Verifier admission.Verifier
	// MaxChartBytes bounds one remote chart's downloads (0: DefaultMaxChartBytes);
	// FetchTimeout their time (0: DefaultFetchTimeout).
	MaxChartBytes int64
	FetchTimeout  time.Duration
	// Git is how git charts are fetched (a webhook's push): the cache of bare clones and the
	// credentials (--git-cache-dir, --git-credentials). Its Timeout 0 is FetchTimeout.
	Git gitsource.Options
}

// TrustedAdmission is the Admission of the CLI's embedded pipeline: every chart source is fetched.
func TrustedAdmission() Admission { return Admission{Trusted: true} }

// GitOptions are the gitsource options of what is fetched from git under the policy i (a
// git chart, a rollout file): the clone cache (default gitsource.DefaultCacheDir), the
// credentials, FetchTimeout, and the chart source allowlist unless i is Trusted.
func (i Admission) GitOptions() gitsource.Options {
	o := i.Git
	if o.CacheDir == "" {
		o.CacheDir = gitsource.DefaultCacheDir()
	}
	if o.Timeout <= 0 {
		o.Timeout = i.FetchTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultFetchTimeout
	}
	if !i.Trusted {
		o.Allow = i.Sources.Allow // every request and redirect of the fetch, not only the URL
	}
	return o
}
