package render

import (
	"maps"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chart"
)

// Annotations sealane adds to every deployed resource, with werf's names.
const (
	AnnotationVersion     = "werf.io/version"
	AnnotationProject     = "project.werf.io/name"
	AnnotationEnv         = "project.werf.io/env"
	AnnotationCommit      = "ci.werf.io/commit"
	AnnotationTag         = "ci.werf.io/tag"
	AnnotationBranch      = "ci.werf.io/branch"
	AnnotationPipelineURL = "ci.werf.io/pipeline-url"
	AnnotationJobURL      = "ci.werf.io/job-url"
	AnnotationAuthor      = "ci.werf.io/author"
)

// Metadata is what is added to every deployed resource's metadata at deploy time.
type Metadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// AutoMetadata returns the annotations and labels werf adds to every resource of a deploy:
// the sealane version, project and environment, what the request says about the CI run, and
// the request's --add-annotation and --add-label pairs (which win on a clash). Empty values
// are left out.
func AutoMetadata(req events.RequestedData, version string) Metadata {
	ann := map[string]string{}
	put := func(k, v string) {
		if v != "" {
			ann[k] = v
		}
	}
	put(AnnotationVersion, version)
	put(AnnotationProject, req.Project)
	put(AnnotationEnv, req.Env)
	if g := req.Git; g != nil {
		put(AnnotationCommit, g.Commit)
		put(AnnotationTag, g.Tag)
		put(AnnotationBranch, g.Branch)
		put(AnnotationPipelineURL, g.PipelineURL)
		put(AnnotationJobURL, g.JobURL)
		put(AnnotationAuthor, g.Author)
	}
	maps.Copy(ann, req.Annotations)
	m := Metadata{Annotations: ann}
	if len(req.Labels) > 0 {
		m.Labels = maps.Clone(req.Labels)
	}
	return m
}

// ServiceValues returns the service values of a deploy request for a render into namespace.
func ServiceValues(req events.RequestedData, version string) chart.ServiceValues {
	sv := chart.ServiceValues{
		Env: req.Env, Namespace: req.Target.Namespace, Project: req.Project,
		Repo: req.ImagesRepo, Images: req.Images, Version: version,
	}
	if req.Git != nil {
		sv.CI = *req.Git
	}
	return sv
}
