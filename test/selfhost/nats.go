// Package selfhost runs deployments/chart's services as local processes, configured exactly
// as the chart renders them (test/podrun), to prove the shipped wiring: the 3-node NATS, the
// four stages, their users and their environment.
package selfhost

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/test/harness"
	"github.com/sealane/sealane/test/podrun"
)

// NATSNode is one node of the chart's NATS cluster, running.
type NATSNode struct {
	*podrun.Running
	ClientURL  string
	monitorURL string
}

// StartNATS starts the chart's NATS StatefulSet (name) from objs as local nats-server
// processes: each pod's command, config file and environment as rendered, with what the pod
// network would give it — its own client, cluster and monitor ports and routes to the other
// nodes on 127.0.0.1 — passed as flags. It returns once JetStream is up on every node.
func StartNATS(t *testing.T, objs *podrun.Objects, name, namespace, natsServer string) []NATSNode {
	t.Helper()
	sts, ok := objs.StatefulSets[name]
	if !ok {
		t.Fatalf("the render has no StatefulSet %s", name)
	}
	n := int(*sts.Spec.Replicas)
	clientPorts, clusterPorts, monitorPorts := ports(t, n), ports(t, n), ports(t, n)
	var routes []string
	for _, p := range clusterPorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nodes := make([]NATSNode, n)
	for i := range n {
		pod := podrun.Pod{Name: fmt.Sprintf("%s-%d", name, i), Namespace: namespace, Root: t.TempDir(),
			Binaries: map[string]string{sts.Spec.Template.Spec.Containers[0].Image: natsServer}}
		proc, err := objs.Container(sts.Spec.Template.Spec, sts.Spec.Template.Spec.Containers[0], pod)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = NATSNode{
			Running: podrun.Start(t, proc, "-p", fmt.Sprint(clientPorts[i]), "-m", fmt.Sprint(monitorPorts[i]),
				"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i]), "--routes", strings.Join(routes, ",")),
			ClientURL:  fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]),
			monitorURL: fmt.Sprintf("http://127.0.0.1:%d", monitorPorts[i]),
		}
	}
	ctx := harness.Context(t, time.Minute)
	for _, node := range nodes {
		// healthy with JetStream's meta leader known: the chart's startup probe
		waitHTTP(ctx, t, node.monitorURL+"/healthz", node.Running)
	}
	return nodes
}

// URLs is the client URL list of nodes, as a NATS client takes it.
func URLs(nodes []NATSNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL
	}
	return strings.Join(urls, ",")
}

func ports(t *testing.T, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = harness.FreePort(t)
	}
	return out
}

// waitHTTP waits until url answers 200, failing when r exits first.
func waitHTTP(ctx context.Context, t *testing.T, url string, r *podrun.Running) {
	t.Helper()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if exited, werr := r.Exited(); exited {
			t.Fatalf("%s exited: %v\n%s", r.Proc.Name, werr, r.Output())
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never answered %s: %v", r.Proc.Name, url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
