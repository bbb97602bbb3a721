package client

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/rollout"
)

// RolloutRequest is a rollout as `sealane rollout start` asks for it.
type RolloutRequest struct {
	Spec *rollout.Spec
	// Dir is the directory the spec's relative paths (chart, values files) start from.
	Dir         string
	ChartSource DeployRequest // only its ChartSource options are used
	RequestedBy string
}

// PrepareRollout checks the request, stores the chart and the values once for every cluster
// and returns the rollout.requested payload (not yet published).
func PrepareRollout(ctx context.Context, blobs Uploads, req RolloutRequest) (events.RolloutRequestedData, error) {
	id := NewRolloutID()
	s := req.Spec
	spec, err := json.Marshal(s)
	if err != nil {
		return events.RolloutRequestedData{}, fmt.Errorf("encode rollout spec: %w", err)
	}
	local, err := loadRolloutChart(ctx, req)
	if err != nil {
		return events.RolloutRequestedData{}, err
	}
	if len(s.Values) > 0 {
		raw, err := yaml.Marshal(s.Values)
		if err != nil {
			return events.RolloutRequestedData{}, fmt.Errorf("rollout spec values: %w", err)
		}
		local.Inputs.ValuesFiles = append(local.Inputs.ValuesFiles, chart.ValuesFile{Name: "rollout spec values", Content: raw})
	}
	if _, err := chart.UserValues(local.Inputs); err != nil {
		return events.RolloutRequestedData{}, err
	}
	data, err := local.Store(ctx, blobs, "")
	if err != nil {
		return events.RolloutRequestedData{}, err
	}
	data.Target = events.Target{}
	return events.RolloutRequestedData{RolloutID: id, Spec: spec, Request: data, RequestedBy: req.RequestedBy}, nil
}

// loadRolloutChart reads the spec's chart (a git chart is fetched by the renderer, at its
// commit) and values files.
func loadRolloutChart(ctx context.Context, req RolloutRequest) (Local, error) {
	s := req.Spec
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) || strings.Contains(p, "://") {
			return p
		}
		return filepath.Join(req.Dir, p)
	}
	d := req.ChartSource
	d.Release, d.Namespace, d.Timeout, d.Set, d.RequestedBy = "rollout", "rollout", s.Timeout, s.Set, req.RequestedBy
	for _, f := range s.ValuesFiles {
		d.ValuesFiles = append(d.ValuesFiles, rel(f))
	}
	if g := s.Chart.Git; g != nil {
		inputs, err := readInputs(d)
		if err != nil {
			return Local{}, err
		}
		rd := events.RequestedData{Chart: events.ChartSource{Git: &events.GitChart{URL: g.URL, Commit: g.Commit, Path: g.Path}},
			Timeout: events.Duration(s.Timeout), RequestedBy: req.RequestedBy}
		return Local{Inputs: inputs, Requested: rd}, nil
	}
	switch {
	case s.Chart.OCI != "":
		d.ChartDir = s.Chart.OCI
	case s.Chart.Repo != "":
		d.ChartDir, d.ChartRepo = s.Chart.Name, s.Chart.Repo
	default:
		d.ChartDir = rel(s.Chart.Path)
	}
	d.ChartVersion = s.Chart.Version
	return Load(ctx, d)
}

// NewRolloutID returns a fresh rollout id: "ro-" and 8 hex digits.
func NewRolloutID() string { return "ro-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8] }
