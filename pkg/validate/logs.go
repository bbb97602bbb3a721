package validate

import "github.com/sealane/sealane/pkg/resource"

// The log annotations are checked with the parsers resource.ParseLogSettings uses, so that a
// value accepted here is one the log streamer understands. They are set here, apart from the
// tables in annotations.go, together with nelm's werf.io/log-regex-skip-for-<container>.
func init() { addLogAnnotationRules() }

// addLogAnnotationRules points the checks of the log annotations at package resource's parsers.
func addLogAnnotationRules() {
	logRegex := parsed(resource.ParseLogRegex)
	containers := parsed(resource.ParseContainerNames)
	exactRules[annLogRegex] = logRegex
	exactRules[annLogRegexSkip] = logRegex
	exactRules[annSkipLogs] = boolean
	exactRules[annSkipLogsForContainers] = containers
	exactRules[annShowLogsOnlyContainers] = containers
	exactRules[annShowLogsOnlyForReplicas] = nonNegative
	exactRules[annShowServiceMessages] = boolean
	replaced := false
	for i := range prefixRules {
		if prefixRules[i].prefix == annLogRegexForPrefix {
			prefixRules[i].check, replaced = logRegex, true
		}
	}
	if !replaced {
		prefixRules = append(prefixRules, prefixRule{prefix: annLogRegexForPrefix, what: "container name", check: logRegex})
	}
	prefixRules = append(prefixRules, prefixRule{prefix: resource.AnnotationLogRegexSkipForPrefix, what: "container name", check: logRegex})
	knownWerfKeys = append(knownWerfKeys, resource.AnnotationLogRegexSkipForPrefix)
}
