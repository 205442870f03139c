// Package clustertest holds what tests of replication in more than one
// package share: a hostile relay's transport, for node/cluster's tests over
// the in-memory network and real QUIC, and for cmd/mnemo's test that runs
// the relay in its own process beside real `mnemo node` processes. Test
// code only: no flag or configuration file of a node reaches it.
//
// It does not import node/cluster (whose own tests use it): HostileRelay
// wraps anything with a Transport's methods and so is one itself.
package clustertest
