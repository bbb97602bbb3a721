package chart

import (
	helmchart "helm.sh/helm/v3/pkg/chart"
)

// cloneChart copies what chartutil.ProcessDependenciesWithMerge modifies (the
// dependency tree, Metadata.Dependencies and Values), so Render leaves its input
// intact and can be called again with other values. Files are shared: nothing
// in rendering writes to them.
func cloneChart(ch *helmchart.Chart) *helmchart.Chart {
	out := &helmchart.Chart{
		Raw:       ch.Raw,
		Lock:      ch.Lock,
		Templates: append([]*helmchart.File(nil), ch.Templates...),
		Values:    copyValues(ch.Values),
		Schema:    ch.Schema,
		Files:     append([]*helmchart.File(nil), ch.Files...),
	}
	if ch.Metadata != nil {
		md := *ch.Metadata
		if ch.Metadata.Dependencies != nil {
			md.Dependencies = make([]*helmchart.Dependency, len(ch.Metadata.Dependencies))
			for i, d := range ch.Metadata.Dependencies {
				if d == nil {
					continue
				}
				dc := *d
				dc.ImportValues = append([]any(nil), d.ImportValues...)
				md.Dependencies[i] = &dc
			}
		}
		out.Metadata = &md
	}
	deps := make([]*helmchart.Chart, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		deps = append(deps, cloneChart(d))
	}
	out.SetDependencies(deps...)
	return out
}

// copyValues deep-copies a values tree made of maps, slices and scalars.
func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = copyValue(x)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyValues(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = copyValue(x)
		}
		return out
	default:
		return v
	}
}
