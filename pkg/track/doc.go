// Package track watches a cluster with informers and feeds the readiness rules
// (pkg/readiness) until every target is ready, one has failed, or time runs out; it reports
// each target's progress on the way.
package track
