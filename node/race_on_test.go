//go:build race

package node

// raceEnabled: the race detector makes each request several times slower.
const raceEnabled = true
