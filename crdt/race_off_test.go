//go:build !race

package crdt

const raceEnabled = false
