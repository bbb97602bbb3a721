package serve

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/pipeline"
)

// The environment variables of the renderer's admission policy (AdmissionFlags).
const (
	AllowChartSourceEnv  = "SEALANE_ALLOW_CHART_SOURCE" // comma-separated patterns
	ClientKeysEnv        = "SEALANE_CLIENT_KEYS"        // file
	RequestMaxAgeEnv     = "SEALANE_REQUEST_MAX_AGE"    // duration
	MaxChartSizeEnv      = "SEALANE_MAX_CHART_SIZE"     // quantity, e.g. 100Mi
	ChartFetchTimeoutEnv = "SEALANE_CHART_FETCH_TIMEOUT"
	GitCredentialsEnv    = "SEALANE_GIT_CREDENTIALS" // file
	GitCacheDirEnv       = "SEALANE_GIT_CACHE_DIR"
)

// AdmissionFlags configure what a service's renderer accepts from the bus (pipeline.Admission):
// --allow-chart-source (repeatable), --client-keys, --request-max-age, --max-chart-size,
// --chart-fetch-timeout, each with its environment variable as the default.
type AdmissionFlags struct {
	AllowChartSources []string
	ClientKeys        string
	RequestMaxAge     time.Duration
	MaxChartSize      string
	ChartFetchTimeout time.Duration
	GitCredentials    string
	GitCacheDir       string
}

// AdmissionFlagsFromEnv is the default of every admission flag: its environment variable, else the
// built-in default. A malformed duration in the environment is reported by Admission.
func AdmissionFlagsFromEnv() AdmissionFlags {
	f := AdmissionFlags{ClientKeys: os.Getenv(ClientKeysEnv), MaxChartSize: os.Getenv(MaxChartSizeEnv),
		RequestMaxAge: admission.DefaultMaxAge, ChartFetchTimeout: 2 * time.Minute,
		GitCredentials: os.Getenv(GitCredentialsEnv), GitCacheDir: envOr(GitCacheDirEnv, gitsource.DefaultCacheDir())}
	for _, p := range strings.Split(os.Getenv(AllowChartSourceEnv), ",") {
		if p = strings.TrimSpace(p); p != "" {
			f.AllowChartSources = append(f.AllowChartSources, p)
		}
	}
	if d, err := time.ParseDuration(os.Getenv(RequestMaxAgeEnv)); err == nil {
		f.RequestMaxAge = d
	}
	if d, err := time.ParseDuration(os.Getenv(ChartFetchTimeoutEnv)); err == nil {
		f.ChartFetchTimeout = d
	}
	return f
}

// Usage texts of the admission flags.
const (
	UsageAllowChartSource = "a remote chart source requests may name, as a URL glob (repeatable; default $" + AllowChartSourceEnv +
		", comma-separated): e.g. oci://registry.example.com/charts/* or https://charts.example.com/*; none: only charts uploaded with the request. " +
		"Every URL fetched for a chart (index entries, dependencies, redirects, git) must match it or have a parent that does"
	UsageClientKeys = "YAML file of client name → public nkey(s); when set, the renderer accepts only requests signed by one of them ($" +
		ClientKeysEnv + ")"
	UsageRequestMaxAge     = "how old a signed request may be when the renderer receives it ($" + RequestMaxAgeEnv + ")"
	UsageMaxChartSize      = "size limit of one remote chart's downloads, dependencies included, e.g. 100Mi ($" + MaxChartSizeEnv + "; default 100Mi)"
	UsageChartFetchTimeout = "time limit of one remote chart's downloads ($" + ChartFetchTimeoutEnv + ")"
	UsageGitCredentials    = "YAML file of git credentials by URL prefix (token or SSH key files) for charts in git repositories ($" + GitCredentialsEnv + "; docs/webhooks.md)"
	UsageGitCacheDir       = "directory of the bare clones of chart repositories, fetched incrementally ($" + GitCacheDirEnv + ")"
)

// Register adds the admission flags to fs, with f's values (AdmissionFlagsFromEnv) as defaults; the
// first --allow-chart-source replaces the environment's patterns, more add to them.
func (f *AdmissionFlags) Register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.AllowChartSources, "allow-chart-source", f.AllowChartSources, UsageAllowChartSource)
	fs.StringVar(&f.ClientKeys, "client-keys", f.ClientKeys, UsageClientKeys)
	fs.DurationVar(&f.RequestMaxAge, "request-max-age", f.RequestMaxAge, UsageRequestMaxAge)
	fs.StringVar(&f.MaxChartSize, "max-chart-size", f.MaxChartSize, UsageMaxChartSize)
	fs.DurationVar(&f.ChartFetchTimeout, "chart-fetch-timeout", f.ChartFetchTimeout, UsageChartFetchTimeout)
	fs.StringVar(&f.GitCredentials, "git-credentials", f.GitCredentials, UsageGitCredentials)
	fs.StringVar(&f.GitCacheDir, "git-cache-dir", f.GitCacheDir, UsageGitCacheDir)
}

// Admission turns the flags into the renderer's policy; errors name the flag at fault.
func (f AdmissionFlags) Admission() (pipeline.Admission, error) {
	var in pipeline.Admission
	var err error
	if in.Sources, err = admission.NewSourcePolicy(f.AllowChartSources); err != nil {
		return in, fmt.Errorf("--allow-chart-source: %w", err)
	}
	if f.ClientKeys != "" {
		if in.Verifier.Keys, err = admission.LoadClientKeys(f.ClientKeys); err != nil {
			return in, fmt.Errorf("--client-keys: %w", err)
		}
	}
	if f.RequestMaxAge <= 0 {
		return in, fmt.Errorf("--request-max-age %s: want a positive duration such as 5m", f.RequestMaxAge)
	}
	in.Verifier.MaxAge = f.RequestMaxAge
	if f.ChartFetchTimeout <= 0 {
		return in, fmt.Errorf("--chart-fetch-timeout %s: want a positive duration such as 2m", f.ChartFetchTimeout)
	}
	in.FetchTimeout = f.ChartFetchTimeout
	if f.MaxChartSize != "" {
		q, err := resource.ParseQuantity(f.MaxChartSize)
		if err != nil || q.Value() <= 0 {
			return in, fmt.Errorf("--max-chart-size %q: want a size such as 100Mi or 50M", f.MaxChartSize)
		}
		in.MaxChartBytes = q.Value()
	}
	in.Git.CacheDir = f.GitCacheDir
	if f.GitCredentials != "" {
		if in.Git.Credentials, err = gitsource.LoadCredentials(f.GitCredentials); err != nil {
			return in, fmt.Errorf("--git-credentials: %w", err)
		}
	}
	return in, nil
}

// LogAdmission says what the renderer accepts, once at start (no keys: their count and names'
// count only).
func LogAdmission(log *zap.Logger, in pipeline.Admission) {
	log.Info("renderer admission",
		zap.Strings("allowChartSources", in.Sources.Patterns()),
		zap.Int("clientKeys", in.Verifier.Keys.Len()),
		zap.Bool("signaturesRequired", in.Verifier.Required()),
		zap.Duration("requestMaxAge", in.Verifier.MaxAge),
		zap.Int64("maxChartBytes", in.MaxChartBytes),
		zap.Duration("chartFetchTimeout", in.FetchTimeout),
		zap.String("gitCacheDir", in.Git.CacheDir))
}
