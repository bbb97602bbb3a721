package client

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sealane/sealane/pkg/slug"
)

// Names are the resolved release coordinates of a deploy.
type Names struct {
	Project, Env, Release, Namespace string
}

// ResolveNames fills the release and namespace from the project and env the way werf does:
// both default to "<project>-<env>" (or "<project>" without env), slugified with werf's
// algorithm; names given explicitly are taken as they are and must be valid.
func ResolveNames(project, env, releaseName, namespace string) (Names, error) {
	n := Names{Project: project, Env: env, Release: releaseName, Namespace: namespace}
	base := project
	if env != "" {
		base = project + "-" + env
	}
	if n.Release == "" {
		n.Release = slug.Release(base)
	}
	if n.Namespace == "" {
		n.Namespace = slug.Namespace(base)
	}
	if n.Release == "" {
		return n, fmt.Errorf("no release name: pass --release, or --project/--env")
	}
	if errs := validation.IsDNS1123Subdomain(n.Release); len(errs) > 0 || len(n.Release) > 53 {
		if len(n.Release) > 53 {
			errs = append(errs, "must be no more than 53 characters")
		}
		return n, fmt.Errorf("release name %q is invalid: %s (pass a valid --release)", n.Release, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(n.Namespace); len(errs) > 0 {
		return n, fmt.Errorf("namespace %q is invalid: %s (pass a valid --namespace)", n.Namespace, strings.Join(errs, "; "))
	}
	return n, nil
}
