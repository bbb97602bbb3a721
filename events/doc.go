// Package events is sealane's public contract: the CloudEvents types the pipeline exchanges,
// their payloads, the NATS subject scheme and the binary-mode codec over NATS headers.
//
// An audit consumer can import this module alone: it depends on the CloudEvents SDK and
// nats.go, never on Kubernetes or Helm.
package events
