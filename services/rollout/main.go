// Command rollout runs sealane's fleet rollout coordinator as its own service; replicas share
// its durable consumer and own rollouts through leases. Configuration: see
// pkg/serve.RolloutMain and docs/operations.md ("Fleet rollouts").
package main

import "github.com/sealane/sealane/pkg/serve"

func main() { serve.RolloutMain() }
