//go:build race

package crdt

// raceEnabled scales down the heaviest tests under the race detector, which
// slows this single-goroutine code some tenfold without finding anything new.
const raceEnabled = true
