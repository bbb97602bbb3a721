package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/render"
)

// chartFlags are the flags deploy and render share: the chart, its values, the names and the
// service values.
type chartFlags struct {
	env, project, release, namespace                     string
	values, set, setString, setJSON, setFile, setLiteral []string
	secretValues                                         []string
	secretKey                                            string
	ignoreSecretKey                                      bool
	gitRef, gitCommit, gitBranch, gitTag                 string
	ciPipelineURL, ciJobURL, ciAuthor                    string
	images                                               []string
	imagesRepo                                           string
	addAnnotations, addLabels                            []string
	repo, version, username, password, caFile            string
	plainHTTP, insecureSkipTLSVerify                     bool
}

func (f *chartFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.repo, "repo", "", "Helm chart repository URL: CHART is then a chart name in it")
	fl.StringVar(&f.version, "version", "", "chart version or semver constraint of a remote chart (default: latest stable)")
	fl.StringVar(&f.username, "username", "", "user name for the chart repository or OCI registry")
	fl.StringVar(&f.password, "password", "", "password for the chart repository or OCI registry (default $SEALANE_REPO_PASSWORD)")
	fl.StringVar(&f.caFile, "ca-file", "", "CA bundle for the chart repository or registry's TLS certificate")
	fl.BoolVar(&f.insecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the chart repository or registry's TLS certificate")
	fl.BoolVar(&f.plainHTTP, "plain-http", false, "talk plain HTTP to the OCI registry")
	fl.StringVar(&f.env, "env", "", "environment (staging, production...): part of the default release and namespace names, .Values.global.env")
	fl.StringVar(&f.project, "project", "", "project name (default: the chart name)")
	fl.StringVar(&f.release, "release", "", "release name, taken as is (default: <project>-<env>, slugified)")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "namespace, taken as is (default: <project>-<env>, slugified)")
	fl.StringArrayVarP(&f.values, "values", "f", nil, "values file (repeatable, later wins)")
	fl.StringArrayVar(&f.secretValues, "secret-values", nil, "encrypted values file, merged after the chart's secret-values.yaml (repeatable)")
	fl.StringVar(&f.secretKey, "secret-key", "", "key for secret values and secret/ files (default: $SEALANE_SECRET_KEY, $WERF_SECRET_KEY, ./.werf_secret_key, ~/.werf/global_secret_key)")
	fl.BoolVar(&f.ignoreSecretKey, "ignore-secret-key", false, "render without decrypting: secret values and secret/ files stay ciphertext")
	fl.StringArrayVar(&f.set, "set", nil, "set a value: key=value (repeatable)")
	fl.StringArrayVar(&f.setString, "set-string", nil, "set a string value: key=value (repeatable)")
	fl.StringArrayVar(&f.setJSON, "set-json", nil, "set a JSON value: key=json (repeatable)")
	fl.StringArrayVar(&f.setFile, "set-file", nil, "set a value from a file's content: key=path (repeatable)")
	fl.StringArrayVar(&f.setLiteral, "set-literal", nil, "set a literal string value, no escaping: key=value (repeatable)")
	fl.StringVar(&f.gitRef, "git-ref", "", "git branch or tag being deployed (.Values.global.ci.ref)")
	fl.StringVar(&f.gitCommit, "git-commit", "", "git commit being deployed (.Values.global.ci.commit, annotation ci.werf.io/commit)")
	fl.StringVar(&f.gitBranch, "git-branch", "", "git branch being deployed (.Values.global.ci.branch)")
	fl.StringVar(&f.gitTag, "git-tag", "", "git tag being deployed (.Values.global.ci.tag)")
	fl.StringVar(&f.ciPipelineURL, "ci-pipeline-url", "", "CI pipeline URL (annotation ci.werf.io/pipeline-url)")
	fl.StringVar(&f.ciJobURL, "ci-job-url", "", "CI job URL (annotation ci.werf.io/job-url)")
	fl.StringVar(&f.ciAuthor, "ci-author", "", "who triggered the deploy in CI (annotation ci.werf.io/author)")
	fl.StringArrayVar(&f.images, "image", nil, "built image: NAME=REPOSITORY[:TAG][@DIGEST] (.Values.global.image.NAME; repeatable)")
	fl.StringVar(&f.imagesRepo, "images-repo", "", "repository the project's images live under (.Values.global.werf.repo)")
	fl.StringArrayVar(&f.addAnnotations, "add-annotation", nil, "annotation added to every deployed resource: key=value (repeatable)")
	fl.StringArrayVar(&f.addLabels, "add-label", nil, "label added to every deployed resource: key=value (repeatable)")
}

// request builds the client request; flag values that cannot be right are reported here.
func (f *chartFlags) request(chartDir, cluster string, timeout time.Duration) (client.DeployRequest, error) {
	req := client.DeployRequest{
		ChartDir: chartDir, Project: f.project, Env: f.env, Release: f.release, Namespace: f.namespace, Cluster: cluster,
		ValuesFiles: f.values, SecretValuesFiles: f.secretValues, Set: f.set, SetString: f.setString, SetJSON: f.setJSON,
		SetFile: f.setFile, SetLiteral: f.setLiteral, Timeout: timeout, ImagesRepo: f.imagesRepo,
		ChartRepo: f.repo, ChartVersion: f.version,
		ChartSource: chartsource.Options{
			Auth: chartsource.Auth{Username: f.username, Password: orEnv(f.password, "SEALANE_REPO_PASSWORD"), CAFile: f.caFile,
				InsecureSkipTLSVerify: f.insecureSkipTLSVerify},
			PlainHTTP: f.plainHTTP, Timeout: 5 * time.Minute,
		},
	}
	git := events.Git{Ref: f.gitRef, Commit: f.gitCommit, Branch: f.gitBranch, Tag: f.gitTag,
		PipelineURL: f.ciPipelineURL, JobURL: f.ciJobURL, Author: f.ciAuthor}
	if git != (events.Git{}) {
		req.Git = &git
	}
	var err error
	if req.Images, err = parseImages(f.images); err != nil {
		return req, err
	}
	if req.Annotations, err = parseMetadata("--add-annotation", f.addAnnotations, false); err != nil {
		return req, err
	}
	if req.Labels, err = parseMetadata("--add-label", f.addLabels, true); err != nil {
		return req, err
	}
	return req, nil
}

func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}

// secrets finds the key for the chart's secrets: --secret-key, the environment, then
// .werf_secret_key in the chart (project) directory and ~/.werf/global_secret_key.
func (f *chartFlags) secrets(chartDir string) (render.Secrets, error) {
	dir := chartDir
	if st, err := os.Stat(chartDir); err != nil || !st.IsDir() {
		dir = "" // a packaged or remote chart: look in the current directory
	}
	return render.LoadSecrets(f.secretKey, dir, f.ignoreSecretKey)
}

// parseMetadata parses key=value pairs and checks them as Kubernetes annotation or label
// keys (and label values).
func parseMetadata(flag string, pairs []string, labels bool) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, p)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: key %q is not a valid Kubernetes key: %s", flag, p, k, strings.Join(errs, "; "))
		}
		if labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return nil, fmt.Errorf("%s %q: value %q is not a valid label value: %s", flag, p, v, strings.Join(errs, "; "))
			}
		}
		out[k] = v
	}
	return out, nil
}

// parseImages parses NAME=REPOSITORY[:TAG][@DIGEST] image flags.
func parseImages(specs []string) (map[string]events.Image, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make(map[string]events.Image, len(specs))
	for _, s := range specs {
		name, ref, ok := strings.Cut(s, "=")
		if !ok || name == "" || ref == "" {
			return nil, fmt.Errorf("--image %q: want NAME=REPOSITORY[:TAG][@DIGEST]", s)
		}
		img, err := parseImageRef(ref)
		if err != nil {
			return nil, fmt.Errorf("--image %q: %w", s, err)
		}
		out[name] = img
	}
	return out, nil
}

func parseImageRef(ref string) (events.Image, error) {
	var img events.Image
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		if !strings.Contains(digest, ":") {
			return img, fmt.Errorf("digest %q: want ALGORITHM:HEX, e.g. sha256:…", digest)
		}
		ref, img.Digest = repo, digest
	}
	// A ':' after the last '/' starts the tag; one before it belongs to a registry port.
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, img.Tag = ref[:i], ref[i+1:]
	}
	if ref == "" {
		return img, fmt.Errorf("no repository")
	}
	img.Repository = ref
	return img, nil
}
