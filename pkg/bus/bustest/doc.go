// Package bustest holds in-memory implementations of the bus's interfaces, held to the same
// contract as JetStream: package contract runs one suite per interface against both.
package bustest
