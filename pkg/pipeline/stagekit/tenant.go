package stagekit

import (
	"fmt"

	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/kube"
)

// A tenant's deploy writes as the ServiceAccount of its scope (Kubernetes impersonation): the
// renderer records it in deploy.State.RunAs and bounds the plan (renderer/tenant.go), the
// applier's applies and deletes take it from the state (DeployCluster). See
// docs/operations.md, "Security model".

// DeployCluster is c as the deploy's recorded identity (deploy.State.RunAs).
func DeployCluster(c *kube.Cluster, st *deploy.State) (*kube.Cluster, error) {
	if st == nil {
		return c, nil
	}
	return ClusterAs(c, st.RunAs)
}

// ClusterAs is c impersonating user ("": c itself, the service's own identity).
func ClusterAs(c *kube.Cluster, user string) (*kube.Cluster, error) {
	as, err := c.As(user)
	if err != nil {
		return nil, fmt.Errorf("act as %s: %w", user, err)
	}
	return as, nil
}
