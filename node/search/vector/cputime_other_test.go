//go:build !linux

package vector

import "time"

// threadCPU is unavailable here: CPU figures read 0.
func threadCPU() time.Duration { return 0 }
