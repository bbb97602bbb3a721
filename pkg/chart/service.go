package chart

import "github.com/sealane/sealane/events"

// ServiceValues are the values sealane generates for every render, merged last (after --set)
// under .Values.global, with werf's key names kept under .Values.global.werf so that werf
// charts render unchanged.
type ServiceValues struct {
	Env       string                  `json:"env,omitempty"`
	Namespace string                  `json:"namespace,omitempty"`
	Project   string                  `json:"project,omitempty"`
	CI        events.Git              `json:"ci,omitempty"`
	Repo      string                  `json:"repo,omitempty"` // image repository all images live under
	Images    map[string]events.Image `json:"images,omitempty"`
	Version   string                  `json:"version,omitempty"` // sealane version, .Values.global.werf.version
}

// Global returns the service values as the map merged into .Values.global: env, namespace,
// project, ci.*, image.NAME.{repository,tag,digest}, and the werf aliases under werf.*.
// Empty fields are left out, so that chart defaults stay visible.
func (s ServiceValues) Global() map[string]any {
	g := map[string]any{}
	werf := map[string]any{}
	put(g, "env", s.Env)
	put(werf, "env", s.Env)
	put(g, "namespace", s.Namespace)
	put(werf, "namespace", s.Namespace)
	put(g, "project", s.Project)
	put(werf, "name", s.Project)
	put(werf, "repo", s.Repo)
	put(werf, "version", s.Version)

	if s.CI != (events.Git{}) {
		isTag := s.CI.Tag != ""
		isBranch := !isTag && s.CI.Branch != ""
		ref := s.CI.Ref
		if ref == "" {
			ref = s.CI.Branch
			if isTag {
				ref = s.CI.Tag
			}
		}
		ci := map[string]any{"is_branch": isBranch, "is_tag": isTag}
		put(ci, "ref", ref)
		put(ci, "commit", s.CI.Commit)
		put(ci, "branch", s.CI.Branch)
		put(ci, "tag", s.CI.Tag)
		g["ci"] = ci
		werfCI := map[string]any{"is_branch": isBranch, "is_tag": isTag}
		put(werfCI, "branch", s.CI.Branch)
		put(werfCI, "tag", s.CI.Tag)
		put(werfCI, "commit", s.CI.Commit)
		werf["ci"] = werfCI
		werf["is_branch"] = isBranch
		if isTag {
			werf["docker_tag"] = s.CI.Tag
		} else if s.CI.Branch != "" {
			werf["docker_tag"] = s.CI.Branch
		}
	}
	if len(s.Images) > 0 {
		images := map[string]any{}
		werfImages := map[string]any{}
		for name, img := range s.Images {
			m := map[string]any{"repository": img.Repository}
			put(m, "tag", img.Tag)
			put(m, "digest", img.Digest)
			images[name] = m
			w := map[string]any{"docker_image": img.Reference()}
			put(w, "docker_image_digest", img.Digest)
			werfImages[name] = w
		}
		g["image"] = images
		werf["image"] = werfImages
		werf["is_nameless_image"] = false
	}
	if len(werf) > 0 {
		g["werf"] = werf
	}
	return g
}

// Merge returns vals with the service values deep-merged over .Values.global; vals is not
// modified.
func (s ServiceValues) Merge(vals map[string]any) map[string]any {
	g := s.Global()
	if len(g) == 0 {
		return vals
	}
	out := copyValues(vals)
	if out == nil {
		out = map[string]any{}
	}
	global, _ := out["global"].(map[string]any)
	out["global"] = mergeMaps(global, g)
	return out
}

func put(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}
