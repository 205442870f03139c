//go:build linux

package vector

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (lock the
// goroutine to its thread around a measurement): on a shared machine it
// counts the work, not the time spent waiting for a core.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
