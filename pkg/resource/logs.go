package resource

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AnnotationLogRegexSkipForPrefix is nelm's werf.io/log-regex-skip-for-<container>: lines of that
// container matching the RE2 value are not shown.
const AnnotationLogRegexSkipForPrefix = "werf.io/log-regex-skip-for-"

// DefaultLogReplicas is how many replicas' logs are shown without
// werf.io/show-logs-only-for-number-of-replicas.
const DefaultLogReplicas = 1

// LogSettings are a resource's werf log annotations, parsed. The zero value shows nothing of
// the replicas (OnlyReplicas 0); start from DefaultLogSettings.
type LogSettings struct {
	// SkipLogs is werf.io/skip-logs: no container's logs are shown.
	SkipLogs bool
	// SkipContainers is werf.io/skip-logs-for-containers: these containers' logs are not shown.
	SkipContainers map[string]bool
	// OnlyContainers is werf.io/show-logs-only-for-containers: when not nil, only these
	// containers' logs are shown.
	OnlyContainers map[string]bool
	// Regex (werf.io/log-regex) keeps only the matching lines of every container; RegexFor
	// (werf.io/log-regex-for-<container>) replaces it for one container.
	Regex    *regexp.Regexp
	RegexFor map[string]*regexp.Regexp
	// RegexSkip (werf.io/log-regex-skip) drops the matching lines of every container;
	// RegexSkipFor (werf.io/log-regex-skip-for-<container>) replaces it for one container.
	RegexSkip    *regexp.Regexp
	RegexSkipFor map[string]*regexp.Regexp
	// OnlyReplicas is werf.io/show-logs-only-for-number-of-replicas: logs of at most this many
	// pods are shown (0: none).
	OnlyReplicas int
	// ShowServiceMessages is werf.io/show-service-messages: the resource's Kubernetes events are
	// shown while it is tracked, not only when it fails the deploy.
	ShowServiceMessages bool
}

// DefaultLogSettings are the settings of a resource without log annotations: all containers,
// all lines, one replica, events only on failure.
func DefaultLogSettings() LogSettings {
	return LogSettings{OnlyReplicas: DefaultLogReplicas}
}

// ParseLogSettings reads the log annotations among ann (an object's annotations or
// Resource.Tracking). Each invalid value is an *AnnotationError, all of them joined into the
// error; the settings hold the valid values and the defaults for the others.
func ParseLogSettings(ann map[string]string) (LogSettings, error) {
	s := DefaultLogSettings()
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if v, set, err := ParseAnnotation(ann, AnnotationSkipLogs, ParseBool); set && err == nil {
		s.SkipLogs = v
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationSkipLogsForContainers, ParseContainerNames); set && err == nil {
		s.SkipContainers = nameSet(v)
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationShowLogsOnlyForContainers, ParseContainerNames); set && err == nil {
		s.OnlyContainers = nameSet(v)
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationLogRegex, ParseLogRegex); set && err == nil {
		s.Regex = v
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationLogRegexSkip, ParseLogRegex); set && err == nil {
		s.RegexSkip = v
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationShowLogsOnlyForReplicas, ParseCount); set && err == nil {
		s.OnlyReplicas = v
	} else {
		note(err)
	}
	if v, set, err := ParseAnnotation(ann, AnnotationShowServiceMessages, ParseBool); set && err == nil {
		s.ShowServiceMessages = v
	} else {
		note(err)
	}

	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in a stable order
	for _, k := range keys {
		var into *map[string]*regexp.Regexp
		var container string
		switch {
		case strings.HasPrefix(k, AnnotationLogRegexForPrefix):
			into, container = &s.RegexFor, strings.TrimPrefix(k, AnnotationLogRegexForPrefix)
		case strings.HasPrefix(k, AnnotationLogRegexSkipForPrefix):
			into, container = &s.RegexSkipFor, strings.TrimPrefix(k, AnnotationLogRegexSkipForPrefix)
		default:
			continue
		}
		if container == "" {
			errs = append(errs, &AnnotationError{Key: k, Value: ann[k],
				Err: fmt.Errorf("the key names no container: write %s<container>", k)})
			continue
		}
		re, _, err := ParseAnnotation(ann, k, ParseLogRegex)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if *into == nil {
			*into = map[string]*regexp.Regexp{}
		}
		(*into)[container] = re
	}
	return s, errors.Join(errs...)
}

// ParseLogRegex parses werf.io/log-regex and its kin: a non-empty RE2 regular expression.
func ParseLogRegex(v string) (*regexp.Regexp, error) {
	if v == "" {
		return nil, errors.New("must be a non-empty RE2 regular expression")
	}
	re, err := regexp.Compile(v)
	if err != nil {
		return nil, fmt.Errorf("not a valid RE2 regular expression: %w", err)
	}
	return re, nil
}

// ParseContainerNames parses werf.io/skip-logs-for-containers and
// werf.io/show-logs-only-for-containers: container names separated by commas (blanks around
// names trimmed, duplicates dropped, order kept).
func ParseContainerNames(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		name := strings.TrimSpace(item)
		if name == "" {
			return nil, errors.New(`must be a comma-separated list of container names without empty items, e.g. "app,sidecar"`)
		}
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a container name (%s); write a comma-separated list of container names, e.g. \"app,sidecar\"", name, strings.Join(msgs, "; "))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

func nameSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
