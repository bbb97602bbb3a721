package validate

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Annotations of werf/nelm and Helm whose values the deploy engine reads. Their keys and the
// parsers of the values the deploy planner uses live in package resource, so that what is
// checked here is exactly what is parsed there; the checks of the tracker's annotations
// (durations, regular expressions, container lists, JSONPaths) are here.
const (
	annWeight                  = resource.AnnotationWeight
	annHook                    = resource.AnnotationHook
	annHookWeight              = resource.AnnotationHookWeight
	annHookDeletePolicy        = resource.AnnotationHookDeletePolicy
	annHookOutputLogPolicy     = resource.AnnotationHookOutputLogPolicy
	annResourcePolicy          = resource.AnnotationResourcePolicy
	annWerfResourcePolicy      = resource.AnnotationWerfResourcePolicy
	annDeployDependencyPrefix  = resource.AnnotationDeployDependencyPrefix
	annExternalDependencyRes   = resource.AnnotationExternalDependencySuffix
	annExternalDependencyNS    = resource.AnnotationExternalNamespaceSuffix
	annOwnership               = resource.AnnotationOwnership
	annDeployOn                = resource.AnnotationDeployOn
	annDeletePolicy            = resource.AnnotationDeletePolicy
	annDeletePropagation       = resource.AnnotationDeletePropagation
	annReplicasOnCreation      = resource.AnnotationReplicasOnCreation
	annTrackTerminationMode    = resource.AnnotationTrackTerminationMode
	annFailMode                = resource.AnnotationFailMode
	annFailuresAllowed         = resource.AnnotationFailuresAllowedPerReplica
	annIgnoreReadinessPrefix   = resource.AnnotationIgnoreReadinessPrefix
	annNoActivityTimeout       = resource.AnnotationNoActivityTimeout
	annLogRegex                = resource.AnnotationLogRegex
	annLogRegexForPrefix       = resource.AnnotationLogRegexForPrefix
	annLogRegexSkip            = resource.AnnotationLogRegexSkip
	annSkipLogs                = resource.AnnotationSkipLogs
	annSkipLogsForContainers   = resource.AnnotationSkipLogsForContainers
	annShowLogsOnlyForReplicas = resource.AnnotationShowLogsOnlyForReplicas
	annShowLogsOnlyContainers  = resource.AnnotationShowLogsOnlyForContainers
	annShowServiceMessages     = resource.AnnotationShowServiceMessages
	annSensitive               = resource.AnnotationSensitive
	annSensitivePaths          = resource.AnnotationSensitivePaths
	annAllowAdoptionByRelease  = resource.AnnotationAllowAdoptionByRelease
	annSetResourcesOnCreation  = resource.AnnotationSetResourcesOnCreation
	annSetReplicasOnCreation   = resource.AnnotationSetReplicasOnCreation
)

// valueCheck returns nil for a usable value, else what is wrong and what to write instead.
type valueCheck func(value string) error

// parsed turns one of package resource's parsers into a check.
func parsed[T any](parse func(string) (T, error)) valueCheck {
	return func(v string) error { _, err := parse(v); return err }
}

var (
	integer     = parsed(resource.ParseInt)
	nonNegative = parsed(resource.ParseCount)
	boolean     = parsed(resource.ParseBool)
)

// exactRules check the annotations with a fixed key.
var exactRules = map[string]valueCheck{
	annWeight:                  integer,
	annHookWeight:              integer,
	annHook:                    parsed(resource.ParseHook),
	annHookDeletePolicy:        parsed(resource.ParseHookDeletePolicy),
	annHookOutputLogPolicy:     helmList("hook-succeeded", "hook-failed"),
	annResourcePolicy:          parsed(resource.ParseResourcePolicy),
	annWerfResourcePolicy:      parsed(resource.ParseWerfResourcePolicy),
	annOwnership:               parsed(resource.ParseOwnership),
	annDeployOn:                parsed(resource.ParseDeployOn),
	annDeletePolicy:            parsed(resource.ParseDeletePolicy),
	annDeletePropagation:       parsed(resource.ParseDeletePropagation),
	annReplicasOnCreation:      parsed(resource.ParseReplicas),
	annTrackTerminationMode:    parsed(resource.ParseTrackTerminationMode),
	annFailMode:                oneOf("FailWholeDeployProcessImmediately", "HopeUntilEndOfDeployProcess", "IgnoreAndContinueDeployProcess"),
	annFailuresAllowed:         nonNegative,
	annNoActivityTimeout:       duration,
	annLogRegex:                regex,
	annLogRegexSkip:            regex,
	annSkipLogs:                boolean,
	annSkipLogsForContainers:   names,
	annShowLogsOnlyForReplicas: nonNegative,
	annShowLogsOnlyContainers:  names,
	annShowServiceMessages:     boolean,
	annSensitive:               boolean,
	annSensitivePaths:          jsonPaths,
	annAllowAdoptionByRelease:  parsed(resource.ParseReleaseName),
	annSetResourcesOnCreation:  boolean,
	annSetReplicasOnCreation:   boolean,
	"werf.io/version":          nil, // set by the deploy engine itself
}

// prefixRule checks the annotations whose key is a prefix plus a name (a container, an id).
type prefixRule struct {
	prefix, suffix, what string
	check                valueCheck
}

var prefixRules = []prefixRule{
	{prefix: annDeployDependencyPrefix, what: "dependency id", check: parsed(resource.ParseDeployDependency)},
	{prefix: annIgnoreReadinessPrefix, what: "container name", check: duration},
	{prefix: annLogRegexForPrefix, what: "container name", check: regex},
	{suffix: annExternalDependencyRes, what: "dependency id", check: parsed(resource.ParseExternalResource)},
	{suffix: annExternalDependencyNS, what: "dependency id", check: parsed(resource.ParseNamespace)},
}

// checkAnnotations checks the werf and Helm annotations among annotations.
func checkAnnotations(annotations map[string]string, fs []finding) []finding {
	_, isHook := annotations[annHook]
	for _, key := range sortedKeys(annotations) {
		value, p := annotations[key], annotationsPath.child(key)
		bad := func(err error) {
			fs = append(fs, finding{SeverityError, CodeInvalidAnnotationValue, p, fmt.Sprintf("invalid value %q: %v", value, err), ""})
		}
		if check, known := exactRules[key]; known {
			if check != nil {
				if err := check(value); err != nil {
					bad(err)
				}
			}
			switch {
			case key == annWeight && isHook:
				fs = append(fs, finding{SeverityWarning, CodeIgnoredAnnotation, p,
					"werf.io/weight has no effect on hooks", "order hooks with helm.sh/hook-weight"})
			case key == annHookWeight && !isHook:
				fs = append(fs, finding{SeverityWarning, CodeIgnoredAnnotation, p,
					"helm.sh/hook-weight has effect on hooks only (no helm.sh/hook here)", "order resources with werf.io/weight"})
			case key == annWerfResourcePolicy:
				fs = ignoredResourcePolicies(value, p, fs)
			}
			continue
		}
		matched := false
		for _, r := range prefixRules {
			if !strings.HasPrefix(key, r.prefix) || !strings.HasSuffix(key, r.suffix) || len(key) < len(r.prefix)+len(r.suffix) {
				continue
			}
			matched = true
			if name := key[len(r.prefix) : len(key)-len(r.suffix)]; name == "" || strings.HasSuffix(name, "/") {
				fs = append(fs, finding{SeverityError, CodeInvalidAnnotationValue, p,
					fmt.Sprintf("annotation key has no %s", r.what), fmt.Sprintf("write %s<%s>%s", r.prefix, strings.ReplaceAll(r.what, " ", "-"), r.suffix)})
			} else if err := r.check(value); err != nil {
				bad(err)
			}
			if r.suffix == annExternalDependencyNS {
				id := strings.TrimSuffix(key, annExternalDependencyNS)
				if _, ok := annotations[id+annExternalDependencyRes]; !ok {
					fs = append(fs, finding{SeverityWarning, CodeIgnoredAnnotation, p,
						fmt.Sprintf("has no effect without %s%s", id, annExternalDependencyRes),
						fmt.Sprintf("add %s%s naming the resource, or remove this annotation", id, annExternalDependencyRes)})
				}
			}
			break
		}
		if !matched && strings.HasPrefix(key, "werf.io/") {
			hint := "remove it, or check its spelling against the werf docs"
			if s := closest(key, knownWerfKeys); s != "" {
				hint = fmt.Sprintf("did you mean %s?", s)
			}
			fs = append(fs, finding{SeverityWarning, CodeUnknownAnnotation, p, "werf does not know this annotation; it has no effect", hint})
		}
	}
	return fs
}

// ignoredResourcePolicies warns about the items of werf.io/resource-policy that sealane does not
// implement (nelm's skip-create, skip-update, skip-recreate): only keep and skip-delete have an
// effect.
func ignoredResourcePolicies(value string, p fieldPath, fs []finding) []finding {
	ps, _ := resource.ParseWerfResourcePolicy(value)
	var ignored []string
	for _, rp := range ps {
		if !rp.Keeps() {
			ignored = append(ignored, string(rp))
		}
	}
	if len(ignored) == 0 {
		return fs
	}
	return append(fs, finding{SeverityWarning, CodeIgnoredAnnotation, p,
		fmt.Sprintf("sealane does not implement resource policy %s; it has no effect", strings.Join(ignored, ", ")),
		"remove it: sealane implements keep and skip-delete (never delete the resource) only"})
}

// knownWerfKeys are the werf.io/ keys an unknown one may be a typo of.
var knownWerfKeys = func() []string {
	var keys []string
	for k := range exactRules {
		if strings.HasPrefix(k, "werf.io/") {
			keys = append(keys, k)
		}
	}
	for _, r := range prefixRules {
		if r.prefix != "" {
			keys = append(keys, r.prefix)
		}
	}
	return keys
}()

func duration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New(`must be a non-negative duration such as "90s", "5m" or "8m30s"`)
	}
	return nil
}

func regex(v string) error {
	if v == "" {
		return errors.New("must be a non-empty RE2 regular expression")
	}
	if _, err := regexp.Compile(v); err != nil {
		return fmt.Errorf("not a valid RE2 regular expression: %w", err)
	}
	return nil
}

func oneOf(allowed ...string) valueCheck {
	return func(v string) error { _, err := resource.ParseOneOf(v, allowed...); return err }
}

// helmList checks a comma-separated list the way Helm reads it (items trimmed and lowercased).
func helmList(allowed ...string) valueCheck {
	return func(v string) error { _, err := resource.ParseList(v, true, allowed...); return err }
}

func names(v string) error {
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			return errors.New(`must be a comma-separated list of container names without empty items, e.g. "app,sidecar"`)
		}
	}
	return nil
}

// jsonPaths checks werf.io/sensitive-paths: JSONPaths separated by commas ("\," escapes a comma
// inside a path), e.g. "$.spec.template.spec.containers[*].env[*].value,$.data.*".
func jsonPaths(v string) error {
	_, err := resource.ParseSensitivePaths(v)
	return err
}

// droppedHooks reports the documents of the rendered templates whose helm.sh/hook value Helm
// does not know. Helm leaves such a document out of both the manifest and the hooks, without a
// word, so the checks on objects never see it.
func (c *checker) droppedHooks() {
	sources := make([]string, 0, len(c.opts.Templates))
	for src, text := range c.opts.Templates {
		if strings.Contains(text, annHook) {
			sources = append(sources, src)
		}
	}
	sort.Strings(sources)
	check := exactRules[annHook]
	for _, src := range sources {
		idx := c.templates[src]
		if idx == nil {
			idx = newDocIndex(c.opts.Templates[src], helmSeparator)
			c.templates[src] = idx
		}
		for _, n := range idx.objects() {
			hook := mapValue(mapValue(mapValue(n, "metadata"), "annotations"), annHook)
			if hook == nil || hook.Kind != yaml.ScalarNode {
				continue
			}
			id := identityOfNode(n)
			err := check(hook.Value)
			if err == nil || c.listed[src+"\x00"+id.key()] {
				continue
			}
			p := annotationsPath.child(annHook)
			c.res.add(Issue{
				Severity:     SeverityError,
				Code:         CodeInvalidAnnotationValue,
				Object:       manifest.Ref{APIVersion: id.apiVersion, Kind: id.kind, Namespace: id.namespace, Name: id.name},
				Source:       src,
				TemplateLine: lineOf(n, p),
				Field:        p.String(),
				Message:      fmt.Sprintf("invalid value %q: %v", hook.Value, err),
				Hint:         "Helm leaves a resource with an unknown hook out of the release; fix the value",
			})
		}
	}
}
