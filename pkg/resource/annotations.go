package resource

// Annotations of werf/nelm and Helm that change how a resource is deployed. Formats follow the
// werf docs ("Аннотации для деплоя") and Helm's chart hooks. Package validate checks their values
// with the parsers of this package, so a value validate accepts is one Parse understands.
const (
	AnnotationWeight                   = "werf.io/weight"
	AnnotationDeployDependencyPrefix   = "werf.io/deploy-dependency-"
	AnnotationExternalDependencySuffix = ".external-dependency.werf.io/resource"
	AnnotationExternalNamespaceSuffix  = ".external-dependency.werf.io/namespace"
	AnnotationOwnership                = "werf.io/ownership"
	AnnotationDeployOn                 = "werf.io/deploy-on"
	AnnotationDeletePolicy             = "werf.io/delete-policy"
	AnnotationDeletePropagation        = "werf.io/delete-propagation"
	AnnotationReplicasOnCreation       = "werf.io/replicas-on-creation"
	AnnotationSetReplicasOnCreation    = "werf.io/set-replicas-only-on-creation"
	AnnotationSetResourcesOnCreation   = "werf.io/set-resources-only-on-creation"
	AnnotationAllowAdoptionByRelease   = "werf.io/allow-adoption-by-release"
	AnnotationTrackTerminationMode     = "werf.io/track-termination-mode"

	AnnotationHook                = "helm.sh/hook"
	AnnotationHookWeight          = "helm.sh/hook-weight"
	AnnotationHookDeletePolicy    = "helm.sh/hook-delete-policy"
	AnnotationHookOutputLogPolicy = "helm.sh/hook-output-log-policy"
	AnnotationResourcePolicy      = "helm.sh/resource-policy"

	// AnnotationWerfResourcePolicy is nelm's werf.io/resource-policy: its keep and skip-delete
	// are helm.sh/resource-policy: keep (see ParseWerfResourcePolicy).
	AnnotationWerfResourcePolicy = "werf.io/resource-policy"
	// AnnotationSensitive and AnnotationSensitivePaths hide values from diffs and logs.
	AnnotationSensitive      = "werf.io/sensitive"
	AnnotationSensitivePaths = "werf.io/sensitive-paths"
)

// Helm's release metadata: an object that carries it belongs to the release it names, and
// `helm upgrade` (and sealane) adopt and manage it.
const (
	LabelManagedBy             = "app.kubernetes.io/managed-by"
	AnnotationReleaseName      = "meta.helm.sh/release-name"
	AnnotationReleaseNamespace = "meta.helm.sh/release-namespace"
)

// Tracking annotations: read by the tracker, kept raw in Resource.Tracking.
const (
	AnnotationFailMode                  = "werf.io/fail-mode"
	AnnotationFailuresAllowedPerReplica = "werf.io/failures-allowed-per-replica"
	AnnotationIgnoreReadinessPrefix     = "werf.io/ignore-readiness-probe-fails-for-"
	AnnotationNoActivityTimeout         = "werf.io/no-activity-timeout"
	AnnotationLogRegex                  = "werf.io/log-regex"
	AnnotationLogRegexForPrefix         = "werf.io/log-regex-for-"
	AnnotationLogRegexSkip              = "werf.io/log-regex-skip"
	AnnotationSkipLogs                  = "werf.io/skip-logs"
	AnnotationSkipLogsForContainers     = "werf.io/skip-logs-for-containers"
	AnnotationShowLogsOnlyForReplicas   = "werf.io/show-logs-only-for-number-of-replicas"
	AnnotationShowLogsOnlyForContainers = "werf.io/show-logs-only-for-containers"
	AnnotationShowServiceMessages       = "werf.io/show-service-messages"
)

// trackingExact and trackingPrefixes select the annotations copied into Resource.Tracking.
var (
	trackingExact = map[string]bool{
		AnnotationTrackTerminationMode:      true,
		AnnotationFailMode:                  true,
		AnnotationFailuresAllowedPerReplica: true,
		AnnotationNoActivityTimeout:         true,
		AnnotationLogRegex:                  true,
		AnnotationLogRegexSkip:              true,
		AnnotationSkipLogs:                  true,
		AnnotationSkipLogsForContainers:     true,
		AnnotationShowLogsOnlyForReplicas:   true,
		AnnotationShowLogsOnlyForContainers: true,
		AnnotationShowServiceMessages:       true,
	}
	trackingPrefixes = []string{AnnotationIgnoreReadinessPrefix, AnnotationLogRegexForPrefix, AnnotationLogRegexSkipForPrefix}
)
