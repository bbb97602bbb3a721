package stagekit_test

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// TestDeployCluster: the applier's cluster for a deploy impersonates the state's RunAs, and
// is the service's own for an operator client's deploy.
func TestDeployCluster(t *testing.T) {
	e := pipelinetest.NewEnv(t)
	e.Cluster.Config = &rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second} // Bounded: the fake
	own, err := stagekit.DeployCluster(e.Cluster, &deploy.State{})
	if err != nil || own != e.Cluster {
		t.Fatalf("stagekit.DeployCluster(no RunAs) = %v, %v; want the cluster itself", own, err)
	}
	as, err := stagekit.DeployCluster(e.Cluster, &deploy.State{RunAs: "system:serviceaccount:shop:deployer"})
	if err != nil {
		t.Fatal(err)
	}
	if as.Impersonated() != "system:serviceaccount:shop:deployer" || as.Config.Impersonate.UserName != "system:serviceaccount:shop:deployer" {
		t.Errorf("impersonating %q (config %q)", as.Impersonated(), as.Config.Impersonate.UserName)
	}
	if e.Cluster.Config.Impersonate.UserName != "" {
		t.Error("the service's own cluster was changed")
	}
}
