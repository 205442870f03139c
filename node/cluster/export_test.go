package cluster

// For the tests over the real network (realnet_test.go): they are in
// package cluster_test, since node/cluster/realnet imports this package,
// and run the same tests as those over the in-memory network here.

// Network is a test network: it sets a node's transport and membership.
type Network = network

// SharedOK is the test policy that lets every agent use the shared
// namespaces.
type SharedOK = sharedOK

var (
	RunTeamMemoryReplicates               = testTeamMemoryReplicates
	RunPartitionHealConverges             = testPartitionHealConverges
	RunGrantedTeamReplicatesOnlyToMembers = testGrantedTeamReplicatesOnlyToMembers
	RunHandoverMovesAnAgent               = testHandoverMovesAnAgent
	RunTreesCarrySaves                    = testTreesCarrySaves
	RunTreesRouteAroundHostileRelay       = testTreesRouteAroundHostileRelay
)
