package renderer

import (
	"errors"

	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/plan"
)

// A tenant's deploys (a client with a scope in the client keys file, admission.Scope) are bounded
// twice: the renderer refuses a plan that writes outside the scope before anything is applied
// (checkBounds), and the stages that write the chart's objects or read the cluster for its
// templates do it as the scope's ServiceAccount (Kubernetes impersonation), so the cluster's
// RBAC has the last word: the renderer's `lookup` and dry runs (tenantCluster), the applier's
// applies and deletes (stagekit.DeployCluster, from the identity the renderer records). The tracker only reads the objects of the plan (already bounded) and the recorder
// writes only the release's records in its namespace (admission checked both namespaces):
// they keep the service's identity. See docs/operations.md, "Security model".

// tenant is the verified client of the request being handled and its scope; scope is nil for
// an operator client and without client keys.
func (r *Renderer) tenant(req *Request) (string, *admission.Scope) {
	name, verified := req.requestedBy()
	if !verified {
		return "", nil
	}
	return name, r.Admission.Verifier.Keys.Scope(name)
}

// runAs is the user the deploy's writes impersonate: the scope's ServiceAccount, "" for the
// service's own identity.
func runAs(s *admission.Scope) string {
	if s == nil {
		return ""
	}
	return s.ServiceAccountUser()
}

// tenantCluster is c as the request's tenant (c itself for an operator client).
func (r *Renderer) tenantCluster(req *Request, c *kube.Cluster) (*kube.Cluster, error) {
	_, s := r.tenant(req)
	return stagekit.ClusterAs(c, runAs(s))
}

// checkBounds refuses a plan of the request's tenant that writes outside its scope: the
// deploy fails before anything is applied, naming every object at fault.
func (r *Renderer) checkBounds(req *Request, p *plan.Plan) error {
	client, s := r.tenant(req)
	if s == nil {
		return nil
	}
	err := plan.CheckBounds(p, s)
	var be *plan.BoundsError
	if errors.As(err, &be) {
		return refuse("client %s: %v. Keep the chart's objects in the client's namespaces, or ask the operator to grant them "+
			"in its scope in the renderer's --client-keys file (namespaces, clusterScoped); its scope: %s", client, err, s)
	}
	return err
}
