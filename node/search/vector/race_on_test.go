//go:build race

package vector

// raceEnabled: the race detector slows the graph walks several times.
const raceEnabled = true
