package realcharts

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// crdSpec is one generated CustomResourceDefinition: its kind and the size its YAML grows to.
type crdSpec struct {
	kind, plural, short string
	kb                  int // target size of the file, KiB
	statusSubresource   bool
}

// monitoringCRDs are the ten CRDs of the stack's crds subchart, 4.5 MB in all, the largest over
// 1 MB, as the operator's CRDs are (their size is descriptions of deeply nested pod-spec-like
// schemas).
var monitoringCRDs = []crdSpec{
	{"Prometheus", "prometheuses", "prom", 1130, true},
	{"PrometheusAgent", "prometheusagents", "promagent", 960, true},
	{"Alertmanager", "alertmanagers", "am", 720, true},
	{"ThanosRuler", "thanosrulers", "ruler", 640, true},
	{"ScrapeConfig", "scrapeconfigs", "scfg", 420, false},
	{"AlertmanagerConfig", "alertmanagerconfigs", "amcfg", 330, false},
	{"PodMonitor", "podmonitors", "pmon", 120, false},
	{"ServiceMonitor", "servicemonitors", "smon", 110, false},
	{"Probe", "probes", "prb", 60, false},
	{"PrometheusRule", "prometheusrules", "promrule", 18, false},
}

// MonitoringGroup is the API group of the stack's custom resources.
const MonitoringGroup = "monitoring.coreos.com"

// words make the generated descriptions: schema descriptions are most of a real CRD's bytes.
var words = strings.Fields(`the of a to is and in field for when this that be set if by not
	are pod with it container value default name an as or must specified defaults will which
	from used on may should selector label namespace each secret key reference object list
	configuration endpoint scrape interval timeout relabeling target path port scheme volume
	mount resource limits requests affinity toleration node priority service account security
	context probe readiness liveness startup image pull policy replicas storage retention
	alerting rule group evaluation remote write read queue shards sample metadata tls bearer
	token authorization basic oauth2 proxy url header honor labels timestamps override
	deprecated experimental feature gate operator reconcile generation condition status`)

// description is a deterministic pseudo-random sentence of n words.
func description(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		w := words[rng.IntN(len(words))]
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
	}
	b.WriteByte('.')
	return b.String()
}

// crdYAML renders one CRD whose spec schema grows until the file reaches s.kb KiB. The schema
// is structural (the apiserver accepts it) and keeps unknown fields under spec, so custom
// resources of the chart validate whatever they set.
func crdYAML(s crdSpec, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0x5ea1a4e))
	var b strings.Builder
	fmt.Fprintf(&b, `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.16.4
    operator.prometheus.io/version: 0.77.1
  name: %[2]s.%[4]s
spec:
  group: %[4]s
  names:
    categories:
    - prometheus-operator
    kind: %[1]s
    listKind: %[1]sList
    plural: %[2]s
    shortNames:
    - %[3]s
    singular: %[5]s
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: The age of the object.
      jsonPath: .metadata.creationTimestamp
      name: Age
      type: date
    name: v1
    schema:
      openAPIV3Schema:
        description: %[6]s
        properties:
          apiVersion:
            description: %[7]s
            type: string
          kind:
            description: %[8]s
            type: string
          metadata:
            type: object
          spec:
            description: %[9]s
            x-kubernetes-preserve-unknown-fields: true
            properties:
              replicas:
                description: %[10]s
                format: int32
                type: integer
              serviceAccountName:
                description: %[11]s
                type: string
`, s.kind, s.plural, s.short, MonitoringGroup, strings.ToLower(s.kind),
		description(rng, 20), description(rng, 30), description(rng, 30), description(rng, 25),
		description(rng, 30), description(rng, 20))
	target := s.kb << 10
	const indent = 14
	for i := 0; b.Len() < target-2048; i++ {
		writeProperty(&b, rng, fmt.Sprintf("field%03d", i), indent, 0, target)
	}
	b.WriteString(`            type: object
          status:
            description: Most recently observed status of the object.
            type: object
            x-kubernetes-preserve-unknown-fields: true
        required:
        - spec
        type: object
    served: true
    storage: true
`)
	if s.statusSubresource {
		b.WriteString("    subresources:\n      status: {}\n")
	}
	return b.String()
}

// writeProperty writes one schema property at indent: a scalar, a list or an object of nested
// properties, with a description, until the document reaches limit bytes.
func writeProperty(b *strings.Builder, rng *rand.Rand, name string, indent, depth, limit int) {
	pad := strings.Repeat(" ", indent)
	fmt.Fprintf(b, "%s%s:\n%s  description: |-\n%s    %s\n", pad, name, pad, pad, description(rng, 15+rng.IntN(60)))
	kind := rng.IntN(10)
	switch {
	case depth < 4 && kind < 3:
		fmt.Fprintf(b, "%s  properties:\n", pad)
		n := 3 + rng.IntN(8)
		for i := 0; i < n && b.Len() < limit-2048; i++ {
			writeProperty(b, rng, fmt.Sprintf("%s%d", words[rng.IntN(len(words))], i), indent+4, depth+1, limit)
		}
		fmt.Fprintf(b, "%s  type: object\n", pad)
	case kind < 5:
		fmt.Fprintf(b, "%s  items:\n%s    type: string\n%s  type: array\n", pad, pad, pad)
	case kind < 7:
		fmt.Fprintf(b, "%s  format: int32\n%s  type: integer\n", pad, pad)
	case kind < 8:
		fmt.Fprintf(b, "%s  type: boolean\n", pad)
	default:
		fmt.Fprintf(b, "%s  type: string\n", pad)
	}
}
