package main

import (
	"testing"

	"github.com/mnemohq/mnemo/sim"
	"github.com/mnemohq/mnemo/sync/quicnet"
)

// The simulator counts a node's connections in windows of the transport's
// idle timeout: what a window's distinct peers are is the connections the
// real transport would hold open at once, only while the two are equal.
func TestSimConnectionWindowIsTheIdleTimeout(t *testing.T) {
	if sim.ConnWindow != quicnet.DefaultIdleTimeout {
		t.Fatalf("sim.ConnWindow %v, quicnet.DefaultIdleTimeout %v: the simulator's connection figure no longer counts what the transport holds open",
			sim.ConnWindow, quicnet.DefaultIdleTimeout)
	}
}
