// Package podlogs follows the logs of a tracked resource's pods while it deploys, werf-style:
// it picks the pods (werf.io/show-logs-only-for-number-of-replicas), the containers
// (werf.io/skip-logs, skip-logs-for-containers, show-logs-only-for-containers) and the lines
// (werf.io/log-regex, log-regex-skip and their per-container forms), and hands the lines over in
// bounded batches.
package podlogs

import (
	"regexp"

	"github.com/sealane/sealane/pkg/resource"
)

// Filter decides which lines of one container are shown. The zero Filter keeps every line.
type Filter struct {
	keep, skip *regexp.Regexp
}

// NewFilter returns the line filter of container under s, and false when the container's logs
// are not shown at all.
//
// werf.io/skip-logs hides every container; werf.io/skip-logs-for-containers hides those listed;
// werf.io/show-logs-only-for-containers hides those not listed. A line is kept when it matches
// werf.io/log-regex-for-<container> (else werf.io/log-regex, if set) and does not match
// werf.io/log-regex-skip-for-<container> (else werf.io/log-regex-skip, if set): the
// per-container regex replaces the resource-wide one.
func NewFilter(s resource.LogSettings, container string) (Filter, bool) {
	if !Shown(s, container) {
		return Filter{}, false
	}
	f := Filter{keep: s.Regex, skip: s.RegexSkip}
	if re, ok := s.RegexFor[container]; ok {
		f.keep = re
	}
	if re, ok := s.RegexSkipFor[container]; ok {
		f.skip = re
	}
	return f, true
}

// Shown reports whether the logs of container are shown at all under s.
func Shown(s resource.LogSettings, container string) bool {
	switch {
	case s.SkipLogs, s.SkipContainers[container]:
		return false
	case s.OnlyContainers != nil:
		return s.OnlyContainers[container]
	}
	return true
}

// Keep reports whether line is shown.
func (f Filter) Keep(line string) bool {
	if f.keep != nil && !f.keep.MatchString(line) {
		return false
	}
	return f.skip == nil || !f.skip.MatchString(line)
}
