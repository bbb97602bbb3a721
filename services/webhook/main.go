// Command webhook runs sealane's git webhook intake as its own service: it verifies git hosts'
// deliveries and publishes deploy requests of exactly the pushed commit. Configuration: see
// pkg/serve.WebhookMain and docs/webhooks.md.
package main

import "github.com/sealane/sealane/pkg/serve"

func main() { serve.WebhookMain() }
