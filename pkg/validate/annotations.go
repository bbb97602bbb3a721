package validate

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ohler55/ojg/jp"
	yaml "go.yaml.in/yaml/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/sealane/sealane/pkg/kube"
)

// Annotations of werf/nelm and Helm whose values the deploy engine reads. Formats follow the
// werf docs ("Аннотации для деплоя") and Helm's chart hooks; Helm's own annotations are read
// as Helm does (comma lists trimmed, case-insensitive).
const (
	annWeight                  = "werf.io/weight"
	annHook                    = "helm.sh/hook"
	annHookWeight              = "helm.sh/hook-weight"
	annHookDeletePolicy        = "helm.sh/hook-delete-policy"
	annHookOutputLogPolicy     = "helm.sh/hook-output-log-policy"
	annResourcePolicy          = "helm.sh/resource-policy"
	annDeployDependencyPrefix  = "werf.io/deploy-dependency-"
	annExternalDependencyRes   = ".external-dependency.werf.io/resource"
	annExternalDependencyNS    = ".external-dependency.werf.io/namespace"
	annOwnership               = "werf.io/ownership"
	annDeployOn                = "werf.io/deploy-on"
	annDeletePolicy            = "werf.io/delete-policy"
	annDeletePropagation       = "werf.io/delete-propagation"
	annReplicasOnCreation      = "werf.io/replicas-on-creation"
	annTrackTerminationMode    = "werf.io/track-termination-mode"
	annFailMode                = "werf.io/fail-mode"
	annFailuresAllowed         = "werf.io/failures-allowed-per-replica"
	annIgnoreReadinessPrefix   = "werf.io/ignore-readiness-probe-fails-for-"
	annNoActivityTimeout       = "werf.io/no-activity-timeout"
	annLogRegex                = "werf.io/log-regex"
	annLogRegexForPrefix       = "werf.io/log-regex-for-"
	annLogRegexSkip            = "werf.io/log-regex-skip"
	annSkipLogs                = "werf.io/skip-logs"
	annSkipLogsForContainers   = "werf.io/skip-logs-for-containers"
	annShowLogsOnlyForReplicas = "werf.io/show-logs-only-for-number-of-replicas"
	annShowLogsOnlyContainers  = "werf.io/show-logs-only-for-containers"
	annShowServiceMessages     = "werf.io/show-service-messages"
	annSensitive               = "werf.io/sensitive"
	annSensitivePaths          = "werf.io/sensitive-paths"
	annAllowAdoptionByRelease  = "werf.io/allow-adoption-by-release"
	annSetResourcesOnCreation  = "werf.io/set-resources-only-on-creation"
)

// valueCheck returns nil for a usable value, else what is wrong and what to write instead.
type valueCheck func(value string) error

// exactRules check the annotations with a fixed key.
var exactRules = map[string]valueCheck{
	annWeight:                  integer,
	annHookWeight:              integer,
	annHook:                    helmList("pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade", "post-upgrade", "pre-rollback", "post-rollback", "test", "test-success"),
	annHookDeletePolicy:        helmList("before-hook-creation", "hook-succeeded", "hook-failed"),
	annHookOutputLogPolicy:     helmList("hook-succeeded", "hook-failed"),
	annResourcePolicy:          resourcePolicy,
	annOwnership:               oneOf("release", "anyone"),
	annDeployOn:                list("pre-install", "install", "post-install", "pre-upgrade", "upgrade", "post-upgrade", "pre-rollback", "rollback", "post-rollback", "pre-delete", "delete", "post-delete", "test", "test-success"),
	annDeletePolicy:            list("before-creation", "succeeded", "failed"),
	annDeletePropagation:       oneOf("Foreground", "Background", "Orphan"),
	annReplicasOnCreation:      nonNegative,
	annTrackTerminationMode:    oneOf("WaitUntilResourceReady", "NonBlocking"),
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
	annAllowAdoptionByRelease:  releaseName,
	annSetResourcesOnCreation:  boolean,
	"werf.io/version":          nil, // set by the deploy engine itself
}

// prefixRule checks the annotations whose key is a prefix plus a name (a container, an id).
type prefixRule struct {
	prefix, suffix, what string
	check                valueCheck
}

var prefixRules = []prefixRule{
	{prefix: annDeployDependencyPrefix, what: "dependency id", check: deployDependency},
	{prefix: annIgnoreReadinessPrefix, what: "container name", check: duration},
	{prefix: annLogRegexForPrefix, what: "container name", check: regex},
	{suffix: annExternalDependencyRes, what: "dependency id", check: externalResource},
	{suffix: annExternalDependencyNS, what: "dependency id", check: namespaceName},
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

func integer(v string) error {
	if _, err := strconv.Atoi(v); err != nil {
		return errors.New(`must be an integer in quotes, e.g. "10" or "-5"`)
	}
	return nil
}

func nonNegative(v string) error {
	if n, err := strconv.Atoi(v); err != nil || n < 0 {
		return errors.New(`must be a whole number >= 0 in quotes, e.g. "2"`)
	}
	return nil
}

func boolean(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return errors.New(`must be "true" or "false"`)
	}
	return nil
}

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
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// list checks a comma-separated list of werf values (exact spelling, blanks around items allowed).
func list(allowed ...string) valueCheck {
	return commaList(false, allowed)
}

// helmList checks a comma-separated list the way Helm reads it (items trimmed and lowercased).
// Helm skips a hook whose list has an unknown item altogether, so one bad item is an error.
func helmList(allowed ...string) valueCheck {
	return commaList(true, allowed)
}

func commaList(fold bool, allowed []string) valueCheck {
	one := oneOf(allowed...)
	return func(v string) error {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if fold {
				item = strings.ToLower(item)
			}
			if item == "" {
				return fmt.Errorf("empty item in the comma-separated list; items must be among %s", strings.Join(allowed, ", "))
			}
			if one(item) != nil {
				return fmt.Errorf("unknown item %q; items must be among %s", item, strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

func resourcePolicy(v string) error {
	if strings.ToLower(strings.TrimSpace(v)) != "keep" {
		return errors.New(`the only resource policy is "keep" (remove the annotation to let Helm delete the resource)`)
	}
	return nil
}

func names(v string) error {
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			return errors.New(`must be a comma-separated list of container names without empty items, e.g. "app,sidecar"`)
		}
	}
	return nil
}

func namespaceName(v string) error {
	if msgs := apivalidation.ValidateNamespaceName(v, false); len(msgs) > 0 {
		return fmt.Errorf("must be a namespace name: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// jsonPaths checks werf.io/sensitive-paths: JSONPaths separated by commas ("\," escapes a comma
// inside a path), e.g. "$.spec.template.spec.containers[*].env[*].value,$.data.*".
func jsonPaths(v string) error {
	var (
		paths []string
		cur   strings.Builder
		esc   bool
	)
	for _, r := range v {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\':
			esc = true
		case r == ',':
			paths = append(paths, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	paths = append(paths, cur.String())
	for _, p := range paths {
		p = strings.TrimSpace(p)
		if p == "" {
			return errors.New(`must be comma-separated JSONPaths without empty items, e.g. "$.data.*,$.spec.template.spec.containers[*].env[*].value"`)
		}
		if _, err := jp.ParseString(p); err != nil {
			return fmt.Errorf("JSONPath %q does not parse: %v", p, err)
		}
	}
	return nil
}

// deployDependency checks "state=ready|present[,name=][,namespace=][,kind=][,group=][,version=]".
func deployDependency(v string) error {
	const format = `write "state=ready|present" plus at least one of name=, namespace=, kind=, group=, version=, e.g. "state=ready,kind=StatefulSet,name=postgres"`
	seen := map[string]bool{}
	target := false
	for _, prop := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(prop), "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case !ok || k == "":
			return fmt.Errorf("%q is not key=value: %s", prop, format)
		case seen[k]:
			return fmt.Errorf("%s= given twice", k)
		case val == "":
			return fmt.Errorf("%s= is empty", k)
		}
		seen[k] = true
		switch k {
		case "state":
			if val != "ready" && val != "present" {
				return fmt.Errorf(`state=%s: state must be "ready" or "present"`, val)
			}
		case "name", "namespace", "kind", "group", "version":
			target = true
		default:
			return fmt.Errorf("unknown property %q: %s", k, format)
		}
	}
	if !seen["state"] {
		return fmt.Errorf("state= is missing: %s", format)
	}
	if !target {
		return fmt.Errorf("no target (name=, namespace=, kind=, group= or version=): %s", format)
	}
	return nil
}

// externalResource checks "type[.version.group]/name", e.g. "secret/config",
// "deployments.v1.apps/app".
func externalResource(v string) error {
	const format = `write "type[.version.group]/name", e.g. "secret/config" or "deployments.v1.apps/app"`
	typ, name, ok := strings.Cut(v, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		return fmt.Errorf("must have exactly one \"/\": %s", format)
	case typ == "" || name == "":
		return fmt.Errorf("empty resource type or name: %s", format)
	case typ == "all":
		return fmt.Errorf(`resource type "all" is not allowed: %s`, format)
	}
	for _, part := range strings.Split(typ, ".") {
		if part == "" {
			return fmt.Errorf("empty part in resource type %q: %s", typ, format)
		}
	}
	return nil
}

func releaseName(v string) error {
	if msgs := apivalidation.NameIsDNSSubdomain(v, false); len(msgs) > 0 || len(v) > 53 {
		return errors.New("must be a release name: lowercase letters, digits, '-' and '.', at most 53 characters")
	}
	return nil
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
				Object:       kube.Ref{APIVersion: id.apiVersion, Kind: id.kind, Namespace: id.namespace, Name: id.name},
				Source:       src,
				TemplateLine: lineOf(n, p),
				Field:        p.String(),
				Message:      fmt.Sprintf("invalid value %q: %v", hook.Value, err),
				Hint:         "Helm leaves a resource with an unknown hook out of the release; fix the value",
			})
		}
	}
}
