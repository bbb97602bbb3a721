package chart

import (
	"fmt"
	"os"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// ArchiveOf packs a chart held in memory, such as the chart of a stored release (which keeps
// no subcharts and no raw files), into a .tgz with Helm's own writer.
func ArchiveOf(ch *helmchart.Chart) ([]byte, error) {
	if ch == nil || ch.Metadata == nil {
		return nil, fmt.Errorf("pack chart: no chart")
	}
	dir, err := os.MkdirTemp("", "sealane-chart-")
	if err != nil {
		return nil, fmt.Errorf("pack chart %s: %w", ch.Name(), err)
	}
	defer os.RemoveAll(dir)
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, fmt.Errorf("pack chart %s: %w", ch.Name(), err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("pack chart %s: %w", ch.Name(), err)
	}
	return data, nil
}
