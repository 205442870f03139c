package cluster_test

import (
	"testing"

	"github.com/mnemohq/mnemo/node/cluster"
)

// A hostile relay over QUIC and memberlist on loopback, as over the
// in-memory network (trees_test.go): its tampering is in its transport's
// send path, a test-only wrapper around the real one.
func TestTreesRouteAroundAlteringRelay(t *testing.T) {
	cluster.RunTreesRouteAroundHostileRelay(t, realNetwork(t), false)
}
func TestTreesRouteAroundDroppingRelay(t *testing.T) {
	cluster.RunTreesRouteAroundHostileRelay(t, realNetwork(t), true)
}
