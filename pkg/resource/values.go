package resource

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// The parsers of annotation values. Each returns the typed value, or an error saying what is
// wrong and what to write instead (without the value or the key: callers add those). Package
// validate reports these errors as they are.

// ParseAnnotation parses the annotation key of ann with parse. set is false when ann has no
// such key. An invalid value is an *AnnotationError naming key and value, without Ref and
// Location (Parse adds them; package apply names the object itself).
func ParseAnnotation[T any](ann map[string]string, key string, parse func(string) (T, error)) (v T, set bool, err error) {
	raw, ok := ann[key]
	if !ok {
		return v, false, nil
	}
	if v, err = parse(raw); err != nil {
		return v, true, &AnnotationError{Key: key, Value: raw, Err: err}
	}
	return v, true, nil
}

// ParseInt parses werf.io/weight and helm.sh/hook-weight: an integer, possibly negative.
func ParseInt(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errors.New(`must be an integer in quotes, e.g. "10" or "-5"`)
	}
	return n, nil
}

// ParseCount parses a whole number >= 0, such as werf.io/replicas-on-creation.
func ParseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errors.New(`must be a whole number >= 0 in quotes, e.g. "2"`)
	}
	return n, nil
}

// ParseReplicas parses werf.io/replicas-on-creation: a count that fits spec.replicas (int32).
func ParseReplicas(v string) (int, error) {
	n, err := ParseCount(v)
	if err == nil && n > math.MaxInt32 {
		return 0, fmt.Errorf("must be at most %d (spec.replicas is a 32-bit integer)", math.MaxInt32)
	}
	return n, err
}

// ParseBool parses "true" or "false" (and the other spellings strconv.ParseBool accepts).
func ParseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New(`must be "true" or "false"`)
	}
	return b, nil
}

// ParseOneOf returns v if it is one of allowed (exact spelling).
func ParseOneOf(v string, allowed ...string) (string, error) {
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
}

// ParseList parses a comma-separated list whose items are among allowed, trimming blanks around
// items. With fold, items are also lowercased first, as Helm reads helm.sh/hook and
// helm.sh/hook-delete-policy. Duplicates are dropped; the order of first appearance is kept.
func ParseList(v string, fold bool, allowed ...string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if fold {
			item = strings.ToLower(item)
		}
		if item == "" {
			return nil, fmt.Errorf("empty item in the comma-separated list; items must be among %s", strings.Join(allowed, ", "))
		}
		if _, err := ParseOneOf(item, allowed...); err != nil {
			return nil, fmt.Errorf("unknown item %q; items must be among %s", item, strings.Join(allowed, ", "))
		}
		if !contains(out, item) {
			out = append(out, item)
		}
	}
	return out, nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// ParseOwnership parses werf.io/ownership: "release" or "anyone".
func ParseOwnership(v string) (Ownership, error) {
	s, err := ParseOneOf(v, string(OwnershipRelease), string(OwnershipAnyone))
	return Ownership(s), err
}

// deployOnValues are the values of werf.io/deploy-on, in lifecycle order.
var deployOnValues = []string{"pre-install", "install", "post-install", "pre-upgrade", "upgrade", "post-upgrade",
	"pre-rollback", "rollback", "post-rollback", "pre-delete", "delete", "post-delete", "test", "test-success"}

// ParseDeployOn parses werf.io/deploy-on: a comma-separated list of events such as
// "install,upgrade" or "pre-install". "test-success" is read as "test". The result is in
// lifecycle order.
func ParseDeployOn(v string) ([]Event, error) {
	items, err := ParseList(v, false, deployOnValues...)
	if err != nil {
		return nil, err
	}
	return toEvents(items), nil
}

// hookValues are the values of helm.sh/hook Helm knows.
var hookValues = []string{"pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade", "post-upgrade",
	"pre-rollback", "post-rollback", "test", "test-success"}

// ParseHook parses helm.sh/hook as Helm does (items trimmed and lowercased). Helm leaves a
// resource with an unknown hook out of the release altogether, so one unknown item is an error.
// The events are in lifecycle order; "test-success" is read as "test".
func ParseHook(v string) ([]Event, error) {
	items, err := ParseList(v, true, hookValues...)
	if err != nil {
		return nil, err
	}
	return toEvents(items), nil
}

func toEvents(items []string) []Event {
	out := make([]Event, 0, len(items))
	for _, it := range items {
		if it == "test-success" {
			it = string(EventTest)
		}
		if !contains(out, Event(it)) {
			out = append(out, Event(it))
		}
	}
	sortEvents(out)
	return out
}

// ParseDeletePolicy parses werf.io/delete-policy: a comma-separated list of before-creation,
// before-creation-if-immutable, succeeded and failed.
func ParseDeletePolicy(v string) ([]DeletePolicy, error) {
	items, err := ParseList(v, false, string(DeleteBeforeCreation), string(DeleteBeforeCreationIfImmutable),
		string(DeleteSucceeded), string(DeleteFailed))
	if err != nil {
		return nil, err
	}
	return toPolicies(items, nil), nil
}

// helmDeletePolicies maps helm.sh/hook-delete-policy items to werf's policies.
var helmDeletePolicies = map[string]DeletePolicy{
	"before-hook-creation": DeleteBeforeCreation,
	"hook-succeeded":       DeleteSucceeded,
	"hook-failed":          DeleteFailed,
}

// ParseHookDeletePolicy parses helm.sh/hook-delete-policy as Helm does and maps it to werf's
// policies: before-hook-creation → before-creation, hook-succeeded → succeeded, hook-failed →
// failed.
func ParseHookDeletePolicy(v string) ([]DeletePolicy, error) {
	items, err := ParseList(v, true, "before-hook-creation", "hook-succeeded", "hook-failed")
	if err != nil {
		return nil, err
	}
	return toPolicies(items, helmDeletePolicies), nil
}

func toPolicies(items []string, mapping map[string]DeletePolicy) []DeletePolicy {
	out := make([]DeletePolicy, 0, len(items))
	for _, p := range deletePolicyOrder {
		for _, it := range items {
			got := DeletePolicy(it)
			if mapping != nil {
				got = mapping[it]
			}
			if got == p {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// ParseResourcePolicy parses helm.sh/resource-policy as Helm does: "keep" (any case, blanks
// trimmed) is the only policy.
func ParseResourcePolicy(v string) (keep bool, err error) {
	if strings.ToLower(strings.TrimSpace(v)) != "keep" {
		return false, errors.New(`the only resource policy is "keep" (remove the annotation to let Helm delete the resource)`)
	}
	return true, nil
}

// resourcePolicyValues are the items of werf.io/resource-policy, as nelm knows them.
var resourcePolicyValues = []string{string(ResourcePolicyKeep), string(ResourcePolicySkipDelete),
	string(ResourcePolicySkipCreate), string(ResourcePolicySkipUpdate), string(ResourcePolicySkipRecreate)}

// ParseWerfResourcePolicy parses nelm's werf.io/resource-policy: a comma-separated list of keep,
// skip-delete, skip-create, skip-update and skip-recreate (exact spelling, blanks around items
// trimmed). Only keep and skip-delete have an effect in sealane (ResourcePolicy.Keeps).
func ParseWerfResourcePolicy(v string) ([]ResourcePolicy, error) {
	items, err := ParseList(v, false, resourcePolicyValues...)
	if err != nil {
		return nil, err
	}
	out := make([]ResourcePolicy, len(items))
	for i, it := range items {
		out[i] = ResourcePolicy(it)
	}
	return out, nil
}

// ParseTrackTerminationMode parses werf.io/track-termination-mode.
func ParseTrackTerminationMode(v string) (TrackTermination, error) {
	s, err := ParseOneOf(v, string(WaitUntilResourceReady), string(NonBlocking))
	return TrackTermination(s), err
}

// deletePropagations are the values of werf.io/delete-propagation.
var deletePropagations = []string{"Foreground", "Background", "Orphan"}

// ParseDeletePropagation parses werf.io/delete-propagation: Foreground, Background or Orphan
// (any case, blanks trimmed), returned in that spelling.
func ParseDeletePropagation(v string) (string, error) {
	for _, p := range deletePropagations {
		if strings.EqualFold(p, strings.TrimSpace(v)) {
			return p, nil
		}
	}
	_, err := ParseOneOf(v, deletePropagations...) // not among them: the error lists them
	return "", err
}

// ParseNamespace checks a namespace name, such as <id>.external-dependency.werf.io/namespace.
func ParseNamespace(v string) (string, error) {
	if msgs := apivalidation.ValidateNamespaceName(v, false); len(msgs) > 0 {
		return "", fmt.Errorf("must be a namespace name: %s", strings.Join(msgs, "; "))
	}
	return v, nil
}

// ParseReleaseName checks werf.io/allow-adoption-by-release: a Helm release name.
func ParseReleaseName(v string) (string, error) {
	if msgs := apivalidation.NameIsDNSSubdomain(v, false); len(msgs) > 0 || len(v) > 53 {
		return "", errors.New("must be a release name: lowercase letters, digits, '-' and '.', at most 53 characters")
	}
	return v, nil
}

// ParseDeployDependency parses the value of werf.io/deploy-dependency-<id>:
// "state=ready|present[,name=][,namespace=][,kind=][,group=][,version=]" with at least one
// target property. The returned Dependency has no ID.
func ParseDeployDependency(v string) (Dependency, error) {
	const format = `write "state=ready|present" plus at least one of name=, namespace=, kind=, group=, version=, e.g. "state=ready,kind=StatefulSet,name=postgres"`
	var d Dependency
	seen := map[string]bool{}
	target := false
	for _, prop := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(prop), "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case !ok || k == "":
			return Dependency{}, fmt.Errorf("%q is not key=value: %s", prop, format)
		case seen[k]:
			return Dependency{}, fmt.Errorf("%s= given twice", k)
		case val == "":
			return Dependency{}, fmt.Errorf("%s= is empty", k)
		}
		seen[k] = true
		switch k {
		case "state":
			if val != string(StateReady) && val != string(StatePresent) {
				return Dependency{}, fmt.Errorf(`state=%s: state must be "ready" or "present"`, val)
			}
			d.State = DependencyState(val)
			continue
		case "name":
			d.Name = val
		case "namespace":
			d.Namespace = val
		case "kind":
			d.Kind = val
		case "group":
			d.Group = val
		case "version":
			d.Version = val
		default:
			return Dependency{}, fmt.Errorf("unknown property %q: %s", k, format)
		}
		target = true
	}
	if !seen["state"] {
		return Dependency{}, fmt.Errorf("state= is missing: %s", format)
	}
	if !target {
		return Dependency{}, fmt.Errorf("no target (name=, namespace=, kind=, group= or version=): %s", format)
	}
	return d, nil
}

// ParseExternalResource parses the value of <id>.external-dependency.werf.io/resource,
// "type[.version.group]/name" as kubectl reads resource arguments: "secret/config",
// "deployments.v1.apps/app", "deployments.apps/app". The returned ExternalDependency has no ID
// and no namespace.
func ParseExternalResource(v string) (ExternalDependency, error) {
	const format = `write "type[.version.group]/name", e.g. "secret/config" or "deployments.v1.apps/app"`
	typ, name, ok := strings.Cut(v, "/")
	switch {
	case !ok || strings.Contains(name, "/"):
		return ExternalDependency{}, fmt.Errorf("must have exactly one \"/\": %s", format)
	case typ == "" || name == "":
		return ExternalDependency{}, fmt.Errorf("empty resource type or name: %s", format)
	case typ == "all":
		return ExternalDependency{}, fmt.Errorf(`resource type "all" is not allowed: %s`, format)
	}
	parts := strings.Split(typ, ".")
	for _, part := range parts {
		if part == "" {
			return ExternalDependency{}, fmt.Errorf("empty part in resource type %q: %s", typ, format)
		}
	}
	d := ExternalDependency{Type: parts[0], Name: name}
	switch {
	case len(parts) >= 3:
		d.Version, d.Group = parts[1], strings.Join(parts[2:], ".")
	case len(parts) == 2:
		d.Group = parts[1]
	}
	return d, nil
}
